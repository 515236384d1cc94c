"""Runs LLaMA-Factory's supervised fine-tuning on a YAML configuration with Wingspan's memory
reporter as a transformers callback: llamafactory.train.tuner.run_exp(args, callbacks) is the
entry point `llamafactory-cli train` uses (src/llamafactory/train/tuner.py)."""
import sys

import yaml

from wingspan_reporter import Reporter, hf_callback

reporter = Reporter(framework="llama-factory")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: python3 wingspan_llamafactory.py config.yaml")
    with open(sys.argv[1]) as f:
        args = yaml.safe_load(f)
    import torch

    # Without a CUDA GPU, transformers refuses bf16 unless use_cpu is set (TrainingArguments.
    # _validate_args: "Your setup doesn't support bf16/gpu", src/transformers/training_args.py):
    # train on the CPU then, as `llamafactory-cli train config.yaml use_cpu=true` would.
    if not torch.cuda.is_available():
        args.setdefault("use_cpu", True)
    from llamafactory.train.tuner import run_exp

    reporter.run(lambda: run_exp(args=args, callbacks=[hf_callback(reporter)]))


if __name__ == "__main__":
    main()

"""Runs mlx_lm.lora on a YAML configuration with Wingspan's memory reporter as the training
callback: the configuration is merged with mlx_lm.lora's CONFIG_DEFAULTS as `mlx_lm.lora
--config` does, then mlx_lm.lora.run(args, training_callback=...) trains (mlx_lm/lora.py)."""
import argparse
import types

import yaml

from wingspan_reporter import MLXCallback, Reporter

reporter = Reporter(framework="mlx-lm")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", "-c", required=True)
    config_path = parser.parse_args().config

    import mlx.core as mx
    import mlx_lm.lora as lora

    reporter.use_mlx(mx)
    with open(config_path) as f:
        config = yaml.load(f, lora.yaml_loader)
    args = dict(lora.CONFIG_DEFAULTS)
    args.update({k: v for k, v in config.items() if v is not None})
    callback = MLXCallback(reporter, total_steps=args.get("iters"))
    reporter.run(lambda: lora.run(types.SimpleNamespace(**args), training_callback=callback))


if __name__ == "__main__":
    main()

"""wingspan-train's DPO against TRL's DPOTrainer, side by side (issue 31): the same tiny model
(make_tiny_model.py), the same preference pairs (the bundled resources/sample-data/preference.jsonl),
beta, learning rate, optimizer and steps; their per-step losses compared.

Like for like:
  full fine-tune, fp32, CPU: both start from the same weights (LoRA's A is drawn at random by PEFT
      and by wingspan-train differently, so a LoRA curve could not be compared step by step);
  every step sees the whole set (BATCH pairs, batch BATCH): the step's loss is a mean over the same
      pairs whatever order each trainer draws them in (wingspan-train shuffles, trl_dpo_losses.py
      does not); no held-out split (--eval-fraction 0);
  AdamW (0.9, 0.999, eps 1e-8), no weight decay, no warmup, wingspan-train's cosine schedule (to 0.1
      of the peak at the last step; TRL gets it as a LambdaLR), gradient norm clipped at 1.0 (both
      defaults), TRL's sigmoid loss with beta 0.1;
  rows far shorter than the 64-token limit: no truncation rule can differ.

The first loss of both is ln 2 to 1e-6: the policy is its own reference before its first update.
Every later step within TOLERANCE (absolute, in nats) of TRL's. Both compute the same fp32 sums in
different orders (libtorch's kernels against transformers' modules): measured 3e-7 nats apart at
most over these 8 steps (0.693 -> 0.363). 1e-4 leaves that rounding room to grow through Adam's
normalised updates and is still ~300 times below the 0.03-0.13 nats each step falls, so another
objective (ORPO's loss), another beta, a moving reference, a different schedule (TRL's constant
learning rate: 3e-3 apart at step 2) or different tokens fail it.

usage: compare_dpo_curves.py WINGSPAN_TRAIN SOURCE_DIR
"""
import json
import math
import os
import subprocess
import sys

from trl_terms import failures, finish, start

TRAIN, SOURCE = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
BATCH, STEPS, LR, BETA, MAX_LENGTH = 8, 8, 1e-3, 0.1, 64
MIN_LR_RATIO = 0.1   # wingspan-train's cosine schedule (args.hpp min_lr_ratio), given to TRL too
TOLERANCE = 1e-4


def trl_losses(model_dir, data, work):
    r = subprocess.run([sys.executable, os.path.join(SOURCE, "tests", "frameworks", "trl_dpo_losses.py"), model_dir, data,
                        "--method", "full", "--batch", str(BATCH), "--steps", str(STEPS), "--lr", str(LR),
                        "--beta", str(BETA), "--max-length", str(MAX_LENGTH), "--min-lr-ratio", str(MIN_LR_RATIO)], capture_output=True, text=True, cwd=work)
    if r.returncode != 0:
        failures.append("trl_dpo_losses.py: " + r.stderr[-2000:])
        return []
    return [json.loads(line)["loss"] for line in r.stdout.splitlines() if '"step"' in line]


def wingspan_losses(model_dir, data, work):
    r = subprocess.run([TRAIN, "--objective", "dpo", "--beta", str(BETA), "--method", "full", "--model", model_dir,
                        "--data", data, "--precision", "fp32", "--seq", str(MAX_LENGTH), "--batch", str(BATCH),
                        "--steps", str(STEPS), "--lr", str(LR), "--warmup-steps", "0", "--weight-decay", "0",
                        "--max-grad-norm", "1", "--eval-fraction", "0", "--eval-every", "0", "--threads", "2",
                        "--out", os.path.join(work, "wingspan-out")], capture_output=True, text=True, cwd=work)
    events = []
    for line in r.stdout.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            pass
    if r.returncode != 0:
        failures.append("wingspan-train: " + (r.stderr + r.stdout)[-2000:])
    return [e["loss"] for e in events if e.get("event") == "step"]


def main():
    work, model_dir = start("dpo-curves", SOURCE)
    data = os.path.join(work, "pairs.jsonl")
    with open(os.path.join(SOURCE, "resources", "sample-data", "preference.jsonl")) as src, open(data, "w") as dst:
        dst.writelines(src.readlines()[:BATCH])
    trl, ours = trl_losses(model_dir, data, work), wingspan_losses(model_dir, data, work)
    print(json.dumps({"trl": trl, "wingspan_train": ours, "tolerance_nats": TOLERANCE}), flush=True)
    if len(trl) != STEPS or len(ours) != STEPS:
        failures.append("steps: TRL %d, wingspan-train %d, expected %d" % (len(trl), len(ours), STEPS))
    else:
        for name, curve in (("TRL", trl), ("wingspan-train", ours)):
            if abs(curve[0] - math.log(2)) > 1e-6:
                failures.append("%s's first loss %.7f is not ln 2" % (name, curve[0]))
        worst = max(abs(a - b) for a, b in zip(trl, ours))
        print(json.dumps({"term": "per-step DPO loss, |wingspan-train - TRL| at its largest", "nats": worst,
                          "tolerance": TOLERANCE, "ok": worst <= TOLERANCE,
                          "trl_fall": trl[0] - trl[-1], "wingspan_fall": ours[0] - ours[-1]}), flush=True)
        if worst > TOLERANCE:
            failures.append("per-step losses apart by %.2e nats (tolerance %.0e)" % (worst, TOLERANCE))
        if not trl[-1] < trl[0] - 10 * TOLERANCE:
            failures.append("TRL's loss did not fall: the comparison would show nothing")
    finish(work)


if __name__ == "__main__":
    main()

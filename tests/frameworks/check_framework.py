"""One framework trains a Wingspan recipe for real, on the CPU, under `wingspan watch` (issue 28).

  1. a tiny model (make_tiny_model.py: safetensors + tokenizer + chat template) and a slice of the
     bundled chat data, written here;
  2. `wingspan recipe --framework FW --model-dir TINY --out RECIPE ...`;
  3. the command the recipe prints, run by `wingspan watch` with the framework's venv first on
     PATH: it completes, the loss falls, protocol events arrive (hello, predicted, memory, step,
     done), and the run is in `wingspan runs` with predicted beside measured, statistic named;
  4. the same recipe with many steps, SIGTERM to `wingspan watch` after the first step: the
     framework stops cleanly (done "interrupted"), the run is recorded as interrupted.

With OBJECTIVE dpo or grpo (issue 31; hf-transformers: TRL's DPOTrainer / GRPOTrainer) the
data is the bundled sample of that objective, and the loss checks are the objective's own.

usage: check_framework.py FW WINGSPAN_BIN FRAMEWORK_VENV_BIN MAKER_PYTHON SOURCE_DIR [OBJECTIVE]
"""
import json
import math
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

FW, WINGSPAN, VENV_BIN, MAKER_PY, SOURCE = sys.argv[1:6]
OBJECTIVE = sys.argv[6] if len(sys.argv) > 6 else "sft"
# What each objective trains on (resources/sample-data/), its plan flags, and its steps: DPO runs
# two passes over 48 pairs so its loss has room to leave ln 2; GRPO generates 4 completions of 16
# tokens per prompt, one prompt per step.
OBJECTIVES = {
    "sft": ("chat.jsonl", ["--seq", "64", "--batch", "4"], 12),
    "dpo": ("preference.jsonl", ["--objective", "dpo", "--seq", "64", "--batch", "4"], 24),
    "grpo": ("prompts.jsonl", ["--objective", "grpo", "--batch", "1", "--generations", "4", "--completion-length", "16",
                               "--prompt-length", "32"], 8),
}
SAMPLE, OBJECTIVE_FLAGS, STEPS = OBJECTIVES[OBJECTIVE]
LABEL = FW if OBJECTIVE == "sft" else f"{FW} {OBJECTIVE}"
RUN_TIMEOUT = 900   # seconds for one training command on a loaded 2-core machine

# What the test adds to the printed command so it runs on a CPU with the tiny model, and why.
# torchtune's recipe trains on `device: cuda`, and for a model Wingspan has no torchtune builder
# for (the tiny one here) its README says to replace `model._component_`, `tokenizer` and
# `checkpointer.model_type`: done as torchtune's CLI takes config overrides, key=value after
# --config (torchtune/_cli/run.py), with the tiny Qwen2's shape (make_tiny_model.py) for
# torchtune.models.qwen2.lora_qwen2 and its tokenizer files (vocab.json, merges.txt, and
# tokenizer.json for the special tokens' ids: qwen2_tokenizer's special_tokens_path).
TORCHTUNE_TINY = [
    "device=cpu",
    "model._component_=torchtune.models.qwen2.lora_qwen2",
    "model.vocab_size={vocab}", "model.num_layers=2", "model.num_heads=4", "model.num_kv_heads=2",
    "model.embed_dim=64", "model.intermediate_dim=128", "model.max_seq_len=512", "model.norm_eps=1e-6",
    "model.rope_base=10000.0", "model.tie_word_embeddings=True",
    "tokenizer._component_=torchtune.models.qwen2.qwen2_tokenizer", "tokenizer.path=./model/vocab.json",
    "tokenizer.merges_file=./model/merges.txt", "tokenizer.special_tokens_path=./model/tokenizer.json",
    "checkpointer.model_type=QWEN2",
]
MODEL_ARCH = {"hf-transformers": "llama", "llama-factory": "llama", "torchtune": "qwen2"}


def fail(msg):
    print(f"FAIL [{LABEL}]: {msg}", flush=True)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def run(cmd, **kw):
    print("+ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    return subprocess.run(cmd, text=True, capture_output=True, **kw)


def events_of(run_dir):
    out = []
    with open(os.path.join(run_dir, "events.jsonl")) as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


def run_dir_of(store, label):
    if not os.path.isdir(store):
        return None
    found = [d for d in sorted(os.listdir(store)) if d.endswith("-" + label)]
    return os.path.join(store, found[-1]) if found else None


def write_recipe(work, model_dir, data, name, max_steps):
    out = os.path.join(work, name)
    r = run([WINGSPAN, "recipe", "--framework", FW, "--out", out, "--model-dir", model_dir, "--method", "lora",
             *OBJECTIVE_FLAGS, "--lr", "5e-3", "--warmup-ratio", "0", "--max-steps", str(max_steps), "--data", data])
    check(r.returncode == 0, f"wingspan recipe failed: {r.stderr}")
    line = next((l for l in r.stdout.splitlines() if "wingspan watch --plan predicted.json -- " in l), None)
    check(line, f"wingspan recipe printed no command: {r.stdout}")
    return out, shlex.split(line.split(" -- ", 1)[1])


def check_losses(losses):
    if OBJECTIVE == "sft":
        first, last = sum(losses[:3]) / 3, sum(losses[-3:]) / 3
        # LoRA on a random tiny model (frozen random embeddings and head) falls 4-5 % in 12 steps here
        # (6.23 -> 5.85 nats with transformers + PEFT); step-to-step noise is about 1 %.
        check(last < 0.98 * first, f"the loss did not fall 2 %: first three {losses[:3]}, last three {losses[-3:]}")
    elif OBJECTIVE == "dpo":
        # Before the first update the policy is its own reference (LoRA's B starts at zero), so
        # TRL's sigmoid loss is exactly -log sigmoid(0) = ln 2; it falls as the chosen answers gain
        # on the rejected ones (0.693 -> 0.62 over the last third here; steps are noisy, ±0.04).
        check(abs(losses[0] - math.log(2)) < 1e-3, f"the first DPO loss is {losses[0]}, not ln 2 (policy = reference)")
        tail = losses[-len(losses) // 3:]
        check(sum(tail) / len(tail) < 0.95 * math.log(2),
              f"the DPO loss did not fall below 0.95 ln 2 over the last third: {tail}")
    else:
        # GRPO's loss is the advantage-weighted ratio: 0 while every completion of a group earns the
        # same reward (a random tiny model never says the sum), so only that it is finite is checked.
        check(all(math.isfinite(x) for x in losses), f"a GRPO loss is not finite: {losses}")


def main():
    work = tempfile.mkdtemp(prefix=f"wingspan-{FW}-{OBJECTIVE}-")
    env = dict(os.environ)
    env.update({"PATH": VENV_BIN + os.pathsep + env.get("PATH", ""), "XDG_DATA_HOME": os.path.join(work, "data"),
                "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                "HF_HOME": os.path.join(work, "hf"), "TOKENIZERS_PARALLELISM": "false",
                "OMP_NUM_THREADS": env.get("OMP_NUM_THREADS", "2"), "PYTHONUNBUFFERED": "1"})
    store = os.path.join(work, "data", "wingspan", "runs")

    chat = os.path.join(work, "chat.jsonl")   # the tiny model's tokenizer learns its words
    with open(os.path.join(SOURCE, "resources", "sample-data", "chat.jsonl")) as src, open(chat, "w") as dst:
        dst.writelines(src.readlines()[:48])
    data = os.path.join(work, "train-" + SAMPLE)
    with open(os.path.join(SOURCE, "resources", "sample-data", SAMPLE)) as src, open(data, "w") as dst:
        dst.writelines(src.readlines()[:48])
    model_dir = os.path.join(work, "tiny")
    r = run([MAKER_PY, os.path.join(SOURCE, "tests", "frameworks", "make_tiny_model.py"), model_dir, chat,
             "--arch", MODEL_ARCH[FW]], env=env)
    check(r.returncode == 0, f"make_tiny_model.py failed: {r.stderr[-3000:]}")
    tiny = json.loads(r.stdout.strip().splitlines()[-1])
    extra = [a.format(vocab=tiny["vocab"]) for a in TORCHTUNE_TINY] if FW == "torchtune" else []

    # --- trained to the end ---------------------------------------------------------------------
    recipe, command = write_recipe(work, model_dir, data, "recipe", STEPS)
    if FW == "torchtune":   # its checkpointer reads ./model, where the recipe's `tune download` puts it
        os.symlink(model_dir, os.path.join(recipe, "model"))
    t0 = time.time()
    r = run([WINGSPAN, "watch", "--plan", "predicted.json", "--label", "trained", "--", *command, *extra],
            cwd=recipe, env=env, timeout=RUN_TIMEOUT)
    print(r.stdout[-4000:], r.stderr[-6000:], sep="\n", flush=True)
    check(r.returncode == 0, f"the watched run exited {r.returncode}")
    run_dir = run_dir_of(store, "trained")
    check(run_dir, "no run recorded in the run history")
    ev = events_of(run_dir)
    kinds = [e.get("event") for e in ev]
    for k in ("hello", "predicted", "memory", "step", "done"):
        check(k in kinds, f"no {k} event in {run_dir}/events.jsonl")
    done = next(e for e in ev if e.get("event") == "done")
    check(done.get("reason") == "completed", f"done: {done}")
    losses = [e["loss"] for e in ev if e.get("event") == "step" and e.get("loss") is not None]
    check(len(losses) >= STEPS // 2, f"{len(losses)} steps with a loss, expected about {STEPS}")
    check_losses(losses)
    with open(os.path.join(run_dir, "result.json")) as f:
        check(json.load(f).get("status") == "completed", "result.json does not say completed")
    rss = [e.get("rss_peak_bytes", 0) for e in ev if e.get("event") == "memory"]
    check(max(rss) > 50_000_000, f"resident-set peak {max(rss)} B: a Python process with torch holds more")
    print(f"[{LABEL}] {len(losses)} steps in {time.time() - t0:.0f} s, loss {losses[0]:.3f} -> {losses[-1]:.3f}, "
          f"resident-set peak {max(rss) / 2**20:.0f} MiB", flush=True)

    r = run([WINGSPAN, "runs"], env=env)
    line = next((l for l in r.stdout.splitlines() if os.path.basename(run_dir) in l), "")
    print(line, flush=True)
    check("completed" in line and "process peak (resident set)" in line and " measured, " in line and
          "predicted" in line, f"`wingspan runs` does not show predicted beside measured: {r.stdout}")

    # --- SIGTERM after the first step -------------------------------------------------------------
    recipe, command = write_recipe(work, model_dir, data, "recipe-long", 100000)
    if FW == "torchtune":
        os.symlink(model_dir, os.path.join(recipe, "model"))
    cmd = [WINGSPAN, "watch", "--plan", "predicted.json", "--label", "stopped", "--", *command, *extra]
    print("+ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    p = subprocess.Popen(cmd, cwd=recipe, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + RUN_TIMEOUT
    stepped = False
    while time.time() < deadline and p.poll() is None and not stepped:
        time.sleep(0.5)
        d = run_dir_of(store, "stopped")
        stepped = bool(d) and any(e.get("event") == "step" for e in events_of(d))
    check(stepped, "the long run reported no step before it ended or timed out")
    p.send_signal(signal.SIGTERM)
    t_stop = time.time()
    try:
        out, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        fail("wingspan watch did not stop within 120 s of SIGTERM")
    print(out[-2000:], err[-3000:], sep="\n", flush=True)
    # watch exits with the command's status: 0 where the reporter wraps the training function
    # (hf-transformers, LLaMA-Factory: Reporter.run catches the interrupt), 130 (128 + SIGINT, the
    # signal watch forwards first) where the framework's own entry point sees the KeyboardInterrupt
    # (torchtune's `tune run`, the reporter being its metric logger). Anything else is not clean.
    check(p.returncode in (0, 130), f"wingspan watch exited {p.returncode} after SIGTERM")
    ev = events_of(run_dir_of(store, "stopped"))
    done = [e for e in ev if e.get("event") == "done"]
    check(done and done[-1].get("reason") == "interrupted", f"done after SIGTERM: {done}")
    steps = sum(1 for e in ev if e.get("event") == "step")
    check(steps < 1000, f"{steps} steps: the run went on after SIGTERM")
    print(f"[{LABEL}] stopped {time.time() - t_stop:.1f} s after SIGTERM, {steps} steps, done interrupted", flush=True)
    print(f"[{LABEL}] ok", flush=True)
    shutil.rmtree(work, ignore_errors=True)   # kept when a check fails, for a look


if __name__ == "__main__":
    main()

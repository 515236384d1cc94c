"""Drives each framework hook of a recipe's wingspan_reporter.py the way its framework calls it,
with stand-ins for the frameworks' base classes (transformers.TrainerCallback,
axolotl.integrations.base.BasePlugin; torchtune and mlx-lm need none: they call methods by
name), and checks the protocol lines that come out. Usage: hooks_check.py RECIPE_DIR"""
import io
import json
import os
import sys
import types

recipe = sys.argv[1]
sys.path.insert(0, recipe)

# Stand-ins with the names the hooks import.
transformers = types.ModuleType("transformers")
transformers.TrainerCallback = type("TrainerCallback", (), {})
sys.modules["transformers"] = transformers
for name in ("axolotl", "axolotl.integrations", "axolotl.integrations.base"):
    sys.modules[name] = types.ModuleType(name)
sys.modules["axolotl.integrations.base"].BasePlugin = type("BasePlugin", (), {})

import wingspan_reporter as wr  # noqa: E402

predicted = json.load(open(os.path.join(recipe, "predicted.json")))
setup = predicted["setup"]
per_step = setup["seq_len"] * setup["micro_batch"] * setup["grad_accum"]
failures = []


def expect(what, ok):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def events(stream):
    return [json.loads(line) for line in stream.getvalue().splitlines()]


State = types.SimpleNamespace
Args = types.SimpleNamespace(output_dir=os.path.join(recipe, "output"))

# transformers TrainerCallback (hf-transformers, unsloth, llama-factory)
out = io.StringIO()
rep = wr.Reporter(framework="hf-transformers", stream=out, sample_hz=50)
cb = wr.hf_callback(rep)
state = State(max_steps=3, global_step=0, num_input_tokens_seen=0)
cb.on_train_begin(Args, state, None)
for step in (1, 2, 3):
    cb.on_step_begin(Args, state, None)
    cb.on_pre_optimizer_step(Args, state, None)
    state.global_step = step
    state.num_input_tokens_seen += 700
    cb.on_step_end(Args, state, None)
    cb.on_log(Args, state, None, logs={"loss": 3.0 - step * 0.5, "learning_rate": 1e-4, "grad_norm": 1.0})
cb.on_log(Args, state, None, logs={"eval_loss": 1.25})
cb.on_train_end(Args, state, None)
rep.done("completed")
ev = events(out)
kinds = [e["event"] for e in ev]
expect("hello, predicted first", kinds[:2] == ["hello", "predicted"])
expect("hello names the framework and says external", ev[0]["framework"] == "hf-transformers" and ev[0]["external"])
expect("predicted carries the plan's total", ev[1]["total_bytes"] == predicted["total_bytes"])
steps = [e for e in ev if e["event"] == "step"]
expect("one step event per optimizer step", [s["step"] for s in steps] == [1, 2, 3])
expect("loss and lr from the logs", steps[1]["loss"] == 2.0 and steps[1]["lr"] == 1e-4)
expect("tokens from num_input_tokens_seen", [s["tokens"] for s in steps] == [700, 700, 700])
expect("total steps from the trainer state", steps[-1]["total_steps"] == 3)
expect("tokens/s after the first step", "tokens_per_s" in steps[1] and steps[1]["tokens_per_s"] > 0)
expect("eval loss", any(e["event"] == "eval" and e["loss"] == 1.25 for e in ev))
expect("memory sampled, last before done", kinds[-2] == "memory" and kinds[-1] == "done")
expect("done completed with steps", ev[-1]["reason"] == "completed" and ev[-1]["steps"] == 3)
expect("all lines are protocol v1", all(e["v"] == 1 and "t" in e for e in ev))

# Without num_input_tokens_seen the plan's tokens per step stand in.
out = io.StringIO()
rep = wr.Reporter(framework="hf-transformers", stream=out)
cb = wr.hf_callback(rep)
state = State(max_steps=1, global_step=1)
cb.on_log(Args, state, None, logs={"loss": 1.0})
rep.done("completed")
expect("tokens per step from the plan", [e for e in events(out) if e["event"] == "step"][0]["tokens"] == per_step)

# torchtune metric logger
out = io.StringIO()
sys.stdout, saved = out, sys.stdout
logger = wr.TorchtuneMetricLogger(log_dir="ignored")
sys.stdout = saved
logger.reporter.stream = out
logger.log_config({"dtype": "bf16"})
logger.log_dict({"loss": 2.5, "lr": 3e-4, "tokens_per_second_per_gpu": 1234.5, "peak_memory_active": 1.0}, step=1)
logger.log_dict({"loss": 2.25, "lr": 3e-4, "tokens_per_second_per_gpu": 1300.0}, step=2)
logger.close()
ev = events(out)
steps = [e for e in ev if e["event"] == "step"]
expect("torchtune: hello from torchtune", ev[0]["event"] == "hello" and ev[0]["framework"] == "torchtune")
expect("torchtune: steps with loss and tokens/s", [(s["step"], s["loss"], s["tokens_per_s"]) for s in steps] ==
       [(1, 2.5, 1234.5), (2, 2.25, 1300.0)])
expect("torchtune: close() ends the run", ev[-1]["event"] == "done" and ev[-1]["reason"] == "completed")

# mlx-lm TrainingCallback
out = io.StringIO()
rep = wr.Reporter(framework="mlx-lm", stream=out)
cb = wr.MLXCallback(rep, total_steps=20)
cb.on_val_loss_report({"iteration": 0, "val_loss": 3.0, "val_time": 0.1})
cb.on_train_loss_report({"iteration": 10, "train_loss": 2.0, "learning_rate": 1e-5, "iterations_per_second": 1.0,
                         "tokens_per_second": 900.0, "trained_tokens": 9000, "peak_memory": 1.5})
rep.done("completed")
ev = events(out)
step = [e for e in ev if e["event"] == "step"][0]
expect("mlx-lm: step from train_info", (step["step"], step["loss"], step["tokens_per_s"], step["total_steps"]) ==
       (10, 2.0, 900.0, 20))
expect("mlx-lm: validation loss", any(e["event"] == "eval" and e["loss"] == 3.0 for e in ev))

# Axolotl plugin: adds the callback after the trainer is built; train end is done
out = io.StringIO()
sys.stdout, saved = out, sys.stdout
plugin = wr.AxolotlReporterPlugin()
callbacks = plugin.add_callbacks_post_trainer(cfg={}, trainer=None)
sys.stdout = saved
state = State(max_steps=1, global_step=1, num_input_tokens_seen=50)
callbacks[0].on_log(Args, state, None, logs={"loss": 0.5})
callbacks[0].on_train_end(Args, state, None)
ev = events(out)
expect("axolotl: one callback", len(callbacks) == 1)
expect("axolotl: hello, step, done", ev[0]["framework"] == "axolotl" and
       [e["step"] for e in ev if e["event"] == "step"] == [1] and ev[-1]["event"] == "done")

if failures:
    sys.exit("%d failures" % len(failures))
print("all hooks speak the protocol")

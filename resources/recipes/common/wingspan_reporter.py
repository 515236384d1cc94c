"""Wingspan's memory reporter, shipped with every recipe.

Prints Wingspan's run protocol (version 1, docs/protocol.md in Wingspan) on stdout, one JSON
object per line: `hello`, `predicted` (from predicted.json beside this file), `memory` at least
ten times a second, `step` with loss and tokens/s, `log`, `error`, `done`. `wingspan watch`
reads these lines; everything else the framework prints goes to the run's log.

Memory comes from the framework's own allocator statistics, named apart as the protocol asks:
  allocated_bytes / peak_bytes        torch.cuda.memory_allocated / max_memory_allocated
                                      (MLX: mx.get_active_memory / mx.get_peak_memory)
  reserved_bytes / reserved_peak_bytes torch.cuda.memory_reserved / max_memory_reserved
                                      (MLX: active + cache memory)
  rss_bytes / rss_peak_bytes          what the process holds where it trains (held_source says
                                      which): NVML's bytes for this process on NVIDIA GPUs when
                                      pynvml is installed (else the device's used bytes), MLX's
                                      active + cache memory, or the process's resident set on CPU;
                                      host_rss_bytes is always the resident set

Hooks, one per framework family (each imports its framework only when used):
  hf_callback(reporter)              a transformers TrainerCallback (TRL, PEFT, Unsloth,
                                     LLaMA-Factory's run_exp(callbacks=...))
  AxolotlReporterPlugin              an Axolotl plugin adding that callback (plugins: [...])
  TorchtuneMetricLogger              torchtune's metric_logger component
  MLXCallback                        mlx_lm's TrainingCallback (on_train_loss_report)
No framework is needed to import this file: a plain PyTorch loop can call Reporter directly.
"""

import atexit
import json
import os
import signal
import sys
import threading
import time

PROTOCOL_VERSION = 1
_HERE = os.path.dirname(os.path.abspath(__file__))


def _rss_bytes():
    """Resident set size of this process (Linux /proc, else getrusage's peak as a stand-in)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        try:
            import resource

            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            return peak if sys.platform == "darwin" else peak * 1024
        except Exception:
            return 0


class _Nvml:
    """GPU bytes NVML attributes to this process, summed over the visible GPUs."""

    def __init__(self):
        self.ok = False
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nvml = pynvml
            self.handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
            self.ok = bool(self.handles)
        except Exception:
            self.ok = False

    def process_bytes(self, pid):
        if not self.ok:
            return None
        total, seen = 0, False
        for h in self.handles:
            try:
                procs = self.nvml.nvmlDeviceGetComputeRunningProcesses(h)
            except Exception:
                continue
            for p in procs:
                if p.pid == pid and p.usedGpuMemory is not None:
                    total += int(p.usedGpuMemory)
                    seen = True
        return total if seen else None


class Reporter:
    """Prints protocol events; samples memory on a background thread while the run lives."""

    def __init__(self, predicted_path=None, framework="unknown", sample_hz=10.0, stream=None, start=True):
        self.framework = framework
        self.stream = stream or sys.stdout
        self.t0 = time.monotonic()
        self.lock = threading.Lock()
        self.phase = "setup"
        self.step_no = 0
        self.total_steps = 0
        self.peak_rss = 0
        self.done_sent = False
        self.interrupted = False
        self.period = 1.0 / sample_hz
        self.nvml = _Nvml()
        self.mlx = None
        self.last_step_time = None
        self.last_tokens = None
        self.predicted = self._read_predicted(predicted_path or os.path.join(_HERE, "predicted.json"))
        self._stop = threading.Event()
        self._thread = None
        if start:
            self.start()

    # ---- events ----
    def emit(self, event, **fields):
        line = {"v": PROTOCOL_VERSION, "event": event, "t": round(time.monotonic() - self.t0, 4)}
        line.update(fields)
        text = json.dumps(line, separators=(",", ":"), default=float)
        with self.lock:
            self.stream.write(text + "\n")
            self.stream.flush()

    def start(self):
        import platform

        plan = self.predicted.get("setup", {}) if self.predicted else {}
        self.emit("hello", trainer=self.framework, version=self._framework_version(), framework=self.framework,
                  external=True, python=platform.python_version(), device=self._device(), pid=os.getpid(),
                  plan=plan, params=(self.predicted or {}).get("params", {}))
        if self.predicted:
            self.emit("predicted", components=self.predicted.get("components", {}),
                      component_maxima=self.predicted.get("component_maxima", {}),
                      peak_bytes=int(self.predicted.get("peak_allocated_bytes", 0)),
                      total_bytes=int(self.predicted.get("total_bytes", 0)),
                      framework=self.predicted.get("framework", ""))
        atexit.register(self._at_exit)
        self._thread = threading.Thread(target=self._sample_loop, name="wingspan-memory", daemon=True)
        self._thread.start()

    def set_phase(self, phase):
        self.phase = phase

    def memory(self):
        fields = {"step": self.step_no, "phase": self.phase, "components": {}}
        stats = self._allocator_stats()
        fields.update(stats)
        held, source = self._held_bytes(stats)
        self.peak_rss = max(self.peak_rss, held)
        fields["rss_bytes"] = held              # what the process holds on its device (see held_source)
        fields["rss_peak_bytes"] = self.peak_rss
        fields["held_source"] = source
        fields["host_rss_bytes"] = _rss_bytes()
        self.emit("memory", **fields)

    def _held_bytes(self, stats):
        """What the process holds where it trains: NVML's bytes for this process on NVIDIA GPUs
        (or, without pynvml, the device's used bytes from cudaMemGetInfo, which counts other
        processes too); MLX's active + cache memory on Apple silicon; else the resident set."""
        if self._uses_cuda():
            held = self.nvml.process_bytes(os.getpid())
            if held is not None:
                return held, "nvml_process"
            free, total = sys.modules["torch"].cuda.mem_get_info()
            return int(total - free), "cuda_device_used"
        if "reserved_bytes" in stats:
            return int(stats["reserved_bytes"]), "mlx_active_plus_cache"
        return _rss_bytes(), "process_rss"

    def step(self, step, loss, lr=None, tokens=None, total_steps=None, tokens_per_s=None):
        """One optimizer step finished. tokens: tokens in this step (tokens/s is derived when absent)."""
        now = time.monotonic()
        self.step_no = int(step)
        if total_steps:
            self.total_steps = int(total_steps)
        step_time = None if self.last_step_time is None else now - self.last_step_time
        self.last_step_time = now
        if tokens_per_s is None and tokens and step_time:
            tokens_per_s = tokens / step_time
        fields = {"step": self.step_no, "total_steps": self.total_steps, "loss": float(loss)}
        if lr is not None:
            fields["lr"] = float(lr)
        if tokens is not None:
            fields["tokens"] = int(tokens)
        if tokens_per_s is not None:
            fields["tokens_per_s"] = float(tokens_per_s)
        if step_time is not None:
            fields["step_time_s"] = round(step_time, 4)
        self.emit("step", **fields)

    def eval(self, step, loss):
        self.emit("eval", step=int(step), loss=float(loss))

    def checkpoint(self, step, path):
        self.emit("checkpoint", step=int(step), path=os.path.abspath(path))

    def log(self, message, level="info"):
        self.emit("log", level=level, message=str(message))

    def error(self, code, message, **extra):
        self.emit("error", code=code, message=str(message), **extra)

    def done(self, reason="completed", checkpoint=None):
        if self.done_sent:
            return
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=1.0)
        self.memory()
        self.done_sent = True
        fields = {"reason": reason, "steps": self.step_no, "rss_peak_bytes": self.peak_rss}
        stats = self._allocator_stats()
        if "peak_bytes" in stats:
            fields["peak_bytes"] = stats["peak_bytes"]
        if checkpoint:
            fields["checkpoint"] = os.path.abspath(checkpoint)
        self.emit("done", **fields)

    def run(self, train):
        """Runs train() and ends the protocol the way it ended: completed, interrupted (Ctrl-C /
        SIGTERM from `wingspan watch`, exit 0), out of memory or another error (exit 1)."""
        self.install_stop_handler()
        try:
            result = train()
        except KeyboardInterrupt:
            self.done("interrupted")
            # Ended here, not by the interpreter's teardown: interrupted mid-step, the framework's
            # threads and finalizers can crash it (seen: SIGSEGV, exit 139, in one of two SIGTERMed
            # transformers 5.25 + TRL 1.16 runs on torch 2.15's CPU, after `done` was out), which
            # would turn a clean stop into a crash. Nothing is left to save: train() has unwound.
            for stream in (self.stream, sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:
                    pass
            os._exit(0)
        except Exception as e:  # reported, then the exit status says it failed
            oom = type(e).__name__ in ("OutOfMemoryError",) or "out of memory" in str(e).lower()
            self.error("out_of_memory" if oom else "internal", "%s: %s" % (type(e).__name__, e))
            self.done("error")
            raise
        self.done("completed")
        return result

    def install_stop_handler(self):
        """SIGTERM (what `wingspan watch` and the window send to stop) behaves like Ctrl-C."""
        def stop(signum, frame):
            self.interrupted = True
            raise KeyboardInterrupt()

        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, stop)
            signal.signal(signal.SIGINT, stop)

    # ---- memory sources ----
    def use_mlx(self, mx):
        self.mlx = mx

    def _uses_cuda(self):
        torch = sys.modules.get("torch")
        return bool(torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized())

    def _allocator_stats(self):
        if self._uses_cuda():
            cuda = sys.modules["torch"].cuda
            return {"allocated_bytes": int(cuda.memory_allocated()), "peak_bytes": int(cuda.max_memory_allocated()),
                    "reserved_bytes": int(cuda.memory_reserved()),
                    "reserved_peak_bytes": int(cuda.max_memory_reserved())}
        mx = self.mlx or sys.modules.get("mlx.core")
        if mx is not None:
            get = lambda name: getattr(mx, name, None) or getattr(getattr(mx, "metal", None), name, None)
            try:
                active, peak, cache = get("get_active_memory")(), get("get_peak_memory")(), get("get_cache_memory")()
                return {"allocated_bytes": int(active), "peak_bytes": int(peak), "reserved_bytes": int(active + cache)}
            except Exception:
                return {}
        return {}   # CPU PyTorch keeps no allocator statistics: the process total (RSS) stands for them

    def _device(self):
        if self._uses_cuda():
            torch = sys.modules["torch"]
            return "cuda:%d %s" % (torch.cuda.current_device(), torch.cuda.get_device_name())
        if self.mlx is not None or "mlx.core" in sys.modules:
            return "mlx"
        return "cpu"

    def _framework_version(self):
        for name in {"hf-transformers": "trl", "unsloth": "unsloth", "torchtune": "torchtune", "mlx-lm": "mlx_lm",
                     "axolotl": "axolotl", "llama-factory": "llamafactory"}.get(self.framework, "torch"), "torch":
            module = sys.modules.get(name)
            if module is not None and hasattr(module, "__version__"):
                return "%s %s" % (name, module.__version__)
        return ""

    def _sample_loop(self):
        while not self._stop.wait(self.period):
            try:
                self.memory()
            except Exception as e:  # a sampler that fails says so once and stops
                self.log("memory sampling stopped: %s" % e, level="warning")
                return

    def _at_exit(self):
        if not self.done_sent:
            self.done("interrupted" if self.interrupted else "error")

    @staticmethod
    def _read_predicted(path):
        try:
            with open(path) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None


# ---------------------------------------------------------------- framework hooks ----

def _tokens_per_step():
    """Tokens one optimizer step trains on, from the plan (used when the framework counts none)."""
    try:
        with open(os.path.join(_HERE, "predicted.json")) as f:
            s = json.load(f)["setup"]
        return int(s["seq_len"]) * int(s["micro_batch"]) * int(s["grad_accum"])
    except Exception:
        return None


def hf_callback(reporter):
    """A transformers TrainerCallback that reports phases, steps and the end of training."""
    from transformers import TrainerCallback

    class WingspanCallback(TrainerCallback):
        def __init__(self):
            self.seen = 0
            self.fallback_tokens = _tokens_per_step()

        def on_train_begin(self, args, state, control, **kwargs):
            reporter.total_steps = state.max_steps

        def on_step_begin(self, args, state, control, **kwargs):
            reporter.set_phase("forward")

        def on_pre_optimizer_step(self, args, state, control, **kwargs):
            reporter.set_phase("optimizer")

        def on_step_end(self, args, state, control, **kwargs):
            reporter.set_phase("idle")

        def on_log(self, args, state, control, logs=None, **kwargs):
            logs = logs or {}
            if "loss" in logs:
                seen = getattr(state, "num_input_tokens_seen", 0) or 0
                tokens = seen - self.seen if seen > self.seen else self.fallback_tokens
                self.seen = max(self.seen, seen)
                reporter.step(state.global_step, logs["loss"], lr=logs.get("learning_rate"), tokens=tokens,
                              total_steps=state.max_steps)
            if "eval_loss" in logs:
                reporter.eval(state.global_step, logs["eval_loss"])

        def on_save(self, args, state, control, **kwargs):
            path = os.path.join(args.output_dir, "checkpoint-%d" % state.global_step)
            if os.path.isdir(path):
                reporter.checkpoint(state.global_step, path)

        def on_train_end(self, args, state, control, **kwargs):
            reporter.set_phase("idle")

    return WingspanCallback()


class TorchtuneMetricLogger:
    """torchtune's metric_logger component: the recipes call log_dict(payload, step) with loss,
    lr and tokens_per_second_per_gpu after each optimizer step, and close() at the end."""

    def __init__(self, log_dir=None, **kwargs):
        self.reporter = Reporter(framework="torchtune")
        self.reporter.install_stop_handler()
        self.reporter.set_phase("forward")

    def log_config(self, config):
        pass

    def log(self, name, data, step):
        self.log_dict({name: data}, step)

    def log_dict(self, payload, step):
        if "loss" in payload:
            tps = payload.get("tokens_per_second_per_gpu")
            tokens = _tokens_per_step()
            self.reporter.step(step, float(payload["loss"]), lr=payload.get("lr"), tokens=tokens,
                               tokens_per_s=float(tps) if tps is not None else None)

    def close(self):
        self.reporter.done("completed")

    def __del__(self):
        pass


class MLXCallback:
    """mlx_lm's TrainingCallback: on_train_loss_report(info) every steps_per_report iterations.
    mlx-lm's iterations are batches; grad_accum of them make one optimizer step, the protocol's step."""

    def __init__(self, reporter, total_steps=None, grad_accum=1):
        self.reporter = reporter
        self.accum = max(1, int(grad_accum or 1))
        self.reporter.total_steps = int(total_steps or 0) // self.accum
        self.reporter.set_phase("forward")

    def on_train_loss_report(self, info):
        self.reporter.step(-(-int(info["iteration"]) // self.accum), info["train_loss"], lr=info.get("learning_rate"),
                           tokens_per_s=info.get("tokens_per_second"))

    def on_val_loss_report(self, info):
        self.reporter.eval(-(-int(info["iteration"]) // self.accum), info["val_loss"])


def __getattr__(name):
    """AxolotlReporterPlugin resolves lazily: axolotl imports plugins by dotted path, and this
    file must import without axolotl installed."""
    if name != "AxolotlReporterPlugin":
        raise AttributeError(name)
    from axolotl.integrations.base import BasePlugin

    class AxolotlReporterPlugin(BasePlugin):
        reporter = None

        def add_callbacks_post_trainer(self, cfg, trainer):
            if AxolotlReporterPlugin.reporter is None:
                AxolotlReporterPlugin.reporter = Reporter(framework="axolotl")
            reporter = AxolotlReporterPlugin.reporter
            callback = hf_callback(reporter)
            original_end = callback.on_train_end

            def on_train_end(args, state, control, **kwargs):
                original_end(args, state, control, **kwargs)
                reporter.done("completed")

            callback.on_train_end = on_train_end
            return [callback]

    return AxolotlReporterPlugin

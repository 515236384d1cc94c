#!/usr/bin/env bash
# The trainer on a GPU machine, in one command (issue 12):
#
#   bench/device/check.sh
#
# 1. builds wingspan-train's CUDA flavour as CI does (./dev.sh cuda --build-only: the pinned venv's
#    CUDA PyTorch and the machine's nvcc, into build-cuda/), or against Torch_DIR / CMAKE_PREFIX_PATH
#    when set;
# 2. runs LoRA, QLoRA and full fine-tuning for ~20 steps on a SmolLM2-135M-shaped and a
#    TinyLlama-1.1B-shaped model with random weights, in bf16-mixed and fp16-mixed (bf16 only
#    where the GPU has it);
# 3. writes bench/results/device-<gpu>.md: predicted vs measured allocated peak, reserved peak,
#    NVML process bytes, tokens/s and GFLOP/s per run.
#
# Exit status: 0 when every run completed (or ran out of memory where the planner predicted
# it would not fit), 1 when a run failed, 2 when the build or the device is missing.
# Budget: under 8 minutes on one modern GPU (build included, with ccache or a warm build dir).
#
# Knobs (environment): DEVICE (auto), STEPS (20), SEQ (512), BATCH (4), MODELS
# ("smollm2-135m tinyllama-1.1b"), METHODS ("lora qlora full"), PRECISIONS
# ("bf16-mixed fp16-mixed"), RUN_TIMEOUT (150 s a run), WINGSPAN_TRAIN_BIN (skip the build),
# BUILD_DIR (build-device, for Torch_DIR / CMAKE_PREFIX_PATH builds), OUT (the report's path).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

DEVICE=${DEVICE:-auto}
STEPS=${STEPS:-20}
SEQ=${SEQ:-512}
BATCH=${BATCH:-4}
MODELS=${MODELS:-"smollm2-135m tinyllama-1.1b"}
METHODS=${METHODS:-"lora qlora full"}
PRECISIONS=${PRECISIONS:-"bf16-mixed fp16-mixed"}
RUN_TIMEOUT=${RUN_TIMEOUT:-150}
BUILD_DIR=${BUILD_DIR:-build-device}
started=$(date +%s)

say() { echo "check.sh: $*" >&2; }

# --- 1. build -------------------------------------------------------------------------------
# Exactly as CI builds the CUDA flavour: `./dev.sh cuda --build-only` (the pinned venv's CUDA
# PyTorch, scripts/requirements/frameworks.txt, with this machine's nvcc, into build-cuda/).
# Torch_DIR or CMAKE_PREFIX_PATH set: that libtorch instead (a pytorch.org download), into BUILD_DIR.
BIN=${WINGSPAN_TRAIN_BIN:-}
if [ -z "$BIN" ] && [ -z "${Torch_DIR:-}${CMAKE_PREFIX_PATH:-}" ]; then
  say "building as CI does: ./dev.sh cuda --build-only"
  WINGSPAN_CUDA_DIR=build-cuda ./dev.sh cuda --build-only >&2 || { say "build failed"; exit 2; }
  BIN=build-cuda/bin/wingspan-train
elif [ -z "$BIN" ]; then
  cmake_args=(-S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release
              -DWINGSPAN_BUILD_GUI=OFF -DWINGSPAN_BUILD_TESTS=OFF -DWINGSPAN_BUILD_BENCH=OFF)
  command -v ccache >/dev/null && cmake_args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  say "building against ${Torch_DIR:-$CMAKE_PREFIX_PATH}"
  cmake "${cmake_args[@]}" >&2 || { say "configure failed"; exit 2; }
  cmake --build "$BUILD_DIR" --target wingspan-train -j "$(nproc)" >&2 || { say "build failed"; exit 2; }
  BIN=$BUILD_DIR/bin/wingspan-train
fi
[ -x "$BIN" ] || { say "no wingspan-train at $BIN"; exit 2; }

# --- 2. the device --------------------------------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/wingspan-device-check.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
"$BIN" devices > "$WORK/devices.json"
python3 - "$WORK/devices.json" "$DEVICE" > "$WORK/device.env" <<'PY' || { say "device $DEVICE is not available here"; cat "$WORK/devices.json" >&2; exit 2; }
import json, re, sys
devices = json.load(open(sys.argv[1]))["devices"]
want = sys.argv[2]
def pick():
    if want == "auto":
        for t in ("cuda", "mps", "cpu"):
            for d in devices:
                if d["type"] == t:
                    return d
    t, _, i = want.partition(":")
    for d in devices:
        if d["type"] == t and d["index"] == int(i or 0):
            return d
    sys.exit(1)
d = pick()
slug = re.sub(r"[^a-z0-9]+", "-", d["name"].lower()).strip("-")
print(f'DEVICE_SPEC={d["type"]}' + (f':{d["index"]}' if d["type"] == "cuda" else ""))
print(f'DEVICE_NAME="{d["name"]}"')
print(f'DEVICE_SLUG={slug}')
print(f'DEVICE_BYTES={d["total_bytes"]}')
print(f'DEVICE_BF16={1 if d["bf16"] else 0}')
PY
# shellcheck disable=SC1091
. "$WORK/device.env"
OUT=${OUT:-bench/results/device-$DEVICE_SLUG.md}
say "device: $DEVICE_SPEC ($DEVICE_NAME), report: $OUT"

# --- 3. the models (config.json only: random weights) -------------------------------------
write_config() {   # name hidden intermediate layers heads kv_heads vocab tied
  mkdir -p "$WORK/$1"
  cat > "$WORK/$1/config.json" <<JSON
{"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":$2,"intermediate_size":$3,
 "num_hidden_layers":$4,"num_attention_heads":$5,"num_key_value_heads":$6,"vocab_size":$7,
 "max_position_embeddings":2048,"rms_norm_eps":1e-5,"rope_theta":10000.0,"tie_word_embeddings":$8,
 "hidden_act":"silu","torch_dtype":"bfloat16"}
JSON
}
write_config smollm2-135m 576 1536 30 9 3 49152 true      # HuggingFaceTB/SmolLM2-135M
write_config tinyllama-1.1b 2048 5632 22 32 4 32000 false  # TinyLlama/TinyLlama-1.1B

# --- 4. the runs ----------------------------------------------------------------------------
failed=0
: > "$WORK/runs.txt"
for model in $MODELS; do
  for method in $METHODS; do
    for precision in $PRECISIONS; do
      name="$model $method $precision"
      log="$WORK/run-$model-$method-$precision.jsonl"
      if [ "$precision" != "${precision#bf16}" ] && [ "$DEVICE_BF16" = 0 ] && [ "$DEVICE_SPEC" != cpu ]; then
        echo "$model|$method|$precision|skipped: no bf16 on this GPU|$log" >> "$WORK/runs.txt"
        continue
      fi
      say "$name"
      rc=0
      timeout "$RUN_TIMEOUT" "$BIN" --model "$WORK/$model" --method "$method" --precision "$precision" \
        --device "$DEVICE_SPEC" --steps "$STEPS" --seq "$SEQ" --batch "$BATCH" --lr 1e-4 \
        --sample-tokens 0 --eval-every 0 --eval-fraction 0 > "$log" 2> "$log.err" || rc=$?
      echo "$model|$method|$precision|$rc|$log" >> "$WORK/runs.txt"
    done
  done
done

# --- 5. the report --------------------------------------------------------------------------
mkdir -p "$(dirname "$OUT")"
python3 - "$WORK/runs.txt" "$OUT" "$DEVICE_NAME" "$DEVICE_SPEC" "$DEVICE_BYTES" "$STEPS" "$SEQ" "$BATCH" \
  "$(( $(date +%s) - started ))" "$BIN" <<'PY' || failed=1
import json, statistics, sys
runs_file, out, gpu, spec, total, steps, seq, batch, wall, binary = sys.argv[1:11]
gib = lambda b: "—" if b is None else f"{b / 2**30:.2f}"
rows, failures = [], 0
for line in open(runs_file):
    model, method, precision, rc, log = line.rstrip("\n").split("|")
    if rc.startswith("skipped"):
        rows.append([model, method, precision, rc] + ["—"] * 8)
        continue
    events = []
    for l in open(log):
        try:
            events.append(json.loads(l))
        except ValueError:
            pass
    first = lambda kind: next((e for e in events if e.get("event") == kind), None)
    hello, pred, done, err = first("hello"), first("predicted"), first("done"), first("error")
    steps_ev = [e for e in events if e.get("event") == "step"]
    status = "ok" if rc == "0" and done and done.get("reason") == "completed" else "FAILED"
    if status != "ok" and err and err.get("code") == "out_of_memory" and pred and pred["total_bytes"] > int(total):
        status = "out of memory, as predicted"
    elif status != "ok":
        failures += 1
        status = f"FAILED ({err['code'] + ': ' + err['message'][:80] if err else 'exit ' + rc})"
    tps = [e["tokens_per_s"] for e in steps_ev[3:] if not e.get("skipped")] or [e["tokens_per_s"] for e in steps_ev]
    tok_s = statistics.median(tps) if tps else None
    params = hello["params"]["total"] if hello else 0
    # Training FLOPs per token: 6N for a full fine-tune; LoRA/QLoRA skip the base weights'
    # gradients (4N); attention's sequence-squared term is left out.
    flops = (6 if method == "full" else 4) * params
    skipped = sum(1 for e in steps_ev if e.get("skipped"))
    rows.append([model, method, precision, status + (f", {skipped} skipped steps" if skipped else ""),
                 gib(pred and pred["peak_bytes"]), gib(done and done.get("peak_bytes")),
                 gib(pred and pred["total_bytes"]), gib(done and done.get("reserved_peak_bytes")),
                 gib(done and done.get("device_process_peak_bytes")),
                 "—" if tok_s is None else f"{tok_s:,.0f}",
                 "—" if tok_s is None else f"{tok_s * flops / 1e9:,.0f}",
                 (pred or {}).get("framework", "—")])
with open(out, "w") as f:
    f.write(f"# wingspan-train on {gpu} ({spec})\n\n")
    f.write(f"`bench/device/check.sh`: random-weight models, {steps} steps each, sequence {seq}, batch {batch}; "
            f"{wall} s in all (build included). Bytes in GiB. Predicted = the `predicted` event (the device's "
            "framework profile); allocated peak = `done.peak_bytes` (c10's reporting hook); reserved peak = "
            "the caching allocator's; NVML = the process's GPU memory as nvidia-smi shows it "
            "(context included), compared with the predicted total. tokens/s: median after three warm-up steps.\n\n")
    f.write("| model | method | precision | status | predicted peak | allocated peak | predicted total | "
            "reserved peak | NVML peak | tokens/s | GFLOP/s | profile |\n")
    f.write("|" + "---|" * 12 + "\n")
    for r in rows:
        f.write("| " + " | ".join(str(c) for c in r) + " |\n")
print(open(out).read())
sys.exit(1 if failures else 0)
PY
say "$(( $(date +%s) - started )) s"
exit $failed

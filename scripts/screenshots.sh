#!/usr/bin/env bash
# Retakes docs/'s screenshots of the window (every tab, serve mode) and of every dialog at
# 1280×720 and 1920×1080 (issue 32), each on its own Xvfb screen of that size.
#
# The window runs with a neutral sample home, /home/student, made for this and emptied of
# Wingspan's settings, runs and machines first: the dialogs show paths such as
# /home/student/wingspan-runs, never the temporary folder of whoever took them.
#
# The Run tab and Train ▶'s dialog need the trainer: build wingspan-train, or point
# WINGSPAN_TRAINER at one.
#
#   scripts/screenshots.sh [WINGSPAN_BINARY] [OUT_DIR]     (defaults: build/bin/wingspan docs)
set -euo pipefail
bin=$(realpath "${1:-build/bin/wingspan}")
out=$(realpath "${2:-docs}")
sample_home=/home/student
marker="$sample_home/.wingspan-sample-home"
if [[ -e "$sample_home" && ! -e "$marker" ]]; then
  echo "screenshots.sh: $sample_home exists and is not the sample home this script made; not touching it" >&2
  exit 1
fi
mkdir -p "$sample_home"
touch "$marker"
rm -rf "$sample_home/.config" "$sample_home/.local" "$sample_home/.cache" "$sample_home/wingspan-runs"

# Serve mode's view: the lessons' 8B served by llama.cpp at an 8,192-token context.
serve_plan="$sample_home/serve.wingspan.json"
cat >"$serve_plan" <<'EOF'
{"format": "wingspan-plan", "version": 1, "model": {"id": "llama-3.1-8b"},
 "setup": {"method": "serve", "seq_len": 8192, "serve_batch": 1},
 "machines": ["rtx-4090", "mac-studio-m3-ultra-96gb", "t4", "cpu-laptop-8gb"]}
EOF

shoot() {   # SIZE FILE ARGS...: one screenshot on a fresh screen of SIZE
  local size=$1 file=$2
  shift 2
  # Each shot from no saved settings: the serve plan's shot would otherwise reopen as the
  # last plan in every later shot (the 1920×1080 tabs showed serve mode).
  rm -rf "$sample_home/.config"
  HOME=$sample_home XDG_RUNTIME_DIR=$(mktemp -d) timeout 120 \
    xvfb-run -a -s "-screen 0 ${size}x24" "$bin" "$@" --screenshot "$file" 2>&1 | grep -v '^QStandardPaths' || true
  [[ -s "$file" ]] || { echo "screenshots.sh: no $file" >&2; exit 1; }
}

tabs=(window window-methods window-sizes window-which-machine window-run)
dialogs=(about-wingspan add-model-from-the-hub add-your-machine calibrate-from-my-runs explain-an-out-of-memory-message
         export-chart export-gguf-llama-cpp-ollama export-recipe export-table keyboard-shortcuts run-a-recipe train
         units-and-verdicts)
for size in 1280x720 1920x1080; do
  for i in "${!tabs[@]}"; do shoot "$size" "$out/${tabs[$i]}-$size.png" --tab "$i"; done
  shoot "$size" "$out/window-serve-llama-cpp-$size.png" "$serve_plan"
  for d in "${dialogs[@]}"; do
    HOME=$sample_home XDG_RUNTIME_DIR=$(mktemp -d) timeout 120 \
      xvfb-run -a -s "-screen 0 ${size}x24" "$bin" --screenshot-dialog "$d" "$out/dialog-$d-$size.png" 2>&1 |
      grep -v '^QStandardPaths' || true
  done
done
shoot 1600x1000 "$out/window-1600x1000.png"
cp "$out/window-1600x1000.png" "$out/screenshot.png"

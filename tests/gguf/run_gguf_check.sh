#!/bin/sh
# ctest's entry for the GGUF export check: runs check_gguf_export.py in the venv that has the
# gguf package and llama-cpp-python (scripts/requirements/gguf.txt), installed once by
# scripts/venv.sh as the framework checks' venvs are. Without PyPI and without that venv: SKIP
# (exit 77, venv.sh's one line), never a pass; in CI (WINGSPAN_REQUIRE_VENVS=1) a failure.
# Usage: run_gguf_check.sh VENV_ROOT WINGSPAN_TRAIN WORK_DIR GGUF_PROBE
root=$1 bin=$2 work=$3 probe=$4
src=$(cd "$(dirname "$0")/../.." && pwd)
py=$(WINGSPAN_VENV_ROOT="$root" "$src/scripts/venv.sh" gguf) || exit $?
rm -rf "$work"
exec "$py" "$(dirname "$0")/check_gguf_export.py" "$bin" "$work" "$probe"

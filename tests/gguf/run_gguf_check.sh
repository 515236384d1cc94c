#!/bin/sh
# ctest's entry for the GGUF checks: runs a check script (check_gguf_export.py, check_serve_memory.py)
# in the venv that has the gguf package and llama-cpp-python (scripts/requirements/gguf.txt),
# installed once by scripts/venv.sh as the framework checks' venvs are. Without PyPI and without
# that venv: SKIP (exit 77, venv.sh's one line), never a pass; in CI (WINGSPAN_REQUIRE_VENVS=1) a failure.
# Usage: run_gguf_check.sh VENV_ROOT SCRIPT WORK_DIR ARGS...   (the script gets ARGS then WORK_DIR)
root=$1 script=$2 work=$3
shift 3
src=$(cd "$(dirname "$0")/../.." && pwd)
py=$(WINGSPAN_VENV_ROOT="$root" "$src/scripts/venv.sh" gguf) || exit $?
rm -rf "$work"
exec "$py" "$(dirname "$0")/$script" "$@" "$work"

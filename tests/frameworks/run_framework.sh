#!/usr/bin/env bash
# run_framework.sh FW WINGSPAN_BIN [OBJECTIVE]: the framework's venv (installed once by scripts/venv.sh), then
# check_framework.py. Exit 77 (ctest SKIP) when a venv cannot be installed: no PyPI here.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
fw=$1 wingspan=$2 objective=${3:-sft}
case "$fw" in
  hf-transformers) env=frameworks ;;
  torchtune) env=torchtune ;;
  llama-factory) env=llamafactory ;;
  *) echo "run_framework.sh: unknown framework $fw" >&2; exit 2 ;;
esac
maker=$("$src/scripts/venv.sh" frameworks)   # transformers + tokenizers write the tiny model
py=$("$src/scripts/venv.sh" "$env")
exec "$maker" "$here/check_framework.py" "$fw" "$wingspan" "$(dirname "$py")" "$maker" "$src" "$objective"

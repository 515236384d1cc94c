#!/usr/bin/env bash
# run_trl_script.sh SCRIPT WINGSPAN_BIN: a check of tests/frameworks run with the frameworks venv's
# Python (installed once by scripts/venv.sh; exit 77, ctest SKIP, when it cannot be: no PyPI here).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
py=$("$src/scripts/venv.sh" frameworks)
exec env OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}" "$py" "$here/$1" "$2" "$src"

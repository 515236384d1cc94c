#!/usr/bin/env bash
# run_trl_script.sh SCRIPT WINGSPAN_BIN [ARGS...]: a check of tests/frameworks run with a pinned venv's
# Python (the frameworks venv, or WINGSPAN_CHECK_VENV's; installed once by scripts/venv.sh; exit 77,
# ctest SKIP, when it cannot be: no PyPI here). ARGS follow the script's own two arguments.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
py=$("$src/scripts/venv.sh" "${WINGSPAN_CHECK_VENV:-frameworks}")
exec env OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}" "$py" "$here/$1" "$2" "$src" "${@:3}"

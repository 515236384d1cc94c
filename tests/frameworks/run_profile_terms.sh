#!/usr/bin/env bash
# run_profile_terms.sh WINGSPAN_BIN: the hf-transformers profile checked term by term against a real
# transformers + PEFT step on the CPU (profile_terms.py) in the pinned frameworks venv. Exit 77
# (ctest SKIP) when the venv cannot be installed: no PyPI here.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
py=$("$src/scripts/venv.sh" frameworks)
exec "$py" "$here/profile_terms.py" --wingspan "$1" --threads 2

#!/usr/bin/env bash
# A pinned Python environment for the checks that run other frameworks for real (issue 28):
#
#   scripts/venv.sh ENV        creates or updates build/venv-ENV/ from scripts/requirements/ENV.txt
#                              and prints the venv's python on stdout (the only line there)
#
# Idempotent and offline-safe once installed: the venv keeps a stamp, the SHA-256 of the
# requirements file and the interpreter's version; when it matches nothing is downloaded and the
# network is never touched. Any ENV with a requirements file works (frameworks, llamafactory, gguf, ...).
#
# A requirements file may set environment variables for its own pip install, one a line:
#   # venv.sh env: CMAKE_ARGS=-DGGML_CUDA=OFF
# (source packages such as llama-cpp-python read their build options from the environment).
#
# Exit status: 0 ready; 77 skipped: PyPI cannot be reached and the venv is missing or stale (one
# "venv.sh: skipped: cannot reach PyPI" line on stderr; ctest turns 77 into SKIP through
# SKIP_RETURN_CODE, never into a pass); 2 usage or an unknown ENV; 1 the install failed.
#
# Environment: WINGSPAN_REQUIRE_VENVS=1 (CI: no PyPI is a failure, exit 1, not a skip), WINGSPAN_VENV_ROOT (the folder holding venv-ENV/, default build/ of the checkout),
# WINGSPAN_VENV_PYTHON (the interpreter to build the venv from, default Debian's /usr/bin/python3),
# PIP_INDEX_URL (a mirror; its host is the one probed).
set -euo pipefail
readonly SKIP=77
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")

say() { echo "venv.sh: $*" >&2; }

[ $# -eq 1 ] || { say "usage: scripts/venv.sh ENV (one of: $(cd "$here/requirements" && ls -- *.txt | sed 's/\.txt$//' | xargs))"; exit 2; }
env_name=$1
case "$env_name" in
  *[!A-Za-z0-9_-]*|"") say "'$env_name' is not an environment name (letters, digits, - and _)"; exit 2 ;;
esac
req="$here/requirements/$env_name.txt"
[ -f "$req" ] || { say "no requirements file $req"; exit 2; }

venv_root=${WINGSPAN_VENV_ROOT:-$root/build}
venv="$venv_root/venv-$env_name"
base_python=${WINGSPAN_VENV_PYTHON:-/usr/bin/python3}
[ -x "$base_python" ] || base_python=$(command -v python3) || { say "no python3"; exit 2; }
mkdir -p "$venv_root"

stamp_of() {
  { sha256sum < "$req" | cut -d' ' -f1; "$base_python" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1
}
want=$(stamp_of)
ready() { [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.wingspan-stamp" 2>/dev/null)" = "$want" ]; }

if ready; then echo "$venv/bin/python"; exit 0; fi

# One installer at a time: ctest runs several suites at once, each asking for the same venv.
exec 9> "$venv_root/.venv-$env_name.lock"
flock 9
if ready; then echo "$venv/bin/python"; exit 0; fi

# PyPI (or the configured index) within a few seconds, else skip: a missing network is not a failure
# of the code under test, and must not read as a pass either.
index=${PIP_INDEX_URL:-https://pypi.org/simple}
if ! "$base_python" - "$index" <<'PY' 2>/dev/null
import sys, urllib.request
url = sys.argv[1].rstrip("/") + "/pip/"
urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=8)
PY
then
  say "skipped: cannot reach PyPI ($index) to install scripts/requirements/$env_name.txt into $venv"
  # CI reaches PyPI by definition: there a skip is a failure (.ci/run sets this).
  [ "${WINGSPAN_REQUIRE_VENVS:-0}" = 1 ] && { say "WINGSPAN_REQUIRE_VENVS=1: failing instead"; exit 1; }
  exit $SKIP
fi

say "installing scripts/requirements/$env_name.txt into $venv (once; later runs reuse it)"
# A venv with the CUDA PyTorch takes up to 6.6 GB before venv_dedupe.sh shares it, plus pip's cache
# of the wheels (3.5 GB the first time): say so up front, so an ENOSPC further down has its cause.
free_kb=$(df -Pk "$venv_root" | awk 'NR == 2 {print $4}')
[ "${free_kb:-0}" -ge $((10 * 1024 * 1024)) ] ||
  say "warning: $((${free_kb:-0} / 1024)) MiB free on $venv_root; a venv with PyTorch may need up to 10 GiB while it installs"
# From scratch whenever the file changed: the venv then holds exactly what the file says, with
# nothing left from an earlier version (a left-over old torchao breaks PEFT's import). pip's cache
# keeps the wheels, so a rebuild downloads nothing it already has.
rm -rf "$venv"
"$base_python" -m venv "$venv" >&2
while IFS= read -r line; do
  if [[ $line =~ ^#\ venv\.sh\ env:\ ([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]]; then
    export "${BASH_REMATCH[1]}=${BASH_REMATCH[2]}"
  fi
done < "$req"
# --no-deps is not used: the file pins the whole closure (pip check below proves it), so pip
# resolves to exactly those versions and fails loudly when one is missing from the index.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" >&2 ||
  { say "pip install -r $req failed"; exit 1; }
"$venv/bin/python" -m pip check >&2 || say "warning: pip check reports conflicts in $venv"
echo "$want" > "$venv/.wingspan-stamp"
# The venvs pin the same PyTorch: share its 5.7 GB between them instead of copying it per venv.
"$here/venv_dedupe.sh" "$venv_root" || say "warning: could not share files between the venvs in $venv_root"
echo "$venv/bin/python"

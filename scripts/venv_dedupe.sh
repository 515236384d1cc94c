#!/usr/bin/env bash
# Shares identical files between the finished venvs under ROOT as hard links:
#
#   scripts/venv_dedupe.sh ROOT      (scripts/venv.sh runs it after each install)
#
# Why: each framework venv pins the same CUDA PyTorch wheel and its nvidia libraries, about 5.7 GB
# of identical files per venv; three venvs took 18.5 GB, and a CI machine with less free disk
# failed its installs with ENOSPC. Linked, the three take about 7 GB.
# Safe because nothing edits a venv's files in place: pip uninstalls by unlinking and writes new
# files, and scripts/venv.sh rebuilds a venv from scratch (rm -rf) when its requirements change.
# Only venvs that finished installing (their .wingspan-stamp exists) are touched, so a venv another
# venv.sh is still writing is never read half-written. util-linux's hardlink compares contents
# byte for byte; files must also share their name, and small files are left alone (not worth it).
set -euo pipefail
[ $# -eq 1 ] && [ -d "$1" ] || { echo "usage: scripts/venv_dedupe.sh ROOT (a folder holding venv-*/)" >&2; exit 2; }
command -v hardlink >/dev/null || { echo "venv_dedupe.sh: no hardlink (util-linux); venvs stay unshared" >&2; exit 0; }
dirs=()
for venv in "$1"/venv-*/; do
  [ -f "$venv/.wingspan-stamp" ] && [ -d "$venv/lib" ] && dirs+=("${venv%/}/lib")
done
[ ${#dirs[@]} -ge 2 ] || exit 0
before=$(du -sk "${dirs[@]}" | awk '{s += $1} END {print s}')
hardlink --quiet --content --respect-name --minimum-size 64K "${dirs[@]}"
after=$(du -sk "${dirs[@]}" | awk '{s += $1} END {print s}')
echo "venv_dedupe.sh: ${#dirs[@]} venvs share identical files: $((before / 1024)) MiB -> $((after / 1024)) MiB on disk" >&2

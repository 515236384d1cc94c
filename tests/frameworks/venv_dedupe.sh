#!/usr/bin/env bash
# scripts/venv_dedupe.sh on three small venvs: the finished two share their identical file as one
# inode, a file that differs stays its own, the unfinished venv (no stamp: still being installed)
# is never touched, and every file still reads back byte for byte.
set -uo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
inode() { stat -c %i "$1"; }

lib=lib/python3.11/site-packages/torch/lib
for v in a b c; do mkdir -p "$root/venv-$v/$lib"; done
head -c 300000 /dev/urandom > "$root/shared.bin"
head -c 300000 /dev/urandom > "$root/other.bin"
for v in a b c; do cp "$root/shared.bin" "$root/venv-$v/$lib/libtorch_cpu.so"; done
cp "$root/shared.bin" "$root/venv-a/$lib/libdiffers.so"
cp "$root/other.bin" "$root/venv-b/$lib/libdiffers.so"
touch "$root/venv-a/.wingspan-stamp" "$root/venv-b/.wingspan-stamp"   # venv-c is unfinished

"$src/scripts/venv_dedupe.sh" "$root" 2>"$root/log" || fail "exit $?: $(cat "$root/log")"
[ "$(inode "$root/venv-a/$lib/libtorch_cpu.so")" = "$(inode "$root/venv-b/$lib/libtorch_cpu.so")" ] ||
  fail "identical files of two finished venvs were not linked"
[ "$(stat -c %h "$root/venv-c/$lib/libtorch_cpu.so")" = 1 ] || fail "the unfinished venv-c was touched"
[ "$(inode "$root/venv-a/$lib/libdiffers.so")" != "$(inode "$root/venv-b/$lib/libdiffers.so")" ] ||
  fail "files with different contents were linked"
cmp -s "$root/shared.bin" "$root/venv-b/$lib/libtorch_cpu.so" || fail "a linked file changed its contents"
cmp -s "$root/other.bin" "$root/venv-b/$lib/libdiffers.so" || fail "venv-b's own file changed"
grep -q '2 venvs share identical files' "$root/log" || fail "no summary line: $(cat "$root/log")"

"$src/scripts/venv_dedupe.sh" "$root/no-such-folder" 2>/dev/null; rc=$?
[ $rc -eq 2 ] || fail "a missing ROOT: exit $rc, expected 2"
echo "venv_dedupe.sh: 2 finished venvs linked, different and unfinished files left alone"

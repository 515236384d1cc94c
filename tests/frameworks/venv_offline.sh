#!/usr/bin/env bash
# scripts/venv.sh without PyPI (an index on a closed loopback port) and without the venv: one
# "skipped: cannot reach PyPI" line and exit 77 (ctest's SKIP), never 0; with
# WINGSPAN_REQUIRE_VENVS=1 (CI) exit 1; an unknown or path-like ENV is a usage error (2), and
# nothing is created for any of them.
set -uo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
export WINGSPAN_VENV_ROOT=$root PIP_INDEX_URL=http://127.0.0.1:9/simple
unset WINGSPAN_REQUIRE_VENVS   # CI exports it; the skip case below is a user's machine without it
fail() { echo "FAIL: $*"; exit 1; }

err=$("$src/scripts/venv.sh" frameworks 2>&1 >/dev/null); rc=$?
[ $rc -eq 77 ] || fail "offline: exit $rc, expected 77 ($err)"
[ "$(grep -c 'venv.sh: skipped: cannot reach PyPI' <<<"$err")" -eq 1 ] || fail "offline: no single skip line: $err"
[ ! -e "$root/venv-frameworks" ] || fail "offline: a venv folder was left behind"

WINGSPAN_REQUIRE_VENVS=1 "$src/scripts/venv.sh" frameworks >/dev/null 2>&1; rc=$?
[ $rc -eq 1 ] || fail "offline with WINGSPAN_REQUIRE_VENVS=1: exit $rc, expected 1"

for bad in no-such-env ../frameworks ''; do
  "$src/scripts/venv.sh" "$bad" >/dev/null 2>&1; rc=$?
  [ $rc -eq 2 ] || fail "ENV '$bad': exit $rc, expected 2"
done
[ -z "$(ls -A "$root" | grep -v '^\.venv-.*\.lock$')" ] || fail "something was created in $root: $(ls -A "$root")"
echo "venv.sh offline: skip 77, CI 1, bad names 2"

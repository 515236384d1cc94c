#!/bin/sh
# ctest's entry for the GGUF export check: runs check_gguf_export.py in the venv that has the
# gguf package and llama-cpp-python (scripts/requirements/gguf.txt), or SKIPs (exit 77) with one
# line saying how to make that venv. Usage: run_gguf_check.sh VENV WINGSPAN_TRAIN WORK_DIR GGUF_PROBE
venv=$1 bin=$2 work=$3 probe=$4
if ! "$venv/bin/python" -c "import gguf, llama_cpp, jinja2, numpy" 2>/dev/null; then
    echo "SKIP: no llama.cpp to check against: $venv lacks gguf/llama-cpp-python (build it: scripts/venv.sh gguf, or python3 -m venv $venv && $venv/bin/pip install -r scripts/requirements/gguf.txt)"
    exit 77
fi
rm -rf "$work"
exec "$venv/bin/python" "$(dirname "$0")/check_gguf_export.py" "$bin" "$work" "$probe"

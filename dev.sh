#!/usr/bin/env bash
# Wingspan's two entry points on a fresh Debian 12 machine:
#   ./dev.sh run    installs what is missing, builds (Release) and starts the planner
#   ./dev.sh test   same set-up, then the whole test suite with ctest
#   ./dev.sh sanitize   the trainer, core and the suites that exercise signals, checkpoints,
#                       parsing and the distributed sync, built with ASan+UBSan (build-sanitize/)
#   ./dev.sh cuda   wingspan-train's CUDA flavour against the pinned venv's CUDA PyTorch
#                   (scripts/venv.sh frameworks) with the machine's nvcc (build-cuda/), and the
#                   trainer's CPU suites run with that binary; no GPU needed
#                   (--build-only: build-cuda/bin/wingspan-train alone, as bench/device/check.sh does)
# Both are idempotent: nothing is installed twice and an unchanged tree rebuilds in seconds.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

BUILD_DIR=${WINGSPAN_BUILD_DIR:-build}
JOBS=${WINGSPAN_JOBS:-$(nproc)}

# Debian 12 packages: toolchain, Qt 6 (Widgets, Charts, Svg, Test; Charts needs Qt OpenGL's
# CMake files, which qt6-base-dev only recommends), nlohmann_json, libcurl, libtorch with
# OpenBLAS (without it libtorch falls back to the reference BLAS and trains about 20 times
# slower), PCRE2 and ICU (Unicode normalization) for the tokenizer, Xvfb for looking at the GUI headless,
# Python with PyYAML and PyTorch for the recipe tests (tests/recipes: the recipes' Python compiles,
# their YAML parses, the memory reporter runs on a CPU PyTorch loop).
PACKAGES=(
  build-essential cmake ninja-build pkg-config ccache
  qt6-base-dev qt6-charts-dev qt6-svg-dev libqt6opengl6-dev libgl-dev libvulkan-dev
  nlohmann-json3-dev libcurl4-openssl-dev libpcre2-dev libicu-dev libyaml-cpp-dev
  libtorch-dev libgloo-dev libopenblas0-pthread
  xvfb xauth
  python3 python3-yaml python3-torch
)

install_missing() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "dev.sh: installing ${missing[*]}" >&2
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# Paths below the checkout are hashed relative to it, so a second clone (CI's) reuses the cache.
export CCACHE_BASEDIR="$PWD"

# configure DIR [cmake options]: once, Release, ccache when present.
configure() {
  local dir=$1
  shift
  local launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  if [ ! -f "$dir/build.ninja" ]; then
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "$@"
  fi
}

build() {
  configure "$BUILD_DIR"
  cmake --build "$BUILD_DIR" -j "$JOBS"
}

# The suites run under the sanitizers: signals and checkpoints (stop storm, reliability),
# hostile model files and adapters, the distributed sync, and the parsers' fuzzers.
SANITIZE_TESTS=(test_stop_storm test_reliability_trainer test_reliability_trainer_hostile test_trainer_hostile
                test_trainer_distributed fuzz_config fuzz_safetensors_header fuzz_run_events fuzz_run_record
                fuzz_tokenizer)

sanitize() {
  local dir=${WINGSPAN_SANITIZE_DIR:-build-sanitize}
  configure "$dir" -DWINGSPAN_SANITIZE=ON -DWINGSPAN_BUILD_BENCH=OFF
  cmake --build "$dir" -j "$JOBS" --target wingspan-train "${SANITIZE_TESTS[@]}"
  # libtorch and Qt are not instrumented: their one-time allocations are not leaks of ours, and
  # protobuf's duplicate registrations are not our ODR violations.
  export ASAN_OPTIONS=detect_leaks=0:detect_odr_violation=0:alloc_dealloc_mismatch=0:abort_on_error=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  export QT_QPA_PLATFORM=offscreen
  local regex
  regex="^($(IFS='|'; echo "${SANITIZE_TESTS[*]}"))\$"
  ctest --test-dir "$dir" --output-on-failure -j "$JOBS" -R "$regex"
}

# The CUDA flavour (issue 28). Three traps, each seen here with torch 2.15 and nvcc 13.0:
# - CMAKE_PREFIX_PATH is the torch package folder itself: given its share/cmake, TorchConfig
#   finds Debian's libtorch.so first and the binary mixes 1.13 and 2.15 (it aborts at start);
# - TORCH_CUDA_ARCH_LIST is set: without a GPU torch's CMake detects the architecture with a test
#   build, which fails under our C++20 flags;
# - -rpath-link to the wheel's nvidia/*/lib: libtorch_cuda's NCCL is the wheel's, newer than
#   /usr/local/cuda's (else undefined ncclSignal at link time).
# Exit status 77 when the venv cannot be installed (no PyPI): skipped, said on one line.
cuda() {
  local dir=${WINGSPAN_CUDA_DIR:-build-cuda} py rc=0
  py=$(scripts/venv.sh frameworks) || rc=$?
  if [ "$rc" -ne 0 ]; then
    [ "$rc" -eq 77 ] && echo "dev.sh cuda: skipped: the CUDA PyTorch venv is not installed (see the line above)" >&2
    return "$rc"
  fi
  local torch_pkg site nvcc
  torch_pkg=$("$py" -c 'import os, torch; print(os.path.dirname(torch.__file__))')
  site=$(dirname "$torch_pkg")
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  [ -x "$nvcc" ] || { echo "dev.sh cuda: no nvcc (the CUDA toolkit) on PATH or in /usr/local/cuda" >&2; return 2; }
  local rpath_link
  rpath_link=$(printf '%s:' "$site"/nvidia/*/lib)
  export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-8.0;8.9;9.0}
  configure "$dir" -DCMAKE_PREFIX_PATH="$torch_pkg" -DCMAKE_CUDA_COMPILER="$nvcc" \
    -DWINGSPAN_BUILD_GUI=OFF -DWINGSPAN_BUILD_BENCH=OFF \
    -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath-link,${rpath_link%:}"
  # The trainer and its suites only (the planner's suites are the same code as in build/);
  # --build-only: the binary alone (bench/device/check.sh on a GPU machine).
  local targets=()
  local build_only=0
  [ "${1:-}" = --build-only ] && { build_only=1; shift; }
  [ $build_only = 1 ] || mapfile -t targets < <(ctest --test-dir "$dir" -N -L trainer | sed -n 's/^ *Test *#[0-9]*: //p')
  cmake --build "$dir" -j "$JOBS" --target wingspan-train "${targets[@]}"
  # The CUDA flavour, not a CPU libtorch found first: the binary needs libtorch_cuda.
  # (ldd's output captured first: under pipefail, grep -q leaving early could end ldd with SIGPIPE.)
  local linked
  linked=$(ldd "$dir/bin/wingspan-train")
  grep -q 'libtorch_cuda\.so => '"$torch_pkg" <<<"$linked" ||
    { echo "dev.sh cuda: $dir/bin/wingspan-train does not link $torch_pkg/lib/libtorch_cuda.so" >&2; return 1; }
  [ $build_only = 1 ] && return 0
  export QT_QPA_PLATFORM=offscreen
  ctest --test-dir "$dir" --output-on-failure -j "$JOBS" -L trainer "$@"
}

case "${1:-}" in
  run)
    shift
    install_missing
    build
    exec "$BUILD_DIR/bin/wingspan" "$@"
    ;;
  test)
    shift
    install_missing
    build
    export QT_QPA_PLATFORM=offscreen
    exec ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" "$@"
    ;;
  sanitize)
    shift
    install_missing
    sanitize
    ;;
  cuda)
    shift
    install_missing
    cuda "$@"
    ;;
  *)
    echo "usage: ./dev.sh run [wingspan args]   |   ./dev.sh test [ctest args]   |   ./dev.sh sanitize   |   ./dev.sh cuda [ctest args]" >&2
    exit 2
    ;;
esac

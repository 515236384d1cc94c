#!/usr/bin/env bash
# Wingspan's two entry points on a fresh Debian 12 machine:
#   ./dev.sh run    installs what is missing, builds (Release) and starts the planner
#   ./dev.sh test   same set-up, then the whole test suite with ctest
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
  nlohmann-json3-dev libcurl4-openssl-dev libpcre2-dev libicu-dev
  libtorch-dev libgloo-dev libopenblas0-pthread
  xvfb xauth
  python3 python3-yaml python3-torch
)

install_missing() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "dev.sh: installing ${missing[*]}" >&2
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

build() {
  local launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}"
  fi
  cmake --build "$BUILD_DIR" -j "$JOBS"
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
  *)
    echo "usage: ./dev.sh run [wingspan args]   |   ./dev.sh test [ctest args]" >&2
    exit 2
    ;;
esac

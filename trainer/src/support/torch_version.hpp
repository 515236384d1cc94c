#pragma once
// The libtorch version this build compiles against, for the few API differences between
// 1.13 (Debian's) and 2.x (CUDA downloads, Python wheels): guarded where they are, never copied.
#include <torch/csrc/api/include/torch/version.h>

#define WINGSPAN_TORCH_AT_LEAST(major, minor) \
    (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

"""llama-cpp-python with the weights kept in their file layout: no extra buffer types.

On a CPU with AMX (or another repacking kernel set), llama.cpp copies the quantized weights it can
into an extra buffer in its own layout ("AMX model buffer size = ...", beside the mapped file), so
its printed model buffers no longer are the file's tensors. The planner counts the file's tensors,
as a GPU or a CPU without those kernels loads them. The checks here compare against that layout on
every CPU, with llama_model_params.use_extra_bufts off (llama.cpp's `--no-repack`).
Import this module before creating a Llama; it patches the defaults llama_cpp.Llama starts from.
"""
import llama_cpp
import llama_cpp.llama_cpp as _lib

_default_params = _lib.llama_model_default_params


def _plain_params():
    params = _default_params()
    params.use_extra_bufts = False
    return params


_lib.llama_model_default_params = _plain_params
Llama = llama_cpp.Llama

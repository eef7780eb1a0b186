# llama-cpp-python loads llama.cpp through ctypes from llama_cpp/lib, next to its own
# files, so the libraries must land in that folder of the bundle.
#
# collect_dynamic_libs finds the unversioned names (libllama.so, libggml.so, ...).
# llama_cpp opens libllama.so and libggml.so by those names; the other ggml
# libraries are reached through their sonames (libggml-base.so.0, libggml-cpu.so.0),
# which PyInstaller's dependency analysis adds beside them, so their unversioned
# copies (pip installs copies, not links) are left out.  The multimodal library
# (libmtmd) is left out too: Lumen uses no image models.  On Windows every DLL stays.
import os

from PyInstaller.utils.hooks import collect_dynamic_libs

_REACHED_BY_SONAME = {"libggml-base.so", "libggml-cpu.so"}


def _wanted(name: str) -> bool:
    return "mtmd" not in name and name not in _REACHED_BY_SONAME


binaries = [(source, dest) for source, dest in collect_dynamic_libs("llama_cpp")
            if _wanted(os.path.basename(source))]

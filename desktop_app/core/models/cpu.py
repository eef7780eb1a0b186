"""Which CPU instructions the installed llama.cpp was compiled for, and whether this CPU
has them.

`make install` and the bundle compile llama.cpp for a fixed level
(packaging/install_llama.sh): `portable` (AVX2, the default), `baseline` (any x86-64)
or `native` (the build machine's CPU).  A build that uses an instruction this CPU lacks
stops the process with "Illegal instruction" at the first generation; checking first
turns that into a message with a fix.  A build with llama.cpp's AMX kernels crashes on
CPUs that have AMX (upstream llama.cpp issue 20824): Lumen then loads models without
the AMX weight repacking (see runtime.LlamaModel).
"""

from __future__ import annotations

import functools
import importlib.util
import platform
import re
from dataclasses import dataclass
from pathlib import Path

# llama.cpp's names for its compiled-in instructions (llama_print_system_info) and the
# flag Linux shows for each in /proc/cpuinfo.
_CPUINFO_FLAG = {
    "SSE3": "pni", "SSSE3": "ssse3", "AVX": "avx", "AVX2": "avx2", "F16C": "f16c",
    "FMA": "fma", "BMI2": "bmi2", "AVX_VNNI": "avx_vnni", "AVX512": "avx512f",
    "AVX512_VBMI": "avx512vbmi", "AVX512_VNNI": "avx512_vnni", "AVX512_BF16": "avx512_bf16",
    "AMX_INT8": "amx_int8",
}
# Compiled-in features that are not instructions.
_NOT_INSTRUCTIONS = {"LLAMAFILE", "OPENMP", "REPACK", "ACCELERATE", "KLEIDIAI", "MATMUL_INT8"}
AMX_FEATURE = "AMX_INT8"
LEVEL_FILE = "LUMEN_LLAMA_LEVEL"


@dataclass(frozen=True)
class LlamaBuild:
    level: str                       # portable, baseline, native, or "unknown"
    instructions: tuple[str, ...]    # compiled-in CPU instructions, llama.cpp's names
    cpu_flags: frozenset[str] | None  # this CPU's flags (None where they cannot be read)

    @property
    def missing(self) -> tuple[str, ...]:
        """Instructions the build uses that this CPU lacks (empty when unknown)."""
        if self.cpu_flags is None:
            return ()
        return tuple(name for name in self.instructions
                     if name in _CPUINFO_FLAG and _CPUINFO_FLAG[name] not in self.cpu_flags)

    @property
    def has_amx_kernels(self) -> bool:
        return AMX_FEATURE in self.instructions

    @property
    def cpu_has_amx(self) -> bool:
        return bool(self.cpu_flags) and "amx_int8" in self.cpu_flags

    @property
    def avoid_amx_repacking(self) -> bool:
        """Load models without llama.cpp's extra buffer types (its AMX repacking)."""
        return self.has_amx_kernels and self.cpu_has_amx

    def describe(self) -> str:
        names = ", ".join(self.instructions) or "no SIMD instructions"
        return f"{self.level} build: {names}"

    def to_dict(self) -> dict:
        return {"level": self.level, "instructions": list(self.instructions),
                "missing": list(self.missing), "amx_kernels": self.has_amx_kernels,
                "cpu_has_amx": self.cpu_has_amx, "cpu": cpu_name()}


def parse_system_info(text: str) -> tuple[str, ...]:
    """The CPU instructions in llama_print_system_info()'s text, in its order."""
    found: list[str] = []
    for part in text.replace("\n", "|").split("|"):
        if "=" not in part:
            continue
        name, _, value = part.rpartition("=")
        name = name.split(":")[-1].strip()
        if value.strip() == "1" and name and name not in _NOT_INSTRUCTIONS and name not in found:
            found.append(name)
    return tuple(found)


def parse_backends(text: str) -> tuple[str, ...]:
    """The backends in llama_print_system_info()'s text ("CPU : AVX2 = 1 | CUDA : ARCHS =
    890 | ..." -> ("CPU", "CUDA")): each names itself before " : "."""
    return tuple(dict.fromkeys(re.findall(r"(?:^|\|)\s*([A-Za-z][\w-]*) :", text)))


def gpu_backends() -> tuple[str, ...]:
    """The GPU backends the installed llama.cpp was built with (CUDA, Metal, Vulkan, ...);
    empty for a CPU-only build."""
    import llama_cpp

    if not llama_cpp.llama_supports_gpu_offload():
        return ()
    info = llama_cpp.llama_print_system_info().decode("utf-8", "replace")
    return tuple(name for name in parse_backends(info) if name.upper() != "CPU") or ("GPU",)


def read_cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str] | None:
    try:
        for line in cpuinfo.read_text(encoding="ascii", errors="replace").splitlines():
            if line.startswith("flags"):
                return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


@functools.lru_cache(maxsize=1)
def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="ascii", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def build_level() -> str:
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        return "unknown"
    marker = Path(list(spec.submodule_search_locations)[0]) / LEVEL_FILE
    try:
        return marker.read_text(encoding="ascii").strip() or "unknown"
    except OSError:
        return "unknown"


@functools.lru_cache(maxsize=1)
def llama_build() -> LlamaBuild:
    """What the installed llama.cpp uses (loads the library; runs no CPU kernels)."""
    import llama_cpp

    info = llama_cpp.llama_print_system_info().decode("utf-8", "replace")
    return LlamaBuild(build_level(), parse_system_info(info), read_cpu_flags())

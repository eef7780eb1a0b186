"""llama.cpp is built for a fixed CPU level and checked against this CPU before it runs:
a missing instruction is a message, not "Illegal instruction", and a build with AMX
kernels on an AMX CPU loads without the repacking that crashes (llama.cpp issue 20824)."""

import pytest

from desktop_app.core.errors import ModelError
from desktop_app.core.models import cpu, runtime as runtime_module
from desktop_app.core.models.cpu import LlamaBuild, parse_system_info

PORTABLE_INFO = ("CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | "
                 "LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 | ")
NATIVE_AMX_INFO = ("CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX_VNNI = 1 | AVX2 = 1 | F16C = 1 | "
                   "FMA = 1 | BMI2 = 1 | AVX512 = 1 | AVX512_VBMI = 1 | AVX512_VNNI = 1 | "
                   "AVX512_BF16 = 1 | AMX_INT8 = 1 | LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 | ")
HASWELL = frozenset("fpu sse sse2 pni ssse3 sse4_1 sse4_2 avx avx2 fma f16c bmi2".split())
SAPPHIRE_RAPIDS = HASWELL | {"avx512f", "avx512vbmi", "avx512_vnni", "avx512_bf16", "avx_vnni",
                             "amx_tile", "amx_int8", "amx_bf16"}


def test_system_info_is_read_as_instructions_only():
    assert parse_system_info(PORTABLE_INFO) == ("SSE3", "SSSE3", "AVX", "AVX2", "F16C", "FMA", "BMI2")
    native = parse_system_info(NATIVE_AMX_INFO)
    assert "AVX512" in native and "AMX_INT8" in native and "OPENMP" not in native


@pytest.mark.parametrize("info, flags, missing, avoid_amx", [
    (PORTABLE_INFO, HASWELL, (), False),
    (PORTABLE_INFO, SAPPHIRE_RAPIDS, (), False),
    (PORTABLE_INFO, frozenset({"pni", "ssse3", "avx"}), ("AVX2", "F16C", "FMA", "BMI2"), False),
    (NATIVE_AMX_INFO, SAPPHIRE_RAPIDS, (), True),
    (NATIVE_AMX_INFO, HASWELL, ("AVX_VNNI", "AVX512", "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16",
                                "AMX_INT8"), False),
    (PORTABLE_INFO, None, (), False),  # flags unreadable (not Linux): nothing claimed missing
])
def test_build_against_cpu(info, flags, missing, avoid_amx):
    build = LlamaBuild("test", parse_system_info(info), flags)
    assert build.missing == missing
    assert build.avoid_amx_repacking is avoid_amx


def test_the_installed_llama_cpp_is_the_portable_build():
    build = cpu.llama_build()
    if build.level in ("native", "baseline"):
        pytest.skip(f"llama.cpp was installed with LLAMA_CPU={build.level}; this checks the default")
    assert build.level == "portable", "install with 'make install' (packaging/install_llama.sh)"
    assert set(build.instructions) == {"SSE3", "SSSE3", "AVX", "AVX2", "F16C", "FMA", "BMI2"}
    assert not build.missing
    assert not build.has_amx_kernels


def test_a_build_this_cpu_cannot_run_is_refused_before_loading(runtime_settings, monkeypatch, tmp_path):
    from desktop_app.core.config import Paths
    from desktop_app.core.models.runtime import ModelRuntime

    old_cpu = LlamaBuild("native", parse_system_info(NATIVE_AMX_INFO), HASWELL)
    monkeypatch.setattr(runtime_module, "llama_build", lambda: old_cpu)
    paths = Paths.resolve(tmp_path)
    paths.ensure()
    with pytest.raises(ModelError) as info:
        ModelRuntime(paths, runtime_settings).for_role("generator")
    assert "AVX512" in info.value.message and "LLAMA_CPU=baseline" in info.value.fix


def test_models_load_without_extra_buffers_when_amx_repacking_must_be_avoided(
        runtime_settings, monkeypatch, tmp_path):
    """What Lumen does on an AMX CPU with a build that has AMX kernels, done for real with
    the installed build: the model loads with use_extra_bufts off and generates."""
    import llama_cpp

    from desktop_app.core.config import Paths
    from desktop_app.core.models.runtime import ModelRuntime

    amx_case = LlamaBuild("native", parse_system_info(PORTABLE_INFO) + ("AMX_INT8",),
                          SAPPHIRE_RAPIDS)
    assert amx_case.avoid_amx_repacking
    monkeypatch.setattr(runtime_module, "require_runnable_build", lambda: amx_case)
    seen = []
    original = llama_cpp.llama_cpp.llama_model_default_params

    def spy():
        params = original()
        seen.append(params)
        return params
    monkeypatch.setattr(llama_cpp.llama_cpp, "llama_model_default_params", spy)
    paths = Paths.resolve(tmp_path)
    paths.ensure()
    models = ModelRuntime(paths, runtime_settings)
    try:
        generation = models.for_role("generator").generate(
            [{"role": "user", "content": "Say hello."}], max_tokens=8, temperature=0.0)
    finally:
        models.close()
    assert generation.completion_tokens > 0
    assert seen and seen[-1].use_extra_bufts is False
    assert llama_cpp.llama_cpp.llama_model_default_params is spy  # put back after the load


def test_doctor_names_the_build_and_the_cpu(profile, settings):
    from desktop_app.core.doctor import run_doctor

    report = run_doctor(profile, settings, measure_speed=False)
    finding = next(f for f in report.findings if f.check == "llama.cpp and this CPU")
    assert finding.status == "ok"
    assert finding.data["instructions"] == list(cpu.llama_build().instructions)
    assert "AVX2" in finding.detail

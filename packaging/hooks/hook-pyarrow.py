# Replaces pyinstaller-hooks-contrib's hook, which takes all of pyarrow (about 160 MB
# with Arrow Flight, S3, Substrait and the C++ headers).  Lumen only reads Parquet
# benchmark files (pyarrow.parquet.read_table / read_schema, which go through
# pyarrow.dataset), so the remote file systems, Flight, Substrait, ORC, CUDA and the
# tests stay out.  The Arrow libraries the kept extension modules link to are found
# by PyInstaller's own dependency analysis.
from PyInstaller.utils.hooks import collect_submodules

_LEFT_OUT = ("tests", "flight", "_flight", "substrait", "_substrait", "cuda", "_cuda",
             "_s3fs", "_gcsfs", "_azurefs", "_hdfs", "orc", "_orc", "_dataset_orc",
             "_pyarrow_cpp_tests", "benchmark")


def _keep(name: str) -> bool:
    parts = name.split(".")
    return not any(part in _LEFT_OUT for part in parts[1:])


hiddenimports = collect_submodules("pyarrow", filter=_keep)
excludedimports = ["pyarrow." + name for name in _LEFT_OUT]

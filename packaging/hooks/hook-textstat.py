# textstat keeps word lists (easy words per language) as package data.
from PyInstaller.utils.hooks import collect_data_files

datas = collect_data_files("textstat")

# wordfreq ships word lists for about forty languages (57 MB); Lumen reads only the small
# English list (readability.word_grade), so only that file is collected.
from PyInstaller.utils.hooks import collect_data_files

datas = collect_data_files("wordfreq", includes=["data/small_en.msgpack.gz"])

"""Reading a discharge summary from a file: plain text, Word (.docx) or PDF.

PDF text comes from the file's text layer (pypdf); a scanned PDF has none, and Lumen
says so rather than guess (there is no OCR offline).  Nothing read is logged.
"""

from __future__ import annotations

import re
from pathlib import Path

from . import textfiles
from .errors import LumenError
from .textfiles import read_text, unreadable

SUPPORTED = (".txt", ".text", ".md", ".docx", ".pdf")
MAX_BYTES = 20_000_000


def read_document(path: Path) -> str:
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED:
        raise LumenError(f"Lumen cannot read {path.name}: it reads .txt, .docx and .pdf files.",
                         "Save the summary in one of those formats, or paste its text.")
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise LumenError(f"{path} cannot be opened ({exc.strerror or exc}).",
                         "Check the path and that your user may read it.") from None
    if size > MAX_BYTES:
        raise LumenError(f"{path.name} is {size / 1e6:.0f} MB, too large for a discharge summary.",
                         "Open the summary itself rather than a whole record export.")
    try:
        if suffix == ".docx":
            text = _read_docx(path)
        elif suffix == ".pdf":
            text = _read_pdf(path)
        else:
            # The same encoding rules as every file Lumen reads (textfiles.py): a summary
            # saved in a legacy code page is refused with what to do, never mis-decoded.
            text = read_text(path, limit=MAX_BYTES, outcome="Nothing was opened.")
    except LumenError:
        raise
    except Exception as exc:  # a damaged file must give a message, never a traceback
        raise unreadable(path.name, exc, outcome="Nothing was opened.") from None
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    if not text:
        raise LumenError(f"{path.name} holds no text.", "Check that it is the right file.")
    return text


def _too_long(path: Path, what: str) -> LumenError:
    limit = textfiles.LIMITS.field_chars
    return LumenError(f"{path.name} {what}, more than the {limit:,} characters Lumen reads "
                      "as one summary. Nothing was opened.",
                      "Open the summary itself rather than a whole record export.")


def _read_docx(path: Path) -> str:
    """A Word file's paragraphs and tables, after checking what its zip parts expand to
    (zipfile reads no more than a part's declared size, so the check holds)."""
    import zipfile

    import docx
    from docx.opc.exceptions import PackageNotFoundError

    try:
        with zipfile.ZipFile(path) as archive:
            expanded = sum(item.file_size for item in archive.infolist())
    except (zipfile.BadZipFile, OSError):
        expanded = 0  # python-docx says what is wrong with it below
    if expanded > textfiles.LIMITS.file_bytes:
        raise LumenError(f"{path.name} expands to {expanded / 1e6:.0f} MB, more than the "
                         f"{textfiles.LIMITS.file_bytes / 1e6:.0f} MB Lumen reads. Nothing was "
                         "opened.", "Open the summary itself rather than a whole record export.")
    try:
        document = docx.Document(str(path))
    except (PackageNotFoundError, KeyError, ValueError, OSError):
        raise LumenError(f"{path.name} is not a readable Word document.",
                         "Open it in Word and save it again as .docx, or paste its text.") from None
    lines = [paragraph.text for paragraph in document.paragraphs]
    for table in document.tables:
        for row in table.rows:
            lines.append("  ".join(cell.text.strip() for cell in row.cells))
    text = "\n".join(lines)
    if len(text) > textfiles.LIMITS.field_chars:
        raise _too_long(path, f"holds {len(text):,} characters of text")
    return text


def _read_pdf(path: Path) -> str:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(str(path))
        if reader.is_encrypted:
            raise LumenError(f"{path.name} is a password-protected PDF.",
                             "Save an unprotected copy, or paste the summary's text.")
        pages: list[str] = []
        total = 0
        for number, page in enumerate(reader.pages, 1):
            pages.append(page.extract_text() or "")
            total += len(pages[-1])
            if total > textfiles.LIMITS.field_chars:  # checked page by page, while reading
                raise _too_long(path, f"holds more text than that by page {number}")
        text = "\n".join(pages)
    except LumenError:
        raise
    except (PdfReadError, ValueError, OSError, KeyError):
        raise LumenError(f"{path.name} is not a readable PDF.",
                         "Save it again as PDF, or paste the summary's text.") from None
    if not text.strip():
        raise LumenError(f"{path.name} has no text layer (it looks like a scan).",
                         "Lumen cannot read scanned pages offline; paste or type the summary.")
    # PDF writers place words with tabs or runs of spaces; the reader wants plain lines.
    return "\n".join(re.sub(r"[ \t]+", " ", line).strip() for line in text.splitlines())

"""Import NLM's MedlinePlus health-topics XML (mplus_topics_YYYY-MM-DD.xml).

The file is parsed as a stream (the official one is about 30 MB) and written in
one transaction: a malformed file is reported with its line and imports nothing.
Topics are upserted by NLM id, so a second import of the same file adds nothing.
"""

from __future__ import annotations

import datetime as _dt
import html
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from ..errors import LumenError
from ..progress import CancelToken, ProgressCallback, report
from ..store import Store

_FILE_DATE = re.compile(r"(\d{4}-\d{2}-\d{2})")


class ImportFormatError(LumenError):
    """The file is not a readable MedlinePlus health-topics XML file."""


@dataclass
class ImportCounts:
    source_file: str
    source_date: str
    topics: int = 0
    new_topics: int = 0
    updated_topics: int = 0
    by_language: dict[str, int] = field(default_factory=dict)
    also_called: int = 0
    see_references: int = 0
    groups: int = 0
    mesh_headings: int = 0
    language_links: int = 0

    def to_dict(self) -> dict:
        return dict(self.__dict__)


class _TextExtractor(HTMLParser):
    """Plain text from a summary's HTML: paragraphs and list items become lines."""

    _BREAKS = {"p", "li", "br", "ul", "ol", "h1", "h2", "h3", "h4", "div"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        if tag in self._BREAKS:
            self.parts.append("\n")
        if tag == "li":
            self.parts.append("• ")

    def handle_endtag(self, tag) -> None:
        if tag in self._BREAKS:
            self.parts.append("\n")

    def handle_data(self, data) -> None:
        self.parts.append(data)


def clean_summary(raw: str) -> str:
    parser = _TextExtractor()
    parser.feed(html.unescape(raw) if "&lt;" in raw else raw)
    parser.close()
    lines = [re.sub(r"\s+", " ", line).strip() for line in "".join(parser.parts).split("\n")]
    text = "\n".join(line for line in lines if line)
    return re.sub(r" ([,.;:!?])", r"\1", text)  # NLM's text has spaces before punctuation


def _text(element: ET.Element) -> str:
    return re.sub(r"\s+", " ", "".join(element.itertext())).strip()


def _source_date(path: Path, root_date: str) -> str:
    match = _FILE_DATE.search(path.name)
    if match:
        return match.group(1)
    try:
        return _dt.datetime.strptime(root_date.split()[0], "%m/%d/%Y").date().isoformat()
    except (ValueError, IndexError):
        return ""


def import_medlineplus(store: Store, path: Path, progress: ProgressCallback = None,
                       cancel: CancelToken | None = None) -> ImportCounts:
    path = Path(path)
    if not path.is_file():
        raise ImportFormatError(f"There is no file at {path}.", "Check the path and try again.")
    total_bytes = path.stat().st_size
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    counts: ImportCounts | None = None
    detail: dict = {}
    try:
        with store.audited("glossary.medlineplus_imported", detail) as conn, \
                path.open("rb") as handle:
            context = ET.iterparse(handle, events=("start", "end"))
            for event, element in context:
                if counts is None:
                    if event != "start" or element.tag != "health-topics":
                        raise ImportFormatError(
                            f"{path.name} is not a MedlinePlus health-topics file (its root "
                            f"element is <{element.tag}>, not <health-topics>).",
                            "Download mplus_topics_YYYY-MM-DD.xml from NLM's MedlinePlus XML "
                            "page on a connected computer and copy it here.")
                    counts = ImportCounts(path.name, _source_date(path, element.get("date-generated", "")))
                    continue
                if event != "end" or element.tag != "health-topic":
                    continue
                _upsert_topic(conn, element, counts, now)
                element.clear()
                if counts.topics % 50 == 0:
                    if cancel is not None:
                        cancel.raise_if_cancelled()
                    report(progress, handle.tell(), total_bytes, f"{counts.topics} topics read")
            if counts is None:
                raise ImportFormatError(f"{path.name} is empty.", "Check that the copy is complete.")
            if counts.topics == 0:
                raise ImportFormatError(f"{path.name} holds no health topics.",
                                        "Check that this is the health-topics file.")
            conn.execute(
                "INSERT INTO mplus_import (source_file, source_date, imported_at, topics, "
                "new_topics, names) VALUES (?, ?, ?, ?, ?, ?)",
                (counts.source_file, counts.source_date, now, counts.topics, counts.new_topics,
                 counts.also_called + counts.see_references))
            detail.update({k: v for k, v in counts.to_dict().items() if k != "by_language"})
    except ET.ParseError as exc:
        line, column = exc.position
        raise ImportFormatError(
            f"{path.name} is not well-formed XML: {exc.msg if hasattr(exc, 'msg') else exc} "
            f"at line {line}, column {column}. Nothing was imported.",
            "The file may be cut short or damaged; copy it again.") from None
    except LookupError:  # an XML declaration naming an encoding Python does not know
        raise ImportFormatError(f"{path.name} declares a text encoding Lumen cannot read. Nothing "
                                "was imported.", "Use the UTF-8 file NLM publishes.") from None
    except LumenError:
        raise
    except Exception as exc:  # hostile or odd input must give a message, never a traceback
        from ..textfiles import unreadable

        problem = unreadable(path.name, exc)
        raise ImportFormatError(problem.message, problem.fix) from None
    report(progress, total_bytes, total_bytes, f"{counts.topics} topics imported")
    return counts


def _upsert_topic(conn, topic: ET.Element, counts: ImportCounts, now: str) -> None:
    topic_id = topic.get("id") or ""
    title = topic.get("title") or ""
    if not topic_id or not title:
        line = getattr(topic, "sourceline", None)
        raise ImportFormatError(
            f"Health topic number {counts.topics + 1}{f' (line {line})' if line else ''} has no "
            f"{'id' if not topic_id else 'title'}. Nothing was imported.",
            "The file is damaged or not in NLM's layout; copy it again.")
    language = topic.get("language") or "English"
    summary_element = topic.find("full-summary")
    summary = clean_summary(summary_element.text or "") if summary_element is not None else ""
    existed = conn.execute("SELECT 1 FROM mplus_topic WHERE id = ?", (topic_id,)).fetchone()
    conn.execute(
        "INSERT INTO mplus_topic (id, title, url, language, date_created, meta_desc, summary, "
        "source_file, source_date, imported_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT(id) DO UPDATE SET title=excluded.title, url=excluded.url, "
        "language=excluded.language, date_created=excluded.date_created, "
        "meta_desc=excluded.meta_desc, summary=excluded.summary, "
        "source_file=excluded.source_file, source_date=excluded.source_date, "
        "imported_at=excluded.imported_at",
        (topic_id, title, topic.get("url") or "", language, topic.get("date-created") or "",
         topic.get("meta-desc") or "", summary, counts.source_file, counts.source_date, now))
    for table in ("mplus_name", "mplus_group", "mplus_mesh", "mplus_language_link"):
        conn.execute(f"DELETE FROM {table} WHERE topic_id = ?", (topic_id,))
    names = set()
    for kind, tag in (("also-called", "also-called"), ("see-reference", "see-reference")):
        for element in topic.findall(tag):
            name = _text(element)
            if name and (kind, name) not in names:
                names.add((kind, name))
                conn.execute("INSERT INTO mplus_name (topic_id, kind, name) VALUES (?, ?, ?)",
                             (topic_id, kind, name))
                if kind == "also-called":
                    counts.also_called += 1
                else:
                    counts.see_references += 1
    for element in topic.findall("group"):
        name = _text(element)
        if name:
            counts.groups += conn.execute(
                "INSERT OR IGNORE INTO mplus_group (topic_id, group_id, name, url) VALUES (?, ?, ?, ?)",
                (topic_id, element.get("id") or "", name, element.get("url") or "")).rowcount
    for heading in topic.findall("mesh-heading"):
        descriptor = heading.find("descriptor")
        if descriptor is not None and _text(descriptor):
            counts.mesh_headings += conn.execute(
                "INSERT OR IGNORE INTO mplus_mesh (topic_id, descriptor_id, descriptor) VALUES (?, ?, ?)",
                (topic_id, descriptor.get("id") or "", _text(descriptor))).rowcount
    for link in topic.findall("language-mapped-topic"):
        if link.get("id"):
            counts.language_links += conn.execute(
                "INSERT OR IGNORE INTO mplus_language_link (topic_id, other_id, language, url) "
                "VALUES (?, ?, ?, ?)",
                (topic_id, link.get("id"), link.get("language") or "", link.get("url") or "")).rowcount
    counts.topics += 1
    counts.by_language[language] = counts.by_language.get(language, 0) + 1
    if existed:
        counts.updated_topics += 1
    else:
        counts.new_topics += 1

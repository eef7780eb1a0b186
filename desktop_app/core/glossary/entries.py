"""Glossary entries from three sources, merged into one glossary.

- "lumen": Lumen's own plain-language glossary, shipped in glossary/glossary.toml.
- "medlineplus": topics imported from NLM's XML into the encrypted database.
- "local": additions and edits by staff, kept in their own table; an edit replaces
  the entry it overrides (by key) and survives any re-import.
"""

from __future__ import annotations

import datetime as _dt
import getpass
import hashlib
import json
import re
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

import tomli_w

from ..config import resource_root
from ..derived_cache import cache_file, load_or_build
from ..errors import LumenError
from ..store import Store

CATEGORIES = ("condition", "symptom", "procedure", "test", "medication", "drug-class",
              "anatomy", "abbreviation", "unit", "device", "care", "topic")


class GlossaryError(LumenError):
    """A glossary file or entry is unusable."""


@dataclass(frozen=True)
class GlossaryEntry:
    key: str  # "lumen:<slug>", "mplus:<NLM id>", "local:<n>"
    term: str
    definition: str
    category: str
    source: str  # "lumen", "medlineplus", "local"
    aliases: tuple[str, ...] = ()
    abbreviations: tuple[str, ...] = ()
    medlineplus_title: str = ""
    medlineplus_url: str = ""
    language: str = "English"
    summary: str = ""  # MedlinePlus entries: the whole cleaned summary
    groups: tuple[str, ...] = ()
    overrides: str = ""  # local edits: the key they replace
    hidden: bool = False
    # A name most adult patients use of themselves ("vomiting", "chest pain", "kidney"),
    # though it is rare in print: never marked as a medical word nor explained, unless it
    # is written as shorthand ("SOB").  Word frequency alone would call it hard.
    everyday: bool = False

    def to_dict(self) -> dict:
        data = {k: v for k, v in self.__dict__.items()}
        for name in ("aliases", "abbreviations", "groups"):
            data[name] = list(data[name])
        return data


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


# ---- Lumen's own glossary ------------------------------------------------------------


def builtin_file() -> Path:
    return resource_root() / "glossary" / "glossary.toml"


def load_builtin(path: Path | None = None, cache_dir: Path | None = None) -> list[GlossaryEntry]:
    """Lumen's own entries.  With `cache_dir`, the parsed file is kept there (parsing the
    TOML is most of a cold `lumen facts`), under a name with the file's hash."""
    path = path or builtin_file()
    try:
        source = path.read_bytes()
        if cache_dir is None:
            data = tomllib.loads(source.decode("utf-8"))
        else:
            digest = hashlib.sha256(source).hexdigest()[:16]
            data = load_or_build(cache_file(cache_dir, "glossary", f"{path.stem}-{digest}"),
                                 lambda: tomllib.loads(source.decode("utf-8")),
                                 lambda value: isinstance(value, dict))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise GlossaryError(f"Lumen's glossary {path} cannot be read: {exc}.",
                            "Reinstall Lumen; the glossary ships with it.") from exc
    entries = []
    for number, raw in enumerate(data.get("entry", []), 1):
        try:
            entries.append(GlossaryEntry(
                key=f"lumen:{slug(raw['term'])}", term=raw["term"],
                definition=raw["definition"], category=raw["category"], source="lumen",
                aliases=tuple(raw.get("aliases", ())),
                abbreviations=tuple(raw.get("abbreviations", ())),
                medlineplus_title=raw.get("medlineplus_title", ""),
                medlineplus_url=raw.get("medlineplus_url", ""),
                everyday=bool(raw.get("everyday", False))))
        except KeyError as exc:
            raise GlossaryError(f"Entry {number} of {path.name} has no {exc.args[0]}.",
                                "Fix that entry.") from None
    return entries


# ---- imported MedlinePlus topics ------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def short_definition(summary: str, meta_desc: str = "", max_words: int = 45) -> str:
    """The first one or two sentences of a topic's summary, for the simplifier."""
    text = summary.split("\n", 1)[0] if summary else meta_desc
    sentences = _SENTENCE_END.split(text.strip())
    chosen = sentences[0] if sentences else ""
    if len(sentences) > 1 and len((chosen + " " + sentences[1]).split()) <= max_words:
        chosen = f"{chosen} {sentences[1]}"
    return chosen


def load_imported(store: Store, language: str | None = "English") -> list[GlossaryEntry]:
    where, params = ("WHERE language = ?", (language,)) if language else ("", ())
    topics = store.query(f"SELECT id, title, url, language, meta_desc, summary FROM mplus_topic "
                         f"{where} ORDER BY title", params)
    names: dict[str, list[str]] = {}
    for topic_id, name in store.query("SELECT topic_id, name FROM mplus_name"):
        names.setdefault(topic_id, []).append(name)
    groups: dict[str, list[str]] = {}
    for topic_id, name in store.query("SELECT topic_id, name FROM mplus_group"):
        groups.setdefault(topic_id, []).append(name)
    return [GlossaryEntry(
        key=f"mplus:{topic_id}", term=title, definition=short_definition(summary, meta_desc),
        category="topic", source="medlineplus", aliases=tuple(sorted(names.get(topic_id, ()))),
        medlineplus_title=title, medlineplus_url=url, language=lang, summary=summary,
        groups=tuple(groups.get(topic_id, ())))
        for topic_id, title, url, lang, meta_desc, summary in topics]


# ---- staff additions and edits ---------------------------------------------------------


def load_local(store: Store) -> list[GlossaryEntry]:
    rows = store.query("SELECT id, overrides, term, aliases, abbreviations, definition, category, "
                       "hidden FROM glossary_local ORDER BY id")
    return [GlossaryEntry(
        key=f"local:{row_id}", term=term, definition=definition, category=category,
        source="local", aliases=tuple(json.loads(aliases)),
        abbreviations=tuple(json.loads(abbreviations)), overrides=overrides or "",
        hidden=bool(hidden))
        for row_id, overrides, term, aliases, abbreviations, definition, category, hidden in rows]


def validate_local(term: str, definition: str, category: str) -> None:
    if not term.strip():
        raise GlossaryError("A glossary entry needs a term.", "Type the word to explain.")
    if not definition.strip():
        raise GlossaryError(f"The entry '{term}' needs a definition.",
                            "Write one or two plain sentences.")
    if category not in CATEGORIES:
        raise GlossaryError(f"'{category}' is not a glossary category.",
                            f"Choose one of: {', '.join(CATEGORIES)}.")


def save_local(store: Store, *, term: str, definition: str, category: str,
               aliases: list[str] | tuple[str, ...] = (), abbreviations: list[str] | tuple[str, ...] = (),
               overrides: str | None = None, hidden: bool = False, entry_key: str | None = None) -> str:
    """Add a local entry, or replace the local edit of `overrides` / the entry `entry_key`."""
    validate_local(term, definition, category)
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    try:
        author = getpass.getuser()
    except (KeyError, OSError):
        author = ""
    values = (term.strip(), json.dumps([a.strip() for a in aliases if a.strip()]),
              json.dumps([a.strip() for a in abbreviations if a.strip()]), definition.strip(),
              category, int(hidden), author, now)
    detail = {"overrides": overrides or ""}
    with store.audited("glossary.local_saved", detail) as conn:
        if entry_key and entry_key.startswith("local:"):
            row_id = int(entry_key.split(":", 1)[1])
            conn.execute("UPDATE glossary_local SET term=?, aliases=?, abbreviations=?, "
                         "definition=?, category=?, hidden=?, author=?, updated_at=? WHERE id=?",
                         (*values, row_id))
        else:
            cursor = conn.execute(
                "INSERT INTO glossary_local (overrides, term, aliases, abbreviations, definition, "
                "category, hidden, author, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(overrides) DO UPDATE SET term=excluded.term, aliases=excluded.aliases, "
                "abbreviations=excluded.abbreviations, definition=excluded.definition, "
                "category=excluded.category, hidden=excluded.hidden, author=excluded.author, "
                "updated_at=excluded.updated_at RETURNING id",
                (overrides, *values))
            row_id = cursor.fetchone()[0]
        detail["entry"] = f"local:{row_id}"
    return f"local:{row_id}"


def delete_local(store: Store, entry_key: str) -> None:
    kind, _, number = entry_key.partition(":")
    if kind != "local" or not (number.isascii() and number.isdigit()):
        raise GlossaryError(f"{entry_key} is not a staff entry: only staff additions and edits "
                            "(keys local:N) can be deleted.",
                            "To hide a shipped or imported entry, edit it and hide it (the "
                            "window's 'Hide', or lumen glossary add --overrides KEY --hide).")
    if not store.query("SELECT 1 FROM glossary_local WHERE id = ?", (int(number),)):
        raise GlossaryError(f"There is no staff entry {entry_key}; nothing was deleted.",
                            "Find an entry's key with lumen glossary lookup TERM --json.")
    with store.audited("glossary.local_deleted", {"entry": entry_key}) as conn:
        conn.execute("DELETE FROM glossary_local WHERE id = ?", (int(number),))


def export_local(store: Store, path: Path) -> int:
    entries = load_local(store)
    rows = []
    for entry in entries:
        row = {"term": entry.term, "definition": entry.definition, "category": entry.category}
        if entry.aliases:
            row["aliases"] = list(entry.aliases)
        if entry.abbreviations:
            row["abbreviations"] = list(entry.abbreviations)
        if entry.overrides:
            row["overrides"] = entry.overrides
        if entry.hidden:
            row["hidden"] = True
        rows.append(row)
    Path(path).write_text("# Lumen glossary: local additions and edits\n"
                          + tomli_w.dumps({"entry": rows}), encoding="utf-8")
    return len(rows)


def import_local(store: Store, path: Path) -> int:
    """Load local entries exported from another workstation; checks every entry first."""
    from ..textfiles import read_text

    name = Path(path).name
    try:
        data = tomllib.loads(read_text(Path(path)))
    except tomllib.TOMLDecodeError as exc:  # its message gives a line and column, no text
        raise GlossaryError(f"{name} cannot be read as a glossary file: {exc}. Nothing was "
                            "imported.", "Choose a file made by Lumen's glossary export.") from None
    except RecursionError:
        raise GlossaryError(f"{name} nests tables too deeply to be a glossary file. Nothing was "
                            "imported.", "Choose a file made by Lumen's glossary export.") from None
    rows = data.get("entry", [])
    if not isinstance(rows, list):
        rows = [rows]
    for number, row in enumerate(rows, 1):
        try:
            if not isinstance(row, dict):
                raise GlossaryError("it is not a table of term, definition and category.",
                                    "Choose a file made by Lumen's glossary export.")
            for key in ("term", "definition", "category"):
                if not isinstance(row.get(key, ""), str):
                    raise GlossaryError(f"its {key} is not text.", "Correct the entry.")
            for key in ("aliases", "abbreviations"):
                if not isinstance(row.get(key, []), list) or not all(
                        isinstance(v, str) for v in row.get(key, [])):
                    raise GlossaryError(f"its {key} are not a list of words.", "Correct the entry.")
            validate_local(row.get("term", ""), row.get("definition", ""), row.get("category", ""))
        except GlossaryError as exc:
            raise GlossaryError(f"Entry {number} of {name}: {exc.message} "
                                "Nothing was imported.", exc.fix) from None
    for row in rows:
        save_local(store, term=row["term"], definition=row["definition"], category=row["category"],
                   aliases=row.get("aliases", ()), abbreviations=row.get("abbreviations", ()),
                   overrides=row.get("overrides") or None, hidden=bool(row.get("hidden", False)))
    return len(rows)


def merge(builtin: list[GlossaryEntry], imported: list[GlossaryEntry],
          local: list[GlossaryEntry]) -> list[GlossaryEntry]:
    """Local edits replace the entries they override (keeping their MedlinePlus topic and
    whether patients use the name themselves); hidden entries drop out."""
    edits = {entry.overrides: entry for entry in local if entry.overrides}
    merged = []
    for entry in [*builtin, *imported]:
        edit = edits.get(entry.key)
        if edit is None:
            merged.append(entry)
        elif not edit.hidden:
            merged.append(replace(edit, medlineplus_title=entry.medlineplus_title,
                                  medlineplus_url=entry.medlineplus_url, summary=entry.summary,
                                  groups=entry.groups, language=entry.language,
                                  everyday=entry.everyday))
    merged += [entry for entry in local if not entry.overrides and not entry.hidden]
    return merged


__all__ = ["GlossaryEntry", "GlossaryError", "CATEGORIES", "load_builtin", "load_imported",
           "load_local", "save_local", "delete_local", "export_local", "import_local", "merge",
           "short_definition"]

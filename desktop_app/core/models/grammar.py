"""JSON-schema grammars, and the longest reply each one allows.

A constrained reply (a judge's rubric, a chapter tag, a diagnosis) is useless when the
token limit cuts it off before its JSON closes.  Whether that can happen must not
depend on which model, CPU or wording produced the tokens, so the limit is derived
from the grammar itself:

- llama.cpp never samples a token with empty text under a grammar, so each generated
  token adds at least one byte: a reply of at most B bytes takes at most B tokens,
  plus the end-of-turn token that stops it;
- the grammar is llama-cpp-python's own conversion of the schema, except that a
  string's `maxLength` is counted in UTF-8 bytes, not characters, and holds no
  escapes: a string of at most n bytes is also at most n characters (so the JSON
  still validates), in any language (Persian takes two bytes a letter);
- `longest_reply_bytes` reads the grammar text (GBNF) and returns the most bytes any
  string it accepts can have (None when unbounded), so the bound follows every
  change of a schema or of the converter.

A string without `maxLength` has no bound, and a caller must treat its reply as one
that may be cut off (DoctorRAG's answer does, by naming its references first).

GBNF reading is hand-written: it is a small grammar (llama.cpp's grammars/README.md)
and no maintained Python package parses it.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

# One character of a bounded string, by its UTF-8 width: printable ASCII less '"' and
# '\\' (nothing to escape), then 2-, 3- and 4-byte characters (surrogates excluded).
_CHAR_CLASSES = (r'[ !#-\[\]-~]', r'[\u0080-\u07FF]', r'[\u0800-\uD7FF\uE000-\uFFFF]',
                 r'[\U00010000-\U0010FFFF]')
_UTF8_MAX = 4


def _byte_ladder(converter: Any, budget: int) -> str:
    """Rules `utf8-up-to-K` for K = 1..budget: any text of at most K UTF-8 bytes.

    Each rule takes one character of width w and hands the rest of the budget to the
    rule for K - w, so the grammar itself counts bytes, in any language, with one
    rule per byte of the largest budget (shared by every bounded string)."""
    for k in range(1, budget + 1):
        name = f"utf8-up-to-{k}"
        if name in converter._rules:
            continue
        options = []
        for width, char_class in enumerate(_CHAR_CLASSES, start=1):
            if width < k:
                options.append(f"{char_class} utf8-up-to-{k - width}")
            elif width == k:
                options.append(char_class)
        converter._add_rule(name, f"({' | '.join(options)})?")
    return f"utf8-up-to-{budget}"


def _converter_class() -> type:
    from llama_cpp import llama_grammar as lg

    class BoundedStringConverter(lg.SchemaConverter):
        """llama-cpp-python's converter, with strings whose maxLength is counted in bytes."""

        def visit(self, schema: dict, name: str) -> str:
            if (isinstance(schema, dict) and schema.get("type") == "string"
                    and schema.get("maxLength", 0) > 0 and not schema.get("minLength")
                    and not {"enum", "const", "pattern", "format"} & schema.keys()):
                rule_name = name + "-" if name in lg.RESERVED_NAMES else name or "root"
                body = _byte_ladder(self, int(schema["maxLength"]))
                return self._add_rule(rule_name, rf'"\"" {body} "\"" space')
            return super().visit(schema, name)

    return BoundedStringConverter


@functools.lru_cache(maxsize=256)
def _grammar_for(schema_json: str) -> str:
    converter = _converter_class()(prop_order={}, allow_fetch=False, dotall=False,
                                   raw_pattern=False)
    schema = converter.resolve_refs(json.loads(schema_json), "schema")
    converter.visit(schema, "")
    return converter.format_grammar()


def json_grammar(schema: dict[str, Any]) -> str:
    """The GBNF grammar llama.cpp runs for `schema` (properties in the schema's order)."""
    return _grammar_for(json.dumps(schema))


# ---- the longest string a grammar accepts -------------------------------------------

_TOKEN = re.compile(r'''
    (?P<literal>"(?:\\.|[^"\\])*")
  | (?P<cls>\[(?:\\.|[^\]\\])*\])
  | (?P<repeat>\{\s*\d+\s*(?:,\s*\d*\s*)?\})
  | (?P<name>[A-Za-z0-9_-]+)
  | (?P<op>[()|?*+.])
  | (?P<space>\s+)
''', re.VERBOSE)
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "[": "[", "]": "]",
            "-": "-", "^": "^"}


def _unescape(text: str) -> list[str]:
    """The characters of a literal or class body, escapes resolved (ranges kept as '-')."""
    chars, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            kind = text[i + 1]
            width = {"x": 2, "u": 4, "U": 8}.get(kind)
            if width:
                chars.append(chr(int(text[i + 2:i + 2 + width], 16)))
                i += 2 + width
                continue
            chars.append(_ESCAPES.get(kind, kind))
            i += 2
            continue
        chars.append(c)
        i += 1
    return chars


_INF = float("inf")
Longest = tuple[float, str]  # (most UTF-8 bytes, one string of that length)


def _class_widest(body: str) -> Longest:
    """The widest character a class `[...]` accepts, with its UTF-8 width."""
    if body.startswith("^"):
        excluded = set(_unescape(body[1:]))
        for candidate in ("\U0001F600", "\u4E2D", "\u00E9", "a"):
            if candidate not in excluded:
                return float(len(candidate.encode("utf-8"))), candidate
    # A range a-b reaches up to b, which is in the list: the widest endpoint is the widest.
    chars = [c for c in _unescape(body) if c != "-"] or ["-"]
    widest = max(chars, key=lambda c: len(c.encode("utf-8", "surrogatepass")))
    return float(len(widest.encode("utf-8", "surrogatepass"))), widest


def _add(a: Longest, b: Longest) -> Longest:
    return a[0] + b[0], (a[1] + b[1]) if a[0] + b[0] < _INF else ""


class _Reader:
    def __init__(self, rules: dict[str, str]) -> None:
        self.rules = rules
        self.memo: dict[str, Longest] = {}
        self.active: set[str] = set()

    def rule(self, name: str) -> Longest:
        if name in self.memo:
            return self.memo[name]
        if name in self.active:
            return _INF, ""  # recursion: no bound
        if name not in self.rules:
            raise ValueError(f"grammar refers to an undefined rule '{name}'")
        self.active.add(name)
        value = self.body(self.rules[name])
        self.active.discard(name)
        self.memo[name] = value
        return value

    def body(self, text: str) -> Longest:
        """Longest match of one rule body.  Iterative: a bounded string of n characters is
        n nested groups, deeper than Python's recursion allows."""
        tokens, position = [], 0
        while position < len(text):
            match = _TOKEN.match(text, position)
            if match is None:
                raise ValueError(f"unreadable grammar rule: {text[:80]}")
            if match.lastgroup != "space":
                tokens.append((match.lastgroup, match.group()))
            position = match.end()
        empty: Longest = (0.0, "")
        stack: list[tuple[Longest, Longest]] = []
        best, total = empty, empty
        last: Longest | None = None  # the item postfix operators apply to
        for kind, token in tokens:
            if kind == "repeat" or token in ("?", "*", "+"):
                if last is None:
                    raise ValueError(f"'{token}' follows nothing in grammar rule: {text[:80]}")
                if token in ("*", "+"):
                    last = (_INF, "") if last[0] > 0 else empty
                elif kind == "repeat":
                    high = token.strip("{} ").split(",")[-1].strip()
                    if high == "":
                        last = (_INF, "") if last[0] > 0 else empty
                    else:
                        last = (last[0] * int(high), last[1] * int(high))
                continue
            total = _add(total, last or empty)
            last = None
            if kind == "literal":
                literal = "".join(_unescape(token[1:-1]))
                last = float(len(literal.encode("utf-8", "surrogatepass"))), literal
            elif kind == "cls":
                last = _class_widest(token[1:-1])
            elif kind == "name":
                last = self.rule(token)
            elif token == ".":
                last = float(_UTF8_MAX), "\U0001F600"
            elif token == "(":
                stack.append((best, total))
                best, total = empty, empty
            elif token == "|":
                best, total = max(best, total, key=lambda v: v[0]), empty
            elif token == ")":
                if not stack:
                    raise ValueError(f"unbalanced ')' in grammar rule: {text[:80]}")
                group = max(best, total, key=lambda v: v[0])
                best, total = stack.pop()
                last = group
        total = _add(total, last or empty)
        if stack:
            raise ValueError(f"unclosed group in grammar rule: {text[:80]}")
        return max(best, total, key=lambda v: v[0])


def _longest(grammar: str) -> Longest:
    rules: dict[str, str] = {}
    for line in grammar.splitlines():
        if "::=" in line and not line.lstrip().startswith("#"):
            name, _, body = line.partition("::=")
            rules[name.strip()] = body.strip()
    return _Reader(rules).rule("root")


def longest_reply_bytes(grammar: str) -> int | None:
    """The most UTF-8 bytes a string accepted by `grammar` can have; None if unbounded."""
    size, _ = _longest(grammar)
    return None if size == _INF else int(size)


def longest_reply(grammar: str) -> str | None:
    """One longest string `grammar` accepts (for checking the bound); None if unbounded."""
    size, text = _longest(grammar)
    return None if size == _INF else text


def reply_token_limit(schema: dict[str, Any]) -> int | None:
    """Tokens that always suffice for a complete reply under `schema`'s grammar (the
    longest reply in bytes, plus the end-of-turn token); None when unbounded."""
    longest = longest_reply_bytes(json_grammar(schema))
    return None if longest is None else longest + 1

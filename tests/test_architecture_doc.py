"""docs/ARCHITECTURE.md's module map is the code's (issue #34): every module of a folder
the map lists module by module is in it, and every module it names exists."""

from __future__ import annotations

import re

from helpers import ROOT

ENTRY = re.compile(r"^( *)([\w.]+/|[\w]+\.py)(?=\s|$)")


def layout_map() -> dict[str, set[str]]:
    """Folder (relative to the repository) -> the modules and folders the map names in it."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    block = text.split("## Layout", 1)[1].split("```", 2)[1]
    named: dict[str, set[str]] = {}
    stack: list[tuple[int, str]] = []  # (indent, folder path)
    for line in block.splitlines():
        match = ENTRY.match(line)
        if not match:
            continue
        indent, name = len(match.group(1)), match.group(2)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1] if stack else ""
        named.setdefault(parent, set()).add(name)
        if name.endswith("/"):
            stack.append((indent, parent + name))
    return named


def test_the_module_map_names_every_module_and_only_modules_that_exist():
    named = layout_map()
    assert "desktop_app/core/" in named and "desktop_app/gui/" in named
    missing, absent = [], []
    for folder, names in named.items():
        for name in names:
            if not (ROOT / folder / name).exists():
                absent.append(folder + name)
        listed = [n for n in names if n.endswith(".py")]
        if not folder.startswith("desktop_app/") or not listed:
            continue  # a folder described as a whole (cli/: a module per command group)
        for path in sorted((ROOT / folder).glob("*.py")):
            if path.name != "__init__.py" and path.name not in names:
                missing.append(folder + path.name)
    assert missing == [], f"modules the map in docs/ARCHITECTURE.md leaves out: {missing}"
    assert absent == [], f"names in the map with no such file: {absent}"

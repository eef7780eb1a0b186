"""Lumen's layers, enforced (issue #16): a module imports only from its own layer or
the layers below it, so the core never reaches up into the faces, and packages never
import each other in a circle.  Imports inside functions count too: they hide a cycle,
they do not remove it."""

from __future__ import annotations

import ast
import subprocess
import sys

from helpers import ROOT

# Lowest first.  A package not listed is an error: a new one must be given its place.
LAYERS: list[tuple[str, ...]] = [
    ("core.errors", "core.hashing", "core.choices"),
    ("core.config", "core.offline", "core.progress", "core.textfiles", "core.tabular", "core.locks",
     "core.logs", "core.prompts", "core.templates", "core.readability", "core.documents",
     "core.derived_cache"),
    ("core.store", "core.models"),
    ("core.glossary",),
    ("core.pipelines",),
    ("core.knowledge",),
    ("core.evaluation",),
    ("core.session", "core.doctor", "core.netprobe", "core.selftest", "core.startup"),
    ("core.results",),
    ("export", "gui", "cli", "__main__"),
]
LEVEL = {name: level for level, names in enumerate(LAYERS) for name in names}


def unit(module: str) -> str:
    """The layer unit of a module: core's packages and modules one by one, then the
    faces ("desktop_app.core.store.keys" -> "core.store", "desktop_app.gui.app" -> "gui")."""
    parts = module.split(".")[1:]  # without "desktop_app"
    if not parts:
        return "__init__"
    if parts[0] == "core" and len(parts) > 1:
        return f"core.{parts[1]}"
    return parts[0]


def imported_modules(module: str, source: str, is_package: bool, known: set[str],
                     typing_only: bool = True) -> set[str]:
    """Every desktop_app module `source` imports, wherever the import statement is (and,
    without `typing_only`, leaving out those under `if TYPE_CHECKING:`, which never run)."""
    found = set()
    tree = ast.parse(source)
    if not typing_only:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING",
                                                                        "typing.TYPE_CHECKING"):
                node.body = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("desktop_app")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                if not is_package:
                    base = base[:-1]
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module and node.module.startswith("desktop_app"):
                target = node.module
            else:
                continue
            # "from .. import offline" imports the module desktop_app.core.offline.
            subs = {f"{target}.{alias.name}" for alias in node.names} & known
            found |= subs or {target}
        elif (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
              and node.target.id == "_FROM" and module == "desktop_app.core.results"):
            # core/results.py imports by name when asked: each (module, name) is an import.
            found |= {f"desktop_app.core.{pair.elts[0].value}" for pair in node.value.values}
    return found


def upward_imports(sources: dict[str, tuple[str, bool]]) -> list[str]:
    """'A imports B' for each import that reaches a higher layer (or an unplaced unit)."""
    known = set(sources)
    problems = []
    for module, (source, is_package) in sorted(sources.items()):
        own = unit(module)
        for target in sorted(imported_modules(module, source, is_package, known)):
            other = unit(target)
            if other in ("__init__", own):
                continue
            if own not in LEVEL or other not in LEVEL:
                problems.append(f"{module} imports {target}: give "
                                f"{own if own not in LEVEL else other} a layer in tests/test_layers.py")
            elif LEVEL[other] > LEVEL[own]:
                problems.append(f"{module} ({own}) imports {target} ({other}), a higher layer")
    return problems


def lumen_sources() -> dict[str, tuple[str, bool]]:
    sources = {}
    for path in (ROOT / "desktop_app").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        module = ".".join(parts[:-1] if is_package else parts)
        sources[module] = (path.read_text(encoding="utf-8"), is_package)
    return sources


def test_no_module_imports_a_higher_layer():
    assert upward_imports(lumen_sources()) == []


def test_a_planted_upward_import_is_caught():
    sources = lumen_sources()
    source, is_package = sources["desktop_app.core.store.database"]
    sources["desktop_app.core.store.database"] = (
        source + "\n\ndef later():\n    from ..evaluation.runs import EvaluationStore\n", is_package)
    assert upward_imports(sources) == [
        "desktop_app.core.store.database (core.store) imports desktop_app.core.evaluation.runs "
        "(core.evaluation), a higher layer"]


def test_the_core_never_imports_qt():
    for module, (source, _is_package) in lumen_sources().items():
        if unit(module).startswith("core."):
            names = {alias.name for node in ast.walk(ast.parse(source))
                     if isinstance(node, (ast.Import, ast.ImportFrom))
                     for alias in node.names} | {
                node.module or "" for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom)}
            assert not any(name.startswith(("PySide6", "shiboken6")) for name in names), module


def test_every_layer_named_exists():
    units = {unit(module) for module in lumen_sources()}
    assert set(LEVEL) <= units | {"__main__"}, set(LEVEL) - units


def import_cycles(sources: dict[str, tuple[str, bool]]) -> list[list[str]]:
    """Groups of modules that import each other, directly or round a loop (an import
    inside a function counts: it only hides the loop; so does one under TYPE_CHECKING,
    issue #34: checks.py and evidence.py hid theirs there)."""
    known = set(sources)
    graph = {module: sorted(imported_modules(module, source, is_package, known)
                            & known - {module})
             for module, (source, is_package) in sources.items()}
    # Tarjan's strongly connected components, iteratively.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            targets = graph[node]
            if child < len(targets):
                work.append((node, child + 1))
                target = targets[child]
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    cycles.append(sorted(group))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return cycles


def test_no_modules_import_each_other():
    assert import_cycles(lumen_sources()) == []


def test_a_planted_import_loop_is_caught():
    sources = lumen_sources()
    source, is_package = sources["desktop_app.core.hashing"]
    sources["desktop_app.core.hashing"] = (
        source + "\n\ndef later():\n    from .textfiles import read_text\n", is_package)
    source, is_package = sources["desktop_app.core.textfiles"]
    if "hashing" not in source:
        sources["desktop_app.core.textfiles"] = (
            source + "\n\ndef later():\n    from .hashing import sha256_text\n", is_package)
    assert import_cycles(sources) == [["desktop_app.core.hashing", "desktop_app.core.textfiles"]]


def test_a_loop_hidden_under_type_checking_is_caught():
    sources = lumen_sources()
    source, is_package = sources["desktop_app.core.pipelines.answer_rules"]
    sources["desktop_app.core.pipelines.answer_rules"] = (
        source + "\n\nif TYPE_CHECKING:\n    from .checks import Check\n", is_package)
    assert import_cycles(sources) == [["desktop_app.core.pipelines.answer_rules",
                                       "desktop_app.core.pipelines.checks",
                                       "desktop_app.core.pipelines.evidence",
                                       "desktop_app.core.pipelines.question"]]


def test_the_command_line_s_parser_loads_no_engine():
    # `lumen --version` and `lumen --help` name what exists (core/choices.py); only the
    # handler that runs something loads scipy, chromadb, llama.cpp, onnxruntime or Qt.
    code = ("import sys; from desktop_app.cli import build_parser; build_parser(); "
            "heavy = {'scipy', 'chromadb', 'llama_cpp', 'onnxruntime', 'PySide6', 'numpy'}; "
            "print(sorted(heavy & {name.split('.')[0] for name in sys.modules}))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# A function longer than this says why in its docstring, on a line starting "Long:"
# (issue #34): a long unit is a choice someone made, not an accident.
LONG_FUNCTION_LINES = 80


def long_functions_without_a_reason(sources: dict[str, tuple[str, bool]]) -> list[str]:
    unexplained = []
    for module, (source, _is_package) in sorted(sources.items()):
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            length = node.end_lineno - node.lineno + 1
            docstring = ast.get_docstring(node) or ""
            if length > LONG_FUNCTION_LINES and not any(
                    line.startswith("Long:") for line in docstring.splitlines()):
                unexplained.append(f"{module}.{node.name} ({length} lines)")
    return unexplained


def test_every_long_function_says_why_it_is_long():
    assert long_functions_without_a_reason(lumen_sources()) == []


def test_a_planted_long_function_is_caught():
    body = "".join(f"    x{i} = {i}\n" for i in range(LONG_FUNCTION_LINES))
    planted = {"desktop_app.core.planted": (f"def sprawling():\n{body}", False),
               "desktop_app.core.explained": (
                   f'def sprawling():\n    """Long: a table of constants."""\n{body}', False)}
    assert long_functions_without_a_reason(planted) == [
        f"desktop_app.core.planted.sprawling ({LONG_FUNCTION_LINES + 1} lines)"]


# The faces (gui/, cli/, export) reach the core through the Session and these modules:
# how a process starts and opens its profile (startup), what the faces read (results),
# names of what exists (choices, the scorer and system registries), errors, progress, the
# HTML page templates that the core's pages use too, and the self-test's checks that the
# window's self-test runs among its own (issue #34).
FACE_DOORS = {"desktop_app.core", "desktop_app.core.session", "desktop_app.core.results",
              "desktop_app.core.startup", "desktop_app.core.selftest", "desktop_app.core.errors",
              "desktop_app.core.choices", "desktop_app.core.progress", "desktop_app.core.templates",
              "desktop_app.core.evaluation.scorers", "desktop_app.core.evaluation.systems"}


def direct_core_imports(sources: dict[str, tuple[str, bool]]) -> list[tuple[str, str]]:
    known = set(sources)
    pairs = []
    for module, (source, is_package) in sorted(sources.items()):
        if unit(module) not in ("gui", "cli", "export", "__main__"):
            continue
        for target in sorted(imported_modules(module, source, is_package, known)):
            if target.startswith("desktop_app.core") and target not in FACE_DOORS:
                pairs.append((module, target))
    return pairs


def test_the_faces_open_no_new_door_into_the_core():
    pairs = direct_core_imports(lumen_sources())
    assert pairs == [], (
        "gui/ and cli/ import the core only through its doors (FACE_DOORS): act through "
        "core.session, read through core.results.\n" + "\n".join(f"{a} -> {b}" for a, b in pairs))


def face_reaches_past_the_session(source: str) -> list[str]:
    """A face's uses of what the Session keeps to itself: its model runtime and its store
    (the faces open a store and hand it to a Session, then act through the Session)."""
    import re

    return re.findall(r"\.runtime\b|session\.store\b|session(?:\.\w+)*\._\w+|\.evaluation\.store\b"
                      r"|session\.knowledge\(\)|session\.open_store\(\)", source)


def test_the_faces_keep_out_of_the_sessions_store_and_models():
    found = {module: uses for module, (source, _) in sorted(lumen_sources().items())
             if unit(module) in ("gui", "cli", "export", "__main__")
             and (uses := face_reaches_past_the_session(source))}
    assert found == {}
    assert face_reaches_past_the_session(
        "session.runtime.close()\nwindow.session.store.audit(x)\nself.session._store.query(q)\n"
        "session.evaluation.store.runs()\nrag = self.session.knowledge()\n"
        "session.evaluation.runs()\nsession.library.add_file(path)\n"
        "session.evaluation._store.runs()\nself.session.library._rag()\n"
        "store = session.open_store()\n") == [
            ".runtime", "session.store", "session._store", ".evaluation.store",
            "session.knowledge()", "session.evaluation._store", "session.library._rag",
            "session.open_store()"]


# What the faces may read through core.results (values the core hands back, the readers
# that describe them in words, the constants they show, and the types a face holds before
# its Session exists: Paths, Settings, Store).  core.results imports each name from its
# module when asked, so a name added there is a door past the Session that no import
# check sees: add one here only for a value, a reader or a constant, never an engine.
RESULT_NAMES = {
    "Paths", "Settings", "Store", "resource_root", "read_document", "DOCUMENT_TYPES",
    "read_summary", "vocabulary", "plain_date", "AskResult", "EvidenceLine", "Attempt",
    "TRACE_NOTICE", "Handout", "handout_status", "handout_file_kind", "KnowledgeResult",
    "KNOWLEDGE_FILES", "KNOWLEDGE_NOTICE", "model_calls_needed", "parse_labels",
    "chapter_title", "Glossary", "GlossaryEntry", "GLOSSARY_CATEGORIES", "report_kind",
    "metric_info", "VERDICT_COLOURS", "ASSESSOR_ITEM_NAMES", "Bar", "bar_chart_svg",
    "axis_label", "axis_range", "benchmark_file_columns", "detect_column_mapping",
    "demo_benchmark", "DoctorReport", "finding_meaning", "OfflineVerification", "TourReport",
    "StepResult", "ROLES", "GENERATION_ROLES", "ROLE_PURPOSES", "SERVER_NOTES",
    "known_chat_formats", "PASSPHRASE_ENV", "MIN_PASSPHRASE_LENGTH", "keyring_available",
}


def test_the_faces_read_only_reviewed_names_through_core_results():
    from desktop_app.core import results

    assert set(results._FROM) - RESULT_NAMES == set(), (
        "a new name in core.results is a new door into the core (see RESULT_NAMES)")
    assert RESULT_NAMES - set(results._FROM) == set()  # a name no longer there leaves the list


def test_a_planted_face_import_is_caught():
    sources = lumen_sources()
    before = len(direct_core_imports(sources))
    source, is_package = sources["desktop_app.cli.doctor"]
    sources["desktop_app.cli.doctor"] = (
        source + "\n\ndef later():\n    from ..core.hashing import sha256_text\n", is_package)
    assert ("desktop_app.cli.doctor", "desktop_app.core.hashing") in direct_core_imports(sources)
    assert len(direct_core_imports(sources)) == before + 1


def test_every_json_option_comes_from_the_one_helper():
    """`--json` is declared once (cli/common.add_json_option), so every command that has it
    says the same thing in its help (issue #34: it was added by hand 28 times)."""
    import argparse

    from desktop_app.cli import build_parser

    def parsers(parser):
        yield parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for child in dict.fromkeys(action.choices.values()):
                    yield from parsers(child)

    helps = [action.help for parser in parsers(build_parser()) for action in parser._actions
             if "--json" in action.option_strings]
    assert len(helps) >= 28
    assert all(h.startswith("print ") and h.endswith(" as JSON instead of text") for h in helps)


def test_commands_print_their_result_through_the_one_output_helper():
    """A command hands its result to cli/common.show_result (JSON with --json, else its
    reader's text) and its notes to `tell`; none decides between the two by itself (issue
    #34: 31 `if args.json:` branches).  The streamed printers are still switched by the
    flag, as `progress_for` is."""
    import re

    branches = {}
    for path in sorted((ROOT / "desktop_app" / "cli").glob("*.py")):
        if path.name != "common.py":
            found = re.findall(r"\bif (?:not )?args\.json\b", path.read_text(encoding="utf-8"))
            if found:
                branches[path.name] = len(found)
    assert branches == {"doctor.py": 1}, branches  # its step printer, streamed to stdout

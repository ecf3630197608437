"""The layering rules, checked on the source: domain is pure standard library;
dependencies point one way (ops -> projections -> ledger -> domain); no module
imports itself back through others (no import cycles, in any layer)."""
from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ["domain", "ledger", "projections", "ops"]  # each may import only those before it
FORBIDDEN_IN_DOMAIN = {"time", "datetime", "random", "os", "io", "socket", "sqlite3", "subprocess", "pathlib", "uuid"}


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def sources(layer: str) -> list[Path]:
    return sorted((ROOT / layer).rglob("*.py"))


@pytest.mark.parametrize("path", sources("domain"), ids=lambda p: p.name)
def test_domain_is_pure_standard_library(path: Path) -> None:
    imported = imports_of(path)
    third_party = {n for n in imported if n not in sys.stdlib_module_names and n != "domain"}
    assert not third_party, f"{path.name} imports non-stdlib {third_party}"
    impure = imported & FORBIDDEN_IN_DOMAIN
    assert not impure, f"{path.name} imports I/O, clock or randomness: {impure}"


@pytest.mark.parametrize("layer", LAYERS)
def test_dependencies_point_inward(layer: str) -> None:
    later = set(LAYERS[LAYERS.index(layer) + 1:])
    offenders = {
        str(p.relative_to(ROOT)): sorted(imports_of(p) & later) for p in sources(layer) if imports_of(p) & later
    }
    assert not offenders, f"{layer} must not import {sorted(later)}: {offenders}"


def test_no_float_near_money() -> None:
    """float() / float annotations in money code are bugs (ratios for display live in ops/)."""
    hits = []
    for layer in ("domain", "ledger", "projections"):
        for path in sources(layer):
            for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                code = line.split("#")[0]
                if ("float(" in code or ": float" in code or "-> float" in code) and "per_s" not in code:
                    hits.append(f"{path.relative_to(ROOT)}:{lineno}: {line.strip()}")
    assert not hits, "floats near money:\n" + "\n".join(hits)


# Import cycles. Every import counts: at module level, inside a function and under
# TYPE_CHECKING, because a deferred import only hides a cycle from the interpreter.
KNOWN_CYCLES: list[set[str]] = []


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def repo_modules() -> dict[str, Path]:
    return {module_name(p): p for layer in LAYERS for p in sources(layer)}


def imported_names(path: Path, package: str) -> Iterator[str]:
    """Every dotted name `path` imports, relative imports resolved against `package`."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)  # `from pkg import module`


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the repo modules it imports (a name is cut back to the nearest repo module)."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for imported in imported_names(path, package):
            while imported and imported not in modules:
                imported = imported.rpartition(".")[0]
            targets.add(imported)
        graph[name] = targets - {"", name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = {stack.pop()}
                    while node not in component:
                        component.add(stack.pop())
                    if len(component) > 1:
                        found.append(component)
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in stack:
                low[node] = min(low[node], index[child])
    return found


def test_the_cycle_finder_finds_direct_deferred_and_long_cycles() -> None:
    graph = {"a": {"b"}, "b": {"a", "c"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": {"a"}, "g": set()}
    assert sorted(map(sorted, cycles(graph))) == [["a", "b"], ["c", "d", "e"]]


def test_the_import_graph_counts_deferred_type_checking_and_relative_imports(tmp_path: Path) -> None:
    source = tmp_path / "mod.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "from domain.errors import Refusal\n"
        "from . import sibling\n"
        "from ..other import thing\n"
        "if TYPE_CHECKING:\n    from ops.sim.core import RoundCtx\n"
        "def later():\n    import ledger.app\n",
        encoding="utf-8",
    )
    names = set(imported_names(source, "ops.cli.commands"))
    assert {"domain.errors", "ops.cli.commands.sibling", "ops.cli.other.thing", "ops.sim.core", "ledger.app"} <= names
    graph = import_graph(repo_modules())
    assert "domain.baccarat" in graph["domain.registry"]  # `from domain import baccarat` inside a function
    assert "domain.errors" in graph["domain.money"]


def test_no_import_cycles() -> None:
    found = cycles(import_graph(repo_modules()))
    unexpected = [sorted(c) for c in found if c not in KNOWN_CYCLES]
    assert not unexpected, f"import cycles: {unexpected}"
    stale = [sorted(c) for c in KNOWN_CYCLES if c not in found]
    assert not stale, f"these known cycles are gone: delete them from KNOWN_CYCLES: {stale}"


# The event vocabulary is known in one place (ledger/records.py) and the store is read
# through one reader (ledger/eventlog.py): outside ledger/, no stored field is read by
# name, no event is named by string, and nothing reaches for the library's recorder or
# mapper (which also keeps every reader off the backend's own tables and guesses).
VOCABULARY_LEAKS = ('fields["', "fields['", '"Round.', "'Round.", '"Shoe.', "'Shoe.", ".recorder", ".mapper")
# The benchmarks of the write path and of each library override compare the ledger with the library's own.
LEAKS_ALLOWED = {"ops/bench/ingest_bench.py": {".recorder", ".mapper"},
                 "ops/bench/library_bench.py": {".recorder", ".mapper"}}


@pytest.mark.parametrize("layer", ["domain", "projections", "ops"])
def test_event_names_fields_and_the_store_stay_inside_ledger(layer: str) -> None:
    hits = []
    for path in sources(layer):
        name = str(path.relative_to(ROOT))
        allowed = LEAKS_ALLOWED.get(name, set())
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.startswith("from ledger."):  # importing ledger's modules (ledger.library.recorders) is the way in
                continue
            hits += [f"{name}:{lineno}: {leak} in {line.strip()}" for leak in VOCABULARY_LEAKS
                     if leak in line and leak not in allowed]
    assert not hits, "outside ledger/ (use ledger.records / ledger.eventlog):\n" + "\n".join(hits)


def test_the_leak_check_catches_what_it_names() -> None:
    """The check above is a substring scan: each pattern must match the code it forbids."""
    samples = ['x = ev.fields["stake_minor"]', 'if ev.name == "Round.Settled":', "n = 'Shoe.Started'",
               "rows = app.recorder.select_notifications(1, 10)", "event = app.mapper.to_domain_event(n)"]
    for sample in samples:
        assert any(leak in sample for leak in VOCABULARY_LEAKS), sample


# The library seam (docs/architecture-library.md): the ledger's overrides of `eventsourcing`
# classes live in ledger/library/ only, each justified by a measurement there. Elsewhere the
# library is used through its public API; subclassing `Application` to fill its
# `construct_*` hooks is the library's intended use (ledger/app.py), not an override.
# The tests are not checked: the contract tests (tests/store/ledger/test_recorders.py,
# test_ingest_levers.py) read the library's source on purpose, to fail on an upgrade.
SEAM = "ledger.library"
LIBRARY_ENTRY_POINTS = {"eventsourcing.application.Application"}


def library_names(tree: ast.AST) -> dict[str, str]:
    """Local name -> the dotted `eventsourcing` name it was imported as."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "eventsourcing":
            names.update({alias.asname or alias.name: f"{node.module}.{alias.name}" for alias in node.names})
        elif isinstance(node, ast.Import):
            names.update({(alias.asname or alias.name).split(".")[0]: (alias.asname and alias.name) or alias.name.split(".")[0]
                          for alias in node.names if alias.name.split(".")[0] == "eventsourcing"})
    return names


def library_name(expr: ast.expr, names: dict[str, str]) -> str | None:
    """The `eventsourcing` name `expr` (`Mapper`, `Mapper[UUID]`, `persistence.Mapper`) stands for, if any."""
    if isinstance(expr, ast.Subscript):
        return library_name(expr.value, names)
    if isinstance(expr, ast.Attribute):
        owner = library_name(expr.value, names)
        return owner and f"{owner}.{expr.attr}"
    return names.get(expr.id) if isinstance(expr, ast.Name) else None


def library_subclasses(tree: ast.AST, names: dict[str, str]) -> Iterator[tuple[ast.ClassDef, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            yield from ((node, base) for base in map(lambda b: library_name(b, names), node.bases) if base)


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def own_names(cls: ast.ClassDef) -> set[str]:
    """What the class itself defines: methods, class attributes, and attributes it assigns on self."""
    found = set()
    for node in ast.walk(cls):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.Name | ast.Attribute) and isinstance(node.ctx, ast.Store):
            found.add(node.id if isinstance(node, ast.Name) else node.attr)
    return found


def private_library_reads(tree: ast.AST) -> Iterator[str]:
    """`from eventsourcing.x import _y`, `<library name>._y`, and, in a subclass of a
    library class, `self._y` / `super()._y` / `cls._y` that the class does not define itself."""
    names = library_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("eventsourcing"):
            yield from (f"line {node.lineno}: import {a.name}" for a in node.names if private(a.name))
        elif isinstance(node, ast.Attribute) and private(node.attr) and library_name(node.value, names):
            yield f"line {node.lineno}: {ast.unparse(node)}"
    for cls, _base in library_subclasses(tree, names):
        own = own_names(cls)
        for node in ast.walk(cls):
            if (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and private(node.attr)
                    and node.attr not in own and ast.unparse(node.value) in {"self", "cls", "super()"}):
                yield f"line {node.lineno}: {cls.name}: {ast.unparse(node)}"


def in_seam(module: str) -> bool:
    return module == SEAM or module.startswith(SEAM + ".")


def test_only_the_seam_subclasses_library_classes() -> None:
    offenders = []
    for module, path in repo_modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        offenders += [f"{module}: class {cls.name}({base})" for cls, base in library_subclasses(tree, library_names(tree))
                      if not in_seam(module) and base not in LIBRARY_ENTRY_POINTS]
    assert not offenders, f"overrides of eventsourcing classes belong in {SEAM}:\n" + "\n".join(offenders)


def test_the_seam_holds_the_overrides_the_docs_name() -> None:
    """The check above sees the seam's subclasses (so it would see one elsewhere)."""
    found = set()
    for module, path in repo_modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        found |= {(module, cls.name, base) for cls, base in library_subclasses(tree, library_names(tree))}
    assert {
        ("ledger.library.aggregate", "LedgerEvent", "eventsourcing.domain.DomainEvent"),
        ("ledger.library.eventstore", "LedgerEventStore", "eventsourcing.persistence.EventStore"),
        ("ledger.library.eventstore", "LedgerMapper", "eventsourcing.persistence.Mapper"),
        ("ledger.library.transcoder", "OrjsonTranscoder", "eventsourcing.persistence.JSONTranscoder"),
        ("ledger.library.sqlite_recorder", "LedgerSQLiteRecorder", "eventsourcing.sqlite.SQLiteApplicationRecorder"),
        ("ledger.library.postgres_recorder", "LedgerPostgresRecorder", "eventsourcing.postgres.PostgresApplicationRecorder"),
        ("ledger.app", "LedgerApp", "eventsourcing.application.Application"),
    } == found


def test_no_module_reads_library_private_names() -> None:
    offenders = []
    for module, path in repo_modules().items():
        offenders += [f"{module}: {hit}" for hit in private_library_reads(ast.parse(path.read_text(encoding="utf-8")))]
    assert not offenders, "names starting with `_` are the library's internals:\n" + "\n".join(offenders)


def test_the_private_read_check_catches_what_it_names() -> None:
    source = (
        "import eventsourcing.persistence as p\n"
        "from eventsourcing.application import Application, _helper\n"
        "from eventsourcing.sqlite import SQLiteApplicationRecorder\n"
        "x = Application._private\n"
        "y = p.Mapper._z\n"
        "class R(SQLiteApplicationRecorder):\n"
        "    _mine = 1\n"
        "    def insert_events(self):\n"
        "        self._mine, self._own = 1, 2\n"
        "        return self._own, self._insert_events(), super()._select()\n"
    )
    hits = list(private_library_reads(ast.parse(source)))
    assert {hit.split(": ")[-1] for hit in hits} == {
        "import _helper", "Application._private", "p.Mapper._z", "self._insert_events", "super()._select"}


@pytest.mark.parametrize("package", ["ops/service", "ops/console", "projections"])
def test_the_http_service_and_the_pages_never_import_the_command_line(package: str) -> None:
    """One read service (projections/queries.py) for the CLI, the routes and the pages: the
    routes and pages reach it directly, never through the command line's modules."""
    offenders = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            offenders += [f"{path.relative_to(ROOT)}: {n}" for n in names if n == "ops.cli" or n.startswith("ops.cli.")]
    assert not offenders, offenders


# No module of ledger/ over about 400 lines (issue 29): a module that grows past this is split
# by what it holds (docs/architecture.md, "ledger/ by module"), not let grow.
LEDGER_MODULE_LINES_MAX = 420


@pytest.mark.parametrize("path", sources("ledger"), ids=lambda p: str(p.relative_to(ROOT / "ledger")))
def test_no_ledger_module_is_over_the_size_limit(path: Path) -> None:
    count = len(path.read_text(encoding="utf-8").splitlines())
    assert count <= LEDGER_MODULE_LINES_MAX, (
        f"{path.relative_to(ROOT)} has {count} lines, over {LEDGER_MODULE_LINES_MAX}: split it by what it holds")

"""The package's modules import one another without a circle, and services do not import the facade.

Every import counts: at module level, under ``TYPE_CHECKING`` and inside functions. An import
of ``pkg.mod`` counts as an edge to ``pkg.mod`` (not to ``pkg``'s ``__init__``, which Python
also runs: a package's ``__init__`` re-exporting its modules is not a design dependency).
``from pkg import name`` is an edge to ``pkg.name`` when that is a module, to ``pkg`` otherwise.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.support.services import ROOT

PACKAGE = ROOT / "mixed_iceberg"


def _modules(package: Path) -> dict[str, Path]:
    """Module names (``mixed_iceberg.reader.scan``) of the files under ``package``."""
    modules = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _imported(module: str, path: Path, modules: dict[str, Path]) -> Iterator[str]:
    """The package's modules that ``module`` (the file ``path``) imports."""

    def nearest(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    here = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here[: len(here) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        for target in targets:
            found = nearest(target) if target.split(".")[0] == "mixed_iceberg" else None
            if found is not None and found != module:
                yield found


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    modules = _modules(package)
    return {name: set(_imported(name, path, modules)) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _describe(component: list[str], graph: dict[str, set[str]]) -> str:
    members = set(component)
    return "\n".join(f"  {m} -> {sorted(graph[m] & members)}" for m in component)


def test_the_package_has_no_import_cycle() -> None:
    graph = import_graph()
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n\n".join(_describe(c, graph) for c in found)


def test_services_take_the_handle_not_the_facade() -> None:
    """Only the facade's users (the package root, the catalog, the ingest job, the optimizer service, the CLI and
    its SQL terminal, the operator reports (CLI and dashboard), the PyFlink source and sink) import ``mixed_iceberg.table``; scans, transactions, optimizing
    and maintenance get a handle."""
    facade_users = (
        "mixed_iceberg.catalog",
        "mixed_iceberg.ingest",
        "mixed_iceberg.optimizer",
        "mixed_iceberg.cli",
        "mixed_iceberg.query",
        "mixed_iceberg.reports",
        "mixed_iceberg.flink",
    )
    graph = import_graph()
    importers = sorted(m for m, targets in graph.items() if "mixed_iceberg.table" in targets)
    assert [m for m in importers if m != "mixed_iceberg" and not m.startswith(facade_users)] == []


def test_the_checker_sees_a_cycle_through_type_checking_and_relative_imports(tmp_path: Path) -> None:
    package = tmp_path / "mixed_iceberg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from mixed_iceberg.sub import b\n")
    (package / "sub" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import C\n", encoding="utf-8"
    )
    (package / "sub" / "c.py").write_text("def f():\n    from mixed_iceberg import a\n")
    assert cycles(import_graph(package)) == [["mixed_iceberg.a", "mixed_iceberg.sub.b", "mixed_iceberg.sub.c"]]

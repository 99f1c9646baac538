"""Every third-party package our code imports is declared in pyproject.toml.

A package that only arrives as someone else's dependency (cachetools and pyparsing came with
pyiceberg) disappears when that dependency changes its own; pip then installs a mixed-iceberg
that fails on import. The library (``mixed_iceberg/``, ``jobs/``) may import what the core
dependencies or an extra declare; tests, benchmarks and scripts may also use the ``dev`` extra.
"""

from __future__ import annotations

import ast
import importlib.metadata
import sys
import tomllib
from collections.abc import Iterable
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.support.services import ROOT

#: Imported but provided by another declared distribution under a different top-level name.
_PROVIDED_BY = {"pyflink": "apache-flink", "yaml": "pyyaml"}


def _declared() -> tuple[set[str], set[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    library = {canonicalize_name(Requirement(r).name) for r in project["dependencies"]}
    library |= {canonicalize_name(Requirement(r).name) for name, reqs in extras.items() if name != "dev" for r in reqs}
    dev = {canonicalize_name(Requirement(r).name) for r in extras["dev"]}
    return library, library | dev


def imported_distributions(paths: Iterable[Path], local: frozenset[str] = frozenset()) -> dict[str, set[str]]:
    """Distribution name -> files importing it, for every absolute third-party import in ``paths``
    (``local``: module names of our own scripts that put their folders on ``sys.path``)."""
    by_module = importlib.metadata.packages_distributions()
    found: dict[str, set[str]] = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top in sys.stdlib_module_names or top in ("__future__", "mixed_iceberg", "tests", "bench", "scripts", "jobs"):
                    continue
                if top in local or (path.parent / f"{top}.py").exists() or (path.parent / top).is_dir():
                    continue  # a script's sibling module
                names = [_PROVIDED_BY[top]] if top in _PROVIDED_BY else by_module.get(top, [top])
                for name in names:
                    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
                    found.setdefault(canonicalize_name(name), set()).add(str(shown))
    return found


def _undeclared(roots: list[str], allowed: set[str]) -> dict[str, list[str]]:
    paths = [p for root in roots for p in (ROOT / root).rglob("*.py") if ".envs" not in p.parts]
    local = frozenset(p.stem for p in paths)
    return {name: sorted(files) for name, files in imported_distributions(paths, local).items() if name not in allowed}


def test_the_library_imports_only_declared_packages() -> None:
    library, _ = _declared()
    assert _undeclared(["mixed_iceberg", "jobs"], library) == {}


def test_tests_benchmarks_and_scripts_import_only_declared_packages() -> None:
    _, everything = _declared()
    # bench/peers runs each peer in its own virtualenv (bench/peers/envs.sh) with its own pins.
    undeclared = _undeclared(["tests", "scripts"], everything)
    undeclared |= {
        name: [f for f in files if not f.startswith("bench/peers/")]
        for name, files in _undeclared(["bench"], everything).items()
        if any(not f.startswith("bench/peers/") for f in files)
    }
    assert undeclared == {}


def test_the_check_sees_an_undeclared_import(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("import cachetools\nfrom pyparsing import ParseException\nimport json\nfrom . import x\nimport m\n")
    assert set(imported_distributions([source])) == {"cachetools", "pyparsing"}

"""pyiceberg's private API is reached from one package only, and our patches wait for our catalog.

``mixed_iceberg._pyiceberg`` is the one place that may import underscored pyiceberg names or
touch pyiceberg objects' private attributes: a pyiceberg release then has one package to check.
``import mixed_iceberg`` leaves pyiceberg as it is for other users in the process; the patches
apply when our catalog is created.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import pyiceberg
import pytest

from mixed_iceberg._pyiceberg import UnsupportedPyicebergError, check_version
from tests.support.services import ROOT

PACKAGE = ROOT / "mixed_iceberg"
SEAM = PACKAGE / "_pyiceberg"
PYICEBERG = Path(pyiceberg.__file__).parent
#: Receivers that are pyiceberg transactions or snapshot producers wherever they appear in our code.
_PYICEBERG_RECEIVERS = re.compile(r"\b(txn|transaction|producer)\._[a-z]\w*")


def _private_names_defined_in(paths: Iterable[Path]) -> set[str]:
    """Underscored (not dunder) functions, methods and attributes defined in ``paths``."""
    names: set[str] = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
            elif isinstance(node, ast.Assign):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def violations(source: str, pyiceberg_private: set[str], ours: set[str]) -> Iterator[str]:
    """Where ``source`` reaches into pyiceberg's private API."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "pyiceberg":
            if any(part.startswith("_") for part in (node.module or "").split(".")):
                yield f"line {node.lineno}: imports private module {node.module}"
            for alias in node.names:
                if alias.name.startswith("_"):
                    yield f"line {node.lineno}: imports {alias.name} from {node.module}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "pyiceberg" and any(p.startswith("_") for p in alias.name.split(".")):
                    yield f"line {node.lineno}: imports private module {alias.name}"
        elif isinstance(node, ast.Attribute) and node.attr in pyiceberg_private and node.attr not in ours:
            yield f"line {node.lineno}: uses pyiceberg's private {node.attr}"
    for number, line in enumerate(source.splitlines(), 1):
        if found := _PYICEBERG_RECEIVERS.search(line):
            yield f"line {number}: uses {found.group(0)}"


@pytest.fixture(scope="module")
def private_names() -> tuple[set[str], set[str]]:
    ours = _private_names_defined_in(p for p in PACKAGE.rglob("*.py") if SEAM not in p.parents)
    return _private_names_defined_in(PYICEBERG.rglob("*.py")), ours


def test_no_module_outside_the_seam_touches_pyiceberg_private_names(private_names: tuple[set[str], set[str]]) -> None:
    pyiceberg_private, ours = private_names
    found = {
        str(path.relative_to(ROOT)): problems
        for path in sorted(PACKAGE.rglob("*.py"))
        if SEAM not in path.parents
        if (problems := list(violations(path.read_text(encoding="utf-8"), pyiceberg_private, ours)))
    }
    assert found == {}, f"pyiceberg internals outside mixed_iceberg/_pyiceberg: {found}"


def test_the_check_finds_each_kind_of_reach_into_pyiceberg(private_names: tuple[set[str], set[str]]) -> None:
    pyiceberg_private, ours = private_names
    source = (
        "from pyiceberg.table.update.snapshot import _SnapshotProducer\n"
        "from pyiceberg.io.pyarrow import _get_parquet_writer_kwargs as kwargs\n"
        "import pyiceberg.avro._private\n"
        "def f(txn, planner):\n"
        "    txn._updates = ()\n"
        "    return planner._build_metrics_evaluator()\n"
    )
    found = list(violations(source, pyiceberg_private, ours))
    assert {f.split(":")[0] for f in found} == {"line 1", "line 2", "line 3", "line 5", "line 6"}, found
    assert list(violations("from pyiceberg.table import Transaction\nx = Transaction\n", pyiceberg_private, ours)) == []


def test_an_unsupported_pyiceberg_is_refused_with_the_supported_versions() -> None:
    check_version("0.12.0")
    check_version("0.12.3")
    for version in ("0.11.1", "0.13.0", "1.0.0"):
        with pytest.raises(UnsupportedPyicebergError, match=rf"needs pyiceberg 0\.12\.x, found {re.escape(version)}"):
            check_version(version)


def test_importing_mixed_iceberg_leaves_pyiceberg_unpatched_until_our_catalog_is_created(tmp_path: Path) -> None:
    script = f"""
import typing
import mixed_iceberg
from pyiceberg.table import statistics
from pyiceberg.avro import file as avro_file

def state():
    widened = statistics.BlobMetadata.model_fields["type"].annotation is str
    return widened, avro_file.resolve_reader.__module__ != "pyiceberg.avro.resolver"

before = state()
assert typing.get_origin(statistics.BlobMetadata.model_fields["type"].annotation) is not None, "expected pyiceberg's own Literal"
from mixed_iceberg import load_catalog
load_catalog("local", uri="sqlite:///{tmp_path}/c.db", warehouse="{tmp_path}/wh")
print(before, state())
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["(False,", "False)", "(True,", "True)"], done.stdout


def test_plain_pyiceberg_loads_an_optimized_base_store_once_patched(tmp_path: Path) -> None:
    """Every BaseStore an optimizer committed to carries ``optimized-sequence`` statistics blobs,
    a type outside pyiceberg 0.12's closed list: plain pyiceberg reads it after
    ``mixed_iceberg.patch_pyiceberg()`` (before, ``import mixed_iceberg`` did it for everyone)."""
    uri, warehouse = f"sqlite:///{tmp_path}/c.db", f"{tmp_path}/wh"
    setup = f"""
import pyarrow as pa
from mixed_iceberg import load_catalog
table = load_catalog("local", uri="{uri}", warehouse="{warehouse}").create_table(
    "db.t", pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())]), primary_key=["id"])
with table.new_transaction(("w", 1)) as txn:
    txn.write(pa.table({{"id": [1, 2], "v": ["a", "b"], "_change_action": ["+I", "+I"]}}))
table.optimizing.run("minor")
"""
    read = f"""
import sys
import mixed_iceberg
from pyiceberg.catalog.sql import SqlCatalog
if sys.argv[1] == "patched":
    mixed_iceberg.patch_pyiceberg()
try:
    print(SqlCatalog("local", uri="{uri}", warehouse="{warehouse}").load_table("db.t").scan().to_arrow().num_rows)
except Exception as exc:
    print(type(exc).__name__)
"""
    done = subprocess.run([sys.executable, "-c", setup], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    runs = {
        mode: subprocess.run([sys.executable, "-c", read, mode], capture_output=True, text=True, cwd=ROOT, timeout=120)
        for mode in ("plain", "patched")
    }
    assert runs["plain"].stdout.strip() == "ValidationError", runs["plain"].stdout + runs["plain"].stderr
    assert runs["patched"].stdout.strip() == "2", runs["patched"].stdout + runs["patched"].stderr


#: What the seam may import of ours besides itself: modules that import nothing of ours either.
_BELOW_THE_SEAM = {"mixed_iceberg.caching"}


def _our_imports(path: Path) -> set[str]:
    """The ``mixed_iceberg`` modules ``path`` imports (every import: module level, TYPE_CHECKING, functions)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name == "mixed_iceberg" or name.startswith("mixed_iceberg.")}


@pytest.mark.parametrize("path", sorted(SEAM.glob("*.py")), ids=lambda path: path.name)
def test_the_seam_is_a_leaf_what_it_needs_is_passed_in(path: Path) -> None:
    """The seam imports no package above it (the store's damage reads, the manifest cache, the
    catalog's locations and metadata writer, the option registry): those are handed in, as a
    ``ManifestAccess`` or through the SQL catalog's hook methods."""
    outside = {name for name in _our_imports(path) if not name.startswith("mixed_iceberg._pyiceberg")}
    assert outside <= _BELOW_THE_SEAM, f"{path.name} imports {sorted(outside - _BELOW_THE_SEAM)}"


def test_what_the_seam_may_import_imports_nothing_of_ours() -> None:
    for module in _BELOW_THE_SEAM:
        path = PACKAGE / f"{module.removeprefix('mixed_iceberg.').replace('.', '/')}.py"
        assert _our_imports(path) == set(), f"{module} must stay a leaf below the seam"

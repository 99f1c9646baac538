"""The exception tree is what the docs say, and its names are pinned.

Callers catch these classes by name: adding one is an API change, renaming or re-parenting one
breaks someone's ``except`` (as httpx pins its exports). The tree in ``mixed_iceberg.exceptions``'s
docstring is the documentation; this checks it against the classes.
"""

from __future__ import annotations

import re
from pathlib import Path

import mixed_iceberg
from mixed_iceberg import exceptions

PINNED = [
    "CommitConflictError",
    "CommitError",
    "CommitStateUnknownError",
    "ConfigError",
    "CorruptFileError",
    "CorruptTableError",
    "InvalidChangeActionError",
    "InvalidChangeError",
    "InvalidFilterError",
    "InvalidIdentifierError",
    "InvalidScanError",
    "InvalidSchemaError",
    "JdkNotFoundError",
    "LogStoreError",
    "MissingFileError",
    "MissingKeyError",
    "MixedIcebergError",
    "NamespaceExistsError",
    "NamespaceNotEmptyError",
    "NoSuchNamespaceError",
    "NoSuchSnapshotError",
    "NoSuchTableError",
    "NotKeyedTableError",
    "OptimizedSequenceMismatchError",
    "PropertyError",
    "QueryError",
    "RepeatedKeyError",
    "RequestRefusedError",
    "SchemaEvolutionError",
    "SchemaMismatchError",
    "SnapshotExpiredError",
    "SystemDatabaseError",
    "TableBusyError",
    "TableExistsError",
    "TransactionClosedError",
    "UnsupportedColumnTypeError",
    "WriterFailedError",
]
TOP_LEVEL = [
    "ChangeAction",
    "CommitId",
    "DataFileType",
    "MixedCatalog",
    "MixedIcebergError",
    "MixedTable",
    "TableFormat",
    "load_catalog",
    "patch_pyiceberg",
]


def test_exported_names_are_pinned() -> None:
    assert sorted(exceptions.__all__) == PINNED
    assert sorted(mixed_iceberg.__all__) == TOP_LEVEL
    assert all(hasattr(mixed_iceberg, name) for name in TOP_LEVEL)


def test_every_error_class_of_the_module_is_exported_and_pinned() -> None:
    """An error defined in ``exceptions.py`` but left out of ``__all__`` (``TableBusyError`` was)
    escapes both pins above: the tree and the export list only check what they list."""
    defined = {
        name
        for name, value in vars(exceptions).items()
        if isinstance(value, type) and issubclass(value, BaseException) and value.__module__ == exceptions.__name__
    }
    assert defined == set(PINNED), f"defined but not pinned, or the reverse: {sorted(defined ^ set(PINNED))}"


def test_every_error_has_the_one_root_and_the_parent_the_docstring_tree_gives() -> None:
    assert exceptions.__doc__ is not None
    tree = [line for line in exceptions.__doc__.splitlines() if re.match(r"^\s+(?:[│ ]*[├└]── )?\w+Error\b", line)]
    parents: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for line in tree:
        name = re.search(r"(\w+Error)", line)
        assert name is not None
        depth = line.index(name.group(1))
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if stack:
            parents[name.group(1)] = stack[-1][1]
        stack.append((depth, name.group(1)))
    documented = {*parents, *parents.values()}
    assert documented == set(PINNED), f"in the tree but not exported, or the reverse: {documented ^ set(PINNED)}"
    for name, parent in parents.items():
        cls = getattr(exceptions, name)
        first, *others = cls.__bases__
        assert first is getattr(exceptions, parent), f"{name}: the tree says its parent is {parent}"
        # A second parent only where the docstring says so, and never one of ours.
        assert others == EXTRA_BASES.get(name, []), f"{name}: undocumented parents {others}"


#: Builtin exceptions some of ours also are, so that generic handlers keep working.
EXTRA_BASES: dict[str, list[type[BaseException]]] = {"MissingFileError": [FileNotFoundError]}


def test_an_unknown_commit_outcome_is_not_a_failed_commit() -> None:
    """``except CommitError`` means "it did not land, the table is as before": an unknown
    outcome must not be caught by it (its files may be referenced by a live snapshot)."""
    assert not issubclass(exceptions.CommitStateUnknownError, exceptions.CommitError)
    assert not issubclass(exceptions.NoSuchSnapshotError, exceptions.NoSuchTableError)
    assert not issubclass(exceptions.InvalidIdentifierError, exceptions.NoSuchTableError)


def test_the_package_ships_its_type_information() -> None:
    assert (Path(mixed_iceberg.__file__).parent / "py.typed").is_file()

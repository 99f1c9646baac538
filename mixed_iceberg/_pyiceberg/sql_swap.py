"""Swap the metadata locations of several tables of a SQL catalog in one database transaction.

pyiceberg's ``SqlCatalog.commit_table`` swaps one table per database transaction; the REST
service's ``transactions/commit`` must land all its tables or none. Each swap here is the
same compare-and-set pyiceberg runs (an ``UPDATE ... WHERE metadata_location = <expected>``,
or an ``INSERT`` for a table that does not exist yet), all inside one ``BEGIN ... COMMIT``:
when any of them finds another location (or an existing row), the whole transaction rolls
back and nothing is swapped.

Private names used: ``SqlCatalog._iceberg_type_filter`` and ``_create_table_row`` (the
``iceberg_type`` column of pyiceberg's v1 schema, so views stay out and new rows are tables).
pyiceberg has no public multi-table commit for SQL catalogs (apache/iceberg-python#1678 asks
for multi-table transactions); when it has one, this module goes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyiceberg.catalog.sql import IcebergTables, SqlCatalog
from pyiceberg.exceptions import CommitFailedException, TableAlreadyExistsError
from sqlalchemy import insert, update
from sqlalchemy.exc import IntegrityError

__all__ = ["LocationSwap", "swap_locations"]


@dataclass(frozen=True, slots=True)
class LocationSwap:
    """One table's compare-and-set: from ``expected`` (None: the table must not exist) to ``new``."""

    namespace: str
    name: str
    expected: str | None
    new: str


def swap_locations(catalog: SqlCatalog, swaps: Sequence[LocationSwap]) -> None:
    """Apply every swap, or none of them.

    Raises:
        CommitFailedException: a table's location is no longer ``expected`` (another commit
            won the race, or the table was dropped); nothing was swapped.
        TableAlreadyExistsError: a table to be created exists already; nothing was swapped.
    """
    type_filter = catalog._iceberg_type_filter()
    with catalog.engine.connect() as connection, connection.begin() as transaction:
        for swap in swaps:
            if swap.expected is None:
                try:
                    with connection.begin_nested():
                        connection.execute(
                            insert(IcebergTables).values(**catalog._create_table_row(swap.namespace, swap.name, swap.new))
                        )
                except IntegrityError as exc:
                    transaction.rollback()
                    raise TableAlreadyExistsError(f"Table already exists: {swap.namespace}.{swap.name}") from exc
                continue
            statement = (
                update(IcebergTables)
                .where(
                    IcebergTables.catalog_name == catalog.name,
                    IcebergTables.table_namespace == swap.namespace,
                    IcebergTables.table_name == swap.name,
                    IcebergTables.metadata_location == swap.expected,
                )
                .values(metadata_location=swap.new, previous_metadata_location=swap.expected)
            )
            if type_filter is not None:
                statement = statement.where(type_filter)
            if connection.execute(statement).rowcount < 1:
                transaction.rollback()
                raise CommitFailedException(
                    f"{swap.namespace}.{swap.name}: expected metadata location {swap.expected}, found another "
                    f"(a concurrent commit landed first)"
                )

"""``TableHandle``: what the services need of one table, as of one load or refresh.

Scans, change transactions, bulk loads, optimizing and maintenance take a handle rather than
the :class:`~mixed_iceberg.table.MixedTable` facade: its name, its stores, its key and its
parsed :class:`~mixed_iceberg.config.table.TableConfig`. The facade builds a new handle on
each load and refresh; a service that must see the table's latest state (optimizing re-plans
after a lost race) is given a :data:`Refresh` callable, the facade's.

What a handle guarantees: its name, format, key and ``config`` never change. Its stores are
pyiceberg tables and are not frozen: a commit through them, or a service's ``refresh()`` right
before committing or at the start of a maintenance step, moves them forward in place. An
operation that needs one state takes it once at its start (a scan's snapshots, an optimizing
task's pinned metadata files). See ``docs/architecture.md`` for every place that refreshes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyiceberg.schema import Schema
from pyiceberg.table import Table

from mixed_iceberg.config.merge import MergeConfig
from mixed_iceberg.config.table import TableConfig
from mixed_iceberg.schema import arrow_schema
from mixed_iceberg.store.damage import register
from mixed_iceberg.typedef import TableFormat

__all__ = ["Refresh", "TableHandle"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TableHandle:
    """One table's name, stores, primary key and parsed configuration."""

    name: str
    format: TableFormat
    base_store: Table
    change_store: Table | None
    primary_key: tuple[str, ...]
    config: TableConfig

    @classmethod
    def of(
        cls, name: str, table_format: TableFormat, base_store: Table, change_store: Table | None, primary_key: Sequence[str]
    ) -> TableHandle:
        """The handle of the stores as loaded now; parses the configuration.

        Raises:
            PropertyError: a layout property holds a bad value.
        """
        keys = tuple(primary_key)
        # Errors about a damaged file name the table and its store (the stores' FileIO tell).
        register(base_store.io, name if change_store is None else f"{name}, BaseStore")
        if change_store is not None:
            register(change_store.io, f"{name}, ChangeStore")
        columns = {f.name: f.type for f in arrow_schema(base_store.schema(), field_ids=False)}
        config = TableConfig.from_properties(base_store.properties, columns=columns, primary_key=keys, table=name)
        return cls(
            name=name, format=table_format, base_store=base_store, change_store=change_store, primary_key=keys, config=config
        )

    @property
    def is_keyed(self) -> bool:
        """True for Mixed-Iceberg tables with a primary key (and so a ChangeStore)."""
        return self.change_store is not None

    @property
    def merge_config(self) -> MergeConfig:
        """The merge engine and its options; raises ``PropertyError`` on a bad one."""
        return self.config.merge

    def schema(self) -> Schema:
        """The Iceberg schema, shared by both stores (the BaseStore's, as loaded)."""
        return self.base_store.schema()

    def arrow_schema(self) -> pa.Schema:
        """The Arrow schema of merged reads."""
        return arrow_schema(self.schema(), field_ids=False)


#: Reloads a table's stores and returns its fresh handle (the facade's refresh).
Refresh = Callable[[], TableHandle]

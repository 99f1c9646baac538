"""A table's configuration, parsed once per load or refresh from its (BaseStore) properties.

Five parts, each with one home for its keys: the file ``layout`` (bucket counts, write target
size, upsert, LogStore; :class:`~mixed_iceberg.config.layout.LayoutConfig`), ``optimizing``
(``self-optimizing.*``), ``maintenance`` (expiry, orphans, change TTL, manifests) and ``merge``
(the merge engine, checked against the columns), and ``health`` (targets). Every value is read through the option
registry, so a bad value is the registry's :class:`~mixed_iceberg.exceptions.PropertyError`
wherever it is read.

The layout is parsed at once: every writer needs it, and a table whose layout does not parse
fails to load before anything is written. The other parts are parsed at first use, so a bad
``self-optimizing.*`` value that another engine set stops optimizing, not reads.

>>> config = TableConfig.from_properties({"self-optimizing.target-size": "1024"}, columns={}, primary_key=())
>>> config.optimizing.target_size, config.layout.base_buckets
(1024, 4)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType

import pyarrow as pa

from mixed_iceberg.config.health import HealthConfig
from mixed_iceberg.config.layout import LayoutConfig
from mixed_iceberg.config.maintenance import MaintenanceConfig
from mixed_iceberg.config.merge import MergeConfig
from mixed_iceberg.config.optimizing import OptimizingConfig

__all__ = ["TableConfig"]


@dataclass(frozen=True, eq=False, kw_only=True)
class TableConfig:
    """One table's parsed configuration (see the module docstring); frozen, one per refresh."""

    table: str
    properties: Mapping[str, str]
    columns: Mapping[str, pa.DataType]
    primary_key: tuple[str, ...]
    layout: LayoutConfig

    @classmethod
    def from_properties(
        cls, properties: Mapping[str, str], *, columns: Mapping[str, pa.DataType], primary_key: tuple[str, ...], table: str = ""
    ) -> TableConfig:
        """Parse ``properties`` of a table with ``columns`` (names to Arrow types) and ``primary_key``.

        Raises:
            PropertyError: a layout key holds a bad value.
        """
        frozen = MappingProxyType(dict(properties))
        return cls(
            table=table,
            properties=frozen,
            columns=MappingProxyType(dict(columns)),
            primary_key=tuple(primary_key),
            layout=LayoutConfig.from_properties(frozen, table),
        )

    @cached_property
    def optimizing(self) -> OptimizingConfig:
        """``self-optimizing.*``; raises ``PropertyError`` naming the key on a bad value."""
        return OptimizingConfig.from_properties(self.properties, self.table, layout=self.layout)

    @cached_property
    def maintenance(self) -> MaintenanceConfig:
        """Expiry, orphan cleaning, change TTL and manifest rewriting; raises ``PropertyError``."""
        return MaintenanceConfig.from_properties(self.properties, self.table)

    @cached_property
    def health(self) -> HealthConfig:
        """The health targets (``health.*``); raises ``PropertyError`` naming the key on a bad value."""
        return HealthConfig.from_properties(self.properties, self.table)

    @cached_property
    def merge(self) -> MergeConfig:
        """The merge engine and its options, checked against the columns; raises ``PropertyError``."""
        return MergeConfig.from_properties(self.properties, self.columns, self.primary_key, self.table)

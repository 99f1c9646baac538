"""The catalogs an optimizer opens and the tables it keeps loaded.

Shared by the optimizer's jobs (:mod:`.coordination`, :mod:`.bookkeeping`, :mod:`.execution`):
a table is loaded on first use and kept among the last :data:`TABLES_KEPT` used, so an
optimizer's memory does not grow with the tables it serves; each use refreshes it.
"""

from __future__ import annotations

from collections.abc import Mapping

from mixed_iceberg.caching import LruCache
from mixed_iceberg.catalog import MixedCatalog, load_catalog
from mixed_iceberg.optimizer.config import OptimizerConfig
from mixed_iceberg.table import MixedTable

__all__ = ["TABLES_KEPT", "ServedTables"]

#: Tables an optimizer keeps loaded, the most recently used (each use refreshes them).
TABLES_KEPT = 64


class ServedTables:
    """The catalogs of ``config`` (``catalogs`` replacing those it would open) and their tables."""

    def __init__(self, config: OptimizerConfig, catalogs: Mapping[str, MixedCatalog] | None = None) -> None:
        self.config = config
        self._catalogs: dict[str, MixedCatalog] = dict(catalogs or {})
        self._tables: LruCache[str, MixedTable] = LruCache(TABLES_KEPT)

    def catalog(self, name: str) -> MixedCatalog:
        """The catalog ``name``, opened once."""
        if name not in self._catalogs:
            self._catalogs[name] = load_catalog(
                name, config_path=self.config.catalog_config, **self.config.catalogs.get(name, {})
            )
        return self._catalogs[name]

    def table(self, catalog: str, name: str) -> MixedTable:
        """The table, kept loaded among the last :data:`TABLES_KEPT` used."""
        return self._tables.get_or_build(f"{catalog}.{name}", lambda: self.catalog(catalog).load_table(name))

    @property
    def kept(self) -> int:
        """Tables loaded now."""
        return self._tables.size

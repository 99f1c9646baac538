"""Catalogs from ``conf/catalogs.yaml``: ``load_catalog("local")``."""

from __future__ import annotations

from pathlib import Path

from pyiceberg.catalog import Catalog
from pyiceberg.catalog.rest import RestCatalog

from mixed_iceberg._pyiceberg.sql_catalog import SqlCatalogWithCache
from mixed_iceberg.catalog.config import CatalogConfig, load_catalog_config
from mixed_iceberg.catalog.mixed_catalog import MixedCatalog
from mixed_iceberg.exceptions import ConfigError

__all__ = ["CatalogConfig", "MixedCatalog", "load_catalog"]


def _iceberg_catalog(config: CatalogConfig) -> Catalog:
    props = config.iceberg_properties()
    try:
        if config.type == "sql":
            return SqlCatalogWithCache(config.name, **props)
        return RestCatalog(config.name, **props)
    except Exception as exc:  # driver and connection errors vary by backend; all are config problems here
        raise ConfigError(
            f"catalog {config.name!r} ({config.type}, uri {props.get('uri')!r}) could not be opened: {exc}"
        ) from exc


def load_catalog(name: str = "local", *, config_path: str | Path | None = None, **overrides: str) -> MixedCatalog:
    """Open the catalog ``name`` from ``catalogs.yaml``; keyword arguments override its properties.

    Example:
        >>> catalog = load_catalog("local")                       # doctest: +SKIP
        >>> catalog.list_tables("db")                              # doctest: +SKIP
    """
    config = load_catalog_config(name, Path(config_path) if config_path else None, overrides)
    return MixedCatalog(config.name, _iceberg_catalog(config), config.separator)

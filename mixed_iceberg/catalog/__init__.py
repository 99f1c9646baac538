"""Catalogs from ``conf/catalogs.yaml``, pyiceberg's configuration or properties: ``load_catalog("local")``."""

from __future__ import annotations

from pathlib import Path

from pyiceberg.catalog import Catalog

from mixed_iceberg._pyiceberg.rest_catalog import ConditionalRestCatalog
from mixed_iceberg.catalog.config import CatalogConfig, load_catalog_config
from mixed_iceberg.catalog.markers import WRITER_HEADER
from mixed_iceberg.catalog.mixed_catalog import MixedCatalog
from mixed_iceberg.catalog.sql import MixedSqlCatalog
from mixed_iceberg.exceptions import ConfigError

__all__ = ["CatalogConfig", "MixedCatalog", "load_catalog"]


def _iceberg_catalog(config: CatalogConfig) -> Catalog:
    props = config.iceberg_properties()
    try:
        if config.type == "sql":
            return MixedSqlCatalog(config.name, **props)
        # Our own writer says so (catalog/markers.py); a header the caller configured wins.
        return ConditionalRestCatalog(config.name, **{f"header.{WRITER_HEADER}": "mixed-iceberg", **props})
    except Exception as exc:  # driver and connection errors vary by backend; all are config problems here
        raise ConfigError(
            f"catalog {config.name!r} ({config.type}, uri {props.get('uri')!r}) could not be opened: {exc}"
        ) from exc


def load_catalog(name: str = "local", *, config_path: str | Path | None = None, **properties: str) -> MixedCatalog:
    """Open the catalog ``name``: its ``catalogs.yaml`` entry, pyiceberg's configuration of it
    (``.pyiceberg.yaml``, ``PYICEBERG_CATALOG__<NAME>__<KEY>``) and keyword ``properties``, later
    ones overriding earlier ones; properties alone suffice, as in pyiceberg (see docs/catalogs.md).

    Other engines see our tables in a SQL catalog only under the same ``name``: pyiceberg's
    SQL catalog keeps the name in every row and lists only its own.

    Example:
        >>> catalog = load_catalog("local")                       # doctest: +SKIP
        >>> other = load_catalog("lake", type="sql", uri="sqlite:////tmp/c.db", warehouse="/tmp/wh")  # doctest: +SKIP

    Raises:
        ConfigError: no source knows ``name``, the sources contradict each other (a ``type``
            against another or against the ``uri``, one property with two values), or the
            catalog cannot be opened.
    """
    config = load_catalog_config(name, Path(config_path) if config_path else None, properties)
    return MixedCatalog(config.name, _iceberg_catalog(config), config.separator)

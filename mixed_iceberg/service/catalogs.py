"""The catalogs ``serve`` serves: every ``sql`` catalog of the catalogs file, opened on first use.

A catalog is opened when a request first names it, so one whose database is down (the
``postgres`` entry without its service) costs nothing until used, and then answers 503 rather
than keeping the others from starting. ``rest`` catalogs are not served again (a proxy of a
proxy); they are left out of ``/v1/config`` and named in the log.

A client picks a catalog with the ``warehouse`` parameter of ``/v1/config``: the catalog's
name, or its warehouse location. Without one it gets the default catalog (``default-catalog``
of ``service.yaml``, or the only one).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from pyiceberg.catalog.sql import SqlCatalog
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from mixed_iceberg.catalog import MixedCatalog, load_catalog
from mixed_iceberg.catalog.config import CatalogConfig, default_config_path, load_catalog_config
from mixed_iceberg.config.files import read_yaml
from mixed_iceberg.exceptions import ConfigError, RequestRefusedError
from mixed_iceberg.service.errors import refuse
from mixed_iceberg.service.paths import within

__all__ = ["ServedCatalog", "ServedCatalogs"]

log = logging.getLogger(__name__)

#: A catalog property whose name holds one of these is a secret (``s3.secret-access-key``, ``token``).
_SECRET_WORDS = ("secret", "password", "token", "credential", "access-key", "session")


@dataclass(slots=True)
class ServedCatalog:
    """One served catalog: its configuration and, once opened, the catalog."""

    config: CatalogConfig
    path: Path
    _opened: MixedCatalog | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def warehouse(self) -> str:
        return self.config.properties["warehouse"]

    def mixed(self) -> MixedCatalog:
        """The catalog, opened on first use.

        Raises:
            ConfigError: it cannot be opened (its database is unreachable).
        """
        with self._lock:
            if self._opened is None:
                self._opened = load_catalog(self.name, config_path=self.path)
            return self._opened

    def sql(self) -> SqlCatalog:
        """The SQL catalog underneath."""
        iceberg = self.mixed().iceberg
        if not isinstance(iceberg, SqlCatalog):  # load_catalog of a 'sql' entry makes one
            raise ConfigError(f"catalog {self.name!r}: expected a SQL catalog, found {type(iceberg).__name__}")
        return iceberg


class ServedCatalogs:
    """The catalogs of one catalogs file, by name."""

    def __init__(self, path: Path | None = None, default: str | None = None) -> None:
        self.path = path or default_config_path()
        try:
            document = read_yaml(self.path, "catalog config")
        except FileNotFoundError as exc:
            raise ConfigError(f"serve: the catalogs file {self.path} does not exist") from exc
        names = [str(entry["name"]) for entry in document.get("catalogs") or [] if isinstance(entry, dict) and "name" in entry]
        self.catalogs: dict[str, ServedCatalog] = {}
        for name in names:
            config = load_catalog_config(name, self.path)
            if config.type != "sql":
                log.warning("catalog %s is of type %s: not served (serve re-serves sql catalogs only)", name, config.type)
                continue
            self.catalogs[name] = ServedCatalog(config, self.path)
        if not self.catalogs:
            raise ConfigError(f"serve: {self.path} holds no sql catalog to serve; found {names}")
        if default is not None and default not in self.catalogs:
            raise ConfigError(
                f"serve: default-catalog {default!r} is not a served catalog; expected one of {sorted(self.catalogs)}"
            )
        self.default = default if default is not None else (next(iter(self.catalogs)) if len(self.catalogs) == 1 else None)

    def secrets(self) -> list[str]:
        """Every secret value of the served catalogs' configuration (storage keys, the password
        of a database URI, properties named like a secret), for masking the log."""
        found: list[str] = []
        for served in self.catalogs.values():
            storage = served.config.storage
            found += [value for value in (storage.access_key_id, storage.secret_access_key) if value]
            for key, value in served.config.properties.items():
                if key == "uri":
                    try:
                        password = make_url(value).password
                    except ArgumentError:
                        password = None
                    if password:
                        found += [str(password), quote(str(password), safe="")]
                elif any(word in key.lower() for word in _SECRET_WORDS) and value:
                    found.append(value)
        return found

    def get(self, name: str) -> ServedCatalog:
        """The catalog of a ``catalogs/<name>`` prefix; a 404 for another name."""
        served = self.catalogs.get(name)
        if served is None:
            refuse(f"No such catalog: {name}; expected one of {sorted(self.catalogs)}", "not-found")
        return served

    def for_warehouse(self, warehouse: str | None) -> ServedCatalog:
        """The catalog a ``/v1/config?warehouse=`` names (its name or its warehouse location)."""
        if not warehouse:
            if self.default is None:
                refuse(f"No warehouse given and no default catalog; expected warehouse= one of {sorted(self.catalogs)}")
            return self.catalogs[self.default]
        if warehouse in self.catalogs:
            return self.catalogs[warehouse]
        for served in self.catalogs.values():
            if within(warehouse, served.warehouse) and within(served.warehouse, warehouse):
                return served
        raise RequestRefusedError(
            f"No such warehouse: {warehouse}; expected a catalog name, one of {sorted(self.catalogs)}", "not-found"
        )

"""Catalog configuration: ``conf/catalogs.yaml`` in Amoro's shape, with env-var interpolation,
and pyiceberg's own sources (``.pyiceberg.yaml``, ``PYICEBERG_CATALOG__<NAME>__<KEY>``) or
properties alone, as ``pyiceberg.catalog.load_catalog`` takes them.

A catalog entry has a ``name``, a ``type`` (``sql`` or ``rest``), a ``storage`` block
(``local`` or ``s3``) and catalog ``properties``. Values may reference ``${VAR}`` or
``${VAR:-default}``. Relative paths resolve against ``MIXED_ICEBERG_HOME`` (default: the
folder holding the ``conf/`` folder of the YAML file).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pyiceberg.utils.config import Config

from mixed_iceberg.config.files import interpolate, read_yaml, validation_error, value_error
from mixed_iceberg.exceptions import ConfigError

__all__ = [
    "CatalogConfig",
    "StorageConfig",
    "default_config_path",
    "flatten",
    "load_catalog_config",
    "pyiceberg_catalog_properties",
]

_PROJECT_ROOT = Path(__file__).resolve().parents[2]
_WHAT = "catalog config"


class StorageConfig(BaseModel):
    """Where table files live."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    type: Literal["local", "s3"] = "local"
    endpoint: str | None = None
    access_key_id: str | None = Field(default=None, alias="access-key-id")
    secret_access_key: str | None = Field(default=None, alias="secret-access-key")
    region: str | None = None

    def file_io_properties(self) -> dict[str, str]:
        """pyiceberg FileIO properties for this storage."""
        if self.type == "local":
            return {}
        props = {
            "s3.endpoint": self.endpoint,
            "s3.access-key-id": self.access_key_id,
            "s3.secret-access-key": self.secret_access_key,
            "s3.region": self.region,
            "s3.force-virtual-addressing": "false",
        }
        return {key: value for key, value in props.items() if value}


class CatalogConfig(BaseModel):
    """One catalog entry of ``catalogs.yaml``, after interpolation."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    type: Literal["sql", "rest"] = "sql"
    storage: StorageConfig = StorageConfig()
    properties: dict[str, str] = {}

    @property
    def separator(self) -> str:
        """Separator of the ChangeStore name (``<table><sep>change<sep>``)."""
        return self.properties.get("mixed-format.table-store.separator", "_")

    def iceberg_properties(self) -> dict[str, str]:
        """Properties handed to the pyiceberg catalog (ours stripped, storage added)."""
        props = self.storage.file_io_properties()
        # Explicit catalog properties (including keyword overrides) win over the storage block.
        props.update({k: v for k, v in self.properties.items() if not k.startswith("mixed-format.")})
        return props


def default_config_path() -> Path:
    """``$MIXED_ICEBERG_CATALOGS``, else ``./conf/catalogs.yaml``, else the project's own."""
    env = os.environ.get("MIXED_ICEBERG_CATALOGS")
    if env:
        return Path(env)
    local = Path.cwd() / "conf" / "catalogs.yaml"
    return local if local.exists() else _PROJECT_ROOT / "conf" / "catalogs.yaml"


def _resolve_paths(props: dict[str, str], home: Path) -> dict[str, str]:
    resolved = dict(props)
    uri = resolved.get("uri", "")
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        db = home / uri.removeprefix("sqlite:///")
        db.parent.mkdir(parents=True, exist_ok=True)
        resolved["uri"] = f"sqlite:///{db}"
    warehouse = resolved.get("warehouse")
    if warehouse and "://" not in warehouse:
        path = Path(warehouse) if Path(warehouse).is_absolute() else home / warehouse
        path.mkdir(parents=True, exist_ok=True)
        resolved["warehouse"] = path.resolve().as_uri()
    return resolved


_TYPES = ("sql", "rest")


def pyiceberg_catalog_properties(name: str) -> dict[str, str]:
    """The catalog ``name`` as pyiceberg's own configuration has it: ``.pyiceberg.yaml`` (in
    ``$PYICEBERG_HOME``, the home folder or the working folder) and ``PYICEBERG_CATALOG__<NAME>__<KEY>``
    variables, which win over the file, flattened to dotted keys."""
    try:
        found = Config().get_catalog_config(name) or {}
    except ValueError as exc:  # pyiceberg's own message: a malformed file or variable
        raise ConfigError(f"catalog {name!r}: pyiceberg's configuration is invalid: {exc}") from exc
    return flatten(found)


def flatten(values: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested YAML mappings as dotted keys with string values (``{"a": {"b": 1}}`` -> ``{"a.b": "1"}``)."""
    flat: dict[str, str] = {}
    for key, value in values.items():
        if isinstance(value, Mapping):
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = str(value)
    return flat


def _yaml_entry(name: str, path: Path | None) -> tuple[dict[str, Any] | None, Path, list[str]]:
    """The entry ``name`` of the catalogs file (None: no such entry, or no file at the default
    path), the file, and the names it holds.

    Raises:
        ConfigError: an explicitly given file is missing, or a file is malformed.
    """
    explicit = path is not None
    path = path or default_config_path()
    try:
        document = read_yaml(path, _WHAT)
    except FileNotFoundError as exc:
        if not explicit:
            return None, path, []
        raise ConfigError(f"{_WHAT} {path} does not exist; expected a YAML file with a 'catalogs' list", file=str(path)) from exc
    entries = document.get("catalogs")
    if not isinstance(entries, list):
        raise value_error(_WHAT, str(path), "catalogs", entries, "a top-level list of catalogs")
    names = [str(entry.get("name")) for entry in entries if isinstance(entry, dict)]
    matches = [entry for entry in entries if isinstance(entry, dict) and entry.get("name") == name]
    return (interpolate(matches[0], f"{path}:{name}") if matches else None), path, names


def _missing_file(path: Path) -> str:
    """Where the catalogs file was looked for, when it was not there (the usual reason a catalog is unknown)."""
    if os.environ.get("MIXED_ICEBERG_CATALOGS"):
        return f"the catalogs file {path} (named by MIXED_ICEBERG_CATALOGS) does not exist"
    local = Path.cwd() / "conf" / "catalogs.yaml"
    looked = " and ".join(dict.fromkeys([str(local), str(path)]))
    return f"no catalogs file exists (looked for {looked}; MIXED_ICEBERG_CATALOGS may name another)"


def _inferred_type(uri: str | None) -> str | None:
    """The catalog type a URI implies, as pyiceberg infers it (None: no URI or no telling)."""
    if uri is None:
        return None
    if uri.startswith("http"):
        return "rest"
    if uri.startswith(("sqlite", "postgresql")):
        return "sql"
    return None


def load_catalog_config(name: str, path: Path | None = None, overrides: Mapping[str, str] | None = None) -> CatalogConfig:
    """The named catalog's configuration, from every source pyiceberg and we read.

    Sources, later ones overriding earlier ones: the ``catalogs.yaml`` entry ``name`` (if any),
    pyiceberg's configuration of ``name`` (:func:`pyiceberg_catalog_properties`), then the
    keyword ``overrides``. A catalog needs no entry: properties alone open one (``type``
    defaults to what ``uri`` implies, as in pyiceberg).

    Raises:
        ConfigError: no source knows the catalog; the file is malformed; the sources disagree
            on its ``type`` (or a ``type`` disagrees with what ``uri`` implies); the catalogs file
            and pyiceberg's configuration set one property to different values; the type is
            not ``sql`` or ``rest``; a sql catalog lacks ``uri`` or ``warehouse``.
    """
    given = {k: str(v) for k, v in (overrides or {}).items()}
    given_type = given.pop("type", None)
    entry, path, names = _yaml_entry(name, path)
    pyiceberg = pyiceberg_catalog_properties(name)
    pyiceberg_type = pyiceberg.pop("type", None)
    if entry is None and not pyiceberg and pyiceberg_type is None and not given and given_type is None:
        missing = "" if path.exists() else f"{_missing_file(path)}; "
        raise ConfigError(
            f"no catalog named {name!r}: {missing}expected an entry in {path} (found {names}), pyiceberg configuration "
            f"(PYICEBERG_CATALOG__{name.upper()}__URI or .pyiceberg.yaml) or properties such as uri= and warehouse="
        )
    raw: dict[str, Any] = dict(entry) if entry is not None else {"name": name}
    properties = {k: str(v) for k, v in (raw.get("properties") or {}).items()}
    clashes = {k: (properties[k], v) for k, v in pyiceberg.items() if k in properties and properties[k] != v}
    if clashes:
        detail = ", ".join(f"{k}: {a!r} in {path}, {b!r} in pyiceberg's configuration" for k, (a, b) in clashes.items())
        raise ConfigError(f"catalog {name!r}: its sources disagree; expected one value per property, found {detail}")
    properties.update(pyiceberg)
    properties.update(given)
    claims = {
        source: value
        for source, value in (
            (str(path), raw.get("type") if entry is not None else None),
            ("pyiceberg's configuration", pyiceberg_type),
            ("the type= argument", given_type),
            (f"uri {properties.get('uri')!r}", _inferred_type(properties.get("uri"))),
        )
        if value is not None
    }
    if len(set(claims.values())) > 1:
        said = ", ".join(f"{value!r} by {source}" for source, value in claims.items())
        raise ConfigError(f"catalog {name!r}: expected one catalog type, found {said}")
    raw["type"] = next(iter(claims.values()), "sql")
    if raw["type"] not in _TYPES:
        raise ConfigError(f"catalog {name!r}: type expected one of {list(_TYPES)}, found {raw['type']!r}")
    raw["properties"] = properties
    try:
        config = CatalogConfig.model_validate(raw)
    except ValidationError as exc:
        raise validation_error(_WHAT, str(path), exc, prefix=f"catalogs.{name}") from exc
    home = Path(os.environ.get("MIXED_ICEBERG_HOME") or (path.resolve().parent.parent if entry is not None else Path.cwd()))
    if config.type == "sql" and not {"uri", "warehouse"} <= config.properties.keys():
        raise ConfigError(
            f"catalog {name!r}: a sql catalog needs properties 'uri' and 'warehouse'; found {sorted(config.properties)}"
        )
    if config.type == "rest":  # the server interprets its warehouse (a name or a location): passed as given
        return config
    return config.model_copy(update={"properties": _resolve_paths(config.properties, home)})

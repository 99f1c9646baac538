"""``mixed-iceberg catalogs`` and ``tables``: what the catalogs file declares, and the tables of one catalog.

Secrets are never shown: a property or storage key that names a secret, password, token or
credential prints as ``***``, and so does the password of a URI.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from mixed_iceberg import load_catalog
from mixed_iceberg.catalog.config import default_config_path, load_catalog_config
from mixed_iceberg.cli.progress import Progress
from mixed_iceberg.cli.render import Result, table
from mixed_iceberg.config.files import read_yaml
from mixed_iceberg.exceptions import ConfigError, MixedIcebergError
from mixed_iceberg.reports import kind_of

__all__ = ["mask", "register"]

_SECRET = re.compile(r"secret|password|token|credential", re.IGNORECASE)
_URI_PASSWORD = re.compile(r"(://[^:/@]+:)[^@]*@")


def mask(key: str, value: str) -> str:
    """``value`` as the CLI shows it: ``***`` for a secret, a URI's password replaced."""
    if _SECRET.search(key):
        return "***"
    return _URI_PASSWORD.sub(r"\1***@", value)


def catalogs_result(args: argparse.Namespace, progress: Progress) -> Result:
    """``catalogs``: every entry of the catalogs file, resolved, secrets masked."""
    path = default_config_path()
    try:
        document = read_yaml(path, "catalog config")
    except FileNotFoundError as exc:
        raise ConfigError(f"catalog config {path} does not exist; MIXED_ICEBERG_CATALOGS may name another") from exc
    names = [str(e.get("name")) for e in document.get("catalogs") or [] if isinstance(e, dict)]
    data: list[dict[str, Any]] = []
    for name in names:
        try:
            config = load_catalog_config(name, path)
        except MixedIcebergError as exc:  # one bad entry: shown as such, the others still listed
            data.append({"name": name, "error": str(exc)})
            continue
        storage = {k: mask(k, str(v)) for k, v in config.storage.model_dump(by_alias=True, exclude_none=True).items()}
        data.append(
            {
                "name": name,
                "type": config.type,
                "storage": storage,
                "properties": {k: mask(k, v) for k, v in config.properties.items()},
            }
        )
    rows = [
        {
            "name": d["name"],
            "type": d.get("type"),
            "storage": (d.get("storage") or {}).get("type"),
            "uri": (d.get("properties") or {}).get("uri"),
            "warehouse": (d.get("properties") or {}).get("warehouse") or d.get("error"),
        }
        for d in data
    ]
    text = f"catalogs file: {path}\n\n" + table(rows, ["name", "type", "storage", "uri", "warehouse"])
    return Result({"file": str(path), "catalogs": data}, text)


def tables_result(args: argparse.Namespace, progress: Progress) -> Result:
    """``tables``: the tables of the namespaces of ``--catalog`` (one namespace, when given)."""
    catalog = load_catalog(args.catalog)
    namespaces = [args.namespace] if args.namespace else catalog.list_namespaces()
    data: list[dict[str, Any]] = []
    for namespace in namespaces:
        for name in catalog.list_tables(namespace):
            entry: dict[str, Any] = {"table": name}
            if not args.names_only:
                try:
                    mixed = catalog.load_table(name)
                except MixedIcebergError as exc:  # a damaged table is listed, with what is wrong
                    entry.update(kind=None, error=str(exc))
                else:
                    entry.update(kind=kind_of(mixed), primary_key=list(mixed.primary_key), error=None)
            data.append(entry)
    columns = ["table"] if args.names_only else ["table", "kind", "primary_key", "error"]
    rows = [{**d, "primary_key": ", ".join(d.get("primary_key") or []) or None} for d in data]
    return Result(data, table(rows, columns, empty=f"no table in catalog {args.catalog}"))


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``catalogs`` and ``tables`` to the verbs."""
    catalogs = sub.add_parser("catalogs", parents=[common], help="the catalogs of catalogs.yaml (secrets masked)")
    catalogs.set_defaults(func=catalogs_result)
    tables = sub.add_parser("tables", parents=[common], help="the tables of --catalog, with their kind")
    tables.add_argument("namespace", nargs="?", default=None, help="only this namespace")
    tables.add_argument("--names-only", action="store_true", help="names only: no table is loaded (fast on large catalogs)")
    tables.set_defaults(func=tables_result)

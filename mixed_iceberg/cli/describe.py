"""``mixed-iceberg describe``, ``properties get|set`` and ``create``: one table's definition.

``properties set`` goes through :meth:`MixedTable.update_properties`, so the option registry
checks every key and value, and a refused one prints the registry's message (exit code 2).
``create`` reads a YAML spec (docs/cli.md shows one):

.. code-block:: yaml

    table: db.orders
    format: mixed-iceberg          # or iceberg (a plain Iceberg table; no primary key)
    columns:
      - {name: id, type: long, required: true}
      - {name: cat, type: string}
      - {name: price, type: "decimal(10, 2)"}
    primary-key: [id]              # none: an unkeyed table
    partition-by: [cat]            # transforms as create_table takes them: "bucket(16, id)", "day(ts)"
    properties: {self-optimizing.group: default}
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pyiceberg.schema import Schema

from mixed_iceberg import load_catalog
from mixed_iceberg.cli.progress import Progress
from mixed_iceberg.cli.render import Result, fields, table
from mixed_iceberg.config.files import read_yaml, validation_error
from mixed_iceberg.config.registry import OPTIONS
from mixed_iceberg.exceptions import ConfigError, PropertyError
from mixed_iceberg.reports import KIND_TEXT, describe_report
from mixed_iceberg.typedef import TableFormat

__all__ = ["TableSpec", "register"]


def _describe(args: argparse.Namespace, progress: Progress) -> Result:
    report = describe_report(load_catalog(args.catalog).load_table(args.table), args.catalog)
    stores = [(name, report[key]) for name, key in (("BaseStore", "base_store"), ("ChangeStore", "change_store"))]
    head = fields(
        [
            ("table", f"{args.catalog}.{report['table']} ({KIND_TEXT[report['kind']]})"),
            ("primary key", ", ".join(report["primary_key"]) or None),
            ("partitioned by", ", ".join(f"{p['transform']}({p['source']})" for p in report["partition_spec"]) or None),
            ("merge engine", report["merge_engine"] and f"{report['merge_engine']} (sequence field {report['sequence_field']})"),
            *(
                (name, f"{s['location']}, {s['snapshots']} snapshot(s), current {s['current_snapshot_id']}")
                for name, s in stores
                if s is not None
            ),
        ]
    )
    columns = table(report["columns"], ["id", "name", "type", "required"])
    properties = table([{"key": k, "value": v} for k, v in report["properties"].items()], ["key", "value"])
    return Result(report, f"{head}\n\n{columns}\n\n{properties}")


def _properties_get(args: argparse.Namespace, progress: Progress) -> Result:
    mixed = load_catalog(args.catalog).load_table(args.table)
    found = mixed.properties
    keys = args.keys or sorted(set(found) | (set(OPTIONS) if args.defaults else set()))
    data = []
    for key in keys:
        option = OPTIONS.get(key)
        if key in found:
            data.append({"key": key, "value": found[key], "source": "set"})
        elif option is not None:
            data.append({"key": key, "value": option.default_text, "source": "default"})
        else:
            data.append({"key": key, "value": None, "source": "unset"})
    return Result(data, table(data, ["key", "value", "source"], empty=f"{args.table} has no property set"))


def _properties_set(args: argparse.Namespace, progress: Progress) -> Result:
    updates: dict[str, str] = {}
    for pair in args.pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise PropertyError(f"expected key=value, found {pair!r}")
        updates[key] = value
    if not updates and not args.unset:
        raise PropertyError("expected at least one key=value or --unset KEY")
    mixed = load_catalog(args.catalog).load_table(args.table).update_properties(updates, args.unset)
    data = {
        "table": args.table,
        "set": updates,
        "removed": list(args.unset),
        "properties": dict(sorted(mixed.properties.items())),
    }
    done = [f"{k}={v}" for k, v in updates.items()] + [f"{k} removed" for k in args.unset]
    return Result(data, f"{args.table}: " + ", ".join(done))


class TableSpec(BaseModel):
    """A ``create`` spec file."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    class Column(BaseModel):
        model_config = ConfigDict(frozen=True, extra="forbid")

        name: str
        type: str
        required: bool = False
        doc: str | None = None

    table: str
    format: str = "mixed-iceberg"
    columns: list[Column] = Field(min_length=1)
    primary_key: list[str] = Field(default_factory=list, alias="primary-key")
    partition_by: list[str] = Field(default_factory=list, alias="partition-by")
    properties: dict[str, str] = Field(default_factory=dict)

    def iceberg_schema(self) -> Schema:
        """The Iceberg schema (field ids in column order; Iceberg's type names)."""
        raw = [
            {"id": i, "name": c.name, "type": c.type, "required": c.required or c.name in self.primary_key, "doc": c.doc}
            for i, c in enumerate(self.columns, start=1)
        ]
        try:
            return Schema.model_validate({"type": "struct", "schema-id": 0, "fields": raw})
        except ValidationError as exc:
            bad = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:3])
            raise ConfigError(
                f"table spec {self.table}: columns: expected Iceberg type names (long, string, decimal(10, 2), ...), found {bad}"
            ) from exc

    @property
    def table_format(self) -> TableFormat:
        formats = {"mixed-iceberg": TableFormat.MIXED_ICEBERG, "iceberg": TableFormat.ICEBERG}
        if self.format.lower() not in formats:
            raise ConfigError(f"table spec {self.table}: format: expected mixed-iceberg or iceberg, found {self.format!r}")
        return formats[self.format.lower()]


def load_spec(path: str) -> TableSpec:
    """Read and check a ``create`` spec.

    Raises:
        ConfigError: the file is missing or malformed.
    """
    try:
        raw = read_yaml(Path(path), "table spec")
    except FileNotFoundError as exc:
        raise ConfigError(f"table spec {path} does not exist", file=path) from exc
    try:
        return TableSpec.model_validate(raw)
    except ValidationError as exc:
        raise validation_error("table spec", path, exc) from exc


def _create(args: argparse.Namespace, progress: Progress) -> Result:
    spec = load_spec(args.spec)
    created = load_catalog(args.catalog).create_table(
        spec.table,
        spec.iceberg_schema(),
        primary_key=spec.primary_key or None,
        partition_by=spec.partition_by or None,
        properties=spec.properties,
        table_format=spec.table_format,
    )
    report = describe_report(created, args.catalog)
    return Result(report, f"created {args.catalog}.{spec.table} ({KIND_TEXT[report['kind']]})")


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``describe``, ``properties`` and ``create`` to the verbs."""
    describe = sub.add_parser("describe", parents=[common], help="a table: schema, key, partitioning, stores, properties")
    describe.add_argument("table", help="namespace.table")
    describe.set_defaults(func=_describe)
    properties = sub.add_parser("properties", parents=[common], help="read or set table properties")
    actions = properties.add_subparsers(dest="action", required=True, metavar="get|set")
    get = actions.add_parser("get", parents=[common], help="set properties (or KEYs, with their defaults)")
    get.add_argument("table", help="namespace.table")
    get.add_argument("keys", nargs="*", metavar="KEY")
    get.add_argument("--defaults", action="store_true", help="every declared option, with its default where unset")
    get.set_defaults(func=_properties_get)
    put = actions.add_parser("set", parents=[common], help="set KEY=VALUE pairs (checked by the option registry)")
    put.add_argument("table", help="namespace.table")
    put.add_argument("pairs", nargs="*", metavar="KEY=VALUE")
    put.add_argument("--unset", action="append", default=[], metavar="KEY", help="remove a property (repeatable)")
    put.set_defaults(func=_properties_set)
    create = sub.add_parser("create", parents=[common], help="create a table from a YAML spec (docs/cli.md)")
    create.add_argument("spec", help="the spec file")
    create.set_defaults(func=_create)

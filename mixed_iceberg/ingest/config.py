"""The ingest job's configuration (``conf/ingest.yaml``), parsed once into frozen models.

The file is read, ``${VAR}`` / ``${VAR:-default}`` references are resolved and errors are shaped
as for ``conf/catalogs.yaml`` and ``conf/optimizer.yaml`` (:mod:`mixed_iceberg.config.files`);
pydantic's errors come on one line, which the client prints as the job's only output.
:func:`pin_catalog` resolves the catalog once, in the job's client: Python workers on a
cluster run in the TaskManager's environment and working directory, not the client's.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from mixed_iceberg.catalog.config import default_config_path, load_catalog_config
from mixed_iceberg.config.files import interpolate, read_yaml, validation_error
from mixed_iceberg.config.registry import LOG_STORE_ENABLED
from mixed_iceberg.exceptions import ConfigError
from mixed_iceberg.ingest.cdc import CdcFormat, check_source_schema
from mixed_iceberg.logstore.format import check_log_schema

__all__ = ["ColumnSpec", "IngestConfig", "SourceConfig", "TableSpec", "load_ingest_config", "pin_catalog"]

_WHAT = "ingest config"

_TYPES: dict[str, pa.DataType] = {
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "string": pa.string(),
    "date": pa.date32(),
    "time": pa.time64("us"),
    "timestamp": pa.timestamp("us"),
    "timestamptz": pa.timestamp("us", tz="UTC"),
    "binary": pa.large_binary(),
}
#: ``decimal(p, s)``, as Iceberg spells it: precision 1 to 38, scale 0 to the precision.
_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)")
_TYPE_NAMES = [*sorted(_TYPES), "decimal(p, s)", "list<T>", "struct<name: T, ...>", "map<K, V>"]
#: The tokens of a type: a name (letters, digits, ``_``), ``decimal(p, s)`` whole, or one of ``<>,:``.
_TOKEN = re.compile(r"\s*(decimal\(\s*\d+\s*,\s*\d+\s*\)|[A-Za-z_][A-Za-z0-9_]*|[<>,:])")


class _TypeText:
    """A column type as Iceberg (and Spark SQL) spell it, parsed into an Arrow type: the names of
    ``_TYPES``, ``decimal(p, s)``, ``list<T>``, ``struct<name: T, ...>`` and ``map<K, V>``, nested in
    each other. Elements, struct fields and map values are optional (nullable); map keys are not."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[str] = []
        position = 0
        stripped = text.rstrip()
        while position < len(stripped):
            match = _TOKEN.match(stripped, position)
            if match is None:
                raise self.error(f"an unexpected character at {position}: {stripped[position:]!r}")
            self.tokens.append(match[1])
            position = match.end()
        self.next = 0

    def error(self, found: str) -> ConfigError:
        return ConfigError(f"expected a type in {_TYPE_NAMES}, found {self.text!r} ({found})")

    def take(self, expected: str | None = None) -> str:
        if self.next >= len(self.tokens):
            raise self.error(f"it ends where {expected or 'a type'} should follow")
        token = self.tokens[self.next]
        if expected is not None and token != expected:
            raise self.error(f"{token!r} where {expected!r} should be")
        self.next += 1
        return token

    def parse(self) -> pa.DataType:
        kind = self.kind()
        if self.next != len(self.tokens):
            raise self.error(f"{' '.join(self.tokens[self.next :])!r} after the type")
        return kind

    def kind(self) -> pa.DataType:
        name = self.take()
        decimal = _DECIMAL.fullmatch(name)
        if decimal is not None:
            precision, scale = int(decimal[1]), int(decimal[2])
            if not 1 <= precision <= 38 or scale > precision:
                raise self.error("a decimal(p, s) needs 1 <= p <= 38 and s <= p")
            return pa.decimal128(precision, scale)
        if name == "list":
            self.take("<")
            element = self.kind()
            self.take(">")
            return pa.list_(pa.field("element", element))
        if name == "map":
            self.take("<")
            key = self.kind()
            self.take(",")
            value = self.kind()
            self.take(">")
            return pa.map_(pa.field("key", key, nullable=False), pa.field("value", value))
        if name == "struct":
            self.take("<")
            fields = [self.field()]
            while self.take() == ",":
                fields.append(self.field())
            self.next -= 1
            self.take(">")
            names = [f.name for f in fields]
            if len(set(names)) != len(names):
                raise self.error(f"a struct's field names must differ: {names}")
            return pa.struct(fields)
        if name not in _TYPES:
            # Iceberg's uuid reads as an Arrow extension type, which the CDC parser's kernels
            # (combining before and after images) do not take; the text form keeps every value.
            raise self.error("declare a uuid column as string" if name == "uuid" else f"no type named {name!r}")
        return _TYPES[name]

    def field(self) -> pa.Field:
        name = self.take()
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise self.error(f"{name!r} where a field name should be")
        self.take(":")
        return pa.field(name, self.kind())


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class SourceConfig(_Frozen):
    """The Kafka topic of CDC events."""

    bootstrap_servers: str = Field(alias="bootstrap-servers")
    topic: str
    format: CdcFormat = CdcFormat.DEBEZIUM_JSON
    partitions: int = Field(4, gt=0, description="partition count used when the job creates the topic")
    properties: dict[str, str] = Field(default_factory=dict)


class ColumnSpec(_Frozen):
    """One column of a table the job creates when it is missing."""

    name: str
    type: str
    required: bool = False

    def arrow_field(self) -> pa.Field:
        """The column as an Arrow field.

        Raises:
            ConfigError: the type is not one of :data:`_TYPE_NAMES` (nested in each other).
        """
        try:
            kind = _TypeText(self.type).parse()
        except ConfigError as exc:
            raise ConfigError(f"column {self.name}: {exc}") from exc
        return pa.field(self.name, kind, nullable=not self.required)


class TableSpec(_Frozen):
    """How to create the table when it does not exist."""

    columns: tuple[ColumnSpec, ...]
    primary_key: tuple[str, ...] = Field(alias="primary-key")
    partition_by: tuple[str, ...] = Field(
        (), alias="partition-by", description='partition transforms, as create_table takes them: ["day(ts)", "bucket(16, id)"]'
    )
    properties: dict[str, str] = Field(default_factory=dict)

    def arrow_schema(self) -> pa.Schema:
        return pa.schema([column.arrow_field() for column in self.columns])


class IngestConfig(_Frozen):
    """Everything the job needs; see ``conf/ingest.yaml`` for the documented example."""

    job_name: str = Field(alias="job-name", pattern=r"^[A-Za-z0-9._-]+$")
    catalog: str = "local"
    catalog_config: str | None = Field(None, alias="catalog-config")
    catalog_properties: dict[str, str] = Field(
        default_factory=dict, alias="catalog-properties", description="override the catalog's properties"
    )
    table: str
    source: SourceConfig
    dead_letter_topic: str | None = Field(None, alias="dead-letter-topic")
    parallelism: int = Field(2, gt=0)
    commit_interval_ms: int = Field(1000, alias="commit-interval-ms", ge=100)
    commit_max_records: int = Field(
        100_000, alias="commit-max-records", gt=0, description="a partition commits early once this many records wait"
    )
    commit_threads: int = Field(
        1,
        alias="commit-threads",
        gt=0,
        description=(
            "threads per writer subtask that commit its partitions (a partition always commits from the same one); "
            "more than 1 only pays where commits wait on remote storage: on a local warehouse, concurrent commits "
            "to the one ChangeStore conflicted and retried"
        ),
    )
    create_table: TableSpec | None = Field(None, alias="create-table")
    flink: dict[str, str] = Field(default_factory=dict, description="extra Flink configuration")

    @model_validator(mode="after")
    def _source_carries_the_columns(self) -> IngestConfig:
        """A table the job would create with a column its source format or its LogStore cannot
        carry is refused here, before anything is created (raises UnsupportedColumnTypeError, a
        ConfigError)."""
        if self.create_table is not None:
            spec = self.create_table
            self.check_columns(spec.arrow_schema(), log_store=LOG_STORE_ENABLED.read(spec.properties, self.table))
        return self

    def check_columns(self, schema: pa.Schema, *, log_store: bool) -> None:
        """Raise if the source format, or the LogStore where the table has one, cannot carry a
        column of ``schema`` (the table's, or the one ``create-table`` would make).

        Raises:
            UnsupportedColumnTypeError: naming the table, the column and its type.
        """
        check_source_schema(schema, self.source.format, table=self.table)
        if log_store:
            check_log_schema(schema, table=self.table)

    @property
    def source_group(self) -> str:
        """The consumer group whose committed offsets tell the Kafka source where to start."""
        return f"mixed-iceberg-source.{self.job_name}"

    @property
    def wakeup_topic(self) -> str:
        """The job's wake-up topic: read with the source, written only when a writer must fail."""
        return f"mixed-iceberg-wakeup.{self.job_name}"

    def to_json(self) -> str:
        """A compact form to hand to Flink's Python functions."""
        return self.model_dump_json(by_alias=True)

    @classmethod
    def from_json(cls, text: str) -> IngestConfig:
        return cls.model_validate_json(text)


def load_ingest_config(path: str | Path, overrides: dict[str, Any] | None = None) -> IngestConfig:
    """Read ``path``; ``overrides`` (dotted keys, e.g. ``{"source.topic": "t"}``) win.

    Raises:
        ConfigError: the file is missing, a variable is unset, or a value is invalid.
    """
    try:
        raw = read_yaml(Path(path), _WHAT)
    except FileNotFoundError as exc:
        raise ConfigError(f"{_WHAT}: cannot read {path}: {exc.strerror or exc}", file=str(path)) from exc
    data = interpolate(raw, str(path))
    for dotted, value in (overrides or {}).items():
        node = data
        parents, leaf = _split_key(dotted)
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(
                    f"{_WHAT} {path}: {dotted}: {part!r} holds a value, not keys; found {node!r}", file=str(path), key=dotted
                )
        node[leaf] = value
    try:
        return IngestConfig.model_validate(data)
    except ValidationError as exc:
        raise validation_error(_WHAT, str(path), exc) from exc


#: Sections whose own keys hold dots (``flink.rest.bind-address``): an override's key ends at them.
_MAPS = (("flink",), ("catalog-properties",), ("source", "properties"), ("create-table", "properties"))


def _split_key(dotted: str) -> tuple[list[str], str]:
    """``source.topic`` -> (["source"], "topic"); ``flink.rest.port`` -> (["flink"], "rest.port")."""
    parts = dotted.split(".")
    for section in _MAPS:
        if tuple(parts[: len(section)]) == section and len(parts) > len(section):
            return list(section), ".".join(parts[len(section) :])
    return parts[:-1], parts[-1]


def pin_catalog(config: IngestConfig) -> IngestConfig:
    """``config`` with its catalog as resolved here: an absolute ``catalog-config`` and every
    property (storage included) in ``catalog-properties``.

    The job's client calls this before it hands the config to Flink, so the Python workers
    neither depend on the client's ``${VAR}``s (the warehouse, say) nor on its working
    directory (relative paths, ``./conf/catalogs.yaml``).
    """
    path = Path(config.catalog_config) if config.catalog_config else default_config_path()
    resolved = load_catalog_config(config.catalog, path, config.catalog_properties)
    properties = {**resolved.storage.file_io_properties(), **resolved.properties}
    return config.model_copy(update={"catalog_config": str(path.resolve()), "catalog_properties": properties})

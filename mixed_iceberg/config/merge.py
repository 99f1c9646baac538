"""Merge options of a keyed table (Paimon's names), parsed once and checked against its schema.

``merge-engine`` (deduplicate, partial-update, aggregation, first-row), ``sequence.field``,
``ignore-delete`` and ``fields.<column>.aggregate-function`` / ``ignore-retract`` /
``list-agg-delimiter``. What each engine does with a key's rows: :mod:`mixed_iceberg.merge.engines`.
``MergeEngine`` lives in :mod:`mixed_iceberg.config.kinds` and is re-exported here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from mixed_iceberg.arrow_types import iceberg_type, type_name
from mixed_iceberg.config.kinds import MergeEngine
from mixed_iceberg.config.registry import IGNORE_DELETE, MERGE_ENGINE, SEQUENCE_FIELD
from mixed_iceberg.exceptions import MixedIcebergError, PropertyError

__all__ = ["AGGREGATE_FUNCTIONS", "RETRACTABLE", "MergeConfig", "MergeEngine", "validate_merge_properties"]

ENGINE_KEY = MERGE_ENGINE.key
SEQUENCE_KEY = SEQUENCE_FIELD.key
IGNORE_DELETE_KEY = IGNORE_DELETE.key
_FIELD_KEY = re.compile(r"^fields\.(?P<column>[^.]+)\.(?P<option>aggregate-function|ignore-retract|list-agg-delimiter)$")

#: Functions ``aggregation`` offers, and those that can take back a value (-U/-D).
AGGREGATE_FUNCTIONS = (
    "sum",
    "min",
    "max",
    "last_value",
    "last_non_null_value",
    "first_value",
    "count",
    "bool_and",
    "bool_or",
    "listagg",
)
RETRACTABLE = frozenset({"sum", "count", "last_value", "last_non_null_value"})
_DEFAULT_FUNCTION = "last_non_null_value"


_ORDERED = "boolean, int, long, float, double, decimal, date, time, timestamp, timestamptz, string, binary, fixed"


def _numeric(kind: pa.DataType) -> bool:
    return bool(pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind))


def _ordered(kind: pa.DataType) -> bool:
    """A primitive Arrow sorts in the order its Iceberg type has (a uuid's is not settled)."""
    t = pa.types
    nested = t.is_list(kind) or t.is_large_list(kind) or t.is_fixed_size_list(kind) or t.is_map(kind) or t.is_struct(kind)
    return not nested and not isinstance(kind, pa.BaseExtensionType)


#: Functions that take some types only: (the types, as a message names them; the check).
#: The others (last_value, last_non_null_value, first_value) take every type, nested ones too.
_TAKES: dict[str, tuple[str, Callable[[pa.DataType], bool]]] = {
    "sum": ("numeric (int, long, float, double, decimal)", _numeric),
    "count": ("integer (int, long)", pa.types.is_integer),
    "min": (f"ordered primitive ({_ORDERED})", _ordered),
    "max": (f"ordered primitive ({_ORDERED})", _ordered),
    "bool_and": ("boolean", pa.types.is_boolean),
    "bool_or": ("boolean", pa.types.is_boolean),
    "listagg": ("string", lambda kind: pa.types.is_string(kind) or pa.types.is_large_string(kind)),
}


def _iceberg_name(kind: pa.DataType) -> str:
    """Iceberg's name of a column's type (``list<int>``), as messages give types."""
    try:
        return type_name(iceberg_type(kind))
    except MixedIcebergError:
        return str(kind)


@dataclass(frozen=True, slots=True)
class MergeConfig:
    """The merge options of one table, parsed and checked against its columns."""

    engine: MergeEngine = MergeEngine.DEDUPLICATE
    sequence_field: str | None = None
    ignore_delete: bool = False
    functions: Mapping[str, str] = field(default_factory=dict)
    ignore_retract: frozenset[str] = frozenset()
    delimiters: Mapping[str, str] = field(default_factory=dict)

    @property
    def is_default(self) -> bool:
        """Deduplicate by arrival: the fast path (no sort) applies."""
        return self.engine is MergeEngine.DEDUPLICATE and self.sequence_field is None and not self.ignore_delete

    @property
    def needs_delete_values(self) -> bool:
        """Whether deletes must be read whole (aggregation retracts the values they carry)."""
        return self.engine is MergeEngine.AGGREGATION and not self.ignore_delete

    def function(self, column: str) -> str:
        return self.functions.get(column, _DEFAULT_FUNCTION)

    @classmethod
    def from_properties(
        cls, properties: Mapping[str, str], columns: Mapping[str, pa.DataType], primary_key: Sequence[str], table: str = ""
    ) -> MergeConfig:
        """Parse and check the merge options.

        Raises:
            PropertyError: an unknown engine, function or column; a function that cannot take
                back a value where retractions may come; a sequence field that is not a column.
        """
        where = f"table {table}: " if table else ""
        # The registry's options parse and check the three keys (their defaults are its defaults).
        engine = MERGE_ENGINE.read(properties, table)
        sequence = SEQUENCE_FIELD.read(properties, table) or None
        if sequence is not None and sequence not in columns:
            raise PropertyError(f"{where}property {SEQUENCE_KEY!r}: expected a column of {list(columns)}, found {sequence!r}")
        if sequence is not None and sequence in primary_key:
            raise PropertyError(f"{where}property {SEQUENCE_KEY!r}: expected a non-key column, found key column {sequence!r}")
        ignore_delete = IGNORE_DELETE.read(properties, table)
        functions: dict[str, str] = {}
        retract: set[str] = set()
        delimiters: dict[str, str] = {}
        for key, value in properties.items():
            match = _FIELD_KEY.match(key)
            if key.startswith("fields.") and match is None:
                raise PropertyError(
                    f"{where}unknown property {key!r}; expected fields.<column>.aggregate-function, "
                    "fields.<column>.ignore-retract or fields.<column>.list-agg-delimiter"
                )
            if match is None:
                continue
            column, option = match.group("column"), match.group("option")
            if column not in columns or column in primary_key:
                raise PropertyError(f"{where}property {key!r}: expected a non-key column of {list(columns)}, found {column!r}")
            if option == "aggregate-function":
                if value not in AGGREGATE_FUNCTIONS:
                    raise PropertyError(
                        f"{where}property {key!r}: expected one of {', '.join(AGGREGATE_FUNCTIONS)}, found {value!r}"
                    )
                functions[column] = value
            elif option == "ignore-retract":
                if value.strip().lower() not in ("true", "false"):
                    raise PropertyError(f"{where}property {key!r}: expected true or false, found {value!r}")
                if value.strip().lower() == "true":
                    retract.add(column)
            else:
                delimiters[column] = value
        config = cls(engine, sequence, ignore_delete, functions, frozenset(retract), delimiters)
        config._check(columns, primary_key, properties, where)
        return config

    def _check(
        self, columns: Mapping[str, pa.DataType], primary_key: Sequence[str], properties: Mapping[str, str], where: str
    ) -> None:
        if self.sequence_field is not None and self.engine is not MergeEngine.DEDUPLICATE:
            raise PropertyError(f"{where}{SEQUENCE_KEY} needs {ENGINE_KEY}=deduplicate, found {self.engine.value}")
        if self.sequence_field is not None and not _ordered(columns[self.sequence_field]):
            raise PropertyError(
                f"{where}property {SEQUENCE_KEY!r}: expected a column of an ordered primitive type ({_ORDERED}), "
                f"found {self.sequence_field!r} of type {_iceberg_name(columns[self.sequence_field])}"
            )
        if self.functions and self.engine is not MergeEngine.AGGREGATION:
            raise PropertyError(
                f"{where}fields.<column>.aggregate-function needs {ENGINE_KEY}=aggregation, found {self.engine.value}"
            )
        if (
            self.engine is not MergeEngine.DEDUPLICATE
            and properties.get("write.upsert.enabled", "false").strip().lower() == "true"
        ):
            raise PropertyError(
                f"{where}{ENGINE_KEY}={self.engine.value} needs write.upsert.enabled=false "
                "(upsert writes a delete before every insert, which would reset each key)"
            )
        if self.engine is not MergeEngine.AGGREGATION:
            return
        for column, dtype in columns.items():
            if column in primary_key:
                continue
            function = self.function(column)
            if function not in RETRACTABLE and not (self.ignore_delete or column in self.ignore_retract):
                raise PropertyError(
                    f"{where}aggregate {function} of column {column!r} cannot take back a value a -U or -D retracts; "
                    f"expected fields.{column}.ignore-retract=true or {IGNORE_DELETE_KEY}=true"
                )
            takes = _TAKES.get(function)
            if takes is not None and not takes[1](dtype):
                raise PropertyError(
                    f"{where}aggregate {function} of column {column!r} takes {takes[0]} columns, found {_iceberg_name(dtype)}"
                )


def validate_merge_properties(
    properties: Mapping[str, str], columns: Mapping[str, pa.DataType], primary_key: Sequence[str], table: str = ""
) -> MergeConfig:
    """:meth:`MergeConfig.from_properties`, refusing merge options on a table without a key."""
    touched = [k for k in properties if k in (ENGINE_KEY, SEQUENCE_KEY, IGNORE_DELETE_KEY) or k.startswith("fields.")]
    if touched and not primary_key:
        where = f"table {table}: " if table else ""
        raise PropertyError(f"{where}properties {touched} need a primary key; this table has none")
    return MergeConfig.from_properties(properties, columns, primary_key, table)

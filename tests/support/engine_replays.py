"""Plain replays of the merge engines over drawn schemas, row by row from their definitions.

Written from docs/semantics.md ("Merge engines"), independently of the kernels in
mixed_iceberg/merge/engines.py: ``partial-update`` (each non-null field of a later row updates
the row; a null struct, list or map is null), ``first-row``, and ``aggregation`` with a function
per column (:func:`aggregation_functions` draws one the column's type takes). Orders are Arrow's:
NaN above every number, ``-0.0`` equal to ``0.0``, strings and binaries by their bytes.
"""

from __future__ import annotations

import decimal
import functools
import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from hypothesis import strategies as st

from tests.support.typed_cdc import Change, History, TypedSchema, expected_rows, paired

__all__ = [
    "RETRACTABLE",
    "aggregation_functions",
    "aggregation_properties",
    "function_values",
    "replay_engine",
]

RETRACTABLE = frozenset({"sum", "count", "last_value", "last_non_null_value"})
_EXACT = decimal.Context(prec=100)


def functions_taking(kind: pa.DataType) -> list[str]:
    """The aggregate functions a column of ``kind`` takes (docs/semantics.md)."""
    t = pa.types
    found = ["last_non_null_value", "last_value", "first_value"]
    nested = t.is_list(kind) or t.is_large_list(kind) or t.is_map(kind) or t.is_struct(kind)
    if nested or isinstance(kind, pa.BaseExtensionType):
        return found
    found += ["min", "max"]
    if t.is_integer(kind):
        found += ["sum", "count"]
    elif t.is_floating(kind) or t.is_decimal(kind):
        found.append("sum")
    elif t.is_boolean(kind):
        found += ["bool_and", "bool_or"]
    elif t.is_large_string(kind):
        found.append("listagg")
    return found


@st.composite
def aggregation_functions(draw: st.DrawFn, schema: TypedSchema) -> dict[str, str]:
    """A function per payload column, one its type takes."""
    return {name: draw(st.sampled_from(functions_taking(kind))) for name, kind in schema.payload}


def aggregation_properties(functions: Mapping[str, str]) -> dict[str, str]:
    properties = {"merge-engine": "aggregation"}
    for name, function in functions.items():
        properties[f"fields.{name}.aggregate-function"] = function
        if function not in RETRACTABLE:
            properties[f"fields.{name}.ignore-retract"] = "true"
    return properties


def function_values(schema: TypedSchema, functions: Mapping[str, str]) -> dict[str, st.SearchStrategy[Any]]:
    """Values for columns whose function's result depends on them, so that the cases that
    break an implementation come up often, and a replay in any order gives one answer:

    - ``sum`` of floats: small integers, infinities and NaN (a float sum of other values rounds
      differently in another order); of decimals: small values and the largest the column
      holds (a sum leaves the precision: null); of integers: small ones and the extremes (wraps);
    - ``min``/``max`` of floats: a pool with -0.0, 0.0, NaN and infinities.
    """
    drawn: dict[str, st.SearchStrategy[Any]] = {}
    for name, kind in schema.payload:
        function = functions.get(name)
        t = pa.types
        if function == "sum" and t.is_decimal(kind):
            top = 10**kind.precision - 1
            unscaled = st.one_of(st.integers(-min(50, top), min(50, top)), st.sampled_from([top, -top]))
            drawn[name] = st.one_of(st.none(), unscaled.map(functools.partial(_scaled, scale=kind.scale)))
        elif function == "sum" and t.is_floating(kind):
            drawn[name] = st.one_of(st.none(), st.integers(-50, 50).map(float), st.sampled_from(_SPECIAL))
        elif function == "sum":
            bits = kind.bit_width
            drawn[name] = st.one_of(st.none(), st.integers(-50, 50), st.sampled_from([2 ** (bits - 1) - 1, -(2 ** (bits - 1))]))
        elif function in ("min", "max") and t.is_floating(kind):
            drawn[name] = st.one_of(st.none(), st.sampled_from([-0.0, 0.0, 1.5, -2.0, *_SPECIAL]))
    return drawn


_SPECIAL = [math.inf, -math.inf, math.nan]


def _scaled(unscaled: int, scale: int) -> decimal.Decimal:
    return decimal.Decimal(unscaled).scaleb(-scale, context=_EXACT)


State = dict[int, list[Any]]


def _partial_update(state: State, row: Change, is_pair: bool, _: Any) -> None:
    action, key, payload = row
    if action in ("+I", "+U"):
        assert payload is not None
        old = state.get(key)
        state[key] = list(payload) if old is None else [o if n is None else n for o, n in zip(old, payload, strict=True)]
    elif not is_pair:
        state.pop(key, None)


def _first_row(state: State, row: Change, is_pair: bool, _: Any) -> None:
    action, key, payload = row
    if action in ("+I", "+U"):
        state.setdefault(key, list(payload or ()))
    elif not is_pair:
        state.pop(key, None)


def _order(value: Any) -> Any:
    """Arrow's sort order of a value: NaN above every number."""
    if isinstance(value, float):
        return (1, 0.0) if math.isnan(value) else (0, value)
    return value


@dataclass
class _Column:
    """One column's aggregate of one key: every function's running state."""

    function: str
    kind: pa.DataType
    retract: bool
    value: Any = None
    seen: bool = False  # sum: a value was added or taken back
    values: list[Any] = field(default_factory=list)  # listagg, min, max, first_value: values added

    def add(self, value: Any, first: bool) -> None:
        f = self.function
        if f == "first_value":
            if first:
                self.value = value
        elif f == "last_value":
            self.value = value
        elif value is None:
            return
        elif f == "last_non_null_value":
            self.value = value
        elif f == "sum":  # row by row, as Paimon: a sum past a decimal's precision is null, and a null takes the next value
            self.value = value if self.value is None else _fitted(_plus(self.value, value), self.kind)
            self.seen = True
        elif f == "count":
            self.value = (self.value or 0) + 1
        else:
            self.values.append(value)

    def take_back(self, value: Any) -> None:
        if not self.retract or value is None:
            return
        f = self.function
        if f in ("last_value", "last_non_null_value"):
            self.value = None
        elif f == "sum":
            self.value = _negate(value) if self.value is None else _fitted(_plus(self.value, _negate(value)), self.kind)
            self.seen = True
        elif f == "count":
            self.value = (self.value or 0) - 1

    def result(self) -> Any:
        f = self.function
        if f == "count":
            return self.value or 0
        if f == "sum":
            return _fitted(self.value, self.kind)
        if f in ("min", "bool_and"):
            return min(self.values, key=_order) if self.values else None
        if f in ("max", "bool_or"):
            return max(self.values, key=_order) if self.values else None
        if f == "listagg":
            return ",".join(self.values) if self.values else None
        return self.value


def _plus(a: Any, b: Any) -> Any:
    return _EXACT.add(a, b) if isinstance(a, decimal.Decimal) else a + b


def _negate(value: Any) -> Any:
    return value.copy_negate() if isinstance(value, decimal.Decimal) else -value  # Decimal's - rounds at 28 digits


def _fitted(value: Any, kind: pa.DataType) -> Any:
    """A sum as the column holds it: an integer wraps as Java's does; a decimal past the
    column's precision is null."""
    if value is None:
        return None
    if pa.types.is_integer(kind):
        bits = kind.bit_width
        return (value + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1)
    if pa.types.is_decimal(kind):
        unscaled = value.scaleb(kind.scale, context=_EXACT)
        return value if unscaled.copy_abs() < 10**kind.precision else None
    return value


class _Aggregation:
    """The aggregation replay: one :class:`_Column` per payload column of each key."""

    def __init__(self, schema: TypedSchema, functions: Mapping[str, str]) -> None:
        self.columns = [(functions[name], kind) for name, kind in schema.payload]
        self.keys: dict[int, list[_Column]] = {}

    def __call__(self, state: State, row: Change, is_pair: bool, _: Any) -> None:
        action, key, payload = row
        values = payload or (None,) * len(self.columns)
        columns = self.keys.get(key)
        if action in ("+I", "+U"):
            first = columns is None
            if columns is None:
                columns = self.keys[key] = [_Column(f, k, f in RETRACTABLE) for f, k in self.columns]
            for column, value in zip(columns, values, strict=True):
                column.add(value, first)
        elif columns is not None:  # a -U (paired or not) or -D takes back what it carries
            for column, value in zip(columns, values, strict=True):
                column.take_back(value)
        if columns is not None:
            state[key] = [c.result() for c in columns]


Apply = Callable[[State, Change, bool, Any], None]


def replay_engine(engine: str, history: History, functions: Mapping[str, str] | None = None) -> dict[Any, tuple[Any, ...]]:
    """The merged rows of ``history`` under ``engine``, by key (as :func:`by_key` reads them)."""
    apply: Apply
    if engine == "partial-update":
        apply = _partial_update
    elif engine == "first-row":
        apply = _first_row
    else:
        apply = _Aggregation(history.schema, functions or {})
    state: State = {}
    for txn in itertools.chain([history.initial], history.txns):
        for row, is_pair in paired(txn):
            apply(state, row, is_pair, None)
    return expected_rows(history.schema, state)

"""Random CDC over drawn schemas, and the plain replays it must equal (the types oracle's parts).

A :class:`TypedSchema` is a key column ``k`` of a type from :data:`KEY_TYPES` over a small key
space of drawn values, and 1-4 payload columns ``c0``.. of any Iceberg v2 type
(:func:`column_types`: primitives and nested, nulls at every level). A history is an initial
load and transactions of change rows ``(action, key number, payload)``; :func:`typed_histories`
draws well-formed CDC (-U/+U pairs carrying the state, deletes of existing keys) or the upsert
streams no source promises to keep well formed (+I over a key, +U without -U, deletes of absent
keys, key-only deletes, repeated keys in the load). Replays work row by row on Python values;
results are compared by key as :func:`~tests.support.iceberg_types.canonical` values.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from hypothesis import strategies as st

from tests.support.iceberg_types import KEY_TYPES, arrow_table, canonical, column_types, values

__all__ = [
    "KEY",
    "Change",
    "History",
    "TypedSchema",
    "by_key",
    "change_batch",
    "load_batch",
    "paired",
    "replay_latest",
    "typed_histories",
    "typed_schemas",
]

KEY = "k"
ACTION = "_change_action"

#: (action, key number, payload values; None for a delete that carries only its key)
Change = tuple[str, int, tuple[Any, ...] | None]


@dataclass(frozen=True, slots=True)
class TypedSchema:
    """A drawn table schema: the key's type and its key space, and the payload columns."""

    key_type: pa.DataType
    keys: tuple[Any, ...]
    payload: tuple[tuple[str, pa.DataType], ...]

    @property
    def arrow(self) -> pa.Schema:
        return pa.schema([pa.field(KEY, self.key_type, nullable=False), *(pa.field(n, t) for n, t in self.payload)])

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.payload]

    def row(self, key: int, payload: Sequence[Any] | None) -> dict[str, Any]:
        return {KEY: self.keys[key], **dict(zip(self.names, payload or [None] * len(self.payload), strict=True))}

    def __repr__(self) -> str:  # hypothesis prints the falsifying example with it
        columns = ", ".join(f"{n}: {t}" for n, t in self.payload)
        return f"TypedSchema(k: {self.key_type} over {len(self.keys)} keys; {columns})"


@dataclass(frozen=True, slots=True)
class History:
    schema: TypedSchema
    initial: list[Change]
    txns: list[list[Change]]


@st.composite
def typed_schemas(draw: st.DrawFn, payload: st.SearchStrategy[pa.DataType] | None = None) -> TypedSchema:
    """A key type and 1-6 distinct key values of it, and 1-4 payload columns."""
    key_type = draw(st.sampled_from(list(KEY_TYPES.values())))
    keys = draw(st.lists(values(key_type, nullable=False), min_size=1, max_size=6, unique_by=canonical))
    kinds = draw(st.lists(payload if payload is not None else column_types(), min_size=1, max_size=4))
    return TypedSchema(key_type, tuple(keys), tuple((f"c{i}", kind) for i, kind in enumerate(kinds)))


def _payload(draw: st.DrawFn, schema: TypedSchema, columns: Mapping[str, st.SearchStrategy[Any]]) -> tuple[Any, ...]:
    return tuple(draw(columns.get(name, values(kind))) for name, kind in schema.payload)


@st.composite
def typed_histories(
    draw: st.DrawFn,
    schemas: st.SearchStrategy[TypedSchema] | None = None,
    upsert: bool | None = None,
    columns: Callable[[TypedSchema], Mapping[str, st.SearchStrategy[Any]]] | None = None,
) -> History:
    """A drawn schema, an initial load and transactions of well-formed CDC or an upsert stream
    (``upsert``; drawn when None). ``columns`` gives a column's values another strategy."""
    schema = draw(schemas if schemas is not None else typed_schemas())
    upsert = draw(st.booleans()) if upsert is None else upsert
    drawn = columns(schema) if columns is not None else {}
    keys = st.integers(0, len(schema.keys) - 1)
    initial: list[Change] = []
    ops: list[Change] = []
    if upsert:
        initial = [("+I", key, _payload(draw, schema, drawn)) for key in draw(st.lists(keys, max_size=len(schema.keys) + 2))]
        for _ in range(draw(st.integers(1, 16))):
            key, new = draw(keys), _payload(draw, schema, drawn)
            action = draw(st.sampled_from(["+I", "+U", "-D", "-U", "pair", "key-only"]))
            if action == "pair":
                ops += [("-U", key, _payload(draw, schema, drawn)), ("+U", key, new)]
            elif action == "key-only":  # Debezium's default before-image: the key alone
                ops.append(("-D", key, None))
            else:
                ops.append((action, key, new))
    else:
        state: dict[int, tuple[Any, ...]] = {}
        for key in draw(st.lists(keys, unique=True, max_size=len(schema.keys))):
            state[key] = _payload(draw, schema, drawn)
            initial.append(("+I", key, state[key]))
        for _ in range(draw(st.integers(1, 16))):
            key = draw(keys)
            if key not in state:
                state[key] = _payload(draw, schema, drawn)
                ops.append(("+I", key, state[key]))
            elif draw(st.booleans()):
                new = _payload(draw, schema, drawn)
                ops += [("-U", key, state[key]), ("+U", key, new)]
                state[key] = new
            else:
                ops.append(("-D", key, state.pop(key)))
    cuts = sorted(draw(st.lists(st.integers(0, len(ops)), max_size=3)))
    return History(schema, initial, [ops[a:b] for a, b in itertools.pairwise([0, *cuts, len(ops)])])


def load_batch(schema: TypedSchema, rows: Iterable[Change]) -> pa.Table:
    """The rows as a ``bulk_load`` batch (no action column)."""
    return arrow_table([schema.row(key, payload) for _, key, payload in rows], schema.arrow)


def change_batch(schema: TypedSchema, rows: Sequence[Change]) -> pa.Table:
    """The rows as a change batch with ``_change_action``."""
    return load_batch(schema, rows).append_column(ACTION, pa.array([r[0] for r in rows], pa.string()))


def paired(txn: Sequence[Change]) -> list[tuple[Change, bool]]:
    """Rows of one transaction with whether each -U is the half of an update pair (the +U of
    its key next: the writer gives both one offset)."""
    return [
        (row, row[0] == "-U" and i + 1 < len(txn) and txn[i + 1][0] == "+U" and txn[i + 1][1] == row[1])
        for i, row in enumerate(txn)
    ]


def replay_latest(history: History) -> dict[Any, tuple[Any, ...]]:
    """Latest change of each key wins (a data row sets it, a delete removes it), by key."""
    state: dict[int, tuple[Any, ...] | None] = {key: payload for _, key, payload in history.initial}
    for action, key, payload in itertools.chain.from_iterable(history.txns):
        if action in ("+I", "+U"):
            state[key] = payload
        else:
            state.pop(key, None)
    return expected_rows(history.schema, state)


def expected_rows(schema: TypedSchema, state: Mapping[int, Sequence[Any] | None]) -> dict[Any, tuple[Any, ...]]:
    """Replayed states as :func:`by_key` gives a read."""
    return {
        canonical(schema.keys[key]): canonical((schema.keys[key], *(payload or [None] * len(schema.payload))))
        for key, payload in state.items()
    }


def by_key(table: pa.Table, names: Sequence[str] | None = None) -> dict[Any, tuple[Any, ...]]:
    """A read's rows by canonical key, each as the canonical tuple of ``names`` (all columns)."""
    columns = list(names or table.column_names)
    rows = table.to_pylist()
    found = {canonical(row[KEY]): canonical(tuple(row[name] for name in columns)) for row in rows}
    assert len(found) == len(rows), f"one row per key: {len(rows)} rows hold {len(found)} keys"
    return found

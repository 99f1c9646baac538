"""Schema changes never change what a row holds (DESIGN.md invariant 8: columns by field id).

Random schema changes (add, rename and drop value columns, names reused after a drop) are
interleaved with random CDC commits and optimizing runs. After every step the merged read must
equal a plain replay of the changes, with the oracle tracking which column each name means now;
after a full optimizing pyiceberg must read the same rows from the BaseStore.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.types import LongType, StringType

from mixed_iceberg import MixedTable
from tests.support.tables import local_catalog

_NAMES = ("a", "b", "c", "d")
_tables = itertools.count()

#: (kind, arguments): a commit of (key, delete?, value seed) ops, or a schema change, or a run.
Step = tuple[str, tuple[object, ...]]


def _steps() -> st.SearchStrategy[list[Step]]:
    commit = st.tuples(
        st.just("commit"),
        st.lists(st.tuples(st.integers(0, 7), st.booleans(), st.integers(0, 99)), min_size=1, max_size=8).map(tuple),
    )
    add = st.tuples(st.just("add"), st.tuples(st.sampled_from(["long", "string"])))
    rename = st.tuples(st.just("rename"), st.tuples(st.integers(0, 9)))
    drop = st.tuples(st.just("drop"), st.tuples(st.integers(0, 9)))
    run = st.tuples(st.just("optimize"), st.tuples(st.sampled_from(["minor", "major", "full"])))
    return st.lists(st.one_of(commit, commit, add, rename, drop, run), min_size=3, max_size=12)


@dataclass
class Oracle:
    """Rows by key, each value by the column's identity; the names columns have now."""

    columns: dict[int, tuple[str, str]] = field(default_factory=dict)  # identity -> (name, long|string)
    rows: dict[int, dict[int, object]] = field(default_factory=dict)
    next_identity: int = 0

    def add(self, name: str, kind: str) -> None:
        self.columns[self.next_identity] = (name, kind)
        self.next_identity += 1
        for row in self.rows.values():
            row[self.next_identity - 1] = None

    def expected(self) -> list[dict[str, object]]:
        return [
            {"id": key, **{name: row[identity] for identity, (name, _) in self.columns.items()}}
            for key, row in sorted(self.rows.items())
        ]


def _value(kind: str, seed: int) -> object:
    if seed % 10 == 0:
        return None
    return seed if kind == "long" else f"s{seed}"


def _commit(table: MixedTable, oracle: Oracle, ops: tuple[tuple[int, bool, int], ...]) -> None:
    batch: list[tuple[str, int, dict[int, object]]] = []
    for key, delete, seed in ops:
        old = oracle.rows.get(key)
        new = {identity: _value(kind, seed + identity) for identity, (_, kind) in oracle.columns.items()}
        if old is not None and delete:
            batch.append(("-D", key, old))
            del oracle.rows[key]
        elif old is not None:
            batch += [("-U", key, old), ("+U", key, new)]
            oracle.rows[key] = new
        elif not delete:
            batch.append(("+I", key, new))
            oracle.rows[key] = new
    if not batch:
        return
    schema = table.arrow_schema()
    data: dict[str, pa.Array] = {"id": pa.array([key for _, key, _ in batch], pa.int64())}
    for identity, (name, _) in oracle.columns.items():
        data[name] = pa.array([row[identity] for _, _, row in batch], schema.field(name).type)
    data["_change_action"] = pa.array([action for action, _, _ in batch], pa.string())
    with table.new_transaction() as txn:
        txn.write(pa.table(data))


def _evolve(table: MixedTable, oracle: Oracle, kind: str, argument: object) -> None:
    taken = {name for name, _ in oracle.columns.values()}
    free = [n for n in _NAMES if n not in taken]
    identities = sorted(oracle.columns)
    if kind == "add" and free:
        column_type = LongType() if argument == "long" else StringType()
        with table.update_schema() as update:
            update.add_column(free[0], column_type)
        oracle.add(free[0], str(argument))
    elif kind == "rename" and free and identities:
        identity = identities[int(str(argument)) % len(identities)]
        name, column_kind = oracle.columns[identity]
        with table.update_schema() as update:
            update.rename_column(name, free[-1])
        oracle.columns[identity] = (free[-1], column_kind)
    elif kind == "drop" and len(identities) > 1:
        identity = identities[int(str(argument)) % len(identities)]
        with table.update_schema() as update:
            update.delete_column(oracle.columns[identity][0])
        del oracle.columns[identity]
        for row in oracle.rows.values():
            del row[identity]


def _merged(table: MixedTable) -> list[dict[str, object]]:
    return sorted(table.scan().to_arrow().to_pylist(), key=lambda r: int(str(r["id"])))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(steps=_steps())
def test_merged_read_equals_replay_across_schema_changes(tmp_path: Path, steps: list[Step]) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.int64()), ("b", pa.string())])
    table = local_catalog(tmp_path / "c").create_table(f"db.t{next(_tables)}", schema, primary_key=["id"])
    oracle = Oracle()
    oracle.add("a", "long")
    oracle.add("b", "string")
    for kind, arguments in steps:
        if kind == "commit":
            _commit(table, oracle, arguments)  # type: ignore[arg-type]
        elif kind == "optimize":
            table.optimizing.run(str(arguments[0]))
        else:
            _evolve(table, oracle, kind, arguments[0])
        assert table.schema().column_names == ["id", *(name for name, _ in oracle.columns.values())]
        assert _merged(table) == oracle.expected(), (kind, arguments)
        if kind == "optimize" and arguments[0] == "full":
            base = table.base_store.scan().to_arrow().to_pylist()
            assert sorted(base, key=lambda r: int(str(r["id"]))) == oracle.expected()

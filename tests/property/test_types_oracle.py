"""The replay oracle over drawn schemas: every Iceberg v2 type, merged read == plain replay.

Each example draws a key type and its key space, 1-4 payload columns of any type (nested ones
with nulls at every level), well-formed CDC or an upsert stream in random transactions after a
``bulk_load``, a partitioning by the key (identity or bucket) or none, a file layout, and an
interleaving of minor, major, full and maintenance runs. After every step ``scan().to_arrow()``
must equal the replay; at the end the batch reader, ``plan_tasks()`` run through
``execute_task`` (pickled), ``count()`` and filtered scans (key predicates, null checks on any
column, a comparison on a drawn primitive column) must agree, before and after a full
optimizing, and pyiceberg must read the merged rows from the BaseStore after it. The second
test does the same under partial-update, first-row and aggregation (a function per column, of
those its type takes) against their replays (tests/support/engine_replays.py).
Protects DESIGN.md invariants 1, 5 and 10 together, for every type. ``changes()`` is left to
its own oracle.
"""

from __future__ import annotations

import datetime
import decimal
import itertools
import math
import pickle
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.expressions import And, BooleanExpression, EqualTo, GreaterThanOrEqual, In, IsNull, LessThan, NotNull

from mixed_iceberg import MixedTable
from mixed_iceberg.optimizing.maintenance.facade import TableMaintenance
from mixed_iceberg.reader.tasks import execute_task
from tests.support.engine_replays import aggregation_functions, aggregation_properties, function_values, replay_engine
from tests.support.iceberg_types import PRIMITIVES, canonical, column_types
from tests.support.tables import local_catalog
from tests.support.typed_cdc import (
    KEY,
    History,
    TypedSchema,
    by_key,
    change_batch,
    load_batch,
    replay_latest,
    typed_histories,
    typed_schemas,
)

_names = itertools.count()

#: Partitionings by the key (a key never moves) and file layouts: (target size, base buckets, change buckets).
PARTITIONS = {"unpartitioned": None, "identity": [KEY], "bucket": [f"bucket(3, {KEY})"]}
LAYOUTS = [(None, 1, 1), ("1024", 4, 2), (None, 2, 8)]
RUNS = st.lists(st.sampled_from([None, "minor", "major", "full", "maintenance"]), min_size=1, max_size=4)


def create(tmp_path: Path, schema: TypedSchema, partition: str, layout: tuple[str | None, int, int], **extra: str) -> MixedTable:
    target, base_buckets, change_buckets = layout
    properties = {
        "base.file-index.hash-bucket": str(base_buckets),
        "change.file-index.hash-bucket": str(change_buckets),
        **({"self-optimizing.target-size": target} if target else {}),
        **extra,
    }
    return local_catalog(tmp_path / "c").create_table(
        f"db.t{next(_names)}", schema.arrow, primary_key=[KEY], partition_by=PARTITIONS[partition], properties=properties
    )


def run(table: MixedTable, kind: str | None) -> None:
    """One optimizing of ``kind`` (None: a minor), or maintenance that expires all it can."""
    if kind == "maintenance":
        maintenance = TableMaintenance(table.refreshed, clock=lambda: time.time() + 10**7)
        maintenance.expire_snapshots()
        maintenance.expire_change_data()
        maintenance.rewrite_manifests()
        maintenance.clean_orphan_files(older_than=timedelta(0))
    else:
        table.optimizing.run(kind or "minor")


def _orderable(kind: pa.DataType) -> bool:
    """Types a drawn comparison filter is tried on (pyiceberg literals exist for their values)."""
    t = pa.types
    checks = (t.is_integer, t.is_floating, t.is_decimal, t.is_date, t.is_time, t.is_timestamp, t.is_large_string)
    return any(check(kind) for check in checks)


def _comparable(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and (math.isnan(value) or math.isinf(value)))


def _expression(kind: type[BooleanExpression], *arguments: Any) -> BooleanExpression:
    """A pyiceberg predicate (its stubs take no positional arguments, its constructors do)."""
    factory: Any = kind
    built: BooleanExpression = factory(*arguments)
    return built


def filters(schema: TypedSchema, merged: pa.Table) -> list[tuple[BooleanExpression, ds.Expression]]:
    """(pyiceberg filter, the same as a pyarrow expression) pairs for the drawn schema."""
    key = pa.scalar(schema.keys[0], schema.key_type)
    some = [pa.scalar(v, schema.key_type) for v in schema.keys[:3]]
    pairs: list[tuple[BooleanExpression, ds.Expression]] = [
        (_expression(EqualTo, KEY, schema.keys[0]), ds.field(KEY) == key),
        (_expression(In, KEY, set(schema.keys[:3])), ds.field(KEY).isin(pa.array([s.as_py() for s in some], schema.key_type))),
    ]
    for name, kind in schema.payload:
        pairs += [(_expression(IsNull, name), ds.field(name).is_null()), (_expression(NotNull, name), ds.field(name).is_valid())]
        written = [v for v in merged.column(name).to_pylist() if _comparable(v)] if _orderable(kind) else []
        if written:  # a bound taken from the merged rows, so some rows pass and some do not
            bound = sorted(written, key=_sort_key)[len(written) // 2]
            pairs += [
                (_expression(GreaterThanOrEqual, name, bound), ds.field(name) >= pa.scalar(bound, kind)),
                (
                    _expression(And, _expression(LessThan, name, bound), _expression(NotNull, KEY)),
                    (ds.field(name) < pa.scalar(bound, kind)) & ds.field(KEY).is_valid(),
                ),
            ]
    return pairs


def _sort_key(value: Any) -> Any:
    if isinstance(value, datetime.datetime | datetime.date | datetime.time | decimal.Decimal | str):
        return value
    return float(value)


def replay_changes(cdc: pa.Table, names: Sequence[str]) -> dict[Any, tuple[Any, ...]]:
    """The state CDC rows leave when applied in order to the empty table, each a true change
    (``+I`` of an absent key, ``-U``/``-D`` of a present key carrying its row as it was)."""
    state: dict[Any, tuple[Any, ...]] = {}
    for row in cdc.to_pylist():
        key, image, action = canonical(row[KEY]), canonical(tuple(row[name] for name in names)), row["_change_action"]
        if action in ("+I", "+U"):
            assert action == "+U" or key not in state, f"+I of a present key {key}"
            state[key] = image
        else:
            assert state.pop(key, None) == image, f"{action} of key {key} carries another row than it held"
    return state


def check_every_path(table: MixedTable, schema: TypedSchema, expected: dict[Any, tuple[Any, ...]]) -> None:
    """Merged read, batch reader, count, pickled merge tasks and filtered scans against ``expected``."""
    scan = table.scan()
    merged = scan.to_arrow()
    assert by_key(merged) == expected, "scan().to_arrow()"
    assert by_key(scan.to_arrow_batch_reader().read_all()) == expected, "to_arrow_batch_reader()"
    assert scan.count() == len(expected)
    tasks = [pickle.loads(pickle.dumps(task)) for task in scan.plan_tasks()]
    parts = [execute_task(task) for task in tasks]
    assert by_key(pa.concat_tables(parts) if parts else merged.slice(0, 0)) == expected, "plan_tasks() + execute_task"
    assert replay_changes(table.changes().to_arrow(), merged.column_names) == expected, "changes() replayed onto nothing"
    for iceberg, arrow in filters(schema, merged):
        wanted = by_key(merged.filter(arrow))
        assert by_key(table.scan(row_filter=iceberg).to_arrow()) == wanted, f"row_filter={iceberg}"
        name = schema.payload[-1][0]
        projected = table.scan(row_filter=iceberg, selected_fields=(KEY, name)).to_arrow()
        assert by_key(projected) == {k: (v[0], v[-1]) for k, v in wanted.items()}, f"row_filter={iceberg}, projected"


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    history=typed_histories(),
    partition=st.sampled_from(sorted(PARTITIONS)),
    layout=st.sampled_from(LAYOUTS),
    runs=RUNS,
    upsert=st.sampled_from(["false", "true"]),
)
def test_drawn_schemas_read_as_their_replay_on_every_path_across_optimizing(
    tmp_path: Path, history: History, partition: str, layout: tuple[str | None, int, int], runs: list[str | None], upsert: str
) -> None:
    schema = history.schema
    table = create(tmp_path, schema, partition, layout, **{"write.upsert.enabled": upsert})
    if history.initial:
        table.bulk_load(load_batch(schema, history.initial))
    done = History(schema, history.initial, [])
    assert by_key(table.scan().to_arrow()) == replay_latest(done), "after bulk_load"
    for step, ops in enumerate(history.txns):
        if ops:
            with table.new_transaction(("types", step)) as txn:
                txn.write(change_batch(schema, ops))
        done.txns.append(ops)
        kind = runs[step % len(runs)]
        run(table, kind)
        assert by_key(table.scan().to_arrow()) == replay_latest(done), f"after {kind or 'minor'} at step {step}"
    expected = replay_latest(history)
    check_every_path(table, schema, expected)
    table.optimizing.run("full")
    check_every_path(table, schema, expected)
    if expected:  # pyiceberg's empty result is Schema.empty_table(), which pyarrow 20 cannot build for a nested uuid
        assert by_key(table.refresh().base_store.scan().to_arrow()) == expected, "pyiceberg reads the BaseStore after full"


@st.composite
def _engine_cases(draw: st.DrawFn) -> tuple[str, dict[str, str], History]:
    """An engine, its aggregate functions (one per column, of those its type takes), and a history."""
    engine = draw(st.sampled_from(["partial-update", "first-row", "aggregation"]))
    # Top-level primitives half the time: the functions that only some types take get drawn.
    schema = draw(typed_schemas(st.one_of(st.sampled_from(list(PRIMITIVES.values())), column_types())))
    functions = draw(aggregation_functions(schema)) if engine == "aggregation" else {}
    history = draw(typed_histories(st.just(schema), columns=lambda s: function_values(s, functions)))
    return engine, functions, history


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    case=_engine_cases(),
    partition=st.sampled_from(sorted(PARTITIONS)),
    layout=st.sampled_from(LAYOUTS),
    runs=RUNS,
)
def test_merge_engines_over_drawn_schemas_equal_their_replay_across_optimizing(
    tmp_path: Path,
    case: tuple[str, dict[str, str], History],
    partition: str,
    layout: tuple[str | None, int, int],
    runs: list[str | None],
) -> None:
    """partial-update, first-row and aggregation (every function a drawn column's type takes,
    nested payload columns included) give their replay on every read path, through optimizing."""
    engine, functions, history = case
    schema = history.schema
    properties = aggregation_properties(functions) if engine == "aggregation" else {"merge-engine": engine}
    table = create(tmp_path, schema, partition, layout, **properties)
    if history.initial:
        table.bulk_load(load_batch(schema, history.initial))
    done = History(schema, history.initial, [])
    assert by_key(table.scan().to_arrow()) == replay_engine(engine, done, functions), "after bulk_load"
    for step, ops in enumerate(history.txns):
        if ops:
            with table.new_transaction(("engine", step)) as txn:
                txn.write(change_batch(schema, ops))
        done.txns.append(ops)
        expected = replay_engine(engine, done, functions)
        assert by_key(table.scan().to_arrow()) == expected, f"before optimizing at step {step}"
        kind = runs[step % len(runs)]
        if kind is not None:
            run(table, kind)
            assert by_key(table.scan().to_arrow()) == expected, f"after {kind} at step {step}"
    expected = replay_engine(engine, history, functions)
    check_every_path(table, schema, expected)
    table.optimizing.run("full")
    check_every_path(table, schema, expected)
    if expected:
        assert by_key(table.refresh().base_store.scan().to_arrow()) == expected, "other readers see the merged rows"

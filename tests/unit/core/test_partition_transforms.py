"""Partitioned tables with every transform pyiceberg supports: layout, merged reads, optimizing, pushdown.

Each keyed case bulk-loads rows, commits random well-formed CDC (an update is ``-U`` of the
current row then ``+U`` of the new one, so a key changes partition only through such a pair; a
delete is ``-D`` of the current row) and compares the merged read with a plain replay of the
changes after every commit and after each optimizing type. The partition values and paths that
the tests expect are computed here, independently of pyiceberg's transforms (pyiceberg's
per-value murmur3 for buckets, calendar arithmetic for the time transforms).
"""

from __future__ import annotations

import datetime as dt
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.expressions import BooleanExpression
from pyiceberg.io.pyarrow import FileFormatFactory, schema_to_pyarrow
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.schema import Schema
from pyiceberg.table import Table, _parse_row_filter
from pyiceberg.transforms import BucketTransform
from pyiceberg.typedef import Record
from pyiceberg.types import LongType, StringType
from pyiceberg.utils.datetime import date_to_days, datetime_to_micros, time_to_micros

from mixed_iceberg import MixedTable, TableFormat
from mixed_iceberg.exceptions import ConfigError
from mixed_iceberg.store.delete_files import stage_rewrite
from mixed_iceberg.store.entries import LiveFile, live_files
from tests.support.tables import local_catalog, rows_of

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("region", pa.string()),
        pa.field("name", pa.string()),
        pa.field("n", pa.int32()),
        pa.field("d", pa.date32()),
        pa.field("ts", pa.timestamp("us")),
        pa.field("tz", pa.timestamp("us", tz="UTC")),
    ]
)
COLUMNS = SCHEMA.names
EPOCH = dt.datetime(1970, 1, 1)
EPOCH_TZ = EPOCH.replace(tzinfo=dt.UTC)
EPOCH_DATE = EPOCH.date()
HOUR = dt.timedelta(hours=1)
DAY = dt.timedelta(days=1)
# Few distinct instants (plus jitter inside the hour) so each partition gets several rows;
# 1969 checks the transforms floor before the epoch, the leap day and the year's last hour
# check calendar edges.
ANCHORS = [
    dt.datetime(1969, 12, 31, 23),
    dt.datetime(2023, 12, 31, 23),
    dt.datetime(2024, 1, 1, 0),
    dt.datetime(2024, 1, 1, 5),
    dt.datetime(2024, 2, 29, 12),
    dt.datetime(2025, 7, 4, 0),
]
REGIONS = ["eu", "us", "ap", "eu west", None]  # "eu west": the path escapes it as eu+west
NAMES = ["alpha", "alps", "beta", "bet", "gamma", "g", None]

Row = dict[str, Any]


# ---- an independent model of the transforms: partition value and path segment ----


def _bucket(width: int, value: object) -> int:
    # pyiceberg's pure-Python murmur3 path (per value), not the Arrow kernel the writers use
    source_type = StringType() if isinstance(value, str) else LongType()
    result = BucketTransform(width).transform(source_type)(value)
    assert isinstance(result, int)
    return result


def _as_datetime(value: object) -> dt.datetime:
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).replace(tzinfo=None) if value.tzinfo else value
    assert isinstance(value, dt.date)
    return dt.datetime(value.year, value.month, value.day)


def _human_date(days: int) -> str:
    return (EPOCH_DATE + dt.timedelta(days=days)).isoformat()


@dataclass(frozen=True)
class Transform:
    """One partition field: its spec string, source column, value function and path segment."""

    spec: str
    column: str
    field: str
    value: Callable[[Any], Any]
    human: Callable[[Any], str]

    def partition(self, source: object) -> object:
        return None if source is None else self.value(source)

    def path(self, partition: object) -> str:
        text = "null" if partition is None else self.human(partition)
        return f"{quote_plus(self.field, safe='')}={quote_plus(text, safe='')}"


def identity(column: str) -> Transform:
    if column == "d":
        return Transform(column, column, column, lambda v: (v - EPOCH_DATE).days, _human_date)
    return Transform(column, column, column, lambda v: v, str)


def bucket(width: int, column: str) -> Transform:
    return Transform(f"bucket({width}, {column})", column, f"{column}_bucket", lambda v: _bucket(width, v), str)


def truncate(width: int, column: str) -> Transform:
    def value(v: Any) -> Any:
        return v[:width] if isinstance(v, str) else v - v % width  # Python's % floors, as Iceberg's truncate does

    return Transform(f"truncate({width}, {column})", column, f"{column}_trunc", value, str)


def year(column: str) -> Transform:
    return Transform(
        f"year({column})", column, f"{column}_year", lambda v: _as_datetime(v).year - 1970, lambda p: f"{1970 + p:04d}"
    )


def month(column: str) -> Transform:
    def value(v: Any) -> int:
        t = _as_datetime(v)
        return (t.year - 1970) * 12 + t.month - 1

    return Transform(f"month({column})", column, f"{column}_month", value, lambda p: f"{1970 + p // 12:04d}-{p % 12 + 1:02d}")


def day(column: str) -> Transform:
    return Transform(f"day({column})", column, f"{column}_day", lambda v: (_as_datetime(v) - EPOCH) // DAY, _human_date)


def hour(column: str) -> Transform:
    return Transform(
        f"hour({column})",
        column,
        f"{column}_hour",
        lambda v: (_as_datetime(v) - EPOCH) // HOUR,
        lambda p: f"{EPOCH + p * HOUR:%Y-%m-%d-%H}",
    )


def void(column: str) -> Transform:
    return Transform(f"void({column})", column, f"{column}_null", lambda v: None, str)


TRANSFORMS = [
    identity("region"),
    identity("d"),
    bucket(4, "id"),
    bucket(3, "name"),
    truncate(10, "n"),
    truncate(2, "name"),
    *(make(column) for make in (year, month, day) for column in ("d", "ts", "tz")),
    hour("ts"),
    hour("tz"),
]


# ---- a predicate on the source column that selects exactly one partition ----


def _literal(column: str, instant: dt.datetime) -> str:
    if column == "d":
        return f"'{instant.date().isoformat()}'"
    return f"'{instant.isoformat()}+00:00'" if column == "tz" else f"'{instant.isoformat()}'"


def _next_month(t: dt.datetime) -> dt.datetime:
    return t.replace(year=t.year + t.month // 12, month=t.month % 12 + 1)


def partition_filter(transform: Transform, rows: list[Row]) -> tuple[str, Callable[[Row], bool], Callable[[object], bool]]:
    """(row filter, which rows it selects, which partitions it selects) for one live partition."""
    column = transform.column
    pivot = next(r for r in rows if r[column] is not None and (transform.column != "name" or len(r[column]) >= 2))
    value = pivot[column]
    part = transform.partition(value)
    kind = transform.field.removeprefix(column)
    in_partition: Callable[[object], bool] = lambda p: p == part  # noqa: E731
    if kind == "_bucket":
        key = "'" + value + "'" if isinstance(value, str) else str(value)
        return f"{column} = {key}", lambda r: r[column] == value, in_partition
    if kind == "" and column == "region":
        return f"region = '{value}'", lambda r: r["region"] == value, in_partition
    if kind == "_trunc" and column == "name":
        return f"name LIKE '{part}%'", lambda r: r["name"] is not None and r["name"].startswith(part), in_partition
    if kind == "_trunc":
        lo, hi = part, part + 10
        return f"n >= {lo} AND n < {hi}", lambda r: r["n"] is not None and lo <= r["n"] < hi, in_partition
    start = _as_datetime(value)
    if kind in ("", "_day"):
        lo_t = start.replace(hour=0, minute=0, second=0, microsecond=0)
        hi_t = lo_t + DAY
    elif kind == "_hour":
        lo_t = start.replace(minute=0, second=0, microsecond=0)
        hi_t = lo_t + HOUR
    elif kind == "_month":
        lo_t = dt.datetime(start.year, start.month, 1)
        hi_t = _next_month(lo_t)
    else:
        lo_t, hi_t = dt.datetime(start.year, 1, 1), dt.datetime(start.year + 1, 1, 1)

    def selects(r: Row) -> bool:
        return r[column] is not None and lo_t <= _as_datetime(r[column]) < hi_t

    return f"{column} >= {_literal(column, lo_t)} AND {column} < {_literal(column, hi_t)}", selects, in_partition


# ---- random rows and well-formed CDC, with a plain replay as the oracle ----


def random_row(rng: random.Random, key: int) -> Row:
    instant = rng.choice(ANCHORS) + dt.timedelta(seconds=rng.randrange(3600), microseconds=rng.randrange(10**6))
    maybe = lambda v: None if rng.random() < 0.08 else v  # noqa: E731
    return {
        "id": key,
        "region": rng.choice(REGIONS),
        "name": rng.choice(NAMES),
        "n": maybe(rng.randint(-30, 60)),
        "d": maybe(rng.choice(ANCHORS).date()),
        "ts": maybe(instant),
        "tz": maybe(instant.replace(tzinfo=dt.UTC) + dt.timedelta(minutes=rng.randrange(90))),
    }


def as_table(rows: list[Row], schema: pa.Schema = SCHEMA) -> pa.Table:
    return pa.Table.from_pylist([{c: r[c] for c in schema.names} for r in rows], schema=schema)


def as_changes(changes: list[tuple[str, Row]], schema: pa.Schema = SCHEMA) -> pa.Table:
    table = as_table([row for _, row in changes], schema)
    return table.append_column("_change_action", pa.array([action for action, _ in changes], pa.string()))


@dataclass
class Replay:
    """The rows a keyed table must hold: each change applied in order to a dict by key."""

    rows: dict[int, Row]
    rng: random.Random
    make: Callable[[random.Random, int], Row] = random_row
    schema: pa.Schema = SCHEMA

    def transaction(self, keys: int = 80, size: int = 24) -> list[tuple[str, Row]]:
        changes: list[tuple[str, Row]] = []
        for key in self.rng.sample(range(keys), size):
            old = self.rows.get(key)
            if old is None:
                new = self.make(self.rng, key)
                changes.append(("+I", new))
                self.rows[key] = new
            elif self.rng.random() < 0.65:
                new = self.make(self.rng, key)  # may well land in another partition
                changes += [("-U", old), ("+U", new)]
                self.rows[key] = new
            else:
                changes.append(("-D", old))
                del self.rows[key]
        return changes

    def expected(self) -> list[tuple[object, ...]]:
        return rows_of(as_table(list(self.rows.values()), self.schema))


# ---- what is on disk ----


def current_files(store: Table) -> list[LiveFile]:
    return live_files(store, store.current_snapshot())


def local(path: str) -> str:
    return path.removeprefix("file://")


Spec = tuple[Transform, ...]


def partition_of(spec: Spec, row: Row) -> tuple[object, ...]:
    return tuple(t.partition(row[t.column]) for t in spec)


def _shown(value: object) -> object:
    """inspect.files() shows day partitions as dates; manifests hold days since the epoch."""
    return (value - EPOCH_DATE).days if isinstance(value, dt.date) else value


def assert_amoro_layout(store: Table, spec: Spec) -> None:
    """Every live file sits in ``<location>/data/<partition path>/`` and holds only rows of its partition."""
    inspected = {
        row["file_path"]: tuple(_shown(row["partition"][t.field]) for t in spec) for row in store.inspect.files().to_pylist()
    }
    files = current_files(store)
    assert files
    for live in files:
        data_file = live.data_file
        value = tuple(data_file.partition)
        assert inspected[data_file.file_path] == value
        directory = local(data_file.file_path).rsplit("/", 1)[0]
        path = "/".join(t.path(v) for t, v in zip(spec, value, strict=True))
        assert directory == f"{local(store.location())}/data/{path}"
        content = pq.ParquetFile(local(data_file.file_path)).read()
        if data_file.content == DataFileContent.POSITION_DELETES:
            targets = {local(p) for p in content.column("file_path").to_pylist()}
            partitions = {tuple(f.data_file.partition) for f in files if local(f.data_file.file_path) in targets}
            assert partitions <= {value}, f"{data_file.file_path}: deletes of files in partitions {partitions}"
        else:
            found = {partition_of(spec, row) for row in content.select([t.column for t in spec]).to_pylist()}
            assert found == {value}, f"{data_file.file_path}: rows of partitions {found} in partition {value!r}"


def base_partitions(table: MixedTable) -> set[tuple[object, ...]]:
    base = current_files(table.base_store)
    return {tuple(f.data_file.partition) for f in base if f.data_file.content == DataFileContent.DATA}


def keyed_table(tmp_path: Path, spec: Spec, seed: int) -> tuple[MixedTable, Replay]:
    catalog = local_catalog(tmp_path)
    table = catalog.create_table(
        "db.t",
        SCHEMA,
        primary_key=["id"],
        partition_by=[t.spec for t in spec],
        properties={"change.file-index.hash-bucket": "2", "base.file-index.hash-bucket": "2"},
    )
    rng = random.Random(seed)
    replay = Replay({k: random_row(rng, k) for k in range(50)}, rng)
    table.bulk_load(as_table(list(replay.rows.values())))
    return table, replay


def commit(table: MixedTable, replay: Replay, sequence: int) -> None:
    with table.new_transaction(("w", sequence)) as txn:
        txn.write(as_changes(replay.transaction()))


def assert_pushdown(table: MixedTable, spec: Spec, replay: Replay) -> None:
    """Filters on the first field's source column (one live partition; IS NULL) return the full
    scan's matching rows, reading exactly the files of the partitions they select (both stores)."""
    column = spec[0].column
    filters = [partition_filter(spec[0], list(replay.rows.values()))]
    if any(r[column] is None for r in replay.rows.values()):
        filters.append((f"{column} IS NULL", lambda r: r[column] is None, lambda p: p is None))
    stores = [s for s in (table.base_store, table.change_store) if s is not None]
    every = [f for s in stores for f in current_files(s)]
    full = table.scan().to_arrow().to_pylist()
    for text, selects, in_partition in filters:
        oracle = rows_of(as_table([r for r in full if selects(r)]))
        assert oracle == rows_of(as_table([r for r in replay.rows.values() if selects(r)]))
        assert oracle, f"{text} selects no row"
        assert rows_of(table.scan(row_filter=text).to_arrow()) == oracle, text
        expression: BooleanExpression = _parse_row_filter(text)
        kept = {f.data_file.file_path for s in stores for f in live_files(s, s.current_snapshot(), partition_filter=expression)}
        selected = {f.data_file.file_path for f in every if in_partition(f.data_file.partition[0])}
        assert kept == selected, text
        assert len(every) > len(selected), f"{text}: every file is in the selected partition, nothing to prune"


def ids(spec: Spec) -> str:
    return "+".join(t.spec.replace(" ", "") for t in spec)


# the README's example spec: three fields, one of each kind (time, hash, identity)
SPECS: list[Spec] = [*((t,) for t in TRANSFORMS), (day("ts"), bucket(16, "id"), identity("region"))]


@pytest.mark.parametrize("spec", SPECS, ids=ids)
def test_keyed_table_with_transform_reads_writes_and_optimizes(tmp_path: Path, spec: Spec) -> None:
    table, replay = keyed_table(tmp_path, spec, seed=len(ids(spec)))
    assert_amoro_layout(table.base_store, spec)
    for sequence in range(1, 4):
        commit(table, replay, sequence)
        assert rows_of(table.scan().to_arrow()) == replay.expected()
    assert table.change_store is not None
    assert_amoro_layout(table.change_store, spec)
    assert_pushdown(table, spec, replay)
    for sequence, kind in enumerate(("minor", "major", "full"), start=4):
        result = table.optimizing.run(kind)
        assert result.committed, kind
        assert rows_of(table.scan().to_arrow()) == replay.expected(), kind
        assert_amoro_layout(table.base_store, spec)
        assert {partition_of(spec, r) for r in replay.rows.values()} <= base_partitions(table), kind
        assert_pushdown(table, spec, replay)
        commit(table, replay, sequence)  # the next type starts from fresh change files
        assert rows_of(table.scan().to_arrow()) == replay.expected(), kind
    table.optimizing.run("full")
    assert rows_of(table.scan().to_arrow()) == replay.expected()
    # After a full optimizing the BaseStore alone is the table: one partition per file, no change to merge.
    assert rows_of(table.base_store.scan().to_arrow()) == replay.expected()
    assert_amoro_layout(table.base_store, spec)


@pytest.mark.parametrize("spec", [(identity("region"),), (day("ts"),)], ids=ids)
def test_update_moves_a_key_between_partitions(tmp_path: Path, spec: Spec) -> None:
    catalog = local_catalog(tmp_path)
    table = catalog.create_table("db.t", SCHEMA, primary_key=["id"], partition_by=[t.spec for t in spec])
    rng = random.Random(7)
    first = {**random_row(rng, 1), "region": "eu", "ts": dt.datetime(2024, 1, 1, 10)}
    other = {**random_row(rng, 2), "region": "us", "ts": dt.datetime(2024, 1, 2, 10)}
    moved = {**first, "region": "us", "ts": dt.datetime(2024, 1, 2, 11), "name": "moved"}
    table.bulk_load(as_table([first, other]))
    with table.new_transaction(("w", 1)) as txn:
        txn.write(as_changes([("-U", first), ("+U", moved)]))
    old, new = partition_of(spec, first), partition_of(spec, moved)
    assert old != new
    change = table.change_store
    assert change is not None
    assert_amoro_layout(change, spec)
    # Amoro's file names: <node>-<type>-<txId>-...; the -U is an ED file of the old partition, the +U an I file of the new
    types = {(tuple(f.data_file.partition), f.data_file.file_path.rsplit("/", 1)[1].split("-")[1]) for f in current_files(change)}
    assert types == {(old, "ED"), (new, "I")}
    assert rows_of(table.scan().to_arrow()) == rows_of(as_table([moved, other]))
    column = spec[0].column
    old_filter = "region = 'eu'" if column == "region" else "ts < '2024-01-02T00:00:00'"
    new_filter = "region = 'us'" if column == "region" else "ts >= '2024-01-02T00:00:00'"
    assert table.scan(row_filter=old_filter).to_arrow().num_rows == 0
    assert rows_of(table.scan(row_filter=new_filter).to_arrow()) == rows_of(as_table([moved, other]))
    # ... and back again, then every optimizing type.
    back = {**moved, "region": "eu", "ts": dt.datetime(2024, 1, 1, 12), "name": "back"}
    with table.new_transaction(("w", 2)) as txn:
        txn.write(as_changes([("-U", moved), ("+U", back)]))
    expected = rows_of(as_table([back, other]))
    assert rows_of(table.scan().to_arrow()) == expected
    assert rows_of(table.scan(row_filter=old_filter).to_arrow()) == rows_of(as_table([back]))
    for kind in ("minor", "major", "full"):
        table.optimizing.run(kind)
        assert rows_of(table.scan().to_arrow()) == expected, kind
        assert rows_of(table.scan(row_filter=new_filter).to_arrow()) == rows_of(as_table([other])), kind
    assert_amoro_layout(table.base_store, spec)
    keys_by_partition = {
        tuple(f.data_file.partition): pq.ParquetFile(local(f.data_file.file_path)).read().column("id").to_pylist()
        for f in current_files(table.base_store)
        if f.data_file.content == DataFileContent.DATA
    }
    assert sorted(keys_by_partition[old]) == [1]


def unkeyed_rows(rng: random.Random, keys: range) -> list[Row]:
    return [random_row(rng, k) for k in keys]


@pytest.mark.parametrize("table_format", [TableFormat.MIXED_ICEBERG, TableFormat.ICEBERG], ids=["unkeyed", "iceberg"])
@pytest.mark.parametrize(
    "spec", [(bucket(4, "id"),), (truncate(2, "name"),), (month("tz"),), (day("d"),), (hour("ts"),), SPECS[-1]], ids=ids
)
def test_unkeyed_and_plain_iceberg_tables_with_transform(tmp_path: Path, spec: Spec, table_format: TableFormat) -> None:
    catalog = local_catalog(tmp_path)
    table = catalog.create_table("db.t", SCHEMA, partition_by=[t.spec for t in spec], table_format=table_format)
    rng = random.Random(3)
    rows = unkeyed_rows(rng, range(40))
    table.bulk_load(as_table(rows))
    more = unkeyed_rows(rng, range(40, 70))
    table.base_store.append(as_table(more))  # pyiceberg's own writer lays files out the same way
    rows += more
    assert_amoro_layout(table.base_store, spec)
    assert rows_of(table.scan().to_arrow()) == rows_of(as_table(rows))
    replay = Replay({r["id"]: r for r in rows}, rng)
    assert_pushdown(table, spec, replay)
    table.optimizing.run("full")
    assert rows_of(table.scan().to_arrow()) == rows_of(as_table(rows))
    assert_amoro_layout(table.base_store, spec)
    assert_pushdown(table, spec, replay)


def test_every_transform_is_covered() -> None:
    kinds = {t.spec.split("(")[0] if "(" in t.spec else "identity" for t in TRANSFORMS}
    assert kinds == {"identity", "bucket", "truncate", "year", "month", "day", "hour"}


def test_partition_fields_are_named_as_iceberg_java_names_them(tmp_path: Path) -> None:
    specs = ["region", "identity(n)", "bucket(16, id)", "truncate(4, name)", "year(d)", "month(ts)", "day(tz)", "hour(ts)"]
    table = local_catalog(tmp_path).create_table("db.t", SCHEMA, primary_key=["id"], partition_by=[*specs, "void(name)"])
    names = [f.name for f in table.base_store.spec().fields]
    assert names == ["region", "n", "id_bucket", "name_trunc", "d_year", "ts_month", "tz_day", "ts_hour", "name_null"]
    assert table.change_store is not None
    assert table.change_store.spec() == table.base_store.spec()


def test_void_partition_keeps_every_row_in_the_null_partition(tmp_path: Path) -> None:
    spec = (void("name"),)
    table, replay = keyed_table(tmp_path, spec, seed=5)
    commit(table, replay, 1)
    assert rows_of(table.scan().to_arrow()) == replay.expected()
    assert table.change_store is not None
    assert_amoro_layout(table.change_store, spec)
    table.optimizing.run("full")
    assert rows_of(table.scan().to_arrow()) == replay.expected()
    assert_amoro_layout(table.base_store, spec)
    assert base_partitions(table) == {(None,)}


@pytest.mark.parametrize(
    ("partition_by", "message"),
    [
        (["bucket(0, id)"], r"expected a bucket width >= 1, found 0"),
        (["truncate(0, name)"], r"expected a truncate width >= 1, found 0"),
        (["day(name)"], r"day does not apply to 'name' of type string"),
        (["hour(d)"], r"hour does not apply to 'd' of type date"),
        (["truncate(2, d)"], r"truncate\[2\] does not apply to 'd' of type date"),
        (["bucket(4, id)", "bucket(8, id)"], r"found 'id_bucket' twice"),
        (["region", "identity(region)"], r"found 'region' twice"),
        (["bucket(4, nope)"], r"column 'nope' not in schema"),
        (["days(ts)"], r"unknown transform 'days'"),
    ],
)
def test_partition_specs_that_cannot_be_written_are_refused_at_create(
    tmp_path: Path, partition_by: list[str], message: str
) -> None:
    catalog = local_catalog(tmp_path)
    with pytest.raises(ConfigError, match=message):
        catalog.create_table("db.t", SCHEMA, primary_key=["id"], partition_by=partition_by)
    assert catalog.list_tables("db") == []


def test_a_partition_name_may_not_shadow_another_column(tmp_path: Path) -> None:
    schema = SCHEMA.append(pa.field("ts_day", pa.int32()))
    with pytest.raises(ConfigError, match=r"partition field name 'ts_day' is also a column"):
        local_catalog(tmp_path).create_table("db.t", schema, primary_key=["id"], partition_by=["day(ts)"])


def unordered(table: pa.Table) -> list[tuple[object, ...]]:
    """Rows in a stable order when keys repeat (plain Iceberg tables have none) and values may be null."""
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=repr)


def test_equality_deletes_of_another_engine_apply_within_their_day_partition(tmp_path: Path) -> None:
    """A Flink-style upsert on a plain Iceberg table partitioned by day(ts): the equality delete
    file is scoped to one day, so the same key in another day survives; full optimizing keeps it so."""
    spec = (day("ts"),)
    table = local_catalog(tmp_path).create_table("db.t", SCHEMA, partition_by=["day(ts)"], table_format=TableFormat.ICEBERG)
    store = table.base_store
    rng = random.Random(11)
    monday, tuesday = dt.datetime(2024, 1, 1, 9), dt.datetime(2024, 1, 2, 9)
    rows = [{**random_row(rng, k), "ts": when} for when in (monday, tuesday) for k in range(6)]
    store.append(as_table(rows))
    # Iceberg Java's equality-delete file for keys 1 and 2 of the 2024-01-01 partition: the key column only.
    key_schema = Schema(store.schema().find_field("id"))
    partition = Record(spec[0].partition(monday))
    path = f"{store.location()}/data/{spec[0].path(partition[0])}/eq-deletes.parquet"
    output = store.io.new_output(path)
    writer = FileFormatFactory.get(FileFormat.PARQUET).create_writer(output, key_schema, store.properties)
    with writer:
        writer.write(pa.Table.from_pylist([{"id": 1}, {"id": 2}], schema=schema_to_pyarrow(key_schema)))
    deletes = DataFile.from_args(
        content=DataFileContent.EQUALITY_DELETES,
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=partition,
        file_size_in_bytes=len(output),
        equality_ids=[key_schema.fields[0].field_id],
        sort_order_id=None,
        key_metadata=None,
        **writer.result().to_serialized_dict(),
    )
    deletes.spec_id = store.spec().spec_id
    with store.transaction() as txn:
        stage_rewrite(txn, add_deletes=[deletes])
    expected = unordered(as_table([r for r in rows if not (r["ts"] == monday and r["id"] in (1, 2))]))
    assert unordered(table.refresh().scan().to_arrow()) == expected
    assert unordered(table.scan(row_filter="ts >= '2024-01-02T00:00:00'").to_arrow()) == unordered(as_table(rows[6:]))
    table.optimizing.run("full")
    assert unordered(table.scan().to_arrow()) == expected
    assert not [f for f in current_files(table.base_store) if f.data_file.content != DataFileContent.DATA]
    assert_amoro_layout(table.base_store, spec)


# ---- the other source types the transforms take, and two fields over one column ----

TYPED = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("dec", pa.decimal128(9, 2)),
        pa.field("bin", pa.binary()),
        pa.field("fix", pa.binary(3)),
        pa.field("u", pa.uuid()),
        pa.field("t", pa.time64("us")),
        pa.field("b", pa.bool_()),
        pa.field("x", pa.float64()),
        pa.field("ts", pa.timestamp("us")),
    ]
)


def typed_row(rng: random.Random, key: int) -> Row:
    maybe = lambda v: None if rng.random() < 0.1 else v  # noqa: E731
    return {
        "id": key,
        "dec": maybe(Decimal(rng.randrange(-9999, 9999)) / 100),
        "bin": maybe(bytes(rng.choice([b"ab", b"\x00\xff", b"abc", b"b"]))),
        "fix": maybe(rng.choice([b"abc", b"xyz", b"\x00\x00\x01"])),
        "u": maybe(uuid.UUID(int=rng.randrange(4)).bytes),
        "t": maybe(rng.choice([dt.time(0, 0), dt.time(10, 30), dt.time(23, 59, 59, 999999)])),
        "b": maybe(rng.random() < 0.5),
        "x": maybe(rng.choice([0.5, -1.25, 1e10])),
        "ts": maybe(rng.choice(ANCHORS)),
    }


def _internal(value: object) -> object:
    if isinstance(value, dt.datetime):
        return datetime_to_micros(value)
    if isinstance(value, dt.date):
        return date_to_days(value)
    if isinstance(value, dt.time):
        return time_to_micros(value)
    return value


def expected_partition(store: Table, row: Row) -> tuple[object, ...]:
    """pyiceberg's per-value (pure Python) transforms of the row's source values."""
    schema = store.schema()
    values = []
    for field in store.spec().fields:
        source = schema.find_field(field.source_id)
        value = row[source.name]
        values.append(field.transform.transform(source.field_type)(_internal(value)))
    return tuple(_internal(v) for v in values)


def assert_files_hold_their_partition(store: Table) -> None:
    files = current_files(store)
    assert files
    for live in files:
        data_file = live.data_file
        value = tuple(data_file.partition)
        directory = local(data_file.file_path).rsplit("/", 1)[0]
        assert (
            directory == f"{local(store.location())}/data/{store.spec().partition_to_path(data_file.partition, store.schema())}"
        )
        if data_file.content == DataFileContent.DATA:
            rows = pq.ParquetFile(local(data_file.file_path)).read().to_pylist()
            assert {expected_partition(store, r) for r in rows} == {value}, data_file.file_path


@pytest.mark.parametrize(
    "partition_by",
    [
        ["bucket(4, dec)"],
        ["truncate(50, dec)"],
        ["bin"],
        ["bucket(3, bin)"],
        ["truncate(1, bin)"],
        ["bucket(3, fix)"],
        ["u"],
        ["bucket(4, u)"],
        ["t"],
        ["bucket(4, t)"],
        ["b"],
        ["x"],
        ["ts"],
        ["bucket(4, id)", "truncate(10, id)"],  # two fields over one source column
        ["ts", "day(ts)"],
    ],
    ids=lambda p: "+".join(p).replace(" ", ""),
)
def test_every_source_type_a_transform_takes_is_written_read_and_optimized(tmp_path: Path, partition_by: list[str]) -> None:
    table = local_catalog(tmp_path).create_table("db.t", TYPED, primary_key=["id"], partition_by=partition_by)
    rng = random.Random(len(partition_by[0]))
    replay = Replay({k: typed_row(rng, k) for k in range(30)}, rng, typed_row, TYPED)
    table.bulk_load(as_table(list(replay.rows.values()), TYPED))
    for sequence in (1, 2):
        with table.new_transaction(("w", sequence)) as txn:
            txn.write(as_changes(replay.transaction(keys=40, size=12), TYPED))
        assert rows_of(table.scan().to_arrow()) == replay.expected()
    assert table.change_store is not None
    assert_files_hold_their_partition(table.change_store)
    table.optimizing.run("full")
    assert rows_of(table.scan().to_arrow()) == replay.expected()
    assert_files_hold_their_partition(table.base_store)

"""Partitioned test tables: an independent model of Iceberg's transforms, random well-formed
CDC with a plain replay as the oracle, and checks of the on-disk layout and of pushdown.

The partition values and paths the checks expect are computed here, independently of the
Arrow kernels the writers use (pyiceberg's per-value murmur3 for buckets, calendar
arithmetic for the time transforms). CDC is well formed: an update is ``-U`` of the current
row then ``+U`` of the new one, so a key changes partition only through such a pair; a delete
is ``-D`` of the current row.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.expressions import BooleanExpression
from pyiceberg.manifest import DataFileContent
from pyiceberg.table import Table, _parse_row_filter
from pyiceberg.transforms import BucketTransform
from pyiceberg.types import LongType, StringType

from mixed_iceberg import MixedTable
from mixed_iceberg.store.manifests.live_files import LiveFile, live_files
from mixed_iceberg.store.manifests.scan_tasks import plan_scan_tasks
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
        # Java's URLEncoder: quote_plus, but * kept and ~ escaped
        return f"{self.field}={quote_plus(text, safe='*').replace('~', '%7E')}"


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
    scan's matching rows, and the files planned are never another partition's: the BaseStore's
    always, the ChangeStore's when the column is the key (change files are pruned by key
    predicates only, since a key may move between partitions), checked against the files'
    contents: every file holding a matching row is planned."""
    column = spec[0].column
    filters = [partition_filter(spec[0], list(replay.rows.values()))]
    if any(r[column] is None for r in replay.rows.values()):
        filters.append((f"{column} IS NULL", lambda r: r[column] is None, lambda p: p is None))
    full = table.scan().to_arrow().to_pylist()
    for text, selects, in_partition in filters:
        oracle = rows_of(as_table([r for r in full if selects(r)]))
        assert oracle == rows_of(as_table([r for r in replay.rows.values() if selects(r)]))
        assert oracle, f"{text} selects no row"
        assert rows_of(table.scan(row_filter=text).to_arrow()) == oracle, text
        expression: BooleanExpression = _parse_row_filter(text)
        base = table.base_store
        planned = [("BaseStore", base, {t.file.file_path for t in plan_scan_tasks(base, base.current_snapshot(), expression)})]
        change = table.change_store
        if change is not None and list(table.primary_key) == [column]:
            kept = {f.data_file.file_path for f in live_files(change, change.current_snapshot(), expression)}
            planned.append(("ChangeStore", change, kept))
        for name, store, read in planned:
            data = [f.data_file for f in current_files(store) if f.data_file.content == DataFileContent.DATA]
            outside = {f.file_path for f in data if not in_partition(f.partition[0])}
            assert outside, f"{text}: every {name} file is in the selected partition, nothing to prune"
            assert not read & outside, f"{text}: {name} files of other partitions planned"
            matching = {
                f.file_path for f in data if any(selects(r) for r in pq.ParquetFile(local(f.file_path)).read().to_pylist())
            }
            assert matching <= read, f"{text}: {name} files with matching rows not planned"


def ids(spec: Spec) -> str:
    return "+".join(t.spec.replace(" ", "") for t in spec)


# docs/catalogs.md's example spec: three fields, one of each kind (time, hash, identity)
SPECS: list[Spec] = [*((t,) for t in TRANSFORMS), (day("ts"), bucket(16, "id"), identity("region"))]


def unordered(table: pa.Table) -> list[tuple[object, ...]]:
    """Rows in a stable order when keys repeat (plain Iceberg tables have none) and values may be null."""
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=repr)

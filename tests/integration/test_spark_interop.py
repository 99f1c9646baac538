"""A real Spark (3.5, Iceberg 1.10) on our tables: its maintenance and readers must not break them.

The session's one ``local[1]`` Spark (``spark_jvm``) reads our SQLite SQL catalog through
Iceberg's JDBC catalog, under the same catalog name; each step that must see our latest commits
takes a fresh session of it (tests/support/spark.py says why). What is pinned:

* ``CALL system.compute_table_stats`` replaces the BaseStore snapshot's statistics file (our
  ``optimized-sequence`` Puffin blob is gone); our merged read stays correct and the next
  minor merges no change row twice (basestore/optimized_sequence.py keeps a summary copy).
* Our optimizing commits are ``replace`` snapshots: Spark's streaming reader of the BaseStore
  skips them instead of failing with "Cannot process overwrite snapshot", and their summary
  has the keys Iceberg Java's ``RewriteFiles`` writes (checked against Spark's own rewrite).
* Spark sees the rows of both stores that we see, for every Iceberg type Spark has (all but
  ``time``): the values written, as pyiceberg and our merged read give them, before and after a
  ``full`` optimizing.
"""

from __future__ import annotations

import datetime
import decimal
import itertools
import math
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mixed_iceberg import MixedCatalog, MixedTable
from mixed_iceberg.basestore.optimized_sequence import OPTIMIZED_SEQUENCE, read_optimized_sequence
from tests.support.iceberg_types import NESTED, PRIMITIVES, values
from tests.support.spark import catalog_session, jdbc_catalog
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog, rows_of

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    # py4j drops idle gateway connections without closing their sockets; the session fixture
    # shuts the gateway down (closing them) and collects the rest.
    pytest.mark.filterwarnings(r"ignore:Exception ignored in. <socket\.socket:pytest.PytestUnraisableExceptionWarning"),
]

CATALOG = "local"
# Keys of a snapshot summary that name the engine or the run, not the commit's content.
ENGINE_KEYS = {"app-id", "spark.app.id", "engine-name", "engine-version", "iceberg-version"}


@dataclass(frozen=True, slots=True)
class Interop:
    jvm: SparkSession
    catalogs: dict[str, dict[str, str]]
    catalog: MixedCatalog
    scratch: Path

    def spark(self) -> SparkSession:
        """A session that sees every commit made so far (its catalogs are loaded afresh)."""
        return catalog_session(self.jvm, self.catalogs)


@pytest.fixture(scope="module")
def interop(tmp_path_factory: pytest.TempPathFactory, spark_jvm: SparkSession) -> Interop:
    root = tmp_path_factory.mktemp("spark-interop")
    catalog = local_catalog(root, name=CATALOG)  # creates the catalog tables Spark then finds
    return Interop(spark_jvm, {CATALOG: jdbc_catalog(root / "catalog.db", root / "wh")}, catalog, root / "spark")


def _spark_rows(interop: Interop, identifier: str) -> list[tuple[object, ...]]:
    frame = interop.spark().table(f"{CATALOG}.{identifier}").select(*ORDERS_SCHEMA.names)
    return sorted(tuple(row) for row in frame.collect())


def _loaded(catalog: MixedCatalog, name: str, rows: int) -> MixedTable:
    table = catalog.create_table(name, ORDERS_SCHEMA, primary_key=["id"], partition_by=["cat"])
    table.bulk_load(changes([("+I", k, "ab"[k % 2], k, 1.0) for k in range(rows)]).drop_columns(["_change_action"]))
    return table


def test_compute_table_stats_neither_brings_back_merged_rows_nor_gets_them_merged_twice(interop: Interop) -> None:
    table = _loaded(interop.catalog, "db.stats", 40)
    with table.new_transaction() as txn:
        txn.write(changes([("-U", 1, "b", 1, 1.0), ("+U", 1, "b", 100, 2.0), ("-D", 2, "a", 2, 1.0), ("+I", 50, "a", 5, 5.0)]))
    assert table.optimizing.run("minor").committed
    table = table.refresh()
    merged = rows_of(table.scan().to_arrow())
    sequences = read_optimized_sequence(table.base_store, table.base_store.current_snapshot())
    assert sequences, "the minor recorded an optimized sequence"

    interop.spark().sql(f"CALL {CATALOG}.system.compute_table_stats(table => 'db.stats')").collect()

    table = table.refresh()
    base = table.base_store
    snapshot = base.current_snapshot()
    assert snapshot is not None
    (statistics,) = [s for s in base.metadata.statistics if s.snapshot_id == snapshot.snapshot_id]
    blob_types = {b.type for b in statistics.blob_metadata}
    assert OPTIMIZED_SEQUENCE not in blob_types, f"Spark's statistics file replaced ours: {blob_types}"
    assert rows_of(table.scan().to_arrow()) == merged, "no merged-away version may come back"
    assert read_optimized_sequence(base, snapshot) == sequences

    with table.new_transaction() as txn:
        txn.write(changes([("-U", 3, "b", 3, 1.0), ("+U", 3, "b", 300, 3.0)]))
    table = table.refresh()
    expected = sorted([r for r in merged if r[0] != 3] + [(3, "b", 300, 3.0)])
    assert rows_of(table.scan().to_arrow()) == expected
    assert table.optimizing.run("minor").committed
    table = table.refresh()
    assert rows_of(table.scan().to_arrow()) == expected
    # Every change is merged now: the BaseStore alone holds the merged view, once per key.
    assert rows_of(table.base_store.scan().to_arrow()) == expected
    assert _spark_rows(interop, "db.stats") == expected
    change = table.change_store
    assert change is not None
    assert interop.spark().table(f"{CATALOG}.{'.'.join(change.name())}").count() == change.scan().to_arrow().num_rows


def test_spark_streams_the_base_store_past_our_optimizing_commits(interop: Interop) -> None:
    table = _loaded(interop.catalog, "db.stream", 30)
    loaded = rows_of(table.base_store.scan().to_arrow())
    for kind, update in (("minor", 1), ("major", 2), ("full", 3)):
        with table.new_transaction() as txn:
            txn.write(changes([("-U", update, "b", update, 1.0), ("+U", update, "b", 10 * update, 2.0)]))
        assert table.optimizing.run(kind).committed, kind
        table = table.refresh()
    base = table.base_store

    spark = interop.spark()
    query = (
        spark.readStream.format("iceberg")
        .load(f"{CATALOG}.db.stream")
        .writeStream.format("memory")
        .queryName("base_stream")
        .option("checkpointLocation", str(interop.scratch / "checkpoint-base-stream"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    streamed = sorted(tuple(r) for r in spark.table("base_stream").select(*ORDERS_SCHEMA.names).collect())
    assert streamed == loaded, "the stream holds the appended rows; the replaces add nothing"
    operations = [s.summary.operation.value for s in base.snapshots() if s.summary is not None]
    assert operations == ["append", "replace", "replace", "replace"]

    # An incremental batch read from the bulk load on reads no optimizing commit's rows either.
    first = base.snapshots()[0].snapshot_id
    incremental = spark.read.format("iceberg").option("start-snapshot-id", str(first)).load(f"{CATALOG}.db.stream")
    assert incremental.count() == 0
    # Spark and we see the same BaseStore and ChangeStore rows.
    assert _spark_rows(interop, "db.stream") == rows_of(base.scan().to_arrow())
    change = table.change_store
    assert change is not None
    assert _spark_rows(interop, ".".join(change.name())) == rows_of(change.scan().to_arrow().select(ORDERS_SCHEMA.names))


def test_our_replace_summary_has_the_keys_of_spark_rewrite_data_files(interop: Interop) -> None:
    spark = interop.spark()
    spark.sql(
        f"CREATE TABLE {CATALOG}.db.plain (id BIGINT, v STRING) USING iceberg "
        "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read')"
    )
    spark.sql(f"INSERT INTO {CATALOG}.db.plain VALUES (1, 'a'), (3, 'c')")
    spark.sql(f"INSERT INTO {CATALOG}.db.plain VALUES (2, 'b')")
    spark.sql(f"DELETE FROM {CATALOG}.db.plain WHERE id = 1")
    spark.sql(
        f"CALL {CATALOG}.system.rewrite_data_files(table => 'db.plain', "
        "options => map('min-input-files', '1', 'delete-file-threshold', '1'))"
    ).collect()
    (java,) = spark.sql(f"SELECT summary FROM {CATALOG}.db.plain.snapshots WHERE operation = 'replace'").collect()

    table = _loaded(interop.catalog, "db.summary", 20)
    with table.new_transaction() as txn:
        txn.write(changes([("-D", 2, "a", 2, 1.0)]))
    assert table.optimizing.run("minor").committed
    assert table.optimizing.run("full").committed
    snapshot = table.refresh().base_store.current_snapshot()
    assert snapshot is not None
    assert snapshot.summary is not None
    assert snapshot.summary.operation.value == "replace"
    ours = {k for k in snapshot.summary.additional_properties if not k.startswith(("mixed-iceberg.", "optimized-", "base-"))}
    # The same content keys (which counters appear depends on what each rewrite touched).
    assert set(java.summary) - ENGINE_KEYS <= ours
    assert "changed-partition-count" in ours


# -- every type -------------------------------------------------------------------------------------
# Spark 3.5's Iceberg runtime (1.10) has no Spark type for Iceberg's ``time``: reading a table
# with one, at the top level or inside a struct, fails with UnsupportedOperationException "Spark
# does not support time fields" (Iceberg's TypeToSparkType), so a time column makes the whole
# table unreadable there. The Spark table leaves them out:
# the ``time`` primitive, and the ``t`` field of ``struct_of_times``.
_SPARK_NESTED = {
    **NESTED,
    "struct_of_times": pa.struct([f for f in NESTED["struct_of_times"] if not pa.types.is_time(f.type)]),
}
SPARK_COLUMNS = {**{n: k for n, k in PRIMITIVES.items() if not pa.types.is_time(k)}, **_SPARK_NESTED}
SPARK_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), *(pa.field(n, k) for n, k in SPARK_COLUMNS.items())])
_every = itertools.count()


def _same(value: Any, kind: pa.DataType) -> Any:
    """``value`` of ``kind`` as written, as ``to_pylist`` gives it, or as PySpark does, in one form
    that ``==`` compares exactly (type-directed: a map is a dict in PySpark and pairs in Arrow).

    PySpark gives a struct as a Row, binary and fixed as bytearray, a uuid as its text, a map as
    a dict, and a timestamptz as a naive datetime in the Python process's local zone (pyspark's
    ``TimestampType.fromInternal``), which ``astimezone`` reads as that zone's wall time."""
    if value is None:
        return None
    t = pa.types
    if t.is_struct(kind):
        fields = value.asDict() if hasattr(value, "asDict") else value
        return tuple(_same(fields[f.name], f.type) for f in kind)
    if t.is_large_list(kind):
        return tuple(_same(v, kind.value_type) for v in value)
    if t.is_map(kind):
        pairs = value.items() if isinstance(value, Mapping) else value
        return tuple(sorted(((_same(k, kind.key_type), _same(v, kind.item_type)) for k, v in pairs), key=repr))
    if isinstance(kind, pa.BaseExtensionType):  # uuid: bytes written, UUID from Arrow, text from Spark
        return uuid.UUID(value).bytes if isinstance(value, str) else getattr(value, "bytes", value)
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, float) and math.isnan(value):
        return ("NaN",)
    if t.is_timestamp(kind) and kind.tz is not None:
        return value.astimezone(datetime.UTC)
    return value


def _rows(rows: Iterable[Any]) -> Counter[tuple[Any, ...]]:
    """Rows (dicts or Spark Rows) of the Spark table's columns, comparable as a multiset."""
    out: Counter[tuple[Any, ...]] = Counter()
    for row in rows:
        fields = row.asDict() if hasattr(row, "asDict") else row
        out[tuple(_same(fields[f.name], f.type) for f in SPARK_SCHEMA)] += 1
    return out


def _spark_read(interop: Interop, identifier: str) -> Counter[tuple[Any, ...]]:
    spark = interop.spark()
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    return _rows(spark.table(f"{CATALOG}.{identifier}").select(*SPARK_SCHEMA.names).collect())


@st.composite
def _every_type_history(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """A load of keys 0..n-1 (key 0 all nulls), then a transaction that updates, deletes and inserts."""

    def payload() -> dict[str, Any]:
        return {name: draw(values(kind)) for name, kind in SPARK_COLUMNS.items()}

    n = draw(st.integers(3, 5))
    loaded = [{"id": 0, **dict.fromkeys(SPARK_COLUMNS)}, *({"id": k, **payload()} for k in range(1, n))]
    rows: list[dict[str, Any]] = []
    actions: list[str] = []
    for key in range(n):
        what = draw(st.sampled_from(["update", "delete", "keep"]))
        if what == "update":
            rows += [loaded[key], {"id": key, **payload()}]
            actions += ["-U", "+U"]
        elif what == "delete":
            rows.append(loaded[key])
            actions.append("-D")
    rows.append({"id": n, **payload()})
    actions.append("+I")
    return loaded, rows, actions


def _full_row(key: int) -> dict[str, Any]:
    """A row with a value in every column and field, extremes where a type has them (the drawn
    ones may be null where these are not)."""
    inner = {"a": -(2**31), "b": ["x", None, ""], "c": {"x": math.nan, "y": decimal.Decimal("-999999.999")}}
    row: dict[str, Any] = {
        "id": key, "boolean": False, "int": 2**31 - 1, "long": -(2**63), "float": 3.5, "double": -1e308,
        "decimal_1_0": decimal.Decimal("-9"), "decimal_9_2": decimal.Decimal("9999999.99"),
        "decimal_10_0": decimal.Decimal("-9999999999"), "decimal_18_6": decimal.Decimal("123456789012.345678"),
        "decimal_19_4": decimal.Decimal("-999999999999999.9999"),
        "decimal_38_10": decimal.Decimal("9999999999999999999999999999.9999999999"),
        "date": datetime.date(1, 1, 1), "timestamp": datetime.datetime(9999, 12, 31, 23, 59, 59, 999999),
        "timestamptz": datetime.datetime(1900, 1, 1, 0, 0, 0, 1, tzinfo=datetime.UTC), "string": 'é\n"\u0000',
        "uuid": uuid.UUID(int=2**128 - 1 - key).bytes, "fixed": b"\x00\xff\x10", "binary": b"",
        "list_int": [1, None, -3], "list_list_string": [["a", None], [], None], "struct": inner,
        "map_string_long": [("k", 1), ("", None)], "map_int_struct": [(-1, inner), (0, None)],
        "list_map_struct": [[("k", inner)], None, []], "list_decimal": [decimal.Decimal("-123456789012345.12345"), None],
        "struct_of_times": {"d": datetime.date(9999, 12, 31), "ts": datetime.datetime(2024, 2, 29, 12, tzinfo=datetime.UTC)},
    }  # fmt: skip
    assert list(row) == SPARK_SCHEMA.names
    return row


@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(history=_every_type_history())
@example(
    history=(
        [_full_row(1), {"id": 2, **dict.fromkeys(SPARK_COLUMNS)}],
        [_full_row(1), _full_row(1), _full_row(3)],
        ["-U", "+U", "+I"],
    )
)
def test_spark_reads_every_type_of_both_stores_as_written_and_as_we_read_it(
    interop: Interop, history: tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]
) -> None:
    started = time.monotonic()
    loaded, rows, actions = history
    name = f"db.every_type_{next(_every)}"
    table = interop.catalog.create_table(name, SPARK_SCHEMA, primary_key=["id"])
    table.bulk_load(pa.Table.from_pylist(loaded, schema=SPARK_SCHEMA))
    with table.new_transaction() as txn:
        txn.write(pa.Table.from_pylist(rows, schema=SPARK_SCHEMA).append_column("_change_action", pa.array(actions)))
    table = table.refresh()
    change = table.change_store
    assert change is not None
    change_name = ".".join(change.name())

    assert _spark_read(interop, name) == _rows(loaded) == _rows(table.base_store.scan().to_arrow().to_pylist())
    assert _spark_read(interop, change_name) == _rows(rows) == _rows(change.scan().to_arrow().to_pylist())

    final = {row["id"]: row for row in loaded}
    for row, action in zip(rows, actions, strict=True):
        if action in ("+I", "+U"):
            final[row["id"]] = row
        elif action == "-D":
            final.pop(row["id"])
    merged = _rows(table.scan().to_arrow().to_pylist())
    assert merged == _rows(list(final.values()))
    assert table.optimizing.run("full").committed
    table = table.refresh()
    assert _rows(table.scan().to_arrow().to_pylist()) == merged
    assert _spark_read(interop, name) == merged == _rows(table.base_store.scan().to_arrow().to_pylist())
    print(f"every type through Spark: {time.monotonic() - started:.1f} s")

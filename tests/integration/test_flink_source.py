"""The bounded PyFlink source (docs/flink.md, "Reading a table"): a table's merged view, now or as
of a snapshot, as a Flink ``Table`` whose rows and query results equal the library's merged read.

One pipeline run (``tests/support/source_pipeline.py``, its own JVM): every row of a keyed table after updates and deletes, the same table as of an earlier
snapshot, a join with an aggregate compared with DuckDB over the merged reads, and timestamptz
instants as Flink SQL sees them in a session zone that is not UTC. No services.
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
import random
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.feather
import pytest

from mixed_iceberg import MixedTable
from tests.support.services import ROOT
from tests.support.source_pipeline import BY_REGION, SESSION_ZONE
from tests.support.tables import local_catalog

pytestmark = [pytest.mark.integration]

ORDERS = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("cust", pa.int32()),
        pa.field("qty", pa.int32()),
        pa.field("amount", pa.decimal128(12, 2)),
        pa.field("day", pa.date32()),
        pa.field("at", pa.timestamp("us")),
        pa.field("atz", pa.timestamp("us", tz="UTC")),
        pa.field("t", pa.time64("us")),
        pa.field("name", pa.string()),
        pa.field("raw", pa.binary()),
        pa.field("flag", pa.bool_()),
        pa.field("ratio", pa.float64()),
    ]
)
CUSTOMERS = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("region", pa.string())])


def instant(rng: random.Random, start: dt.datetime) -> dt.datetime:
    """A time from ``start`` to 2099: microseconds from 1970 on, whole milliseconds before (Flink's
    Arrow reader cannot read finer ones before 1970; the source refuses them, tests/unit/flink)."""
    value = start + dt.timedelta(microseconds=rng.randrange(6_300_000_000_000_000))
    epoch = dt.datetime(1970, 1, 1, tzinfo=start.tzinfo)
    return value if value >= epoch else value.replace(microsecond=value.microsecond // 1000 * 1000)


def order(rng: random.Random, key: int) -> dict[str, object]:
    """An order with each nullable value NULL now and then, and the edges of each type."""

    def maybe(value: object) -> object:
        return None if rng.random() < 0.08 else value

    return {
        "id": key,
        "cust": maybe(rng.randrange(12)),
        "qty": maybe(rng.choice([0, 1, -(2**31), 2**31 - 1, rng.randrange(100)])),
        "amount": maybe(decimal.Decimal(rng.randrange(-(10**12) + 1, 10**12)).scaleb(-2)),
        "day": maybe(dt.date(1900, 1, 1) + dt.timedelta(days=rng.randrange(80_000))),
        "at": maybe(instant(rng, dt.datetime(1900, 1, 1))),
        "atz": maybe(instant(rng, dt.datetime(1900, 1, 1, tzinfo=dt.UTC))),
        # Whole milliseconds: Flink's TIME holds no finer (a finer one is refused, tests/unit/flink).
        "t": maybe((dt.datetime.min + dt.timedelta(milliseconds=rng.randrange(86_400_000))).time()),
        "name": maybe(rng.choice(["", "abc", "é€😀 '\"\\\n", f"n{rng.randrange(40)}"])),
        "raw": maybe(rng.randbytes(rng.randrange(5))),
        "flag": maybe(rng.random() < 0.7),
        "ratio": maybe(rng.uniform(-1e300, 1e300)),
    }


def changes(rows: list[dict[str, object]], actions: list[str]) -> pa.Table:
    schema = ORDERS.append(pa.field("_change_action", pa.string()))
    return pa.Table.from_pylist([{**r, "_change_action": a} for r, a in zip(rows, actions, strict=True)], schema=schema)


def build(root: Path) -> tuple[MixedTable, MixedTable, int]:
    """``db.orders`` loaded, then two ChangeStore commits of updates, deletes and inserts (the
    snapshot id between them returned), and ``db.customers`` with a deleted customer."""
    rng = random.Random(36)
    catalog = local_catalog(root)
    orders = catalog.create_table("db.orders", schema=ORDERS, primary_key=["id"], partition_by=["bucket(4, id)"])
    orders.bulk_load(pa.Table.from_pylist([order(rng, k) for k in range(3000)], schema=ORDERS))
    for step in (1, 2):
        keys = rng.sample(range(3000 + 500 * step), 600)
        rows: list[dict[str, object]] = []
        actions: list[str] = []
        for key in keys:
            if key >= 3000 + 500 * (step - 1):
                rows.append(order(rng, key))
                actions.append("+I")
            elif rng.random() < 0.3:
                rows.append(order(rng, key))
                actions.append("-D")
            else:
                rows += [order(rng, key), order(rng, key)]
                actions += ["-U", "+U"]
        with orders.new_transaction(("source-test", step)) as txn:
            txn.write(changes(rows, actions))
        if step == 1:
            then = catalog.load_table("db.orders").change_store.current_snapshot()
            assert then is not None
            snapshot_id = then.snapshot_id
    customers = catalog.create_table("db.customers", schema=CUSTOMERS, primary_key=["id"])
    customers.bulk_load(
        pa.table({"id": pa.array(range(12), pa.int32()), "region": [f"r{i % 4}" for i in range(12)]}, schema=CUSTOMERS)
    )
    gone = pa.table({"id": pa.array([3], pa.int32()), "region": ["r3"], "_change_action": ["-D"]})
    with customers.new_transaction(("source-test", 3)) as txn:
        txn.write(gone)
    return catalog.load_table("db.orders"), catalog.load_table("db.customers"), snapshot_id


def by_id(table: pa.Table) -> list[dict[str, object]]:
    return table.sort_by("id").to_pylist()


def test_flink_reads_the_merged_view_now_and_as_of_a_snapshot_and_its_queries_equal_duckdbs(tmp_path: Path) -> None:
    orders, customers, snapshot_id = build(tmp_path / "lake")
    now = orders.scan().to_arrow()
    then = orders.scan(snapshot_id=snapshot_id).to_arrow()
    assert now.num_rows != then.num_rows or by_id(now) != by_id(then), "the two states must differ to tell them apart"

    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.support.source_pipeline",
            f"sqlite:///{tmp_path}/lake/catalog.db",
            str(tmp_path / "lake" / "wh"),
            str(snapshot_id),
            str(out),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-5000:]

    # Every row and value through Flink, as the library reads them (timestamptz as instants).
    assert by_id(pyarrow.feather.read_table(out / "orders.arrow")) == by_id(now)
    assert by_id(pyarrow.feather.read_table(out / "orders_then.arrow")) == by_id(then)

    # A join and an aggregate in Flink SQL equal DuckDB's over the merged reads.
    flink = pyarrow.feather.read_table(out / "by_region.arrow").sort_by("region").to_pylist()
    connection = duckdb.connect()
    connection.execute("SET TimeZone = 'UTC'")
    connection.register("orders", now)
    connection.register("customers", customers.scan().to_arrow())
    in_duckdb = BY_REGION.replace("`", '"')  # Flink quotes the column `at`, DuckDB "at"
    duck = connection.execute(f"SELECT * FROM ({in_duckdb}) ORDER BY region").to_arrow_table().to_pylist()
    assert len(flink) == 4  # customer 3 is deleted, its region (r3) has others
    assert [set(r) for r in flink] == [set(r) for r in duck]
    for got, want in zip(flink, duck, strict=True):
        assert got["region"] == want["region"]
        assert (got["n"], got["qty"], got["names"]) == (want["n"], want["qty"], want["names"])
        assert got["amount"] == want["amount"]
        assert got["first_at"] == want["first_at"]
        assert got["last_atz"] == want["last_atz"]

    # Flink SQL sees each timestamptz's instant: printed in a zone that is not UTC, it is that
    # zone's wall clock of the instant the library read.
    recent = now.filter(pc.greater_equal(now["atz"], pa.scalar(dt.datetime(1987, 1, 1, tzinfo=dt.UTC), ORDERS.field("atz").type)))
    local = pc.local_timestamp(recent["atz"].cast(pa.timestamp("us", tz=SESSION_ZONE)))
    want_local = dict(zip(recent["id"].to_pylist(), pc.strftime(local, "%Y-%m-%d %H:%M:%S").to_pylist(), strict=True))
    got_local = pyarrow.feather.read_table(out / "in_zone.arrow").to_pylist()
    assert len(got_local) == len(want_local) > 100
    assert {r["id"]: r["wall"] for r in got_local} == want_local

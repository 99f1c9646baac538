"""Flink SQL users (docs/flink.md, "Flink SQL"): ``INSERT INTO catalog.db.table SELECT ...`` into a
keyed table with ``execute_insert`` over a view of another table (``read_table``), and the target's
changes read back from its LogStore as a Flink changelog (``read_changelog``).

One pipeline run (``tests/support/flink_sql_pipeline.py``, its own JVM for every job): a ``GROUP BY``
over ``orders`` (updated and deleted before) into ``totals``, whose LogStore the sink's ingest job
double-writes. Then the merged ``totals`` must equal DuckDB's same aggregate over the orders'
merged read, value by value in every type; the LogStore changelog Flink reads must carry the
``RowKind``s Flink's aggregate produced (per key ``+I`` with count 1, then ``-U``/``+U`` pairs
1 -> 2 -> ..., as in the staging topic), materialize to the merged ``totals`` exactly, and an
aggregate Flink computes over it must equal DuckDB's over the merged ``totals``.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import random
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.feather
import pytest

from mixed_iceberg.catalog import MixedCatalog, load_catalog
from tests.support.ingest import read_topic
from tests.support.services import ROOT, exported

pytestmark = [
    pytest.mark.integration,
    # mixed_iceberg.flink imports pyflink.table, which warns about its own deprecated classes.
    pytest.mark.filterwarnings("ignore:.* has been deprecated since version:DeprecationWarning"),
]

ORDERS = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("cust", pa.int32(), nullable=False),
        pa.field("amount", pa.decimal128(12, 2)),
        pa.field("day", pa.date32()),
        pa.field("at", pa.timestamp("us")),
        pa.field("atz", pa.timestamp("us", tz="UTC")),
        pa.field("name", pa.string()),
        pa.field("ratio", pa.float64()),
    ]
)
TOTALS = pa.schema(
    [
        pa.field("cust", pa.int32(), nullable=False),
        pa.field("n", pa.int64()),
        pa.field("total", pa.decimal128(14, 2)),
        pa.field("last_day", pa.date32()),
        pa.field("last_at", pa.timestamp("us")),
        pa.field("last_atz", pa.timestamp("us", tz="UTC")),
        pa.field("top_name", pa.string()),
        pa.field("top_ratio", pa.float64()),
    ]
)
#: DuckDB's INSERT query over the orders' merged read (the pipeline's INSERT, in DuckDB's dialect).
TOTALS_SQL = """
    SELECT cust, COUNT(*) AS n, CAST(SUM(amount) AS DECIMAL(14, 2)) AS total, MAX("day") AS last_day,
           MAX("at") AS last_at, MAX(atz) AS last_atz, MAX(name) AS top_name, MAX(ratio) AS top_ratio
    FROM orders GROUP BY cust
"""


#: The pipeline's BY_GROUP over the merged ``totals`` in DuckDB (its values printed by :func:`printed`).
BY_GROUP_DUCKDB = """
    SELECT cust % 3 AS g, COUNT(*) AS customers, SUM(n) AS n, SUM(total) AS total, MAX(last_at) AS last_at,
           MIN(last_atz) AS first_atz
    FROM totals GROUP BY cust % 3 ORDER BY g
"""


def printed(row: dict[str, object]) -> dict[str, object]:
    """``row``'s decimals, dates and timestamps as Flink's CAST(... AS STRING) prints them (a
    timestamp with its six fractional digits, a timestamptz in the session zone, UTC); integer
    sums as ints."""

    def text(value: object) -> object:
        if isinstance(value, dt.datetime):
            return (
                value.astimezone(dt.UTC).replace(tzinfo=None).isoformat(" ", "microseconds")
                if value.tzinfo
                else value.isoformat(" ", "microseconds")
            )
        if isinstance(value, decimal.Decimal):
            return int(value) if value == value.to_integral_value() and value.as_tuple().exponent == 0 else str(value)
        if isinstance(value, dt.date):
            return value.isoformat()
        return value

    return {key: text(value) for key, value in row.items()}


def order(rng: random.Random, key: int) -> dict[str, object]:
    def maybe(value: object) -> object:
        return None if rng.random() < 0.1 else value

    return {
        "id": key,
        "cust": rng.randrange(40),
        "amount": maybe(decimal.Decimal(rng.randrange(-(10**11), 10**11)).scaleb(-2)),
        "day": maybe(dt.date(1970, 1, 1) + dt.timedelta(days=rng.randrange(40_000))),
        "at": maybe(dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=rng.randrange(4 * 10**15))),
        "atz": maybe(dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=rng.randrange(4 * 10**15))),
        "name": maybe(rng.choice(["", "abc", "é€😀 '\"\\\n", f"n{rng.randrange(40)}"])),
        "ratio": maybe(rng.uniform(-1e300, 1e300)),
    }


@pytest.fixture
def catalog(tmp_path: Path, kafka_bootstrap: str) -> Iterator[MixedCatalog]:
    with exported("MIXED_ICEBERG_WAREHOUSE_DIR", str(tmp_path / "warehouse")):
        catalog = load_catalog("local")
        catalog.create_namespace("it")
        yield catalog


def test_insert_into_select_and_the_changelog_read_back(catalog: MixedCatalog, tmp_path: Path, kafka_bootstrap: str) -> None:
    rng = random.Random(36)
    orders = catalog.create_table("it.orders", ORDERS, primary_key=["id"])
    orders.bulk_load(pa.Table.from_pylist([order(rng, k) for k in range(2000)], schema=ORDERS))
    rows, actions = [], []
    for key in rng.sample(range(2000), 400):
        if rng.random() < 0.3:
            rows.append(order(rng, key))
            actions.append("-D")
        else:
            rows += [order(rng, key), order(rng, key)]
            actions += ["-U", "+U"]
    batch = pa.Table.from_pylist(rows, schema=ORDERS).append_column("_change_action", pa.array(actions))
    with orders.new_transaction(("sql-test", 1)) as txn:
        txn.write(batch)
    name = f"it-sql-{uuid.uuid4().hex[:8]}"
    log_topic = f"{name}-log"
    properties = {"log-store.enabled": "true", "log-store.address": kafka_bootstrap, "log-store.message.topic": log_topic}
    catalog.create_table("it.totals", TOTALS, primary_key=["cust"], properties=properties)

    out = tmp_path / "out"
    out.mkdir()
    command = [sys.executable, "-m", "tests.support.flink_sql_pipeline", "--name", name,
               "--checkpoint-dir", str(tmp_path / "checkpoints"), "--out", str(out)]  # fmt: skip
    env = {**os.environ, "FLINK_LOG_DIR": str(tmp_path / "flink-log")}
    run = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, (run.stdout + run.stderr)[-5000:]

    # The INSERT: the merged target equals the same query over the source's merged read.
    connection = duckdb.connect()
    connection.execute("SET TimeZone = 'UTC'")
    connection.register("orders", catalog.load_table("it.orders").scan().to_arrow())
    want = connection.execute(f"SELECT * FROM ({TOTALS_SQL}) ORDER BY cust").to_arrow_table().cast(TOTALS)
    totals = catalog.load_table("it.totals").scan().to_arrow().sort_by("cust")
    assert totals.num_rows == 40
    assert totals.to_pylist() == want.to_pylist()

    # The changelog source: Flink's RowKinds, per key in order, as the sink staged them.
    changes = json.loads((out / "changelog.json").read_text())
    per_key: dict[int, list[tuple[str, int]]] = {}
    for kind, cust, n in changes:
        per_key.setdefault(cust, []).append((kind, n))
    staged: dict[int, list[tuple[str, int]]] = {}
    for value in read_topic(kafka_bootstrap, f"mixed-iceberg-sink.{name}")[0].to_pylist():
        message = json.loads(value)
        staged.setdefault(message["data"]["cust"], []).append((message["op"], message["data"]["n"]))
    assert per_key == staged
    final = dict(zip(totals["cust"].to_pylist(), totals["n"].to_pylist(), strict=True))
    for cust, kinds in per_key.items():
        pairs = [change for n in range(1, final[cust]) for change in (("-U", n), ("+U", n + 1))]
        assert kinds == [("+I", 1), *pairs], f"cust {cust}: {kinds[:6]}..."

    # Materialized by Flink, the changelog is the merged table, every value (as Flink prints it).
    folded = pyarrow.feather.read_table(out / "folded.arrow").sort_by("cust").to_pylist()
    assert folded == [printed(row) for row in totals.to_pylist()]

    # A Flink aggregate over the changelog equals DuckDB's over the merged table.
    connection.register("totals", totals)
    duck = connection.execute(BY_GROUP_DUCKDB).to_arrow_table().to_pylist()
    flink = pyarrow.feather.read_table(out / "by_group.arrow").sort_by("g").to_pylist()
    assert len(flink) == 3
    assert flink == [printed(row) for row in duck]

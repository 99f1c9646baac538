"""A table's merged view into Flink: ``mixed_iceberg.flink.read_table`` beside PyFlink's
``from_pandas`` of the same merged read, in one run.

```
.venv/bin/python -m bench.flink_source            # 1,000,000 rows, a few minutes on 2 CPUs
.venv/bin/python -m bench.flink_source --quick    # 100,000 rows
```

A keyed table (``id`` long, ``qty`` int, ``price`` decimal(12, 2), ``name`` string, ``at``
timestamptz) bulk-loaded with N rows, then one ChangeStore commit updating a tenth of them, in a
local catalog in a temporary folder. Two paths from the table to a Flink ``Table``, each then
aggregated by a local job ``SELECT COUNT(*), SUM(qty), SUM(price) FROM t`` (``to_pandas()``):

* ``read_table``: the merged read, converted to Flink's Arrow types, handed to the JVM as Arrow
  batches (``mixed_iceberg/_pyflink.py``);
* ``from_pandas`` (the baseline): the same merged read, ``to_pandas()``, PyFlink's
  ``from_pandas`` with the table's Flink types.

Timed apart: making the Flink ``Table`` (the client's work) and the job. The paths alternate
(twice each; once with ``--quick``) after an untimed warm-up job; the best of each is reported.
Also the merged read alone (``scan().to_arrow()``, in both) and the same job over a 1-row table
(a local job's fixed cost). Every job's sums are checked against pyarrow's.
"""

from __future__ import annotations

import argparse
import decimal
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bench.harness import Figure, Run, capture_environment, publish, timed

QUERY = "SELECT COUNT(*) AS n, SUM(CAST(qty AS BIGINT)) AS qty, SUM(price) AS price FROM t"
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("qty", pa.int32()),
        pa.field("price", pa.decimal128(12, 2)),
        pa.field("name", pa.string()),
        pa.field("at", pa.timestamp("us", tz="UTC")),
    ]
)


def _rows(ids: np.ndarray, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "id": ids,
            "qty": pa.array(rng.integers(0, 1000, len(ids)), pa.int32()),
            "price": pa.array(rng.integers(0, 10**8, len(ids)), pa.int64()).cast(pa.decimal128(19, 0)).cast(pa.decimal128(12, 2)),
            "name": pa.array(np.char.add("n", (ids % 1000).astype(str)).tolist(), pa.string()),
            "at": pa.array(rng.integers(0, 2 * 10**15, len(ids)), pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        },
        schema=SCHEMA,
    )


def _expected(data: pa.Table) -> tuple[int, int, decimal.Decimal]:
    return data.num_rows, pc.sum(data["qty"].cast(pa.int64())).as_py(), pc.sum(data["price"]).as_py()


def _result(frame: Any) -> tuple[int, int, decimal.Decimal]:
    row = frame.iloc[0]
    return int(row["n"]), int(row["qty"]), decimal.Decimal(row["price"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="100,000 rows")
    parser.add_argument("--output", type=Path, help="write the JSON here instead of bench/results/")
    args = parser.parse_args(argv)
    rows = 100_000 if args.quick else args.rows
    repeats = 1 if args.quick else 2
    environment = capture_environment()

    from mixed_iceberg.flink_client import prepare_flink_client

    prepare_flink_client()
    from pyflink.table import EnvironmentSettings, TableEnvironment

    from mixed_iceberg import load_catalog
    from mixed_iceberg.flink import read_table
    from mixed_iceberg.flink.source import flink_row_type

    with tempfile.TemporaryDirectory(prefix="bench-flink-source-") as folder:
        catalog = load_catalog("bench", uri=f"sqlite:///{folder}/catalog.db", warehouse=f"{folder}/wh")
        table = catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], partition_by=["bucket(4, id)"])
        table.bulk_load(_rows(np.arange(rows, dtype=np.int64), 1))
        updated = _rows(np.arange(0, rows, 10, dtype=np.int64), 2)
        with table.new_transaction(("bench", 1)) as txn:
            txn.write(updated.append_column("_change_action", pa.array(["+U"] * updated.num_rows)))
        tiny = catalog.create_table("db.tiny", schema=SCHEMA, primary_key=["id"])
        tiny.bulk_load(_rows(np.arange(1, dtype=np.int64), 3))

        t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
        t_env.get_config().set("parallelism.default", "1")
        merged, scan = timed(lambda: table.scan().to_arrow())
        expected = _expected(merged)
        del merged

        def job(source: Any) -> tuple[int, int, decimal.Decimal]:
            t_env.create_temporary_view("t", source)
            try:
                return _result(t_env.sql_query(QUERY).to_pandas())
            finally:
                t_env.drop_temporary_view("t")

        def via_pandas() -> Any:
            data = table.scan().to_arrow()
            return t_env.from_pandas(data.to_pandas(), flink_row_type(data.schema, table="db.t"))

        job(read_table(t_env, tiny))  # warm-up: the first job of a JVM also loads the planner and runtime
        fixed, fixed_timing = timed(lambda: job(read_table(t_env, tiny)))
        assert fixed[0] == 1
        timings: dict[str, dict[str, list[float]]] = {
            "read_table": {"make": [], "job": []},
            "from_pandas": {"make": [], "job": []},
        }
        for _ in range(repeats):  # alternating, so that load and JIT warm-up fall on both
            for name, make in (("from_pandas", via_pandas), ("read_table", lambda: read_table(t_env, table))):
                source, made = timed(make)
                found, ran = timed(lambda source=source: job(source))
                if found != expected:
                    sys.exit(f"{name}: expected {expected}, found {found}")
                timings[name]["make"].append(made.wall_s)
                timings[name]["job"].append(ran.wall_s)

    ours, theirs = timings["read_table"], timings["from_pandas"]
    run = Run(
        "flink_source",
        environment.finished(),
        [
            Figure("table to a Flink Table (client side, best)", min(ours["make"]), "s", baseline=min(theirs["make"])),
            Figure("the aggregate job over it (best)", min(ours["job"]), "s", baseline=min(theirs["job"])),
            Figure(
                "table to a finished job (best)",
                min(m + j for m, j in zip(ours["make"], ours["job"], strict=True)),
                "s",
                baseline=min(m + j for m, j in zip(theirs["make"], theirs["job"], strict=True)),
            ),
            Figure("merged read alone (in both)", scan.wall_s, "s"),
            Figure("the same job over a 1-row table", fixed_timing.wall_s, "s"),
        ],
        baseline="the same merged read through to_pandas() and PyFlink's from_pandas",
        config={"rows": rows, "updated": updated.num_rows, "repeats": repeats, "query": QUERY},
        detail=timings,
    )
    publish(run, args.output)


if __name__ == "__main__":
    main()

"""`make demo-library`: a scripted CDC run through the library alone, on the embedded defaults.

Creates a keyed table in the local SQLite catalog, bulk-loads an initial snapshot, commits a
stream of CDC transactions (inserts, updates as -U/+U pairs, deletes), replays one commit to
show idempotency, and prints the merged view with counts. No Kafka, no Flink: `make demo`
runs the real pipeline (scripts/demo_ingest.py) and falls back to this without Java.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mixed_iceberg import MixedIcebergError, load_catalog
from mixed_iceberg.exceptions import NoSuchTableError

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("customer", pa.string()),
        pa.field("qty", pa.int32()),
        pa.field("price", pa.float64()),
    ]
)


def _rows(ids: np.ndarray, rng: np.random.Generator) -> dict[str, pa.Array]:
    return {
        "id": pa.array(ids, pa.int64()),
        "customer": pc.binary_join_element_wise("c", pc.cast(pa.array(ids % 97), pa.string()), ""),
        "qty": pa.array(rng.integers(1, 10, len(ids)), pa.int32()),
        "price": pa.array(np.round(rng.uniform(1, 100, len(ids)), 2)),
    }


def _cdc_batch(live: np.ndarray, next_id: int, size: int, rng: np.random.Generator) -> tuple[pa.Table, np.ndarray, int]:
    """Half updates, a tenth deletes, the rest inserts; returns the batch and the new key set."""
    n_upd, n_del = size // 2, size // 10
    picked = rng.choice(live, n_upd + n_del, replace=False)
    upd, dele = picked[:n_upd], picked[n_upd:]
    ins = np.arange(next_id, next_id + size - n_upd - n_del)
    before = pa.table(_rows(upd, rng)).append_column("_change_action", pa.array(["-U"] * len(upd)))
    after = pa.table(_rows(upd, rng)).append_column("_change_action", pa.array(["+U"] * len(upd)))
    # interleave -U/+U pairs so each +U directly follows its -U
    pairs = pa.concat_tables([before, after]).take(pa.array(np.arange(2 * len(upd)).reshape(2, -1).T.ravel()))
    deletes = pa.table(_rows(dele, rng)).append_column("_change_action", pa.array(["-D"] * len(dele)))
    inserts = pa.table(_rows(ins, rng)).append_column("_change_action", pa.array(["+I"] * len(ins)))
    live = np.concatenate([np.setdiff1d(live, dele), ins])
    return pa.concat_tables([pairs, deletes, inserts]), live, next_id + len(ins)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--catalog", default="local")
    parser.add_argument("--table", default="demo.orders")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--commits", type=int, default=10)
    parser.add_argument("--batch", type=int, default=5_000)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    rng = np.random.default_rng(7)

    catalog = load_catalog(args.catalog)
    with contextlib.suppress(NoSuchTableError):
        catalog.drop_table(args.table, purge=True)
    table = catalog.create_table(args.table, SCHEMA, primary_key=["id"], properties={"write.upsert.enabled": "false"})
    print(f"created {table} in catalog {catalog.name}")

    started = time.perf_counter()
    live = np.arange(args.rows)
    table.bulk_load(pa.table(_rows(live, rng), schema=SCHEMA))
    print(f"bulk-loaded {args.rows:,} rows into the BaseStore in {time.perf_counter() - started:.2f} s")

    next_id, changes_written, commit_ms = args.rows, 0, []
    for seq in range(1, args.commits + 1):
        batch, live, next_id = _cdc_batch(live, next_id, args.batch, rng)
        t0 = time.perf_counter()
        with table.new_transaction(("demo-writer", seq)) as txn:
            txn.write(batch)
        commit_ms.append((time.perf_counter() - t0) * 1000)
        changes_written += batch.num_rows
        if seq == args.commits:
            last_batch = batch
    with table.new_transaction(("demo-writer", args.commits)) as txn:  # replay of the last commit id
        txn.write(last_batch)
    replay = "skipped (idempotent)" if txn.outcome and txn.outcome.skipped else "APPLIED TWICE"
    print(
        f"committed {args.commits} CDC transactions, {changes_written:,} change rows; median commit {np.median(commit_ms):.1f} ms; replay of the last one: {replay}"
    )

    t0 = time.perf_counter()
    merged = table.scan().to_arrow()
    read_s = time.perf_counter() - t0
    assert table.change_store is not None
    print(
        f"merged view: {merged.num_rows:,} rows (expected {len(live):,}) read in {read_s:.2f} s from "
        f"{len(table.base_store.inspect.files())} base + {len(table.change_store.inspect.files())} change files"
    )
    ok = merged.num_rows == len(live) and pc.all(pc.is_in(merged.column("id"), value_set=pa.array(live))).as_py()
    for row in merged.sort_by("id").slice(0, 5).to_pylist():
        print("  ", row)
    filtered = table.scan(row_filter="id < 10 and qty >= 5", selected_fields=("id", "qty")).to_arrow()
    print(f"scan(row_filter='id < 10 and qty >= 5'): {filtered.num_rows} rows")
    print("demo OK" if ok else "demo FAILED: merged view differs from the key set")
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    try:
        main()
    except MixedIcebergError as exc:
        raise SystemExit(f"demo failed: {exc}") from exc

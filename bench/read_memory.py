"""Peak memory of a merged read: ``to_arrow()`` against ``to_arrow_batch_reader()``, same table, same run.

Builds one keyed table in a temporary folder (``--rows`` keys bulk loaded into
``--buckets`` base buckets, then a ChangeStore commit updating every 10th key and deleting
every 10th + 5, in as many change buckets), then reads it in two fresh child processes, one per
mode, each reporting its peak resident set (``VmHWM``) and its RSS right before the read
(catalog loaded, imports done). The figure compared is the growth: peak minus RSS before.
The streaming child only counts rows and the sum of ``qty`` batch by batch (what a consumer
that does not keep the rows would do); both children check those against each other.

    .venv/bin/python bench/read_memory.py [--rows 2000000] [--buckets 16] [--out bench/results/x.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mixed_iceberg import load_catalog  # noqa: E402

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), ("qty", pa.int32()), ("price", pa.float64()), ("name", pa.string())]
)


def _rows(ids: np.ndarray, qty: int) -> pa.Table:
    return pa.table(
        {
            "id": ids,
            "qty": np.full(len(ids), qty, np.int32),
            "price": ids.astype(np.float64) / 7,
            "name": pc.binary_join_element_wise("name-", pc.cast(pa.array(ids), pa.string()), ""),
        },
        schema=SCHEMA,
    )


def build(warehouse: Path, rows: int, buckets: int) -> None:
    catalog = load_catalog("bench", type="sql", uri=f"sqlite:///{warehouse}/catalog.db", warehouse=str(warehouse / "wh"))
    table = catalog.create_table(
        "bench.orders",
        SCHEMA,
        primary_key=["id"],
        properties={"base.file-index.hash-bucket": str(buckets), "change.file-index.hash-bucket": str(buckets)},
    )
    table.bulk_load(_rows(np.arange(rows, dtype=np.int64), 1))
    updated = _rows(np.arange(0, rows, 10, dtype=np.int64), 2)
    deleted = _rows(np.arange(5, rows, 10, dtype=np.int64), 1)
    change = pa.concat_tables([updated, deleted])
    actions = pa.array(["+U"] * updated.num_rows + ["-D"] * deleted.num_rows, pa.string())
    with table.new_transaction(("bench", 1)) as txn:
        txn.write(change.append_column("_change_action", actions))


def child(warehouse: Path, mode: str) -> None:
    catalog = load_catalog("bench", type="sql", uri=f"sqlite:///{warehouse}/catalog.db", warehouse=str(warehouse / "wh"))
    scan = catalog.load_table("bench.orders").scan()
    before_kb = _status_kb("VmRSS")
    started = time.monotonic()
    if mode == "to_arrow":
        result = scan.to_arrow()
        count, qty = result.num_rows, int(pc.sum(result.column("qty")).as_py())
        result_bytes = result.nbytes
    else:
        count, qty, result_bytes = 0, 0, 0
        for batch in scan.to_arrow_batch_reader():
            count += batch.num_rows
            qty += int(pc.sum(batch.column("qty")).as_py() or 0)
            result_bytes += batch.nbytes
    seconds = time.monotonic() - started
    peak_kb = _status_kb("VmHWM")
    print(
        json.dumps(
            {
                "mode": mode,
                "rows": count,
                "qty_sum": qty,
                "result_mb": result_bytes / 2**20,
                "rss_before_mb": before_kb / 1024,
                "peak_rss_mb": peak_kb / 1024,
                "growth_mb": (peak_kb - before_kb) / 1024,
                "seconds": seconds,
            }
        )
    )


def _status_kb(field: str) -> int:
    """A figure of /proc/self/status. VmHWM, not ru_maxrss: Linux keeps ru_maxrss across
    fork and exec, so a child would report its parent's peak (the table's build)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--buckets", type=int, default=16)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--child", nargs=2, metavar=("WAREHOUSE", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(Path(args.child[0]), args.child[1])
        return
    with tempfile.TemporaryDirectory() as folder:
        warehouse = Path(folder)
        print(f"building {args.rows} rows in {args.buckets} buckets ...", file=sys.stderr)
        build(warehouse, args.rows, args.buckets)
        runs = {}
        for mode in ("to_arrow", "to_arrow_batch_reader"):
            out = subprocess.run(
                [sys.executable, __file__, "--child", str(warehouse), mode], check=True, capture_output=True, text=True
            ).stdout
            runs[mode] = json.loads(out.strip().splitlines()[-1])
            print(f"{mode}: {runs[mode]}", file=sys.stderr)
    full, stream = runs["to_arrow"], runs["to_arrow_batch_reader"]
    if (full["rows"], full["qty_sum"]) != (stream["rows"], stream["qty_sum"]):
        raise SystemExit(
            f"streamed read differs: {stream['rows']} rows / qty {stream['qty_sum']}, expected {full['rows']} / {full['qty_sum']}"
        )
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    report = {
        "bench": "read_memory",
        "commit": commit,
        "date": time.strftime("%Y-%m-%d"),
        "rows": args.rows,
        "buckets": args.buckets,
        "cpus": os.cpu_count(),
        "runs": runs,
        "growth_ratio_stream_vs_to_arrow": stream["growth_mb"] / full["growth_mb"],
    }
    print("| mode | rows | result MB | peak RSS MB | growth MB | s |\n|---|---|---|---|---|---|")
    for mode, run in runs.items():
        print(
            f"| {mode} | {run['rows']} | {run['result_mb']:.0f} | {run['peak_rss_mb']:.0f} | {run['growth_mb']:.0f} | {run['seconds']:.2f} |"
        )
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""Peak memory of a merged read: ``to_arrow()`` against ``to_arrow_batch_reader()``, same table, same run.

Builds one keyed table in a temporary folder (``--rows`` keys bulk loaded into
``--buckets`` base buckets, then a ChangeStore commit updating every 10th key and deleting
every 10th + 5, in as many change buckets), then reads it in two fresh child processes, one per
mode, each reporting its peak resident set (``VmHWM``) and its RSS right before the read
(catalog loaded, imports done). The figure compared is the growth: peak minus RSS before.
The streaming child only counts rows and the sum of ``qty`` batch by batch (what a consumer
that does not keep the rows would do); both children check those against each other.

    .venv/bin/python -m bench.read_memory [--rows 2000000] [--buckets 16] [--out x.json]

The run goes to ``bench/results/read_memory-<date>-<commit>.json`` (``--out`` elsewhere).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bench.harness import ROOT, Clock, Figure, Run, capture_environment, publish
from mixed_iceberg import load_catalog

MODES = ("to_arrow", "to_arrow_batch_reader")  # the baseline first

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
    clock = Clock.start()
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
    seconds = clock.elapsed().wall_s
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
    parser.add_argument("--out", type=Path, help="the run's JSON (default bench/results/read_memory-<date>-<commit>.json)")
    parser.add_argument("--child", nargs=2, metavar=("WAREHOUSE", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(Path(args.child[0]), args.child[1])
        return
    environment = capture_environment()
    with tempfile.TemporaryDirectory() as folder:
        warehouse = Path(folder)
        print(f"building {args.rows} rows in {args.buckets} buckets ...", file=sys.stderr)
        build(warehouse, args.rows, args.buckets)
        runs = {}
        for mode in MODES:
            # A fresh interpreter per mode: its peak is the read's alone.
            out = subprocess.run(
                [sys.executable, "-m", "bench.read_memory", "--child", str(warehouse), mode],
                cwd=ROOT,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            runs[mode] = json.loads(out.strip().splitlines()[-1])
            print(f"{mode}: {runs[mode]}", file=sys.stderr)
    full, stream = (runs[mode] for mode in MODES)
    if (full["rows"], full["qty_sum"]) != (stream["rows"], stream["qty_sum"]):
        raise SystemExit(
            f"streamed read differs: {stream['rows']} rows / qty {stream['qty_sum']}, expected {full['rows']} / {full['qty_sum']}"
        )
    figures = [
        Figure(label, stream[key], unit, full[key])
        for label, key, unit in (
            ("rows read", "rows", "rows"),
            ("result", "result_mb", "MB"),
            ("RSS before the read", "rss_before_mb", "MB"),
            ("peak RSS (VmHWM)", "peak_rss_mb", "MB"),
            ("growth: peak - RSS before", "growth_mb", "MB"),
            ("read", "seconds", "s"),
        )
    ]
    run = Run(
        "read_memory",
        environment.finished(),
        figures,
        baseline="to_arrow(), in its own process; value: to_arrow_batch_reader(), summing rows and qty batch by batch",
        config={"rows": args.rows, "buckets": args.buckets},
        detail={"runs": runs},
    )
    publish(run, args.out)


if __name__ == "__main__":
    main()

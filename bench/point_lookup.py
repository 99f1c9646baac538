"""Point lookups on a keyed table with unmerged changes: node pruning beside the full plan, one run.

```
.venv/bin/python -m bench.point_lookup             # 1M rows, 20 unmerged commits of 5,000 updates
.venv/bin/python -m bench.point_lookup --quick     # a smoke run (20,000 rows)
```

A keyed table is bulk-loaded (``--rows`` keys, ``--buckets`` tree nodes in each store; Amoro's
default is 4) and then takes ``--commits`` unmerged ChangeStore commits of random updates. Each
lookup is ``scan(row_filter=EqualTo("id", k)).to_arrow()`` of a random written key and must
return that one row. Figures: the p50 and p95 of lookups that read only the tree node holding the
key (``reader/key_nodes.py``) beside the same lookups with node pruning switched off (every file
the filter's statistics admit), in the same process over the same table; and the files each plans.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from unittest import mock

import numpy as np
import pyarrow as pa
from pyiceberg.expressions import EqualTo

from bench.harness import Figure, Run, capture_environment, publish
from mixed_iceberg import MixedTable, load_catalog
from mixed_iceberg.reader.scan import MixedScan

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string()), pa.field("x", pa.float64())])


def _table(root: Path, rows: int, buckets: int, commits: int, updates: int) -> MixedTable:
    catalog = load_catalog("bench", type="sql", uri=f"sqlite:///{root}/catalog.db", warehouse=str(root / "warehouse"))
    catalog.create_namespace("db")
    nodes = {"base.file-index.hash-bucket": str(buckets), "change.file-index.hash-bucket": str(buckets)}
    table = catalog.create_table("db.lookups", SCHEMA, primary_key=["id"], properties=nodes)
    ids = np.arange(rows, dtype=np.int64)
    table.bulk_load(pa.table({"id": ids, "v": pa.array(np.char.mod("v%d", ids)), "x": np.zeros(rows)}, schema=SCHEMA))
    rng = np.random.default_rng(7)
    for commit in range(commits):
        keys = rng.choice(rows, updates, replace=False)
        batch = pa.table(
            {
                "id": keys,
                "v": pa.array(["u"] * updates),
                "x": np.full(updates, float(commit + 1)),
                "_change_action": ["+U"] * updates,
            }
        )
        with table.new_transaction(("bench", commit)) as txn:
            txn.write(batch)
    return table.refresh()


def _lookups(table: MixedTable, keys: np.ndarray) -> tuple[list[float], int]:
    seconds, files = [], 0
    for key in keys.tolist():
        scan = table.scan(row_filter=EqualTo("id", key))
        started = time.perf_counter()
        found = scan.to_arrow()
        seconds.append(time.perf_counter() - started)
        if found.num_rows != 1 or found.column("id")[0].as_py() != key:
            raise RuntimeError(f"lookup of {key} returned {found.num_rows} rows")
    sample = table.scan(row_filter=EqualTo("id", int(keys[0])))
    files = sum(len(t.base_files) + len(t.change_files) for t in sample.plan_tasks())
    return seconds, files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.point_lookup", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    parser.add_argument("--rows", type=int, default=None, help="keys loaded (default 1,000,000; --quick 20,000)")
    parser.add_argument("--buckets", type=int, default=4, help="tree nodes per store (a power of two; Amoro's default 4)")
    parser.add_argument("--commits", type=int, default=None, help="unmerged change commits (default 20; --quick 3)")
    parser.add_argument("--lookups", type=int, default=None, help="lookups per mode (default 40; --quick 5)")
    parser.add_argument("--output", type=Path, help="write the JSON here instead of bench/results/")
    args = parser.parse_args(argv)
    rows = args.rows or (20_000 if args.quick else 1_000_000)
    commits = args.commits if args.commits is not None else (3 if args.quick else 20)
    lookups = args.lookups or (5 if args.quick else 40)
    updates = max(1, rows // 200)
    environment = capture_environment()
    with tempfile.TemporaryDirectory(prefix="point-lookup-") as scratch:
        table = _table(Path(scratch), rows, args.buckets, commits, updates)
        keys = np.random.default_rng(11).choice(rows, lookups, replace=False)
        _lookups(table, keys[:2])  # warm the manifest caches of both modes alike
        pruned, pruned_files = _lookups(table, keys)
        with mock.patch.object(MixedScan, "_pinned_key_hashes", return_value=None):
            full, full_files = _lookups(table, keys)
    figures = [
        Figure("point lookup p50", statistics.median(pruned) * 1000, "ms", baseline=statistics.median(full) * 1000),
        Figure(
            "point lookup p95",
            float(np.percentile(pruned, 95)) * 1000,
            "ms",
            baseline=float(np.percentile(full, 95)) * 1000,
        ),
        Figure("files a lookup plans", pruned_files, "files", baseline=full_files),
    ]
    run = Run(
        "point_lookup",
        environment.finished(),
        figures,
        baseline="the same lookups without node pruning (every file the filter's statistics admit), same table, same run",
        config={"rows": rows, "buckets": args.buckets, "commits": commits, "updates_per_commit": updates, "lookups": lookups},
    )
    publish(run, args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

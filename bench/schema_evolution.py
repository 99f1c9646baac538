"""What a schema change costs merged reads: before it, after an added column, after a rename.

```
.venv/bin/python -m bench.schema_evolution --quick    # about 10 s
.venv/bin/python -m bench.schema_evolution            # 2,000,000 base rows, 40 change commits
```

One keyed table (``id`` key, ``qty``, ``price``, ``name``): a bulk load into the BaseStore, then
``--commits`` ChangeStore commits of upserts left unmerged. ``table.scan().to_arrow()`` is timed
(median of ``--repeat``) in three states: the first schema; after ``add_column`` (no file has
the new column: every file still reads by name, from the schema history alone); after
``rename_column("name", "label")`` (every file was written under the old name: change files are
projected by field id one by one, base files read through pyiceberg's ``ArrowScan``). The
reference, in the same run: pyarrow's dataset read of the same Parquet files (no merge). Each
merged read is checked against the first one (same rows, the renamed column's values under its
new name). The harness prints the figures beside the reference and writes the run to
``bench/results/schema_evolution-<date>-<commit>.json`` (``--output`` elsewhere).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
from pyiceberg.types import LongType

from bench.harness import Figure, Run, best_of, capture_environment, publish
from mixed_iceberg import MixedTable, load_catalog
from mixed_iceberg.store.manifests.live_files import live_files


def _timed(run: Callable[[], pa.Table], repeat: int) -> tuple[float, pa.Table]:
    """The median wall seconds of ``repeat`` runs, and the first run's result."""
    result, timings = best_of(run, repeat)
    return timings.median_wall_s, result


def _physical(table: MixedTable) -> pa.Table:
    paths = []
    for store in (table.base_store, table.change_store):
        assert store is not None
        snapshot = store.current_snapshot()
        if snapshot is not None:
            paths += [f.data_file.file_path.removeprefix("file://") for f in live_files(store, snapshot)]
    return ds.dataset(paths, format="parquet").to_table()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="200,000 base rows, 10 commits")
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--commits", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--output", type=Path, help="the run's JSON (default bench/results/schema_evolution-<date>-<commit>.json)"
    )
    args = parser.parse_args()
    environment = capture_environment()
    rows, commits = (200_000, 10) if args.quick else (args.rows, args.commits)
    rng = np.random.default_rng(7)
    root = Path(tempfile.mkdtemp())
    catalog = load_catalog("local", uri=f"sqlite:///{root}/catalog.db", warehouse=str(root / "wh"))
    schema = pa.schema(
        [pa.field("id", pa.int64(), nullable=False), ("qty", pa.int32()), ("price", pa.float64()), ("name", pa.string())]
    )
    table = catalog.create_table("bench.orders", schema, primary_key=["id"])

    def batch(ids: np.ndarray) -> dict[str, pa.Array]:
        return {
            "id": pa.array(ids, pa.int64()),
            "qty": pa.array(rng.integers(0, 1000, len(ids)), pa.int32()),
            "price": pa.array(rng.random(len(ids))),
            "name": pa.array([f"n{i % 997}" for i in ids], pa.string()),
        }

    print(f"bulk load {rows} rows, {commits} commits", file=sys.stderr)
    table.bulk_load(pa.table(batch(np.arange(rows))))
    per_commit = max(1, rows // 200)
    for n in range(commits):
        ids = rng.choice(rows, per_commit, replace=False)
        data = batch(ids)
        with table.new_transaction(("bench", n)) as txn:
            txn.write(pa.table({**data, "_change_action": pa.array(["+I"] * len(ids))}))
    figures: dict[str, float] = {}
    figures["pyarrow dataset read (reference)"], _ = _timed(lambda: _physical(table), args.repeat)
    figures["merged scan, first schema"], first = _timed(lambda: table.scan().to_arrow(), args.repeat)
    with table.update_schema() as update:
        update.add_column("score", LongType())
    figures["merged scan, after add_column"], added = _timed(lambda: table.scan().to_arrow(), args.repeat)
    with table.update_schema() as update:
        update.rename_column("name", "label")
    figures["merged scan, after rename_column"], renamed = _timed(lambda: table.scan().to_arrow(), args.repeat)
    expected = first.sort_by("id")
    assert added.sort_by("id").select(expected.column_names).equals(expected)
    assert added.column("score").null_count == added.num_rows
    got = renamed.sort_by("id").select(["id", "qty", "price", "label"]).rename_columns(expected.column_names)
    assert got.equals(expected), "the renamed column's values changed"
    reference = figures.pop("pyarrow dataset read (reference)")
    run = Run(
        "schema_evolution",
        environment.finished(),
        [Figure(name, seconds, "s", reference) for name, seconds in figures.items()],
        baseline="pyarrow's dataset read of the same Parquet files, no merge (median)",
        config={"rows": rows, "commits": commits, "repeat": args.repeat},
        notes=[f"{first.num_rows:,} rows read; median of {args.repeat} reads each"],
    )
    publish(run, args.output)


if __name__ == "__main__":
    main()

"""Minor optimizing's CPU per change row beside the write's, at several table sizes, in one run.

Issue 18 asks whether the optimizer's cost follows the change or the table. For each size in
``--rows`` this builds a keyed table (bulk load into ``base.file-index.hash-bucket`` 4, so the
BaseStore holds few large segments), then streams ``--commits`` ChangeStore commits of
``--upserts`` upserts each (keys drawn uniformly from the table, a ``-U``/``+U`` pair per key,
as Debezium sends an update) and runs a minor optimizing after every commit, the way a
continuously running optimizer with a short ``min-plan-interval`` would, or after every
``--every`` commits (what ``minor.trigger.file-count`` and ``min-plan-interval`` make of a
faster stream: a minor's fixed costs are shared by more rows). Per change row it
reports the CPU of

* the write (``table.new_transaction().write``: the ingest job's commit path), the baseline;
* the minor (``table.optimizing.run("minor")``);
* pyarrow alone reading and writing the same rows (Parquet write + read of each commit's batch):
  the floor any engine pays to move the rows once.

CPU is ``time.process_time`` of this process (every thread). The minors' CPU is also split by
function with cProfile on the last ``--profile`` commits (top entries in the JSON). Targets
(issue 18): minor CPU per change row <= the write's, at every size; the cost must not grow with
the table.

    .venv/bin/python -m bench.minor_cost                      # 1M and 10M rows, 20 commits of 5k
    .venv/bin/python -m bench.minor_cost --rows 200000 --commits 5   # a quick look
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bench.harness import Clock, Figure, Run, capture_environment, publish, result_path
from mixed_iceberg import load_catalog

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), ("customer", pa.string()), ("qty", pa.int32()), ("price", pa.float64())]
)


def _rows(ids: np.ndarray, version: int) -> pa.Table:
    return pa.table(
        {
            "id": ids,
            "customer": pa.array(np.char.add("c", (ids % 9973).astype(str)).astype(object)),
            "qty": (ids % 100 + version).astype(np.int32),
            "price": ids.astype(np.float64) / 7 + version,
        },
        schema=SCHEMA,
    )


def _upserts(rng: np.random.Generator, rows: int, count: int, version: int) -> pa.Table:
    keys = rng.choice(rows, size=count, replace=False).astype(np.int64)
    before, after = _rows(keys, version - 1), _rows(keys, version)
    interleaved = np.empty(2 * count, dtype=np.int64)  # each key's -U right before its +U
    interleaved[0::2], interleaved[1::2] = np.arange(count), np.arange(count) + count
    actions = np.tile(np.array(["-U", "+U"], dtype=object), count)
    pairs = pa.concat_tables([before, after]).take(pa.array(interleaved))
    return pairs.append_column("_change_action", pa.array(actions, pa.string()))


def _pyarrow_round_trip(batch: pa.Table, folder: Path) -> float:
    clock = Clock.start()
    path = folder / "reference.parquet"
    pq.write_table(batch, path)
    pq.read_table(path)
    return clock.elapsed().cpu_s


def measure(
    size: int, commits: int, upserts: int, profile_last: int, work: Path, seed: int, *, key_index: bool, every: int = 1
) -> dict[str, Any]:
    folder = work / f"rows-{size}-{'index' if key_index else 'scan'}"
    folder.mkdir()
    catalog = load_catalog("bench", type="sql", uri=f"sqlite:///{folder}/catalog.db", warehouse=str(folder / "wh"))
    table = catalog.create_table(
        "bench.orders",
        SCHEMA,
        primary_key=["id"],
        properties={
            "self-optimizing.min-plan-interval": "0",
            "self-optimizing.minor.trigger.file-count": "1",
            "self-optimizing.key-index.enabled": str(key_index).lower(),
        },
    )
    clock = Clock.start()
    chunk = 1_000_000
    table.bulk_load(
        batch
        for start in range(0, size, chunk)
        for batch in _rows(np.arange(start, min(size, start + chunk), dtype=np.int64), 0).to_batches()
    )
    load_s = clock.elapsed().wall_s
    rng = np.random.default_rng(seed)
    write_cpu = reference_cpu = 0.0
    minor_wall = 0.0
    minor_cpus: list[float] = []
    profiler = cProfile.Profile()
    change_rows = 0
    for commit in range(1, commits + 1):
        batch = _upserts(rng, size, upserts, commit)
        change_rows += batch.num_rows
        clock = Clock.start()
        with table.new_transaction() as txn:
            txn.write(batch)
        write_cpu += clock.elapsed().cpu_s
        reference_cpu += _pyarrow_round_trip(batch, folder)
        if commit % every:
            continue
        profiled = commit > commits - profile_last * every
        if profiled:
            profiler.enable()
        clock = Clock.start()
        result = table.optimizing.run("minor")
        elapsed = clock.elapsed()
        if profiled:
            profiler.disable()
        minor_cpus.append(elapsed.cpu_s)
        minor_wall += elapsed.wall_s
        if result.type is None:
            raise SystemExit(f"{size} rows, commit {commit}: the minor planned nothing")
    rows = table.refresh().scan().to_arrow().num_rows
    if rows != size:
        raise SystemExit(f"{size} rows: the merged view holds {rows} rows after the stream")
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(25)
    return {
        "rows": size,
        "load_s": load_s,
        "change_rows": change_rows,
        "write_cpu_us_per_row": write_cpu / change_rows * 1e6,
        "key_index": key_index,
        "minor_cpu_us_per_row": sum(minor_cpus) / change_rows * 1e6,
        # the first minor builds the indexes of the bulk-loaded segments: the steady state is after it
        "minor_cpu_us_per_row_steady": float(np.median(minor_cpus[1:] or minor_cpus)) / (change_rows / len(minor_cpus)) * 1e6,
        "commits_per_minor": every,
        "minor_cpu_s": minor_cpus,
        "minor_wall_s_per_commit": minor_wall / commits,
        "pyarrow_cpu_us_per_row": reference_cpu / change_rows * 1e6,
        "profile": text.getvalue().splitlines()[:60],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, action="append", help="table sizes (default 1M and 10M); repeat the flag")
    parser.add_argument("--commits", type=int, default=20)
    parser.add_argument("--upserts", type=int, default=5000, help="keys upserted per commit (two change rows each)")
    parser.add_argument("--profile", type=int, default=5, help="profile the last N minors")
    parser.add_argument("--every", type=int, default=1, help="a minor after every N commits (1: after each)")
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    sizes = sorted(set(args.rows or [1_000_000, 10_000_000]))
    environment = capture_environment()
    work = Path(tempfile.mkdtemp(prefix="bench-minor-cost-"))
    results: dict[tuple[int, bool], dict[str, Any]] = {}
    started = time.monotonic()
    try:
        for size in sizes:
            for key_index in (False, True):
                r = results[size, key_index] = measure(
                    size, args.commits, args.upserts, args.profile, work, args.seed, key_index=key_index, every=args.every
                )
                shutil.rmtree(work / f"rows-{size}-{'index' if key_index else 'scan'}", ignore_errors=True)
                print(
                    f"[minor cost] {size:,} rows, key index {'on' if key_index else 'off'}: write "
                    f"{r['write_cpu_us_per_row']:.1f} us/row, minor {r['minor_cpu_us_per_row']:.1f} us/row "
                    f"(steady {r['minor_cpu_us_per_row_steady']:.1f}), pyarrow {r['pyarrow_cpu_us_per_row']:.1f} us/row "
                    f"({time.monotonic() - started:.0f} s)",
                    flush=True,
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    figures = []
    for size in sizes:
        on, off = results[size, True], results[size, False]
        label = f"{size:,} rows"
        figures += [
            Figure(f"{label}: minor CPU per change row (baseline: the write's)", on["minor_cpu_us_per_row"], "us",
                   baseline=on["write_cpu_us_per_row"]),
            Figure(f"{label}: minor CPU per change row after the first (baseline: the write's)",
                   on["minor_cpu_us_per_row_steady"], "us", baseline=on["write_cpu_us_per_row"]),
            Figure(f"{label}: minor CPU per change row (baseline: key index off)", on["minor_cpu_us_per_row"], "us",
                   baseline=off["minor_cpu_us_per_row"]),
            Figure(f"{label}: pyarrow write+read CPU per change row (baseline: the write's)", on["pyarrow_cpu_us_per_row"],
                   "us", baseline=on["write_cpu_us_per_row"]),
            Figure(f"{label}: minor wall seconds per commit (baseline: key index off)", on["minor_wall_s_per_commit"], "s",
                   baseline=off["minor_wall_s_per_commit"]),
        ]  # fmt: skip
    if len(sizes) > 1:
        for key_index in (True, False):
            figures.append(
                Figure(
                    f"minor CPU per change row after the first, key index {'on' if key_index else 'off'}: "
                    f"{sizes[-1]:,} rows (baseline: {sizes[0]:,} rows)",
                    results[sizes[-1], key_index]["minor_cpu_us_per_row_steady"],
                    "us",
                    baseline=results[sizes[0], key_index]["minor_cpu_us_per_row_steady"],
                )
            )
    run = Run(
        "minor_cost",
        environment.finished(),
        figures,
        baseline="per figure: the write of the same change rows (the ingest path), or the minor with the key index off",
        config={k: v for k, v in vars(args).items() if k != "output"} | {"rows": sizes},
        detail={"results": list(results.values())},
    )
    publish(run, args.output or result_path(run))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

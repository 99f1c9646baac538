"""The PyFlink changelog sink (``mixed_iceberg.flink.sink``) beside the ingest job on the same
changelog, in one run: rows per second into the table, and freshness at a steady rate.

```
.venv/bin/python -m bench.flink_sink            # 1,000,000 source rows, a few minutes on 2 CPUs
.venv/bin/python -m bench.flink_sink --quick    # 100,000
```

Kafka is started by ``scripts/services/kafka.sh`` unless ``MIXED_ICEBERG_KAFKA_BOOTSTRAP`` names
one; every table lives in a temporary warehouse.

1. **Sink, backlog**: a user's pipeline in a process of its own (``--pipeline``): a ``datagen``
   sequence of N ids as fast as Flink makes them -> ``GROUP BY id % K`` with ``COUNT(*)`` and
   ``SUM(id)`` (a changelog of ``+I``, then ``-U``/``+U`` pairs) -> the sink, into a keyed table.
   Rates: the table's change rows / (last ChangeStore commit - first record the ingest half
   received), and / the pipeline's wall time (JVM and both mini-clusters started in it).
2. **Ingest job, baseline**: ``jobs/ingest_cdc.py --until-caught-up`` over the staging topic the
   sink wrote (the same changelog, ``changelog-json``), into a fresh table: the same rates.
3. **Sink, steady**: the pipeline again at ``--rate`` source rows/s for ``--seconds``; freshness
   per change = its ChangeStore commit time - the time Flink wrote it to the staging topic (its
   Kafka timestamp, taken when the row is sent, before its checkpoint's transaction commits),
   p50 and p99 of the changes staged after ``--warmup`` s, beside the configured checkpoint + commit
   intervals. The default rate, 10,000 source rows/s, makes about 20,000 changes/s (after a
   key's first row each row is a ``-U``/``+U`` pair).

Both tables are checked against the aggregate's exact result. Results go to
``bench/results/flink_sink-<date>-<commit>.json`` (``--output`` elsewhere).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from bench.harness import ROOT, Clock, Figure, Run, capture_environment, publish

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("n", pa.int64()), pa.field("s", pa.int64())])
CHECKPOINT = timedelta(seconds=1)
COMMIT = timedelta(milliseconds=500)


def progress(message: str) -> None:
    print(f"[flink_sink bench] {message}", file=sys.stderr, flush=True)


def pipeline(table: str, name: str, rows: int, keys: int, rate: int, checkpoints: Path) -> int:
    """The user's pipeline (``--pipeline``): datagen -> GROUP BY -> the sink; exits once caught up."""
    from mixed_iceberg.flink_client import loopback_agent, prepare_flink_client

    prepare_flink_client(agent=loopback_agent())
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.table import StreamTableEnvironment

    from mixed_iceberg.flink import SinkOptions, sink

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    t_env = StreamTableEnvironment.create(env)
    t_env.execute_sql(
        "CREATE TEMPORARY TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'fields.id.kind' = 'sequence', "
        f"'fields.id.start' = '1', 'fields.id.end' = '{rows}', 'rows-per-second' = '{rate}')"
    )
    changelog = t_env.sql_query(f"SELECT id % {keys} AS k, COUNT(*) AS n, SUM(id) AS s FROM src GROUP BY id % {keys}")
    options = SinkOptions(name=name, checkpoint_dir=checkpoints, checkpoint_interval=CHECKPOINT, commit_interval=COMMIT)
    with sink(changelog, table, env=env, t_env=t_env, options=options):
        env.execute(f"bench-{name}")
    return 0


def expected(rows: int, keys: int) -> pa.Table:
    """The aggregate's exact result per key: count and sum of the ids 1..rows with ``id % keys == k``."""
    ids = np.arange(1, rows + 1, dtype=np.int64)
    k = ids % keys
    n = np.bincount(k, minlength=keys)
    s = np.bincount(k, weights=ids, minlength=keys)  # float64: exact below 2**53
    live = n > 0
    return pa.table({"k": np.arange(keys)[live], "n": n[live].astype(np.int64), "s": s[live].astype(np.int64)}, schema=SCHEMA)


def check(table: Any, rows: int, keys: int, what: str) -> None:
    merged = table.scan().to_arrow().sort_by("k")
    if not merged.equals(expected(rows, keys)):
        sys.exit(f"{what}: the merged table differs from the aggregate's result")


def job_rates(table: Any, topic: str, wall_s: float) -> dict[str, float | int]:
    """Change rows the table's commits from ``topic`` added, and the rates over their span."""
    from bench.ingest import job_snapshots
    from mixed_iceberg.ingest.writer import SUMMARY_PREFIX

    snapshots = job_snapshots(table, topic)
    rows = sum(int(summary.get("added-records", 0)) for _, summary in snapshots)
    last = max(at for at, _ in snapshots)
    received = [int(s[f"{SUMMARY_PREFIX}received-ms"]) for _, s in snapshots if f"{SUMMARY_PREFIX}received-ms" in s]
    first = min(received) if received else min(at for at, _ in snapshots)
    return {
        "change_rows": rows,
        "commits": len(snapshots),
        "change_rows_per_s": rows / max((last - first) / 1000, 1e-3),
        "change_rows_per_s_wall": rows / wall_s,
        "wall_s": wall_s,
    }


def run_pipeline(work: Path, table: str, name: str, rows: int, keys: int, rate: int) -> float:
    log = work / f"{name}.log"
    command = [sys.executable, "-m", "bench.flink_sink", "--pipeline", "--table", table, "--name", name, "--rows", str(rows),
               "--keys", str(keys), "--rate", str(rate), "--checkpoint-dir", str(work / f"checkpoints-{name}")]  # fmt: skip
    clock = Clock.start()
    with log.open("wb") as out:
        done = subprocess.run(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, check=False, timeout=1800)
    if done.returncode != 0:
        sys.exit(f"pipeline {name} failed; see {log}")
    return clock.elapsed().wall_s


def ingest_baseline(work: Path, bootstrap: str, topic: str, identifier: str) -> float:
    """``jobs/ingest_cdc.py --until-caught-up`` over ``topic`` into ``identifier``: its wall time."""
    config = work / "ingest.yaml"
    config.write_text(
        f'job-name: "bench-ingest-{uuid.uuid4().hex[:6]}"\ncatalog: local\ntable: "{identifier}"\nparallelism: 2\n'
        f"commit-interval-ms: {int(COMMIT.total_seconds() * 1000)}\n"
        f'source:\n  bootstrap-servers: "{bootstrap}"\n  topic: "{topic}"\n  format: changelog-json\n  partitions: 2\n'
        f'dead-letter-topic: "{topic}.bench-dlq"\n'
    )
    clock = Clock.start()
    with (work / "ingest.log").open("wb") as out:
        done = subprocess.run(
            [sys.executable, str(ROOT / "jobs" / "ingest_cdc.py"), "--config", str(config), "--until-caught-up", "--timeout", "1800"],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, check=False,
        )  # fmt: skip
    if done.returncode != 0:
        sys.exit(f"the ingest job failed; see {work / 'ingest.log'}")
    return clock.elapsed().wall_s


def freshness_ms(table: Any, bootstrap: str, topic: str, warmup_s: float) -> np.ndarray:
    """Per change staged ``warmup_s`` or more after the first: its ChangeStore commit time - its
    Kafka timestamp (ms). The first seconds hold the backlog of the job's start (the ingest half's
    JVM work and first compilation), which is the backlog phase's business, not freshness."""
    from bench.ingest import commit_times, freshness, read_all

    _, batches = read_all(bootstrap, topic)
    if not batches:
        return np.array([], dtype=np.int64)
    since = min(int(b[2].min()) for b in batches) + warmup_s * 1000
    kept = [(p[m], o[m], t[m], v.filter(pa.array(m))) for p, o, t, v in batches if (m := t >= since).any()]
    return freshness(commit_times(table, "", topic), kept)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=1_000_000, help="source rows of the backlog phases")
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--rate", type=int, default=10_000, help="source rows/s of the steady phase")
    parser.add_argument("--seconds", type=int, default=60, help="length of the steady phase")
    parser.add_argument("--warmup", type=float, default=20.0, help="seconds of the steady phase not counted")
    parser.add_argument("--quick", action="store_true", help="100,000 rows, a 30 s steady phase (10 s warm-up)")
    parser.add_argument("--output", type=Path, help="write the JSON here instead of bench/results/")
    parser.add_argument("--pipeline", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--table", help=argparse.SUPPRESS)
    parser.add_argument("--name", help=argparse.SUPPRESS)
    parser.add_argument("--checkpoint-dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.pipeline:
        return pipeline(args.table, args.name, args.rows, args.keys, args.rate, args.checkpoint_dir)
    rows, seconds, warmup = (100_000, 30, 10.0) if args.quick else (args.rows, args.seconds, args.warmup)

    environment = capture_environment()
    started_kafka = "MIXED_ICEBERG_KAFKA_BOOTSTRAP" not in os.environ
    kafka = ["bash", str(ROOT / "scripts" / "services" / "kafka.sh")]
    if started_kafka:
        start = subprocess.run([*kafka, "start"], check=True, capture_output=True, text=True)
        os.environ["MIXED_ICEBERG_KAFKA_BOOTSTRAP"] = start.stdout.strip().splitlines()[-1]
    bootstrap = os.environ["MIXED_ICEBERG_KAFKA_BOOTSTRAP"]
    try:
        with tempfile.TemporaryDirectory(prefix="bench-flink-sink-") as scratch:
            work = Path(scratch)
            os.environ["MIXED_ICEBERG_WAREHOUSE_DIR"] = str(work / "wh")
            from mixed_iceberg.catalog import load_catalog

            catalog = load_catalog("local")
            catalog.create_namespace("bench")
            run = uuid.uuid4().hex[:6]
            for table in ("sink", "ingest", "steady"):
                catalog.create_table(f"bench.{table}", SCHEMA, primary_key=["k"])

            progress(f"1. sink, backlog of {rows} source rows")
            name = f"bench-sink-{run}"
            wall = run_pipeline(work, "local.bench.sink", name, rows, args.keys, rate=max(rows * 10, 1_000_000))
            staging = f"mixed-iceberg-sink.{name}"
            sink_table = catalog.load_table("bench.sink")
            check(sink_table, rows, args.keys, "sink")
            sink_rates = job_rates(sink_table, staging, wall)

            progress("2. the ingest job over the same staging topic")
            wall = ingest_baseline(work, bootstrap, staging, "bench.ingest")
            ingest_table = catalog.load_table("bench.ingest")
            check(ingest_table, rows, args.keys, "ingest job")
            ingest_rates = job_rates(ingest_table, staging, wall)

            progress(f"3. sink, steady at {args.rate} rows/s for {seconds} s")
            steady_rows = args.rate * seconds
            name = f"bench-steady-{run}"
            run_pipeline(work, "local.bench.steady", name, steady_rows, args.keys, rate=args.rate)
            steady_table = catalog.load_table("bench.steady")
            check(steady_table, steady_rows, args.keys, "steady sink")
            fresh = freshness_ms(steady_table, bootstrap, f"mixed-iceberg-sink.{name}", warmup)
    finally:
        if started_kafka:
            subprocess.run([*kafka, "stop"], check=False, capture_output=True)

    p50, p99 = (float(v) for v in np.percentile(fresh, [50, 99])) if len(fresh) else (None, None)
    bound_ms = (CHECKPOINT + COMMIT).total_seconds() * 1000
    figures = [
        Figure("change rows/s into the table (first record received -> last commit)", sink_rates["change_rows_per_s"],
               "rows/s", baseline=ingest_rates["change_rows_per_s"]),
        Figure("change rows/s, whole run (JVM start included)", sink_rates["change_rows_per_s_wall"], "rows/s",
               baseline=ingest_rates["change_rows_per_s_wall"]),
        Figure("freshness p50 at the steady rate, after warm-up (staged -> committed)", p50, "ms"),
        Figure("freshness p99 at the steady rate, after warm-up (staged -> committed)", p99, "ms"),
    ]  # fmt: skip
    publish(
        Run(
            "flink_sink",
            environment.finished(),
            figures,
            baseline="jobs/ingest_cdc.py --until-caught-up over the staging topic the sink wrote (the same changelog)",
            config={
                "rows": rows,
                "keys": args.keys,
                "steady_rate": args.rate,
                "steady_seconds": seconds,
                "steady_warmup_s": warmup,
                "quick": args.quick,
                "checkpoint_interval_ms": CHECKPOINT.total_seconds() * 1000,
                "commit_interval_ms": COMMIT.total_seconds() * 1000,
                "load_avg_1m_end": os.getloadavg()[0],
            },
            notes=[
                "The sink's rate is its whole path: the user's job making the changelog and staging it in Kafka "
                "transactions per checkpoint, with the ingest half committing beside it on the same CPUs; the baseline "
                "reads the finished staging topic alone.",
                f"Freshness counts from the staging send (before its checkpoint's transaction commits) to the "
                f"ChangeStore commit; the configured checkpoint + commit intervals are {bound_ms:.0f} ms.",
            ],
            detail={
                "sink": sink_rates,
                "ingest": ingest_rates,
                "steady_changes": len(fresh),
                "freshness_ms_p90": float(np.percentile(fresh, 90)) if len(fresh) else None,
                "freshness_ms_max": float(fresh.max()) if len(fresh) else None,
            },
        ),
        args.output,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

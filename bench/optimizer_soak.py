"""Optimizer soak: the ingest job and the optimizer job running together on a CDC stream, next to no optimizer.

Run it with::

    .venv/bin/python -m bench.optimizer_soak --quick    # 20 s streams, six phases, 5-6 min
    .venv/bin/python -m bench.optimizer_soak            # 120 s streams

The approach of ``scripts/demo_ingest.py``: the private Kafka broker, a rate-limited Debezium
producer per table, the PyFlink ingest job (``jobs/ingest_cdc.py``; one job writes one table,
so four tables are four jobs on four topics) and the PyFlink optimizer job
(``jobs/optimizer_job.py``), with merged reads, live files and the optimizer's backlog sampled
while they run. The jobs are started once and serve six phases, one after another
(``bench/optimizer_soak_rig.py``): a stream into one table and into four tables, each with
optimizing off (no optimizer serves the tables: the baseline), with the optimizer job of
parallelism 1 and with the one of parallelism 2 (groups ``soak-p1`` and ``soak-p2``, a job
each). Every phase starts from the same layout: the live keys merged into the BaseStore by a
full optimizing between phases. The stream has the same total rate in every phase (``--rate``
events/s, split between the tables), so four tables mean four times the ChangeStore commits.
Every ingest job runs at parallelism 1 (conf/ingest.yaml says 2), the same in both table counts.

Demo-like short optimizer intervals, not Amoro's: each group's ``refresh-interval`` is 2 s (10 s
in ``conf/optimizer.yaml``); the tables set ``self-optimizing.min-plan-interval`` 3000 ms (60 s)
and ``self-optimizing.minor.trigger.interval`` 10000 ms (1 h), as the demo does; maintenance is
off. Everything else is the tables' and groups' defaults.

About every ``--every`` seconds (jittered) each table of the phase is sampled: live files (the
ChangeStore's unmerged files, the BaseStore's data and delete files, from
``mixed_iceberg.optimizing.collect.collect``) and the merged read (``table.scan().to_arrow()``,
wall seconds); a thread polls the system database every 0.5 s for the group's backlog (tasks
PLANNED, SCHEDULED or ACKED) and its processes in flight. The lines go to stderr as they are
taken. The backlog figures come from the system database afterwards (each process's plan time,
each task's finish time): a minor here takes about 0.1 s, which the polls mostly miss. The writes stop at the last ChangeStore commit once the tables hold the whole stream; an
optimizing phase is then watched until the backlog drained and the ChangeStore is merged, or
``--drain-timeout``. Every merged read is checked against the producers' oracle at the end of
each phase (a mismatch exits 1 after publishing).

Targets (issue 17), judged in the notes:

- live files per table bounded by ``base.file-index.hash-bucket x ceil(size /
  self-optimizing.target-size) + self-optimizing.minor.trigger.file-count`` (size: the BaseStore's
  data bytes at the end), read from the table's properties;
- merged read flat: the median read of the last third of the writes within 1.25x of the first
  third's;
- backlog drained within two refresh intervals of the writes stopping: every process planned
  up to ``min-plan-interval + refresh-interval`` (the longest a due plan can wait) after the last
  ChangeStore commit has committed.

The harness prints each optimizing phase beside ``off`` with the same number of tables and
writes the run to ``bench/results/optimizer_soak-<date>-<commit>.json``; the PNG beside it (same
name) plots live files, read seconds and backlog over time per setting
(``bench/optimizer_soak_plot.py``, matplotlib). Every sample, poll, optimizer process and CPU
figure is in the detail. Wall-clock figures on a shared 2-core machine move between runs.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness import ROOT, Run, capture_environment, publish, result_path
from bench.optimizer_soak_figures import figures_and_notes, summarize
from bench.optimizer_soak_rig import GROUP_PROPERTIES, TABLE_PROPERTIES, Rig, Setting, progress
from bench.streaming_jobs import Kafka

PLOTTERS = (Path(sys.executable), ROOT / "bench/peers/.envs/orchestrator/bin/python")


def plot(json_path: Path) -> Path | None:
    """The PNG beside ``json_path``, drawn by the first interpreter of ``PLOTTERS`` that has matplotlib."""
    png = json_path.with_suffix(".png")
    for python in PLOTTERS:
        if python.exists() and subprocess.run([str(python), "-c", "import matplotlib"], capture_output=True).returncode == 0:
            subprocess.run([str(python), "-m", "bench.optimizer_soak_plot", str(json_path), str(png)], cwd=ROOT, check=True)
            return png
    progress("no interpreter with matplotlib (.venv, bench/peers/.envs/orchestrator): no plot")
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 s streams, 15 s drain timeout, 10 s warm-up")
    parser.add_argument("--seconds", type=float, default=None, help="stream duration per phase (default 120; 20 with --quick)")
    parser.add_argument("--rate", type=float, default=1500.0, help="events/s of the whole stream, split between the tables")
    parser.add_argument("--keys", type=int, default=5000, help="primary keys per table")
    parser.add_argument("--warmup-seconds", type=float, default=None, help="warm-up stream into every table (30; 10)")
    parser.add_argument("--every", type=float, default=2.0, help="mean seconds between two samples")
    parser.add_argument("--drain-timeout", type=float, default=None, help="seconds watched after the writes stop (60; 15)")
    parser.add_argument("--tables", type=int, action="append", help="table counts (default 1 and 4); repeat the flag")
    parser.add_argument("--parallelism", type=int, action="append", help="optimizer parallelisms (default 1 and 2); repeat")
    parser.add_argument("--output", type=Path, help="the run's JSON (default bench/results/optimizer_soak-<date>-<commit>.json)")
    parser.add_argument("--keep", action="store_true", help="keep the warehouse and the job logs")
    args = parser.parse_args(argv)
    args.seconds = args.seconds or (20.0 if args.quick else 120.0)
    args.drain_timeout = args.drain_timeout or (15.0 if args.quick else 60.0)
    args.warmup_seconds = args.warmup_seconds or (10.0 if args.quick else 30.0)
    counts, parallelisms = sorted(set(args.tables or [1, 4])), sorted(set(args.parallelism or [1, 2]))
    settings = [Setting(n, p) for n in counts for p in (0, *parallelisms)]
    environment = capture_environment()
    work = Path(tempfile.mkdtemp(prefix="bench-optimizer-soak-"))
    results: list[dict[str, Any]] = []
    started = time.monotonic()
    try:
        with Kafka() as kafka, Rig(args, kafka.bootstrap, f"os{int(time.time())}", work, max(counts)) as rig:
            rig_times = rig.start(parallelisms)
            for setting in settings:
                results.append(rig.phase(setting))
    finally:
        if args.keep:
            progress(f"warehouse and logs kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    progress(f"done in {time.monotonic() - started:.0f} s")
    summaries = {r["setting"]: summarize(r) for r in results}
    figures, notes = figures_and_notes(results, summaries)
    run = Run(
        "optimizer_soak",
        environment.finished(),
        figures,
        baseline="optimizing off: the same stream into as many tables, no optimizer serving them",
        config={
            **{k: v for k, v in vars(args).items() if k != "output"},
            "settings": [s.key for s in settings],
            "group_properties": GROUP_PROPERTIES,
            "table_properties": TABLE_PROPERTIES,
            "ingest_parallelism": 1,
        },
        notes=notes,
        detail={"rig": rig_times, "summaries": summaries, "runs": results},
    )
    path = publish(run, args.output or result_path(run))
    png = plot(path)
    if png is not None:
        print(f"PNG: {png}", file=sys.stderr, flush=True)
    return 0 if all(all(r["oracle_ok"]) and all(r["oracle_ok_before"]) for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Streaming ingest benchmark: CDC through real Kafka and the real PyFlink job, beside baselines.

    .venv/bin/python -m bench.ingest --quick     # 200k events
    .venv/bin/python -m bench.ingest             # 1M events (the issue's figure)

Phases, each on fresh topics and a fresh table (Kafka is started by scripts/services/kafka.sh
unless it is already running, and stopped again if this script started it):

1. produce N Debezium events over N/100 keys (70 % updates, 30 % deletes once a key is live)
2. baseline: a plain confluent-kafka consumer reads the whole topic (messages/s)
3. library: the same ingest code (parse, LogStore double-write, ChangeStore commit) fed by
   that consumer, without Flink (records/s)
4. job, backlog, ``--repeat`` times (median and range): ``jobs/ingest_cdc.py --until-caught-up``
   over the N events, each run with its own table and topics. Rates from
   ChangeStore snapshot times: records and change rows / (last commit - first record
   received); the steady rate counts only commits after the first 20 % of the rows (workers,
   writers and the JVM's compiler warmed up). Wall time includes JVM and mini-cluster start.
   CPU is the job's process tree's user+system time; the Kafka broker's is reported apart.
5. job, running: one job runs on its own topic; after ``--running-warmup`` events (not
   reported), ``--running-runs`` backlogs of N events, each produced in one Kafka transaction,
   so the job sees the whole backlog when it commits. Rates: change rows / (last ChangeStore
   commit - transaction commit). This is the sustained rate of a streaming job that is already
   warm (Nexmark, likewise, starts measuring minutes after the job starts); phase 4's fresh
   job spends much of a 1M backlog compiling (docs/ingest.md).
6. job, live: the job runs, a producer sends ``--rate`` events/s for ``--seconds``; freshness
   per event is (ChangeStore commit time - Kafka message timestamp), p50/p99

The merged table is checked against the producer's oracles after phases 4 and 5. The harness
prints the figures (rates in records/s beside the plain consumer's messages/s) and writes the run
to ``bench/results/ingest-<date>-<commit>.json`` (``--output`` elsewhere), every backlog run's
figures in its detail.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from bench.harness import ROOT, Clock, Figure, Run, capture_environment, publish
from bench.host_probe import host_probe
from mixed_iceberg.ingest.cdc import CdcFormat, CdcParser
from mixed_iceberg.ingest.config import load_ingest_config
from mixed_iceberg.ingest.job import caught_up
from mixed_iceberg.ingest.runtime import load_table
from mixed_iceberg.ingest.writer import SUMMARY_PREFIX, PartitionIngestor
from mixed_iceberg.logstore.kafka import KafkaLogStore

PY = sys.executable
#: Figures in records/s, set beside the plain consumer's messages/s (one message is one record).
RECORD_RATES = (
    "library_records_per_s",
    "job_sustained_records_per_s",
    "job_commit_span_records_per_s",
    "job_end_to_end_records_per_s",
    "running_job_records_per_s",
)


def progress(message: str) -> None:
    print(f"[ingest bench] {message}", file=sys.stderr, flush=True)


def kafka(command: str) -> str:
    return subprocess.run(
        ["bash", str(ROOT / "scripts/services/kafka.sh"), command], check=True, capture_output=True, text=True
    ).stdout.strip()


def produce(
    env: dict[str, str],
    topic: str,
    events: int,
    oracle: Path | None = None,
    rate: float = 0,
    *,
    first_key: int = 0,
    transaction: bool = False,
) -> float:
    command = [PY, str(ROOT / "scripts/produce_cdc.py"), "--bootstrap", env["MIXED_ICEBERG_KAFKA_BOOTSTRAP"], "--topic", topic,
               "--events", str(events), "--keys", str(max(1000, events // 100)), "--rate", str(rate),
               "--first-key", str(first_key)]  # fmt: skip
    if oracle:
        command += ["--oracle", str(oracle)]
    if transaction:
        command.append("--transaction")
    clock = Clock.start()
    subprocess.run(command, check=True, env=env, capture_output=True)
    return clock.elapsed().wall_s


def read_all(bootstrap: str, topic: str) -> tuple[float, list[tuple[np.ndarray, np.ndarray, np.ndarray, pa.Array]]]:
    """Baseline consumer pass; returns the rate and (partitions, offsets, timestamps, values) batches."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{time.time_ns()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    meta = consumer.list_topics(topic, timeout=10).topics[topic]
    consumer.assign([TopicPartition(topic, p, 0) for p in meta.partitions])
    batches, count, started, idle = [], 0, time.monotonic(), 0
    while idle < 2:
        messages = consumer.consume(50_000, 1.0)
        if not messages:
            idle += 1
            continue
        idle = 0
        count += len(messages)
        batches.append(
            (
                np.array([m.partition() for m in messages], np.int32),
                np.array([m.offset() for m in messages], np.int64),
                np.array([m.timestamp()[1] for m in messages], np.int64),
                pa.array([m.value() for m in messages], pa.binary()),
            )
        )
    elapsed = time.monotonic() - started - 2.0  # the idle polls at the end
    consumer.close()
    return count / elapsed, batches


def library_rate(
    env: dict[str, str], config_path: Path, batches: list[tuple[np.ndarray, np.ndarray, np.ndarray, pa.Array]]
) -> float:
    os.environ.update(env)
    config = load_ingest_config(config_path, {"job-name": "bench-lib", "table": "bench.lib"})
    table = load_table(config, create=True)
    parser = CdcParser(table.arrow_schema(), table.primary_key, CdcFormat.DEBEZIUM_JSON)
    bootstrap = config.source.bootstrap_servers
    log_store = KafkaLogStore(bootstrap)  # one client object: its writers share its clients
    log_store.ensure_topic("bench_lib_log", 4)
    ingestors: dict[int, PartitionIngestor] = {}
    clock = Clock.start()
    records = 0
    for partitions, offsets, _, values in batches:
        for p in np.unique(partitions).tolist():
            if p not in ingestors:
                writer = log_store.writer(f"bench-lib-{time.time_ns()}-{p}", "bench-lib", config.source.topic, p)
                ingestors[p] = PartitionIngestor(
                    table,
                    parser,
                    job="bench-lib",
                    topic=config.source.topic,
                    partition=p,
                    log_writer=writer,
                    log_topic="bench_lib_log",
                )
                ingestors[p].open()
            mask = partitions == p
            ingestors[p].process(offsets[mask], values.filter(pa.array(mask)))
            records += int(mask.sum())
    return records / clock.elapsed().wall_s


def _stat(path: Path) -> tuple[int, float] | None:
    """(session id, user+system CPU seconds) from a /proc stat file; None when the process is gone."""
    try:
        fields = path.read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[3]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(session: int) -> float:
    """user+system CPU of every live process in ``session``."""
    total = 0.0
    for path in Path("/proc").glob("[0-9]*/stat"):
        found = _stat(path)
        if found is not None and found[0] == session:
            total += found[1]
    return total


def process_cpu_seconds(pid: int) -> float:
    """user+system CPU of one process (0 when it is gone)."""
    found = _stat(Path(f"/proc/{pid}/stat"))
    return found[1] if found is not None else 0.0


def broker_pid() -> int | None:
    try:
        services = Path(os.environ.get("MIXED_ICEBERG_SERVICES_DIR", ROOT / ".services"))
        return int((services / "kafka/kafka.pid").read_text().strip())
    except (OSError, ValueError):
        return None


class CpuTimeline:
    """(wall ms, CPU s of a job's process tree, CPU s of the broker) every 0.5 s, on a thread."""

    def __init__(self, session: int) -> None:
        self.session, self.broker = session, broker_pid()
        self.marks: list[tuple[float, float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        cpu = 0.0
        while not self._stop.is_set():
            cpu = max(cpu, tree_cpu_seconds(self.session))  # processes that ended take their CPU along
            self.marks.append((time.time() * 1000, cpu, process_cpu_seconds(self.broker) if self.broker else 0.0))
            self._stop.wait(0.5)

    def __enter__(self) -> CpuTimeline:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def job_cpu_s(self) -> float:
        return self.marks[-1][1] if self.marks else 0.0

    def between(self, first_ms: float, last_ms: float) -> tuple[float, float]:
        """(job CPU s, broker CPU s) spent from ``first_ms`` to ``last_ms``, interpolated."""
        marks = np.array(self.marks) if self.marks else np.zeros((1, 3))
        job = np.interp(last_ms, marks[:, 0], marks[:, 1]) - np.interp(first_ms, marks[:, 0], marks[:, 1])
        broker = np.interp(last_ms, marks[:, 0], marks[:, 2]) - np.interp(first_ms, marks[:, 0], marks[:, 2])
        return float(job), float(broker)


def steady_rate(snapshots: list[tuple[int, int]], skip: float = 0.2) -> float | None:
    """Rows/s over the commits after the first ``skip`` of all rows landed: the rate once the
    workers, their writers and the JVM's compiler have warmed up. ``snapshots``: (commit ms, rows)."""
    ordered = sorted(snapshots)
    total = sum(rows for _, rows in ordered)
    done = 0
    for at, rows in ordered:
        done += rows
        if done >= skip * total:
            start, start_done = at, done
            break
    span = (ordered[-1][0] - start) / 1000
    return (total - start_done) / span if span > 0 else None


def job_snapshots(table, topic: str, since_ms: int = 0) -> list[tuple[int, Any]]:  # type: ignore[no-untyped-def]
    """(commit ms, summary) of the ingest job's ChangeStore commits from ``topic``, from ``since_ms`` on."""
    return [
        (s.timestamp_ms, s.summary)
        for s in table.change_store.snapshots()
        if s.summary is not None and s.summary.get(f"{SUMMARY_PREFIX}topic") == topic and s.timestamp_ms >= since_ms
    ]


def commit_times(table, job: str, topic: str) -> list[tuple[int, int, int]]:  # type: ignore[no-untyped-def]
    """(partition, next offset, commit ms) of the job's ChangeStore commits."""
    return [
        (int(summary[f"{SUMMARY_PREFIX}partition"]), int(summary[f"{SUMMARY_PREFIX}next-offset"]), at)
        for at, summary in job_snapshots(table, topic)
    ]


def freshness(
    commits: list[tuple[int, int, int]], batches: list[tuple[np.ndarray, np.ndarray, np.ndarray, pa.Array]]
) -> np.ndarray:
    """Per live event, its commit time minus its produce time (ms); empty without live events."""
    if not batches or not commits:
        return np.array([], dtype=np.int64)
    partitions = np.concatenate([b[0] for b in batches])
    offsets = np.concatenate([b[1] for b in batches])
    stamps = np.concatenate([b[2] for b in batches])
    out = []
    for p in np.unique(partitions):
        mine = sorted((o, t) for q, o, t in commits if q == p)
        ends = np.array([o for o, _ in mine])
        times = np.array([t for _, t in mine])
        sel = partitions == p
        which = np.searchsorted(ends, offsets[sel], side="right")  # first commit whose next offset > offset
        ok = which < len(ends)
        out.append(times[which[ok]] - stamps[sel][ok])
    return np.concatenate(out) if out else np.array([], dtype=np.int64)


def run_job(env: dict[str, str], args: list[str]) -> subprocess.Popen[bytes]:
    log = open(Path(env["BENCH_DIR"]) / f"job-{time.time_ns()}.log", "wb")  # noqa: SIM115
    return subprocess.Popen(
        [PY, str(ROOT / "jobs/ingest_cdc.py"), *args],
        env=env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def backlog_job(env: dict[str, str], job_args: list[str], config_path: Path, topic: str, events: int) -> dict[str, object]:
    """One ``--until-caught-up`` run of the job over the whole topic: its figures, oracle-checked."""
    os.environ.update(env)
    results: dict[str, object] = {"load_avg_1m_before_job": os.getloadavg()[0]}
    clock = Clock.start()
    job = run_job(env, [*job_args, "--until-caught-up", "--timeout", "900"])
    with CpuTimeline(job.pid) as timeline:
        job.wait()
    wall = clock.elapsed().wall_s
    results["load_avg_1m_after_job"] = os.getloadavg()[0]
    if job.returncode != 0:
        raise SystemExit(f"job failed ({job.returncode}); see {env['BENCH_DIR']}")
    config = load_ingest_config(config_path)
    table = load_table(config)
    snapshots = job_snapshots(table, topic)
    commits = commit_times(table, config.job_name, topic)
    last = max(t for *_, t in commits)
    received = [
        int(summary[f"{SUMMARY_PREFIX}received-ms"]) for _, summary in snapshots if f"{SUMMARY_PREFIX}received-ms" in summary
    ]
    # From the first record reaching a writer to the last commit: JVM and mini-cluster
    # start excluded, reading, parsing, LogStore and table commits included.
    first = min(received) if received else min(t for *_, t in commits)
    first_commit = min(t for *_, t in commits)
    results["job_wall_s"] = wall
    results["job_commits"] = len(commits)
    results["job_sustained_records_per_s"] = events / max((last - first) / 1000, 1e-3)
    # The figure earlier versions reported: meaningless with few commits per partition.
    results["job_commit_span_records_per_s"] = events / max((last - first_commit) / 1000, 1e-3)
    results["job_end_to_end_records_per_s"] = events / wall
    # Rows the job added to the ChangeStore (an update event is a -U/+U pair of rows).
    ours = [(at, int(summary["added-records"])) for at, summary in snapshots if "added-records" in summary]  # (commit ms, rows)
    change_rows = sum(rows for _, rows in ours)
    results["job_change_rows"] = change_rows
    results["job_sustained_change_rows_per_s"] = change_rows / max((last - first) / 1000, 1e-3)
    results["job_steady_change_rows_per_s"] = steady_rate(ours)
    results["job_cpu_s"] = timeline.job_cpu_s
    # CPU the job got between its first and last commit: below 2 cores means it was starved
    # (other processes on the machine), not that it had nothing to do.
    span_cpu, broker_cpu = timeline.between(first, last)
    results["job_cores_used_while_committing"] = span_cpu / max((last - first) / 1000, 1e-3)
    results["broker_cores_used_while_committing"] = broker_cpu / max((last - first) / 1000, 1e-3)
    results["job_cpu_us_per_record_while_committing"] = 1e6 * span_cpu / events
    check_oracle(table, [Path(env["BENCH_DIR"]) / "oracle.json"])
    results["oracle_check"] = "ok"
    return results


def check_oracle(table, oracles: list[Path]) -> None:  # type: ignore[no-untyped-def]
    """The merged table equals the final state of the streams (their keys do not overlap)."""
    final = {int(k): v["qty"] for path in oracles for k, v in json.loads(path.read_text())["final"].items()}
    merged = table.scan(selected_fields=("id", "qty")).to_arrow()
    assert merged.num_rows == len(final), (merged.num_rows, len(final))
    assert dict(zip(merged.column("id").to_pylist(), merged.column("qty").to_pylist(), strict=True)) == final


def wait_caught_up(config, job: subprocess.Popen[bytes], timeout: float) -> None:  # type: ignore[no-untyped-def]
    """Poll the job's own check once a second (each poll opens Kafka clients and reads the table)."""
    deadline = time.monotonic() + timeout
    while not caught_up(config):
        if job.poll() is not None:
            raise SystemExit(f"job ended ({job.returncode}) before catching up; see {os.environ['BENCH_DIR']}")
        if time.monotonic() > deadline:
            raise SystemExit(f"job not caught up after {timeout:.0f} s; see {os.environ['BENCH_DIR']}")
        time.sleep(1.0)


def running_job_backlogs(
    env: dict[str, str], job_args: list[str], config_path: Path, events: int, runs: int, warmup: int
) -> list[dict[str, object]]:
    """The job already running: ``warmup`` events (not reported), then ``runs`` backlogs of
    ``events``, each produced in one Kafka transaction so the job sees all of it at once, when
    it commits. Rates are rows / (last commit - transaction commit): a streaming job's
    sustained rate with its JVM warm, where a fresh job's backlog run carries its warm-up."""
    os.environ.update(env)
    config = load_ingest_config(config_path)
    topic, work = config.source.topic, Path(env["BENCH_DIR"])
    oracles = [work / "running-0.json"]
    produce(env, topic, 1000, oracles[0])  # the job is running once this is committed
    job = run_job(env, job_args)
    figures: list[dict[str, object]] = []
    try:
        with CpuTimeline(job.pid) as timeline:
            wait_caught_up(config, job, 300)
            for i, size in enumerate([warmup] * bool(warmup) + [events] * runs):
                oracles.append(work / f"running-{i + 1}.json")
                produce(env, topic, size, oracles[-1], first_key=10_000_000 * (i + 1), transaction=True)
                visible = json.loads(oracles[-1].read_text())["visible_ms"]
                polled = time.process_time()
                wait_caught_up(config, job, 600)
                polled = time.process_time() - polled
                commits = job_snapshots(load_table(config), topic, since_ms=visible)
                last = max(at for at, _ in commits)
                first = min(int(summary.get(f"{SUMMARY_PREFIX}received-ms", last)) for _, summary in commits)
                rows = sum(int(summary["added-records"]) for _, summary in commits)
                span = max(last - visible, 1) / 1000
                job_cpu, broker_cpu = timeline.between(visible, last)
                figures.append(
                    {
                        "events": size,
                        "change_rows": rows,
                        "commits": len(commits),
                        "change_rows_per_s": rows / span,
                        "records_per_s": size / span,
                        "first_record_after_visible_ms": float(first - visible),
                        "job_cores_used": job_cpu / span,
                        "broker_cores_used": broker_cpu / span,
                        "job_cpu_us_per_record": 1e6 * job_cpu / size,
                        "bench_poller_cpu_s": polled,
                    }
                )
                progress(f"running job, backlog {i + 1}: {json.dumps(figures[-1])}")
    finally:
        os.killpg(job.pid, signal.SIGKILL)
        job.wait()
    check_oracle(load_table(config), oracles)
    return figures


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def summarize(runs: list[dict[str, object]], prefix: str = "") -> dict[str, object]:
    """Each figure: the median over the runs, and its range as ``<figure> min`` / ``max`` (the
    machine is shared); a value that is not a number is kept when every run agrees."""
    out: dict[str, object] = {}
    for key in runs[0]:
        values = [r[key] for r in runs]
        numbers = [float(v) for v in values if _is_number(v)]  # type: ignore[arg-type]
        if numbers:
            out[prefix + key] = float(np.median(numbers))
            if len(runs) > 1:
                out[f"{prefix}{key} min"], out[f"{prefix}{key} max"] = min(numbers), max(numbers)
        elif len(set(map(str, values))) == 1:
            out[prefix + key] = values[0]
        else:
            out[prefix + key] = ", ".join(map(str, values))
    return out


def _unit(key: str) -> str:
    """The unit a figure's name ends in (``_ms``, ``_per_s``...), past a range or probe suffix."""
    name = key.removesuffix(" min").removesuffix(" max").removesuffix("_start").removesuffix("_end")
    name = name.removesuffix("_while_committing")
    units = (
        ("_msgs_per_s", "msgs/s"),
        ("_change_rows_per_s", "change rows/s"),
        ("_records_per_s", "records/s"),
        ("_mb_per_s", "MB/s"),
        ("_lookup_ns", "ns"),
        ("_us_per_record", "us"),
        ("_cores_used", "cores"),
        ("_ms", "ms"),
        ("_s", "s"),
        ("_rate", "events/s"),
    )
    return next((unit for suffix, unit in units if name.endswith(suffix)), "")


def ingest_figures(results: dict[str, object]) -> tuple[list[Figure], list[str]]:
    """Every numeric result as a figure (record rates beside the plain consumer's), the rest as notes."""
    consumer = results.get("baseline_consumer_msgs_per_s")
    figures, notes = [], []
    for key, value in results.items():
        if value is None or _is_number(value):
            baseline = consumer if key.removesuffix(" min").removesuffix(" max") in RECORD_RATES else None
            figures.append(Figure(key, value, _unit(key), baseline))  # type: ignore[arg-type]
        else:
            notes.append(f"{key}: {value}")
    return figures, notes


def broker_admin(bootstrap: str):  # type: ignore[no-untyped-def]
    """An admin client of the broker (it lists every topic, so it never makes the broker create one)."""
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})


def broker_topics(bootstrap: str) -> tuple[int, int]:
    """(topics, partitions) on the broker, recorded with the figures."""
    topics = broker_admin(bootstrap).list_topics(timeout=10).topics
    return len(topics), sum(len(t.partitions) for t in topics.values())


def delete_run_topics(bootstrap: str, run: str) -> None:
    """Delete the topics this run created (left behind, they filled the broker's log dir: 4.8 GB one morning)."""
    admin = broker_admin(bootstrap)
    ours = (run, f"mixed-iceberg-wakeup.{run}", "bench_lib_log")
    names = [name for name in admin.list_topics(timeout=10).topics if name.startswith(ours)]
    if names:
        for future in admin.delete_topics(names, operation_timeout=60).values():
            future.result()
    progress(f"deleted {len(names)} topics of run {run}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="200k events, shorter live phase")
    parser.add_argument("--rate", type=float, default=10_000, help="live phase events/s (below the job's capacity)")
    parser.add_argument("--seconds", type=float, default=20.0, help="live phase duration")
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument(
        "--repeat", type=int, default=None, help="backlog job runs, median and range reported (default 3, 1 with --quick)"
    )
    parser.add_argument(
        "--running-runs", type=int, default=None, help="backlogs handed to the running job (default 3, 1 with --quick)"
    )
    parser.add_argument(
        "--running-warmup", type=int, default=None, help="warm-up events of the running job (default: N, the backlog size)"
    )
    parser.add_argument(
        "--commit-interval-ms", type=int, default=1000, help="the job's commit-interval-ms (default: the product default, 1000)"
    )
    parser.add_argument("--output", type=Path, help="the run's JSON (default bench/results/ingest-<date>-<commit>.json)")
    args = parser.parse_args()
    environment = capture_environment()
    events = 200_000 if args.quick else args.events
    args.repeat = args.repeat or (1 if args.quick else 3)
    args.running_runs = args.running_runs or (1 if args.quick else 3)
    if args.running_warmup is None:
        # 300k were not enough: the first 1M backlog after them took 9.4-12.7 us of job CPU per
        # event, the next two 8.7-9.6 (three benches, 2026-11-30).
        args.running_warmup = events
    seconds = 10.0 if args.quick else args.seconds
    started_kafka = (
        subprocess.run(["bash", str(ROOT / "scripts/services/kafka.sh"), "status"], capture_output=True).returncode != 0
    )
    bootstrap = kafka("start").splitlines()[-1]
    work = Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    run = f"b{int(time.time())}"
    env = {**os.environ, "MIXED_ICEBERG_WAREHOUSE_DIR": str(work / "wh"), "MIXED_ICEBERG_KAFKA_BOOTSTRAP": bootstrap, "BENCH_DIR": str(work),
           "MIXED_ICEBERG_INGEST_JOB": f"{run}-job", "MIXED_ICEBERG_INGEST_TABLE": "bench.orders", "MIXED_ICEBERG_INGEST_TOPIC": f"{run}_cdc",
           "MIXED_ICEBERG_INGEST_DLQ": f"{run}_dlq", "MIXED_ICEBERG_INGEST_LOG_TOPIC": f"{run}_log", "FLINK_LOG_DIR": str(work / "flink-log")}  # fmt: skip
    config_path = ROOT / "conf/ingest.yaml"
    job_args = ["--set", f"parallelism={args.parallelism}", "--set", f"commit-interval-ms={args.commit_interval_ms}"]
    config = {
        "events": events,
        "quick": args.quick,
        "parallelism": args.parallelism,
        "commit_interval_ms": args.commit_interval_ms,
        "repeat": args.repeat,
        "running_runs": args.running_runs,
        "running_warmup": args.running_warmup,
        "rate": args.rate,
        "seconds": seconds,
    }
    topics, partitions = broker_topics(bootstrap)
    results: dict[str, object] = {
        # A broker this script started is cold (its JIT warms up over the first job runs).
        "broker_started_by_bench": started_kafka,
        "broker_topics_before": topics,
        "broker_partitions_before": partitions,
        **{f"host_{k}_start": v for k, v in host_probe().items()},
    }
    runs: list[dict[str, object]] = []
    running: list[dict[str, object]] = []
    try:
        topic = env["MIXED_ICEBERG_INGEST_TOPIC"]
        progress(f"producing {events:,} events to {topic}")
        results["produce_s"] = produce(env, topic, events, work / "oracle.json")
        progress("baseline: plain confluent-kafka consumer")
        rate, batches = read_all(bootstrap, topic)
        results["baseline_consumer_msgs_per_s"] = rate
        progress("library ingest without Flink")
        results["library_records_per_s"] = library_rate(env, config_path, batches)
        for i in range(args.repeat):
            progress(f"PyFlink job over the backlog, run {i + 1} of {args.repeat}")
            run_env = {**env, "MIXED_ICEBERG_INGEST_JOB": f"{run}-job{i}", "MIXED_ICEBERG_INGEST_TABLE": f"bench.orders{i}",
                       "MIXED_ICEBERG_INGEST_DLQ": f"{run}_dlq{i}", "MIXED_ICEBERG_INGEST_LOG_TOPIC": f"{run}_log{i}"}  # fmt: skip
            runs.append(backlog_job(run_env, job_args, config_path, topic, events))
            progress(json.dumps(runs[-1]))
        results.update(summarize(runs))
        progress(json.dumps(results))
        progress(f"running job: {args.running_warmup:,} warm-up events, then {args.running_runs} backlogs of {events:,}")
        running_env = {**env, "MIXED_ICEBERG_INGEST_TOPIC": f"{run}_running", "MIXED_ICEBERG_INGEST_JOB": f"{run}-running",
                       "MIXED_ICEBERG_INGEST_TABLE": "bench.running", "MIXED_ICEBERG_INGEST_DLQ": f"{run}_dlq_running",
                       "MIXED_ICEBERG_INGEST_LOG_TOPIC": f"{run}_log_running"}  # fmt: skip
        running = running_job_backlogs(running_env, job_args, config_path, events, args.running_runs, args.running_warmup)
        if args.running_warmup:
            results["running_job_warmup_change_rows_per_s"] = running.pop(0)["change_rows_per_s"]
        results.update(summarize(running, "running_job_"))
        results["running_job_change_rows_per_s (each)"] = ", ".join(f"{r['change_rows_per_s']:,.0f}" for r in running)
        results["running_job_oracle_check"] = "ok"
        progress(json.dumps(results))
        progress(f"live phase: {args.rate:,.0f} events/s for {seconds:.0f} s")
        live_topic = f"{run}_live"
        KafkaLogStore(bootstrap).ensure_topic(live_topic, 4)
        live_env = {
            **env,
            "MIXED_ICEBERG_INGEST_TOPIC": live_topic,
            "MIXED_ICEBERG_INGEST_JOB": f"{run}-live",
            "MIXED_ICEBERG_INGEST_TABLE": "bench.live",
        }
        produce(live_env, live_topic, 1000)  # warm-up: the job is running once this is committed
        live = run_job(live_env, job_args)
        try:
            os.environ.update(live_env)
            live_config = load_ingest_config(config_path)
            deadline = time.monotonic() + 300
            while not caught_up(live_config) and time.monotonic() < deadline:
                time.sleep(0.5)
            produce(live_env, live_topic, int(args.rate * seconds), rate=args.rate)
            while not caught_up(live_config) and time.monotonic() < deadline:
                time.sleep(0.5)
        finally:
            os.killpg(live.pid, signal.SIGKILL)
            live.wait()
        _, live_batches = read_all(bootstrap, live_topic)
        fresh = freshness(commit_times(load_table(live_config), live_config.job_name, live_topic), live_batches[1:])
        results["live_rate"] = args.rate
        if fresh.size:
            results["freshness_p50_ms"] = float(np.percentile(fresh, 50))
            results["freshness_p99_ms"] = float(np.percentile(fresh, 99))
        else:  # a live phase too short for a batch after the first: no freshness figure, said so
            progress("live phase: no committed event after the first batch; freshness not measured")
        results.update({f"host_{k}_end": v for k, v in host_probe().items()})
    finally:
        try:
            delete_run_topics(bootstrap, run)
        except Exception as exc:  # the figures above stand; say what was left behind
            progress(f"could not delete the topics of run {run}: {exc}")
        if started_kafka:
            kafka("stop")
    figures, notes = ingest_figures(results)
    publish(
        Run(
            "ingest",
            environment.finished(),
            figures,
            baseline="a plain confluent-kafka consumer reading the whole topic (messages/s), beside the record rates",
            config=config,
            notes=notes,
            detail={"backlog_runs": runs, "running_runs": running},
        ),
        args.output,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

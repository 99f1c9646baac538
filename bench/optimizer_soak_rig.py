"""The optimizer soak's rig: four tables, their ingest jobs and the optimizer jobs, started once and run phase by phase.

:class:`Rig` creates the tables ``soak.t0`` to ``soak.t3`` in one warehouse (SQLite catalog,
one system database), starts one ingest job per table (``jobs/ingest_cdc.py``, parallelism
1, its own topic) and one optimizer job per parallelism (``jobs/optimizer_job.py``, group
``soak-p<N>``), and keeps them running for every phase: a JVM and its Python workers take
20-90 s to start on two cores, longer than a quick phase. :meth:`Rig.phase` runs one setting:

1. reset: every table's ``self-optimizing.enabled`` off, nothing in flight, then a full
   optimizing of every table with change files (in this process), so each phase starts from
   the same layout (the live keys in the BaseStore, no change files), checked against the
   oracle; then the phase's tables are enabled in the phase's group (not for ``off``);
2. the stream: one steady producer per table (``bench.cdc_stream``) at ``rate / tables``
   events/s for ``seconds``, sampled every ``every`` s on average, jittered (live files and a
   timed merged read per table), the group's backlog polled every 0.5 s, until the writes stopped and the backlog
   drained and the ChangeStore is merged, or ``drain_timeout`` after the writes stopped;
3. the merged reads checked against the oracle: the state before the phase with every key the
   stream touched as the stream left it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from bench.harness import ROOT
from bench.ingest import broker_pid, process_cpu_seconds, tree_cpu_seconds
from bench.optimizer_soak_figures import quiet_since
from bench.streaming_jobs import delete_topics, optimizer_config, start_job, stop_jobs, wait_for_optimizers

__all__ = ["GROUP_PROPERTIES", "POLL_S", "QUIET_WINDOW_S", "REFRESH_S", "TABLE_PROPERTIES", "Rig", "Setting"]

PY = sys.executable
REFRESH_S = 2.0
GROUP_PROPERTIES = {"refresh-interval": "2s", "maintenance-interval": "0"}
TABLE_PROPERTIES = {"self-optimizing.min-plan-interval": "3000", "self-optimizing.minor.trigger.interval": "10000"}
#: The longest a due plan can wait: min-plan-interval, then the next refresh.
QUIET_WINDOW_S = int(TABLE_PROPERTIES["self-optimizing.min-plan-interval"]) / 1000 + REFRESH_S
BACKLOG_STATUSES = ("PLANNED", "SCHEDULED", "ACKED")
POLL_S = 0.5
ENABLED = "self-optimizing.enabled"

Row = tuple[Any, ...]


def progress(message: str) -> None:
    print(f"[optimizer soak] {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True, slots=True)
class Setting:
    """One phase: a stream into ``tables`` tables; ``parallelism`` optimizers serve them (0: none, optimizing off)."""

    tables: int
    parallelism: int

    @property
    def key(self) -> str:
        return f"t{self.tables}-{f'p{self.parallelism}' if self.parallelism else 'off'}"

    @property
    def label(self) -> str:
        tables = "1 table" if self.tables == 1 else f"{self.tables} tables"
        return f"{tables}, {f'parallelism {self.parallelism}' if self.parallelism else 'off'}"

    @property
    def group(self) -> str | None:
        return f"soak-p{self.parallelism}" if self.parallelism else None


@dataclass(slots=True)
class Stream:
    """One table, its CDC topic, its ingest job and the state its merged read must equal."""

    index: int
    env: Mapping[str, str]
    config: Any  # IngestConfig, pinned
    table: Any  # MixedTable
    job: subprocess.Popen[bytes] | None = None
    expected: dict[int, Row] = field(default_factory=dict)

    @property
    def topic(self) -> str:
        return self.env["MIXED_ICEBERG_INGEST_TOPIC"]

    def apply(self, oracle: Path) -> None:
        """The stream of ``oracle`` applied to ``expected``: touched keys as it left them."""
        data = json.loads(oracle.read_text())
        for key in data["touched"]:
            self.expected.pop(key, None)
        self.expected.update({int(k): (v["customer"], v["qty"], v["price"]) for k, v in data["final"].items()})

    def matches(self) -> bool:
        got = {r["id"]: (r["customer"], r["qty"], r["price"]) for r in self.table.scan().to_arrow().to_pylist()}
        return got == self.expected


@contextmanager
def patched_env(env: Mapping[str, str]) -> Iterator[None]:
    """``env`` in ``os.environ`` while the ingest config is interpolated (``${VAR}``), then the old one."""
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


class BacklogPoller:
    """(t, backlog tasks, processes in flight) of one group every ``POLL_S``, on a thread."""

    def __init__(self, db_url: str, group: str) -> None:
        from mixed_iceberg.optimizer.sysdb.database import SystemDatabase

        self.db, self.group = SystemDatabase(db_url), group
        self.polls: list[tuple[float, int, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                backlog = sum(len(self.db.tasks(group=self.group, status=s)) for s in BACKLOG_STATUSES)
                in_flight = sum(1 for t in self.db.tables(self.group) if t.process_id is not None)
                self.polls.append((time.time(), backlog, in_flight))
            except Exception:  # SQLite busy while an optimizer writes: the next poll tries again
                pass
            self._stop.wait(POLL_S)

    def __enter__(self) -> BacklogPoller:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self.db.dispose()

    @property
    def last(self) -> tuple[int, int]:
        return (self.polls[-1][1], self.polls[-1][2]) if self.polls else (0, 0)


def sample(tables: list[Any]) -> list[dict[str, Any]]:
    """Live files and one timed merged read of each table."""
    from mixed_iceberg.optimizing.collect import collect

    out = []
    for table in tables:
        table.refresh()
        collected = collect(table.handle)
        started = time.perf_counter()
        rows = table.scan().to_arrow().num_rows
        read_s = time.perf_counter() - started
        out.append(
            {
                "change_files": len(collected.change_files),
                "data_files": len(collected.data_files),
                "delete_files": len(collected.delete_files),
                "data_bytes": sum(f.data_file.file_size_in_bytes for f in collected.data_files.values()),
                "read_s": read_s,
                "rows": rows,
            }
        )
    return out


STATUS_HEADER = (
    f"{'t (s)':>6} {'change files':>12} {'base files':>10} {'delete files':>12} {'read (s)':>9} {'backlog':>8} {'in flight':>9}"
)


def status_line(t: float, tables: list[dict[str, Any]], backlog: tuple[int, int] | None) -> str:
    """One sample as the demo prints it: per table (the mean over the phase's tables)."""
    n = len(tables)
    change, data, deletes, read = (
        sum(x[k] for x in tables) / n for k in ("change_files", "data_files", "delete_files", "read_s")
    )
    queued = f"{backlog[0]:>8} {backlog[1]:>9}" if backlog is not None else f"{'-':>8} {'-':>9}"
    return f"{t:6.1f} {change:>12.1f} {data:>10.1f} {deletes:>12.1f} {read:>9.3f} {queued}"


def change_commits(table: Any, since: float = 0.0) -> list[tuple[int, int]]:
    """The ChangeStore's commits from ``since`` (epoch seconds) on: (epoch ms, files it added)."""
    table.refresh()
    out = []
    for snapshot in table.change_store.snapshots():
        if snapshot.timestamp_ms / 1000 >= since:
            summary = snapshot.summary
            added = sum(int(summary.get(k) or 0) for k in ("added-data-files", "added-delete-files")) if summary else 0
            out.append((snapshot.timestamp_ms, added))
    return out


class Rig:
    """The tables and the jobs, for every phase of one run (a context manager: the jobs stop on exit)."""

    def __init__(self, args: argparse.Namespace, bootstrap: str, run_id: str, home: Path, tables: int) -> None:
        self.args, self.bootstrap, self.run_id, self.home = args, bootstrap, run_id, home
        self.db_url = f"sqlite:///{home}/optimizer.db"
        self.env = {**os.environ, "MIXED_ICEBERG_WAREHOUSE_DIR": str(home), "MIXED_ICEBERG_KAFKA_BOOTSTRAP": bootstrap,
                    "MIXED_ICEBERG_SYSTEM_DB": self.db_url, "FLINK_LOG_DIR": str(home / "flink-log")}  # fmt: skip
        self.logs: dict[str, IO[bytes]] = {}
        self.streams = [self._create(i) for i in range(tables)]
        self.optimizers: dict[int, subprocess.Popen[bytes]] = {}
        self.phases = 0
        self.jitter = random.Random(17)

    def _create(self, i: int) -> Stream:
        from mixed_iceberg.ingest.config import load_ingest_config, pin_catalog
        from mixed_iceberg.ingest.runtime import load_table

        run = self.run_id
        env = {**self.env, "MIXED_ICEBERG_INGEST_JOB": f"{run}-t{i}", "MIXED_ICEBERG_INGEST_TABLE": f"soak.t{i}",
               "MIXED_ICEBERG_INGEST_TOPIC": f"{run}_t{i}_cdc", "MIXED_ICEBERG_INGEST_DLQ": f"{run}_t{i}_dlq",
               "MIXED_ICEBERG_INGEST_LOG_TOPIC": f"{run}_t{i}_log"}  # fmt: skip
        with patched_env(env):
            config = pin_catalog(load_ingest_config(ROOT / "conf/ingest.yaml"))
            table = load_table(config, create=True)
        table.update_properties({**TABLE_PROPERTIES, ENABLED: "false"})
        return Stream(i, env, config, table)

    def _log(self, name: str) -> IO[bytes]:
        if name not in self.logs:
            self.logs[name] = (self.home / f"{name}.log").open("ab")
        return self.logs[name]

    def _produce(self, stream: Stream, name: str, events: int, rate: float, seed: int) -> tuple[subprocess.Popen[bytes], Path]:
        oracle = self.home / f"{name}-t{stream.index}.json"
        command = [PY, "-m", "bench.cdc_stream", "--bootstrap", self.bootstrap, "--topic", stream.topic, "--events", str(events),
                   "--keys", str(self.args.keys), "--seed", str(seed), "--rate", str(rate), "--oracle", str(oracle),
                   "--ready", str(oracle.with_suffix(".ready"))]  # fmt: skip
        return start_job(command, self.env, self._log(f"producer-t{stream.index}")), oracle

    def _wait_ready(self, producers: list[tuple[subprocess.Popen[bytes], Path]]) -> float:
        """When the last producer sent its first event (epoch seconds): a producer's interpreter takes
        seconds to start on a busy machine, and the phase's clock starts with the stream itself."""
        deadline = time.monotonic() + 60
        while True:
            ready = [o.with_suffix(".ready") for _, o in producers]
            if all(r.exists() and r.read_text() for r in ready):
                return max(float(r.read_text()) for r in ready)
            if any(p.poll() not in (None, 0) for p, _ in producers) or time.monotonic() > deadline:
                raise RuntimeError(f"a producer did not start; see {self.home}/producer-t*.log")
            time.sleep(0.05)

    def _jobs(self) -> list[tuple[str, subprocess.Popen[bytes]]]:
        optimizers = [(f"optimizer p{p}", job) for p, job in self.optimizers.items()]
        return [*optimizers, *((f"ingest t{s.index}", s.job) for s in self.streams if s.job is not None)]

    def _check_jobs(self) -> None:
        for name, job in self._jobs():
            if job.poll() is not None:
                raise RuntimeError(f"the {name} job exited ({job.returncode}); see {self.home}")

    def _caught_up(self, streams: list[Stream]) -> bool:
        from mixed_iceberg.ingest.job import caught_up

        return all(caught_up(s.config) for s in streams)

    def _wait_caught_up(self, streams: list[Stream], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self._caught_up(streams):
            self._check_jobs()
            if time.monotonic() > deadline:
                raise RuntimeError(f"the ingest jobs did not catch up within {timeout:.0f} s; see {self.home}")
            time.sleep(0.5)

    # -- lifetime ----------------------------------------------------------------------------------

    def __enter__(self) -> Rig:
        return self

    def __exit__(self, *_: object) -> None:
        stop_jobs([job for _, job in self._jobs()])
        for log in self.logs.values():
            log.close()
        delete_topics(self.bootstrap, (self.run_id, f"mixed-iceberg-wakeup.{self.run_id}"))

    def start(self, parallelisms: list[int]) -> dict[str, float]:
        """Every job up and warm: the optimizers registered, every ingest job through a warm-up stream."""
        started = time.monotonic()
        groups = {f"soak-p{p}": GROUP_PROPERTIES for p in parallelisms}
        conf = optimizer_config(self.home / "optimizer.yaml", groups)
        for p in parallelisms:
            command = [PY, "jobs/optimizer_job.py", "--config", str(conf), "--group", f"soak-p{p}", "--parallelism", str(p)]
            self.optimizers[p] = start_job(command, self.env, self._log(f"optimizer-p{p}"))
        command = [PY, "jobs/ingest_cdc.py", "--progress-interval", "0", "--set", "parallelism=1"]
        for s in self.streams:
            s.job = start_job(command, s.env, self._log(f"ingest-t{s.index}"))
        first = [self._produce(s, "first", 100, 0, 900 + s.index) for s in self.streams]
        for s, (producer, oracle) in zip(self.streams, first, strict=True):
            producer.wait(60)
            s.apply(oracle)
        self._wait_caught_up(self.streams, 300)
        for p, job in self.optimizers.items():
            wait_for_optimizers(self.db_url, f"soak-p{p}", p, job)
        up = time.monotonic() - started
        progress(f"jobs up after {up:.0f} s; warm-up stream of {self.args.warmup_seconds:.0f} s into every table")
        rate = self.args.rate / len(self.streams)
        warm = [self._produce(s, "warmup", int(rate * self.args.warmup_seconds), rate, 800 + s.index) for s in self.streams]
        for s, (producer, oracle) in zip(self.streams, warm, strict=True):
            producer.wait(self.args.warmup_seconds + 60)
            s.apply(oracle)
        self._wait_caught_up(self.streams, 120)
        return {"startup_s": up, "warm_s": time.monotonic() - started - up}

    # -- one phase ---------------------------------------------------------------------------------

    def reset(self, setting: Setting) -> dict[str, Any]:
        """Optimizing off everywhere, every table merged by a full optimizing here, then the phase's group on."""
        from mixed_iceberg.config.registry import BASE_HASH_BUCKET
        from mixed_iceberg.optimizer.sysdb.database import SystemDatabase
        from mixed_iceberg.optimizing.collect import collect

        started = time.monotonic()
        for s in self.streams:
            s.table.update_properties({ENABLED: "false"})
        db = SystemDatabase(self.db_url)
        try:  # a phase that timed out may leave a process in flight: let it commit first
            while any(t.process_id is not None for t in db.tables()) and time.monotonic() - started < 60:
                time.sleep(0.5)
        finally:
            db.dispose()
        for s in self.streams:
            s.table.refresh()
            collected = collect(s.table.handle)
            buckets = BASE_HASH_BUCKET.read(s.table.properties)
            if collected.change_files or collected.delete_files or len(collected.data_files) > buckets:
                s.table.optimizing.run("full")
        ok = [s.matches() for s in self.streams]
        if setting.group is not None:
            for s in self.streams[: setting.tables]:
                s.table.update_properties({ENABLED: "true", "self-optimizing.group": setting.group})
        return {"reset_s": time.monotonic() - started, "oracle_ok_before": ok}

    def _cpu(self, setting: Setting, broker: int | None) -> dict[str, float]:
        active = self.streams[: setting.tables]
        idle_ingest = [s.job.pid for s in self.streams[setting.tables :] if s.job is not None]
        idle_optimizers = [job.pid for p, job in self.optimizers.items() if p != setting.parallelism]
        ours = self.optimizers.get(setting.parallelism)
        return {
            "optimizer": tree_cpu_seconds(ours.pid) if ours is not None else 0.0,
            "ingest": sum(tree_cpu_seconds(s.job.pid) for s in active if s.job is not None),
            "idle_jobs": sum(tree_cpu_seconds(pid) for pid in (*idle_ingest, *idle_optimizers)),
            "bench": time.process_time(),
            "broker": process_cpu_seconds(broker) if broker else 0.0,
        }

    def phase(self, setting: Setting) -> dict[str, Any]:
        """One setting's stream, sampled; its raw measurements."""
        self.phases += 1
        result: dict[str, Any] = {"setting": setting.key, "label": setting.label, "tables": setting.tables,
                                  "parallelism": setting.parallelism, "group": setting.group, "refresh_s": REFRESH_S,
                                  "quiet_window_s": QUIET_WINDOW_S, "poll_s": POLL_S, **self.reset(setting)}  # fmt: skip
        streams = self.streams[: setting.tables]
        rate = self.args.rate / setting.tables
        events = int(rate * self.args.seconds)
        result.update(rate_per_table=rate, events_per_table=events)
        progress(f"{setting.label}: streaming {events:,} events per table at {rate:,.0f}/s")
        broker = broker_pid()
        cpu0 = self._cpu(setting, broker)
        poller = BacklogPoller(self.db_url, setting.group) if setting.group is not None else None
        samples: list[dict[str, Any]] = []
        producers = [self._produce(s, f"phase{self.phases}", events, rate, 1000 * self.phases + s.index) for s in streams]
        t0 = self._wait_ready(producers)
        stream_end = t_stop = None
        next_sample = t0
        print(f"\n{setting.label} (per table)\n{STATUS_HEADER}", file=sys.stderr, flush=True)
        with poller if poller is not None else nullcontext():
            while True:
                now = time.time()
                self._check_jobs()
                if stream_end is None and all(p.poll() is not None for p, _ in producers):
                    # the last event was out once the producer's flush returned (its oracle's visible_ms)
                    stream_end = max(json.loads(o.read_text())["visible_ms"] for _, o in producers) / 1000
                if stream_end is not None and t_stop is None and self._caught_up(streams):
                    t_stop = max(max((ms for ms, _ in change_commits(s.table)), default=0) for s in streams) / 1000
                    progress(f"{setting.label}: writes stopped {t_stop - t0:.1f} s after the stream started")
                if now >= next_sample:
                    tables = sample([s.table for s in streams])
                    samples.append({"t": now - t0, "tables": tables})
                    print(status_line(now - t0, tables, poller.last if poller else None), file=sys.stderr, flush=True)
                    # jittered (0.5x to 1.5x): a fixed period near half the plan cycle (about 4 s) sampled
                    # every table at the same point of its cycle, always just before or just after a minor
                    next_sample = now + self.args.every * self.jitter.uniform(0.5, 1.5)
                    if t_stop is not None:
                        if poller is None:  # optimizing off: nothing drains
                            break
                        merged = all(x["change_files"] == 0 for x in tables)
                        drained = quiet_since(poller.polls, t_stop, QUIET_WINDOW_S, POLL_S) is not None
                        if (merged and drained) or now - t_stop > self.args.drain_timeout:
                            break
                if now - t0 > self.args.seconds + 240:
                    raise RuntimeError(f"{setting.label}: the tables did not catch up within 240 s; see {self.home}")
                time.sleep(0.25)
        spent = self._cpu(setting, broker)
        spent["producers"] = sum(json.loads(oracle.read_text())["cpu_s"] for _, oracle in producers)
        cpu0["producers"] = 0.0
        for s, (_, oracle) in zip(streams, producers, strict=True):
            s.apply(oracle)
        commits = [c for s in streams for c in change_commits(s.table, t0)]
        result.update(
            t0=t0,
            wall_s=time.time() - t0,
            stream_end_s=stream_end - t0 if stream_end else None,
            writes_stopped_s=t_stop - t0 if t_stop else None,
            samples=samples,
            polls=[(t - t0, b, f) for t, b, f in poller.polls] if poller else [],
            cpu_s={k: spent[k] - cpu0[k] for k in spent},
            oracle_ok=[s.matches() for s in streams],
            change_commits=len(commits),
            change_files_written=sum(added for _, added in commits),
            properties=dict(streams[0].table.properties),
        )
        if setting.group is not None:
            result["processes"] = self.processes(setting.group, t0)
        return result

    def processes(self, group: str, t0: float) -> list[dict[str, Any]]:
        """The group's optimizing processes planned since ``t0``, times relative to it."""
        from mixed_iceberg.optimizer.sysdb.database import SystemDatabase

        db = SystemDatabase(self.db_url)
        try:
            task_ms: dict[int, int] = {}
            task_ends: dict[int, list[float | None]] = {}
            for task in db.tasks(group=group):
                task_ms[task.process_id] = task_ms.get(task.process_id, 0) + task.duration_ms
                end = task.finished_ms / 1000 - t0 if task.finished_ms else None
                task_ends.setdefault(task.process_id, []).append(end)
            return [
                {"table": p.table_id, "type": p.type.value, "status": p.status.value, "planned_s": p.planned_ms / 1000 - t0,
                 "finished_s": p.finished_ms / 1000 - t0 if p.finished_ms else None, "tasks": p.task_count,
                 "rows_in": p.rows_in, "rows_out": p.rows_out, "bytes_in": p.bytes_in, "bytes_out": p.bytes_out,
                 "task_ms": task_ms.get(p.process_id, 0), "task_finished_s": task_ends.get(p.process_id, [])}
                for p in db.processes(group=group)
                if p.planned_ms / 1000 >= t0
            ]  # fmt: skip
        finally:
            db.dispose()

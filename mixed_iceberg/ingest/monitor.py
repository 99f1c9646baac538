"""The ingest client's watch over a running job: progress lines, failures and restarts, caught-up.

Runs in the job's client process beside the job (on 2 cores), so every poll is cheap: one
ChangeStore refresh (the committed offsets and the new snapshots' summaries come from the
same metadata), one watermark query of the source topic and, with a LogStore or a dead-letter
topic, one fetch of the LogStore writers' committed positions (not a stable fetch: that would
block while a writer's transaction is open). :class:`TableProbe` turns that into a
:class:`~mixed_iceberg.ingest.progress.JobState`; :mod:`~mixed_iceberg.ingest.progress` does
the arithmetic and the formatting.

Flink's restart strategy restarts a failed subtask without telling the client, and PyFlink's
``JobClient`` only has the job's status. So :class:`FlinkRest` asks the cluster's REST API
for the job's ``numRestarts`` metric every poll and, when it grew, for the newest entry of the
job's exception history, which :func:`~mixed_iceberg.flink_job.failure_cause` shortens
to a line. The endpoint is the one the client chose for its local mini-cluster
(:func:`local_rest_settings`) or, under ``flink run``, the cluster's (``rest.address`` and
``rest.port`` of ``$FLINK_CONF_DIR/config.yaml``).
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, replace
from itertools import islice
from pathlib import Path
from typing import Any

import yaml

from mixed_iceberg.catalog.config import flatten
from mixed_iceberg.flink_job import TERMINAL, JobClient, failure_cause, job_status
from mixed_iceberg.ingest.config import IngestConfig
from mixed_iceberg.ingest.progress import (
    CommitRecord,
    JobState,
    PartitionState,
    ReportLines,
    commit_record,
    format_report,
    progress,
)
from mixed_iceberg.ingest.runtime import load_table
from mixed_iceberg.ingest.writer import commit_writer_id, committed_offsets, log_position_group
from mixed_iceberg.logstore.kafka import KafkaLogStore
from mixed_iceberg.store.ancestry import ancestors
from mixed_iceberg.store.commit import COMMIT_WRITER
from mixed_iceberg.table import MixedTable

__all__ = ["FlinkRest", "TableProbe", "WatchOptions", "local_rest_settings", "rest_url", "watch"]

log = logging.getLogger(__name__)
#: The progress lines (``--quiet`` raises this logger to WARNING).
progress_log = logging.getLogger("mixed_iceberg.ingest.progress")

#: Snapshots looked at, newest first, for each partition's last commit when the watch starts.
_HISTORY = 1000


class TableProbe:
    """Reads the job's progress from the table, the source topic and the LogStore positions."""

    def __init__(self, config: IngestConfig) -> None:
        self.config = config
        self._table: MixedTable | None = None
        self._seen: int | None = None  # the newest ChangeStore snapshot already accounted for
        self._partitions: dict[int, PartitionState] = {}
        self.started_at = time.monotonic()
        self._kafka = KafkaLogStore(config.source.bootstrap_servers)  # its clients reused poll after poll
        self._log_store: KafkaLogStore | None = None

    @property
    def table(self) -> MixedTable:
        if self._table is None:
            self._table = load_table(self.config)
        return self._table

    @property
    def with_log(self) -> bool:
        return bool(self.table.config.layout.log_store_enabled or self.config.dead_letter_topic)

    def state(self, *, status: str = "RUNNING", restarts: int = 0) -> JobState:
        """One poll: the partitions' positions and the commits made since the last poll."""
        config, source = self.config, self.config.source
        marks = self._kafka.watermarks(source.topic)
        partitions = sorted(marks)
        table_next = committed_offsets(self.table, config.job_name, source.topic, partitions)  # refreshes
        log_next: dict[int, int | None] = dict.fromkeys(partitions)
        if self.with_log:
            if self._log_store is None:
                self._log_store = KafkaLogStore(self.table.config.layout.log_store_address or source.bootstrap_servers)
            group = log_position_group(config.job_name)
            log_next = self._log_store.committed_positions(group, source.topic, partitions, stable=False)
        records = self._new_commits(partitions)
        first = self._seen is None
        for p in partitions:
            old = self._partitions.get(p) or PartitionState(p, *marks[p], None)
            mine = [r for r in records if r.partition == p]
            state = replace(old, low=marks[p][0], high=marks[p][1], table_next=table_next[p], log_next=log_next[p])
            if first:  # commits from before the watch: not counted, only when each partition last committed
                newest = state.with_commits(mine[-1:])
                state = replace(
                    state,
                    last_commit_ms=newest.last_commit_ms,
                    freshness_p50_ms=newest.freshness_p50_ms,
                    freshness_p99_ms=newest.freshness_p99_ms,
                )
            else:
                state = state.with_commits(mine)
            self._partitions[p] = state
        store = self.table.change_store
        assert store is not None  # committed_offsets checked it
        current = store.metadata.current_snapshot()
        self._seen = current.snapshot_id if current is not None else -1
        return JobState(
            job=config.job_name,
            at=time.monotonic(),
            now_ms=time.time() * 1000,
            partitions=tuple(self._partitions[p] for p in partitions),
            with_log=self.with_log,
            status=status,
            restarts=restarts,
            started_at=self.started_at,
        )

    def close(self) -> None:
        """Close the Kafka clients of the probe."""
        self._kafka.close()
        if self._log_store is not None:
            self._log_store.close()

    def _new_commits(self, partitions: list[int]) -> list[CommitRecord]:
        """The job's commits in the ChangeStore snapshots after the last poll's, oldest first."""
        store = self.table.change_store
        assert store is not None
        metadata = store.metadata
        writers = {commit_writer_id(self.config.job_name, self.config.source.topic, p) for p in partitions}
        out = []
        chain = ancestors(metadata)
        for snapshot in islice(chain, _HISTORY) if self._seen is None else chain:
            if snapshot.snapshot_id == self._seen:
                break
            summary = snapshot.summary
            if summary is not None and summary.get(COMMIT_WRITER) in writers:
                record = commit_record(summary, snapshot.timestamp_ms, self.config.source.topic)
                if record is not None:
                    out.append(record)
        out.reverse()
        return out

    def caught_up(self, state: JobState) -> bool:
        """Whether table (and LogStore) hold every record of the source (see :func:`~mixed_iceberg.ingest.job.caught_up`)."""
        behind = state.behind()
        return not behind or not self._kafka.readable_from(self.config.source.topic, behind)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def local_rest_settings(flink: Mapping[str, str]) -> dict[str, str]:
    """The REST settings a local mini-cluster gets, so the client knows where to ask: a free port
    on 127.0.0.1 (the mini-cluster's default is a random port, on every interface). A port the
    config's ``flink`` section sets is kept."""
    if "rest.bind-port" in flink or "rest.port" in flink:
        return {}
    port = str(_free_port())
    return {"rest.bind-address": "127.0.0.1", "rest.address": "127.0.0.1", "rest.bind-port": port, "rest.port": port}


def rest_url(settings: Mapping[str, str], environ: Mapping[str, str] = os.environ) -> str | None:
    """The REST API of the cluster the job runs on (None: not known).

    Under ``flink run`` (PyFlink's gateway is the CLI's: ``PYFLINK_GATEWAY_PORT``) the cluster's,
    from ``$FLINK_CONF_DIR/config.yaml``; locally the mini-cluster's, from ``settings``.
    """
    if "PYFLINK_GATEWAY_PORT" in environ:
        conf_dir = environ.get("FLINK_CONF_DIR")
        path = Path(conf_dir) / "config.yaml" if conf_dir else None
        if path is None or not path.is_file():
            return None
        settings = flatten(yaml.safe_load(path.read_text()) or {})
        host, port = settings.get("rest.address", "localhost"), settings.get("rest.port", "8081")
    else:
        host = settings.get("rest.address", "localhost")
        port = settings.get("rest.port", settings.get("rest.bind-port", ""))
    return f"http://{host}:{port}" if port.isdigit() else None


@dataclass(frozen=True, slots=True)
class Failure:
    """One failure of a job: when (the cluster's clock, ms), which subtask and why (one line)."""

    timestamp_ms: int
    subtask: str
    cause: str


class FlinkRest:
    """The few REST calls the watch needs (``urllib``; each times out after ``timeout`` seconds).

    Failures are told apart by their timestamps in the exception history, which the REST API
    serves from the live job (cached for ``web.refresh-interval``, 3 s); the ``numRestarts``
    metric also counts a failure the history no longer shows, but it comes from the metric
    fetcher, up to ``metrics.fetcher.update-interval`` (10 s) late.
    """

    def __init__(self, url: str, *, timeout: float = 3.0) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout

    def _get(self, path: str) -> Any:
        with urllib.request.urlopen(f"{self.url}{path}", timeout=self.timeout) as response:
            return json.load(response)

    def restarts(self, job_id: str) -> int | None:
        """The job's ``numRestarts`` (None: not reported yet)."""
        found = self._get(f"/jobs/{job_id}/metrics?get=numRestarts")
        values = [int(m["value"]) for m in found if m.get("id") == "numRestarts" and str(m.get("value")).isdigit()]
        return values[0] if values else None

    def latest_failure(self, job_id: str) -> Failure | None:
        """The newest entry of the job's exception history."""
        history = self._get(f"/jobs/{job_id}/exceptions?maxExceptions=1").get("exceptionHistory") or {}
        entries = history.get("entries") or []
        if not entries:
            return None
        entry = entries[0]
        # "Source: cdc[1] -> ... -> discard[4]: Writer (1/2) - execution #0": which of the subtasks.
        task = str(entry.get("taskName") or "")
        found = re.search(r"\((\d+/\d+)\)", task)
        subtask = found[1] if found else task or "(the job)"
        trace = str(entry.get("stacktrace") or entry.get("exceptionName"))
        return Failure(timestamp_ms=int(entry.get("timestamp") or 0), subtask=subtask, cause=failure_cause(trace))


def _await_failure(rest: FlinkRest, job_id: str, *, after: Failure | None, timeout: float = 5.0) -> Failure | None:
    """The job's newest failure once its exception history holds one newer than ``after``."""
    deadline = time.monotonic() + timeout
    while True:
        found = rest.latest_failure(job_id)
        if found is not None and (after is None or found.timestamp_ms > after.timestamp_ms):
            return found
        if time.monotonic() > deadline:
            return None
        time.sleep(0.25)


@dataclass(frozen=True, slots=True)
class WatchOptions:
    """How the client watches: see ``python jobs/ingest_cdc.py --help``."""

    until_caught_up: bool = False
    timeout: float = 0.0
    progress_interval: float = 5.0
    max_restarts: int = 5
    poll_interval: float = 1.0

    def __post_init__(self) -> None:
        if self.progress_interval < 0 or self.timeout < 0 or self.max_restarts < 0 or self.poll_interval <= 0:
            raise ValueError(f"watch options: expected non-negative intervals and limits, found {self}")


def _final_failure(client: JobClient, rest: FlinkRest | None, job_id: str, last: Failure | None) -> str:
    """Why a FAILED job failed: the exception history if the REST API still answers, else the
    execution result's exception (a local mini-cluster shuts down with its job)."""
    if rest is not None:
        try:
            found = rest.latest_failure(job_id)
            if found is not None:
                return found.cause
        except (OSError, ValueError):
            pass
    try:
        client.get_job_execution_result().result()
    except Exception as exc:  # the job's boundary: a Py4J error carrying the Java trace
        return failure_cause(str(exc))
    return last.cause if last is not None else "no failure reported"


def watch(client: JobClient, probe: TableProbe, rest: FlinkRest | None, options: WatchOptions) -> int:
    """Watch a submitted job until it ends (or, ``until_caught_up``, until it caught up); the exit code.

    Logs a progress report every ``progress_interval`` seconds (0: none), an ERROR line per
    failure of a subtask (its cause in one line), and returns 1 when the job fails, restarts
    more than ``max_restarts`` times, or does not catch up within ``timeout``. The caller
    cancels the job.
    """
    job, job_id = probe.config.job_name, str(client.get_job_id())
    log.info("%s: watching Flink job %s", job, job_id)
    if rest is None:
        log.warning("%s: no REST address for the job's cluster: failures and restarts are not reported here", job)
    reported = probe.state()
    reports = ReportLines()
    last_failure: Failure | None = None
    restarts = 0
    while True:
        status = job_status(client)
        if status in TERMINAL:
            if status == "FINISHED" and not options.until_caught_up:
                # Return only with the job's result, as env.execute() does (it is there already
                # once the status says FINISHED; the cluster's REST view may lag by a few seconds).
                client.get_job_execution_result().result()
                log.info("%s: job finished after %.1f s", job, time.monotonic() - probe.started_at)
                return 0
            cause = _final_failure(client, rest, job_id, last_failure) if status == "FAILED" else status
            log.error(
                "%s: job ended (%s) before %s: %s",
                job,
                status,
                "catching up" if options.until_caught_up else "being cancelled",
                cause,
            )
            return 1
        if rest is not None:
            try:
                failure = rest.latest_failure(job_id)
                seen = failure is not None and (last_failure is None or failure.timestamp_ms > last_failure.timestamp_ms)
                count = max(restarts + seen, rest.restarts(job_id) or 0)
                if count > restarts and not seen:
                    # Flink counts the restart before its exception history has the entry.
                    failure = _await_failure(rest, job_id, after=last_failure)
                    seen = failure is not None
                if count > restarts:
                    last_failure = failure if seen else last_failure
                    cause = last_failure.cause if last_failure else "no exception reported"
                    subtask = last_failure.subtask if last_failure else "a subtask"
                    log.error(
                        "%s: subtask %s failed, restart %d (at most %d): %s", job, subtask, count, options.max_restarts, cause
                    )
                    restarts = count
            except (OSError, ValueError) as exc:  # not up yet, or gone with the job: the status says which
                log.debug("%s: REST API at %s: %s", job, rest.url, exc)
        if restarts > options.max_restarts:
            log.error(
                "%s: restarted %d times (more than %d); giving up: %s",
                job,
                restarts,
                options.max_restarts,
                last_failure.cause if last_failure else "no exception reported",
            )
            return 1
        due = options.progress_interval and time.monotonic() - reported.at >= options.progress_interval
        if options.until_caught_up or due:
            state = probe.state(status=status, restarts=restarts)
            if due:
                lines = reports.lines(progress(reported, state), since_s=reported.at)
                for line in lines:
                    progress_log.info("%s", line)
                reported = state
            if options.until_caught_up and probe.caught_up(state):
                if options.progress_interval and not due:
                    for line in format_report(progress(reported, state)):  # the final state, once
                        progress_log.info("%s", line)
                log.info("caught up after %.1f s; cancelling the job", time.monotonic() - probe.started_at)
                return 0
        if options.timeout and time.monotonic() - probe.started_at > options.timeout:
            log.error(
                "%s: %s after %.0f s; cancelling",
                job,
                "not caught up" if options.until_caught_up else "--timeout",
                options.timeout,
            )
            return 1
        time.sleep(options.poll_interval)

"""IngestRuntime buffers records per partition and commits a partition when it is due."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pytest

pytest.importorskip("confluent_kafka", reason="the kafka extra: mixed_iceberg.ingest.runtime imports the Kafka backend")

from mixed_iceberg.exceptions import WriterFailedError
from mixed_iceberg.ingest.buffering import WAKEUP_PARTITION
from mixed_iceberg.ingest.config import IngestConfig
from mixed_iceberg.ingest.runtime import IngestRuntime
from mixed_iceberg.ingest.writer import committed_offsets
from mixed_iceberg.logstore.kafka import KafkaLogStore


def _config(tmp_path: Path, **overrides: object) -> IngestConfig:
    return IngestConfig.model_validate(
        {
            "job-name": "buffered",
            "catalog": "local",
            "table": "db.orders",
            "source": {"bootstrap-servers": "unused:9092", "topic": "src"},
            "commit-interval-ms": 100,
            "create-table": {
                "columns": [{"name": "id", "type": "long", "required": True}, {"name": "qty", "type": "int"}],
                "primary-key": ["id"],
            },
            **overrides,
        }
    )


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> IngestRuntime:
    monkeypatch.setenv("MIXED_ICEBERG_WAREHOUSE_DIR", str(tmp_path))
    from mixed_iceberg.ingest.runtime import load_table

    load_table(_config(tmp_path), create=True)
    return IngestRuntime(_config(tmp_path))


def _records(partitions: list[int], first_id: int = 0) -> tuple[np.ndarray, np.ndarray, pa.Array]:
    messages = [
        json.dumps({"before": None, "after": {"id": first_id + i, "qty": i}, "op": "c"}).encode() for i in range(len(partitions))
    ]
    parts = np.asarray(partitions, np.int32)
    offsets = np.zeros(len(parts), np.int64)
    for p in set(partitions):  # consecutive offsets per partition, as Kafka hands them out
        offsets[parts == p] = np.arange(int((parts == p).sum()))
    return parts, offsets, pa.array(messages, pa.binary())


def _next(runtime: IngestRuntime) -> dict[int, int | None]:
    return committed_offsets(runtime.table, "buffered", "src", [0, 1])


def test_records_wait_for_the_commit_interval_then_each_partition_commits_once(runtime: IngestRuntime) -> None:
    parts, offsets, values = _records([0, 1, 0, 0, 1])
    runtime.buffer(parts[:2], offsets[:2], values.slice(0, 2))
    runtime.buffer(parts[2:], offsets[2:], values.slice(2))
    assert _next(runtime) == {0: None, 1: None}
    time.sleep(0.15)
    runtime.flush_due()
    assert _next(runtime) == {0: 3, 1: 2}
    assert runtime.metrics.commits == 2
    assert runtime.table.refresh().scan().to_arrow().num_rows == 5
    runtime.close()


def test_a_partition_commits_early_at_commit_max_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MIXED_ICEBERG_WAREHOUSE_DIR", str(tmp_path))
    from mixed_iceberg.ingest.runtime import load_table

    config = _config(tmp_path, **{"commit-interval-ms": 60_000, "commit-max-records": 3})
    load_table(config, create=True)
    runtime = IngestRuntime(config)
    parts, offsets, values = _records([0, 1, 0, 0])
    runtime.buffer(parts, offsets, values)
    assert _next(runtime) == {0: 3, 1: None}  # partition 1 keeps waiting
    runtime.close()


def test_the_committer_commits_while_no_records_arrive(runtime: IngestRuntime) -> None:
    runtime.start_committer()
    parts, offsets, values = _records([1, 1])
    runtime.buffer(parts, offsets, values)
    deadline = time.monotonic() + 5
    while _next(runtime)[1] is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _next(runtime) == {0: None, 1: 2}
    runtime.close()


def test_close_commits_what_is_buffered(runtime: IngestRuntime) -> None:
    parts, offsets, values = _records([0])
    runtime.buffer(parts, offsets, values)
    assert _next(runtime) == {0: None, 1: None}
    runtime.close()
    assert _next(runtime) == {0: 1, 1: None}


def _wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def _fail_background_commits(
    runtime: IngestRuntime, monkeypatch: pytest.MonkeyPatch, partitions: list[int]
) -> list[tuple[str, str]]:
    """Buffer records of ``partitions`` with every commit failing; returns the (bootstrap, topic)
    wake-ups the committer sent once its commit failed."""
    wakeups: list[tuple[str, str]] = []
    monkeypatch.setattr(KafkaLogStore, "send_wakeups", lambda store, topic: wakeups.append((store.bootstrap, topic)))

    def failing_commit(
        partition: int, offsets: npt.NDArray[np.int64], values: pa.Array, *, received_ms: int | None = None
    ) -> None:
        raise OSError("injected commit failure")

    monkeypatch.setattr(runtime, "ingest", failing_commit)
    runtime.start_committer()
    parts, offsets, values = _records(partitions)
    runtime.buffer(parts, offsets, values)
    _wait_for(lambda: bool(wakeups))
    return wakeups


def test_a_failed_background_commit_wakes_the_job_and_fails_the_next_call(
    runtime: IngestRuntime, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    wakeups = _fail_background_commits(runtime, monkeypatch, [1, 1])
    assert wakeups == [("unused:9092", "mixed-iceberg-wakeup.buffered")]
    assert "background commit failed" in caplog.text
    assert "injected commit failure" in caplog.text
    # A wake-up message alone (partition -1) makes the function raise: the subtask fails.
    with pytest.raises(WriterFailedError, match="failing this writer") as raised:
        runtime.buffer(np.array([WAKEUP_PARTITION], np.int32), np.zeros(1, np.int64), pa.array([b""], pa.binary()))
    assert isinstance(raised.value.__cause__, OSError)
    runtime.close()  # commits nothing after a failure (and does not raise it twice)
    assert _next(runtime) == {0: None, 1: None}


def test_close_raises_a_background_failure_that_no_call_has_raised(
    runtime: IngestRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A bounded source may reach its end (close) before a wake-up reaches the function.
    _fail_background_commits(runtime, monkeypatch, [0])
    with pytest.raises(WriterFailedError, match="not committed"):
        runtime.close()
    assert _next(runtime) == {0: None, 1: None}


def test_wakeup_records_are_ignored_by_a_healthy_writer(runtime: IngestRuntime) -> None:
    parts, offsets, values = _records([0, 0])
    runtime.buffer(np.array([WAKEUP_PARTITION], np.int32), np.zeros(1, np.int64), pa.array([b""], pa.binary()))
    runtime.buffer(parts, offsets, values)
    runtime.close()
    assert _next(runtime) == {0: 2, 1: None}
    assert runtime.metrics.records_in == 2

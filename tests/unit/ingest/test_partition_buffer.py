"""PartitionBuffer: when partitions are due, where they commit, in what order, and what a failure stops.

The commit function here records what it is handed; nothing touches a table or Kafka.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pytest

from mixed_iceberg.exceptions import WriterFailedError
from mixed_iceberg.ingest.buffering import WAKEUP_PARTITION, DueBatch, PartitionBuffer


class Recorder:
    """A commit function: records (partition, offsets, thread name); may block or fail on demand."""

    def __init__(self) -> None:
        self.commits: list[tuple[int, list[int], str]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.started = threading.Event()
        self.fail_when: Callable[[DueBatch], bool] = lambda batch: False
        self._lock = threading.Lock()

    def __call__(self, batch: DueBatch) -> None:
        self.started.set()
        assert self.gate.wait(10), "the test never opened the gate"
        if self.fail_when(batch):
            raise OSError(f"injected failure of partition {batch.partition}")
        with self._lock:
            self.commits.append((batch.partition, batch.offsets.tolist(), threading.current_thread().name))

    def offsets(self, partition: int) -> list[int]:
        return [o for p, offsets, _ in self.commits if p == partition for o in offsets]


def _add(buffer: PartitionBuffer, partitions: list[int], first_offsets: dict[int, int] | None = None) -> None:
    """Records of ``partitions``, offsets counting up per partition from ``first_offsets``."""
    parts = np.asarray(partitions, np.int32)
    offsets = np.zeros(len(parts), np.int64)
    for p in set(partitions):
        start = (first_offsets or {}).get(p, 0)
        offsets[parts == p] = np.arange(start, start + int((parts == p).sum()))
    values = pa.array([f"{p}@{o}".encode() for p, o in zip(partitions, offsets.tolist(), strict=True)], pa.binary())
    buffer.add(parts, offsets, values)


def _wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def test_inline_a_partition_waits_for_the_interval_and_commits_its_records_once_in_order() -> None:
    commit = Recorder()
    buffer = PartitionBuffer(commit, interval_s=0.05, max_records=1000)
    _add(buffer, [0, 1, 0])
    _add(buffer, [0], {0: 2})
    assert commit.commits == []
    time.sleep(0.06)
    buffer.flush_due()
    assert sorted((p, o) for p, o, _ in commit.commits) == [(0, [0, 1, 2]), (1, [0])]
    buffer.close()
    assert len(commit.commits) == 2


def test_a_partition_is_due_at_max_records_and_values_stay_with_their_offsets() -> None:
    commit = Recorder()
    seen: list[DueBatch] = []
    buffer = PartitionBuffer(lambda b: (seen.append(b), commit(b)), interval_s=60, max_records=3)
    _add(buffer, [0, 1, 0, 0])
    assert [(b.partition, b.offsets.tolist(), b.values.to_pylist()) for b in seen] == [(0, [0, 1, 2], [b"0@0", b"0@1", b"0@2"])]
    buffer.close()  # partition 1 commits at close
    assert commit.offsets(1) == [0]


def test_batches_of_one_partition_are_kept_whole_and_mixed_ones_split() -> None:
    seen: list[DueBatch] = []
    buffer = PartitionBuffer(seen.append, interval_s=60, max_records=4)
    _add(buffer, [2, 2])  # one partition: kept as it came
    _add(buffer, [2, WAKEUP_PARTITION, 3, 2], {2: 2})  # mixed: split per partition, wake-ups dropped
    assert [(b.partition, b.offsets.tolist(), b.values.to_pylist()) for b in seen] == [
        (2, [0, 1, 2, 3], [b"2@0", b"2@1", b"2@2", b"2@3"])
    ]
    buffer.close()
    assert [(b.partition, b.values.to_pylist()) for b in seen[1:]] == [(3, [b"3@0"])]


def test_in_the_background_add_returns_while_a_commit_is_still_running() -> None:
    commit = Recorder()
    commit.gate.clear()
    buffer = PartitionBuffer(commit, interval_s=60, max_records=2)
    buffer.start()
    _add(buffer, [0, 0])  # due at once; its commit blocks on the gate
    assert commit.started.wait(5)
    _add(buffer, [1])  # returns although partition 0's commit has not finished
    assert commit.commits == []
    commit.gate.set()
    buffer.close()
    assert commit.offsets(0) == [0, 1]
    assert commit.offsets(1) == [0]


def test_partitions_spread_over_the_threads_and_each_keeps_its_order() -> None:
    commit = Recorder()
    buffer = PartitionBuffer(commit, interval_s=60, max_records=5, threads=2)
    buffer.start()
    rng = np.random.default_rng(7)
    next_offset = dict.fromkeys((0, 2, 4, 6), 0)
    for _ in range(60):
        partitions = rng.choice([0, 2, 4, 6], size=int(rng.integers(1, 12))).tolist()
        _add(buffer, partitions, dict(next_offset))
        for p in partitions:
            next_offset[p] += 1
    buffer.close()
    for p, count in next_offset.items():
        assert commit.offsets(p) == list(range(count)), f"partition {p} out of order or incomplete"
    threads = {p: {name for q, _, name in commit.commits if q == p} for p in next_offset}
    assert all(len(names) == 1 for names in threads.values()), threads  # a partition never changes thread
    assert len(set.union(*threads.values())) == 2  # partitions 0, 2, 4, 6 are not all on one thread


def test_add_waits_while_too_many_records_are_in_flight() -> None:
    commit = Recorder()
    commit.gate.clear()
    buffer = PartitionBuffer(commit, interval_s=60, max_records=2, max_in_flight=4)
    buffer.start()
    _add(buffer, [0, 0])  # 2 in flight: committing, blocked
    _add(buffer, [1, 1])  # 4 in flight: at the bound, not over it
    returned = threading.Event()
    # 6 in flight: over the bound, so this call waits
    caller = threading.Thread(target=lambda: (_add(buffer, [0, 0], {0: 2}), returned.set()))
    caller.start()
    assert not returned.wait(0.3)
    commit.gate.set()
    assert returned.wait(5)
    caller.join()
    buffer.close()
    assert commit.offsets(0) == [0, 1, 2, 3]
    assert commit.offsets(1) == [0, 1]


def test_after_a_failed_commit_nothing_else_commits_and_the_next_add_raises() -> None:
    commit = Recorder()
    failures: list[BaseException] = []
    commit.fail_when = lambda batch: batch.partition == 0 and batch.offsets[0] == 0
    commit.gate.clear()
    buffer = PartitionBuffer(commit, interval_s=60, max_records=2, max_in_flight=10, on_failure=failures.append)
    buffer.start()
    _add(buffer, [0, 0])  # fails once the gate opens
    _add(buffer, [0, 0, 1, 1], {0: 2})  # queued behind it: must not land (offsets 0-1 never did)
    commit.gate.set()
    _wait_for(lambda: bool(failures))
    with pytest.raises(WriterFailedError, match="failing this writer") as raised:
        _add(buffer, [WAKEUP_PARTITION])
    assert isinstance(raised.value.__cause__, OSError)
    buffer.close()  # does not raise the same failure twice, commits nothing more
    assert commit.commits == []
    assert len(failures) == 1


def test_close_raises_a_failure_that_no_add_has_raised_and_drops_the_rest() -> None:
    commit = Recorder()
    commit.fail_when = lambda batch: batch.partition == 1
    buffer = PartitionBuffer(commit, interval_s=60, max_records=100, threads=2)
    buffer.start()
    _add(buffer, [0, 1, 0])
    with pytest.raises(WriterFailedError, match="not committed"):
        buffer.close()
    assert commit.offsets(1) == []


def test_inline_a_failed_commit_raises_from_the_call_that_made_it() -> None:
    commit = Recorder()
    commit.fail_when = lambda batch: True
    buffer = PartitionBuffer(commit, interval_s=60, max_records=1)
    with pytest.raises(WriterFailedError) as raised:
        _add(buffer, [0])
    assert "injected failure of partition 0" in str(raised.value.__cause__)
    buffer.close()


def test_wakeup_records_are_not_buffered() -> None:
    commit = Recorder()
    buffer = PartitionBuffer(commit, interval_s=60, max_records=100)
    _add(buffer, [WAKEUP_PARTITION, 3, WAKEUP_PARTITION])
    buffer.close()
    assert [(p, o) for p, o, _ in commit.commits] == [(3, [0])]


def test_a_thread_count_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1, found 0"):
        PartitionBuffer(Recorder(), interval_s=1, max_records=1, threads=0)


def test_a_new_partition_is_prepared_once_on_its_thread_while_its_records_wait() -> None:
    commit = Recorder()
    prepared: list[tuple[int, str]] = []
    buffer = PartitionBuffer(
        commit, interval_s=60, max_records=100, threads=2, prepare=lambda p: prepared.append((p, threading.current_thread().name))
    )
    buffer.start()
    _add(buffer, [5, 9])
    _wait_for(lambda: len(prepared) == 2)
    assert commit.commits == []  # nothing is due yet: prepared ahead of the first commit
    _add(buffer, [5], {5: 1})
    buffer.close()
    assert sorted(p for p, _ in prepared) == [5, 9]  # once each
    threads = {p: name for p, _, name in commit.commits}
    assert dict(prepared) == threads  # on the thread that commits the partition


def test_a_failed_prepare_fails_the_writer_like_a_failed_commit() -> None:
    commit = Recorder()
    failures: list[BaseException] = []

    def prepare(partition: int) -> None:
        raise ConnectionError(f"cannot open partition {partition}")

    buffer = PartitionBuffer(commit, interval_s=60, max_records=100, prepare=prepare, on_failure=failures.append)
    buffer.start()
    _add(buffer, [2])
    _wait_for(lambda: bool(failures))
    with pytest.raises(WriterFailedError) as raised:
        _add(buffer, [2], {2: 1})
    assert isinstance(raised.value.__cause__, ConnectionError)
    buffer.close()
    assert commit.commits == []

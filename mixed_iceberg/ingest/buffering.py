"""Per-partition buffering and the background committer of one writer subtask.

Records reach a writer in whatever batches the engine delivers. :class:`PartitionBuffer`
keeps them per source partition until the partition is *due* (``interval_s`` since its oldest
buffered record, or ``max_records`` buffered), then hands the partition's records to the
commit function as one :class:`DueBatch`, so a commit's size does not depend on the engine's
batch size.

Where the commit runs is the point of this module. Committed inline (:meth:`add` without
:meth:`start`), a commit blocks the caller, and in PyFlink the caller blocks the JVM: the
operator waits for the Python function at every bundle end, so the Kafka source stopped
reading for the whole commit (measured: the two subtasks' source threads parked in
``finishBundle`` while their workers committed; the job used 1.3 of 2 cores). After
:meth:`start`, due batches go to a FIFO served by one committer thread, and :meth:`add` returns
at once: the source reads and the worker deserializes the next batches while the previous one
commits. The queue is bounded by ``max_in_flight`` records (queued or committing): beyond it
:meth:`add` waits, which is Flink's backpressure.

Order: each partition is pinned to one of ``threads`` committer threads (new partitions take
them in turn); its records leave its buffer only under the lock, and in order, into that
thread's FIFO, so a partition's commits follow its offsets. When no records arrive, the
committers themselves move partitions that became due by time. A committer first calls
``prepare`` for a partition it has not seen (opening its writers while the first records
wait for their interval, instead of in the first commit).

Failure: once a commit raises, nothing after it may commit (a later batch of the same partition
would advance the table past records that never landed). The committer drops everything, stops,
and calls ``on_failure`` (the job wakes its subtasks through Kafka, see
:mod:`mixed_iceberg.ingest.runtime`); the next :meth:`add` raises :class:`WriterFailedError`,
and so does :meth:`close` if no call has raised it yet.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from mixed_iceberg.exceptions import WriterFailedError

__all__ = ["WAKEUP_PARTITION", "DueBatch", "PartitionBuffer"]

log = logging.getLogger(__name__)

#: The partition number of wake-up records: they make a call happen (which raises a failure)
#: and are otherwise ignored.
WAKEUP_PARTITION = -1


@dataclass(frozen=True, slots=True)
class DueBatch:
    """The buffered records of one partition, in arrival order; ``received_ms``: wall-clock
    time its first record was buffered."""

    partition: int
    offsets: npt.NDArray[np.int64]
    values: pa.Array
    received_ms: int

    def __len__(self) -> int:
        return len(self.offsets)


@dataclass(slots=True)
class _Pending:
    since: float  # monotonic seconds
    since_ms: int  # wall clock
    count: int = 0
    offsets: list[npt.NDArray[np.int64]] = field(default_factory=list)
    values: list[pa.Array] = field(default_factory=list)

    def batch(self, partition: int) -> DueBatch:
        values = pa.concat_arrays(self.values) if len(self.values) > 1 else self.values[0]
        return DueBatch(partition, np.concatenate(self.offsets), values, self.since_ms)


@dataclass(slots=True)
class _Lane:
    """A FIFO of due batches and the thread that commits them (partitions are pinned to a lane)."""

    due: collections.deque[DueBatch] = field(default_factory=collections.deque)
    new: list[int] = field(default_factory=list)  # partitions to prepare before their first batch
    thread: threading.Thread | None = None


class PartitionBuffer:
    """Buffers records per partition and commits each partition when it is due (see the module docstring)."""

    def __init__(
        self,
        commit: Callable[[DueBatch], None],
        *,
        interval_s: float,
        max_records: int,
        threads: int = 1,
        max_in_flight: int | None = None,
        prepare: Callable[[int], object] | None = None,
        on_failure: Callable[[BaseException], None] | None = None,
        name: str = "writer",
    ) -> None:
        if threads < 1:
            raise ValueError(f"threads: expected at least 1, found {threads}")
        self._commit = commit
        self._interval = interval_s
        self._max_records = max_records
        self._threads = threads
        self._max_in_flight = max_in_flight if max_in_flight is not None else (threads + 1) * max_records
        self._prepare = prepare
        self._on_failure = on_failure
        self._name = name
        self._pending: dict[int, _Pending] = {}
        self._lanes: list[_Lane] = []
        self._lane_of: dict[int, _Lane] = {}
        self._in_flight = 0  # records queued in a lane or being committed
        self._changed = threading.Condition(threading.Lock())
        self._started = False
        self._closing = False
        self._failure: BaseException | None = None
        self._failure_raised = False

    def add(self, partitions: npt.NDArray[np.int32], offsets: npt.NDArray[np.int64], values: pa.Array) -> None:
        """Buffer records of any partitions (in source order per partition); commit the partitions that are due.

        Raises:
            WriterFailedError: an earlier commit failed (this writer must be restarted).
        """
        partitions = np.asarray(partitions, np.int32)
        offsets = np.asarray(offsets, np.int64)
        with self._changed:
            self._raise_failure()
            now = time.monotonic()
            present = np.unique(partitions).tolist()  # a handful of partitions, not rows
            for partition in present:
                if partition == WAKEUP_PARTITION:
                    continue
                self._lane(partition)  # its committer watches the partition from its first record
                pending = self._pending.setdefault(partition, _Pending(now, int(time.time() * 1000)))
                if len(present) == 1:  # the usual batch: one partition's fetch, kept without a copy
                    own_offsets, own_values = offsets, values
                else:
                    mask = partitions == partition
                    own_offsets, own_values = offsets[mask], values.filter(pa.array(mask))
                pending.offsets.append(own_offsets)
                pending.values.append(own_values)
                pending.count += len(own_offsets)
            self._queue_due(now)
            if self._started:
                # Backpressure: wait while the committers are too far behind.
                while self._in_flight > self._max_in_flight and self._failure is None:
                    self._changed.wait()
                self._raise_failure()
        if not self._started:
            self._commit_all_queued()

    def flush_due(self) -> None:
        """Commit every partition that is due now (inline; without :meth:`start` nothing else does)."""
        with self._changed:
            self._queue_due(time.monotonic())
        if not self._started:
            self._commit_all_queued()

    def start(self) -> None:
        """Commit from now on in background threads (also partitions that become due while no records arrive)."""
        with self._changed:
            self._started = True
            for lane in self._lanes:
                self._start_thread(lane)

    def close(self) -> None:
        """Commit everything buffered (unless a commit failed), then stop.

        Raises:
            WriterFailedError: a commit failed and no :meth:`add` call has raised it yet; the
                records it held, and everything buffered after them, are not committed.
        """
        with self._changed:
            if self._failure is None:
                self._queue_due(float("inf"))
            self._closing = True
            self._changed.notify_all()
            threads = [lane.thread for lane in self._lanes if lane.thread is not None]
        for thread in threads:
            thread.join()
        if not self._started and self._failure is None:
            self._commit_all_queued()
        with self._changed:
            if self._failure is not None and not self._failure_raised:
                self._failure_raised = True
                raise WriterFailedError(f"{self._name}: a commit failed; the records it held are not committed") from (
                    self._failure
                )

    def _raise_failure(self) -> None:
        if self._failure is not None:
            self._failure_raised = True
            raise WriterFailedError(f"{self._name}: a commit failed; failing this writer so that it is restarted") from (
                self._failure
            )

    def _lane(self, partition: int) -> _Lane:
        """The partition's lane: new partitions take the lanes in turn (the caller holds the lock)."""
        lane = self._lane_of.get(partition)
        if lane is None:
            if len(self._lanes) < self._threads:
                lane = _Lane()
                self._lanes.append(lane)
                if self._started:
                    self._start_thread(lane)
            else:
                lane = self._lanes[len(self._lane_of) % self._threads]
            self._lane_of[partition] = lane
            if self._prepare is not None:
                lane.new.append(partition)
                self._changed.notify_all()
        return lane

    def _start_thread(self, lane: _Lane) -> None:
        if lane.thread is None:
            index = self._lanes.index(lane)
            lane.thread = threading.Thread(
                target=self._run, args=(lane,), name=f"mixed-iceberg-committer-{index}-{self._name}", daemon=True
            )
            lane.thread.start()

    def _queue_due(self, now: float) -> None:
        """Move due partitions to their lanes (the caller holds the lock)."""
        moved = False
        for partition, pending in list(self._pending.items()):
            if pending.count >= self._max_records or now - pending.since >= self._interval:
                del self._pending[partition]
                self._lane(partition).due.append(pending.batch(partition))
                self._in_flight += pending.count
                moved = True
        if moved:
            self._changed.notify_all()

    def _commit_all_queued(self) -> None:
        for lane in list(self._lanes):
            self._commit_queued(lane)
        self._raise_failure()

    def _commit_queued(self, lane: _Lane) -> None:
        """Commit a lane's batches in order until it is empty or a commit fails (anywhere)."""
        while True:
            with self._changed:
                if not lane.due or self._failure is not None:
                    return
                batch = lane.due.popleft()
            try:
                self._commit(batch)
            except Exception as exc:  # the writer's boundary: everything after it is dropped
                self._fail(exc)
                return
            with self._changed:
                if self._failure is None:  # _fail reset the count
                    self._in_flight -= len(batch)
                self._changed.notify_all()

    def _fail(self, exc: BaseException) -> None:
        with self._changed:
            if self._failure is not None:  # another lane failed first
                return
            self._failure = exc
            for lane in self._lanes:
                lane.due.clear()
            self._pending.clear()
            self._in_flight = 0
            self._changed.notify_all()
        if self._started and self._on_failure is not None:
            self._on_failure(exc)

    def _run(self, lane: _Lane) -> None:
        period = max(0.05, self._interval / 4)
        while True:
            with self._changed:
                while not lane.due and not lane.new and not self._closing and self._failure is None:
                    if not self._changed.wait(period):
                        self._queue_due(time.monotonic())
                if self._failure is not None or not (lane.due or lane.new):  # failed, or closing and committed
                    return
                new, lane.new = lane.new, []
            if new and not self._prepare_all(new):
                return
            self._commit_queued(lane)

    def _prepare_all(self, partitions: list[int]) -> bool:
        """Prepare new partitions (open their writers while their first records wait)."""
        assert self._prepare is not None
        try:
            for partition in partitions:
                self._prepare(partition)
        except Exception as exc:  # as a failed commit: the writer must be restarted
            self._fail(exc)
            return False
        return True

"""Counters and latency samples of an ingest writer, logged per commit and exported to Flink.

Each partition's writer has its own :class:`IngestMetrics`, updated only by the thread that
commits that partition; :meth:`IngestMetrics.total` adds them up for reporting.

Freshness is the time from a change's event time (the message's ``ts_ms``) to its commit. The
event time comes from the producer, so :func:`valid_event_times` keeps only plausible ones: a
``ts_ms`` of 0 or below, or more than :data:`EVENT_TIME_SKEW_MS` after the writer's clock, is
left out of the freshness figures and counted as ``event_time_rejected`` (one such message
would otherwise set the p99: ``ts_ms = 0`` reads as 55 years old). A message without ``ts_ms``
(parsed as -1) has no event time and is neither a sample nor counted.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

__all__ = ["COUNTERS", "EVENT_TIME_SKEW_MS", "IngestMetrics", "rejected_event_times", "valid_event_times"]

_SAMPLES = 4096
#: The counters (what :meth:`IngestMetrics.total` adds up and the job exports as Flink counters).
COUNTERS = (
    "records_in",
    "changes_out",
    "log_messages",
    "dead_letters",
    "tombstones",
    "replayed_dropped",
    "commits",
    "event_time_rejected",
)
#: How far a message's event time may be ahead of the writer's clock (clock skew between hosts).
EVENT_TIME_SKEW_MS = 10_000
#: The event time of a message without ``ts_ms`` (``cdc.py`` fills a missing one with -1).
_ABSENT = -1


def valid_event_times(
    event_ms: npt.NDArray[np.int64], now_ms: float, *, skew_ms: float = EVENT_TIME_SKEW_MS
) -> npt.NDArray[np.bool_]:
    """Which event times are plausible at wall-clock ``now_ms``: above 0, at most ``skew_ms`` ahead.

    The absent ones (-1) are not valid either; :func:`rejected_event_times` does not count them.
    """
    return (event_ms > 0) & (event_ms <= now_ms + skew_ms)


def rejected_event_times(event_ms: npt.NDArray[np.int64], valid: npt.NDArray[np.bool_]) -> int:
    """How many event times were present but implausible (``valid`` from :func:`valid_event_times`)."""
    return int((~valid & (event_ms != _ABSENT)).sum())


@dataclass(slots=True)
class IngestMetrics:
    """Totals since the writer started, plus the latest latency figures."""

    records_in: int = 0
    changes_out: int = 0
    log_messages: int = 0
    dead_letters: int = 0
    tombstones: int = 0
    replayed_dropped: int = 0
    commits: int = 0
    event_time_rejected: int = 0
    last_commit_ms: float = 0.0
    last_commit_at: float = 0.0  # monotonic seconds
    last_freshness_p50_ms: float = 0.0
    last_freshness_p99_ms: float = 0.0
    freshness_samples: list[float] = field(default_factory=list)
    commit_ms_samples: list[float] = field(default_factory=list)

    def observe_commit(self, duration_ms: float, event_ms: npt.NDArray[np.int64], now_ms: float) -> None:
        """Record one commit's duration and the event-to-commit latency (at ``now_ms``) of its rows.

        Rows whose event time is implausible (see :func:`valid_event_times`) are counted in
        ``event_time_rejected`` instead of sampled.
        """
        event_ms = np.asarray(event_ms, np.int64)
        valid = valid_event_times(event_ms, now_ms)
        self.event_time_rejected += rejected_event_times(event_ms, valid)
        freshness_ms = (now_ms - event_ms[valid]).astype(np.float64)
        self.commits += 1
        self.last_commit_ms = duration_ms
        self.last_commit_at = time.monotonic()
        self.commit_ms_samples.append(duration_ms)
        if len(freshness_ms):
            p50, p99 = np.percentile(freshness_ms, [50, 99])
            self.last_freshness_p50_ms, self.last_freshness_p99_ms = float(p50), float(p99)
            # A bounded, evenly thinned sample keeps the distribution without keeping every row.
            step = max(1, len(freshness_ms) // 256)
            self.freshness_samples.extend(freshness_ms[::step].tolist())
        del self.freshness_samples[:-_SAMPLES]
        del self.commit_ms_samples[:-_SAMPLES]

    @classmethod
    def total(cls, parts: Iterable[IngestMetrics], *, samples: bool = False) -> IngestMetrics:
        """Counters summed and the latest figures of the newest commit (and, with ``samples``, the samples pooled)."""
        out = cls()
        for part in parts:
            for name in COUNTERS:
                setattr(out, name, getattr(out, name) + getattr(part, name))
            if part.last_commit_at >= out.last_commit_at and part.commits:
                out.last_commit_at, out.last_commit_ms = part.last_commit_at, part.last_commit_ms
                out.last_freshness_p50_ms, out.last_freshness_p99_ms = part.last_freshness_p50_ms, part.last_freshness_p99_ms
            if samples:
                out.freshness_samples.extend(part.freshness_samples)
                out.commit_ms_samples.extend(part.commit_ms_samples)
        return out

    def summary(self) -> dict[str, float]:
        """The totals and p50/p99 of the kept samples (what the job logs on close)."""
        fresh = np.asarray(self.freshness_samples or [0.0])
        commit = np.asarray(self.commit_ms_samples or [0.0])
        return {
            "records_in": self.records_in,
            "changes_out": self.changes_out,
            "log_messages": self.log_messages,
            "dead_letters": self.dead_letters,
            "tombstones": self.tombstones,
            "replayed_dropped": self.replayed_dropped,
            "commits": self.commits,
            "event_time_rejected": self.event_time_rejected,
            "freshness_p50_ms": float(np.percentile(fresh, 50)),
            "freshness_p99_ms": float(np.percentile(fresh, 99)),
            "commit_p50_ms": float(np.percentile(commit, 50)),
            "commit_p99_ms": float(np.percentile(commit, 99)),
        }

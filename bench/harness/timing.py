"""Wall and CPU time of a piece of work, once or best of several.

Wall time is ``time.perf_counter``; CPU time is ``time.process_time``, the whole process's, all
threads (pyarrow's and the Parquet writers' included), which moves less than wall time when
other processes share the machine. Nothing here judges a time: benchmarks report them.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

__all__ = ["Clock", "Timing", "Timings", "best_of", "timed"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Timing:
    """Seconds one piece of work took: wall clock and the process's CPU."""

    wall_s: float
    cpu_s: float


@dataclass(frozen=True, slots=True)
class Clock:
    """Both clocks as they read at ``start()``; ``elapsed()`` is the time since.

    For work that is not one call: ``clock = Clock.start()``, then ``clock.elapsed()``.
    """

    wall: float
    cpu: float

    @classmethod
    def start(cls) -> Clock:
        return cls(time.perf_counter(), time.process_time())

    def elapsed(self) -> Timing:
        return Timing(time.perf_counter() - self.wall, time.process_time() - self.cpu)


@dataclass(frozen=True, slots=True)
class Timings:
    """Several timings of the same work, in the order they ran."""

    runs: tuple[Timing, ...]

    def __post_init__(self) -> None:
        if not self.runs:
            raise ValueError("expected at least one timing, found none")

    @property
    def first(self) -> Timing:
        """The first run: with whatever was not yet cached."""
        return self.runs[0]

    @property
    def best_wall_s(self) -> float:
        return min(t.wall_s for t in self.runs)

    @property
    def best_cpu_s(self) -> float:
        return min(t.cpu_s for t in self.runs)

    @property
    def median_wall_s(self) -> float:
        return statistics.median(t.wall_s for t in self.runs)

    @property
    def median_cpu_s(self) -> float:
        return statistics.median(t.cpu_s for t in self.runs)

    @property
    def wall_s(self) -> list[float]:
        """Every run's wall seconds, for a result's detail."""
        return [t.wall_s for t in self.runs]


def timed(work: Callable[[], T]) -> tuple[T, Timing]:
    """``work()``'s result and how long it took."""
    clock = Clock.start()
    result = work()
    return result, clock.elapsed()


def best_of(work: Callable[[], T], repeats: int) -> tuple[T, Timings]:
    """``work()`` ``repeats`` times: the first result (to check) and every timing.

    The first result is kept while the others run; a caller that must not hold two results at
    once collects :func:`timed` calls into :class:`Timings` itself.
    """
    if repeats < 1:
        raise ValueError(f"expected at least one repeat, found {repeats}")
    first, timing = timed(work)
    runs = [timing]
    for _ in range(repeats - 1):
        result, timing = timed(work)
        del result
        runs.append(timing)
    return first, Timings(tuple(runs))

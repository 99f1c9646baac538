"""The LogStore's one retry policy: a transient failure is tried again until the deadline, any
other failure (and the last one at the deadline) reaches the caller unchanged.

A fake clock and sleep drive the policy: the test observes every attempt and every wait.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mixed_iceberg.logstore.retry import RetryPolicy


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


class _BusyError(Exception):
    pass


def _policy(clock: _Clock, timeout: float = 1.0) -> RetryPolicy:
    return RetryPolicy(timeout=timeout, interval=0.25, clock=lambda: clock.now, sleep=clock.sleep)


def _failing(times: int, error: Exception) -> tuple[list[int], Callable[[], str]]:
    calls: list[int] = []

    def operation() -> str:
        calls.append(1)
        if len(calls) <= times:
            raise error
        return "ok"

    return calls, operation


def test_a_transient_failure_is_tried_again_after_the_interval() -> None:
    clock = _Clock()
    calls, operation = _failing(2, _BusyError())
    assert _policy(clock).call(operation, retriable=lambda exc: isinstance(exc, _BusyError)) == "ok"
    assert len(calls) == 3
    assert clock.slept == [0.25, 0.25]


def test_a_failure_that_is_not_transient_is_raised_at_once() -> None:
    clock = _Clock()
    calls, operation = _failing(5, KeyError("gone"))
    with pytest.raises(KeyError, match="gone"):
        _policy(clock).call(operation, retriable=lambda exc: isinstance(exc, _BusyError))
    assert len(calls) == 1
    assert clock.slept == []


def test_a_transient_failure_past_the_deadline_is_raised() -> None:
    clock = _Clock()
    calls, operation = _failing(1000, _BusyError("still busy"))
    with pytest.raises(_BusyError, match="still busy"):
        _policy(clock, timeout=1.0).call(operation, retriable=lambda exc: isinstance(exc, _BusyError))
    # Attempts at 0, 0.25, ..., 1.0 and one past the deadline: then the failure is final.
    assert len(calls) == 6
    assert clock.now - 100.0 == pytest.approx(1.25)


@pytest.mark.parametrize(("ready_after", "expected"), [(0, True), (3, True), (100, False)])
def test_until_polls_a_condition_until_it_holds_or_the_deadline(ready_after: int, expected: bool) -> None:
    clock = _Clock()
    checks: list[int] = []

    def check() -> bool:
        checks.append(1)
        return len(checks) > ready_after

    assert _policy(clock).until(check) is expected
    assert len(checks) == (ready_after + 1 if expected else 6)


def test_a_policy_without_an_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="interval > 0"):
        RetryPolicy(interval=0)

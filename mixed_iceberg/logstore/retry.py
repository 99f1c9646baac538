"""One retry policy for a backend's transient failures: try again until a deadline.

Pure (no backend import): the backend says which failures are transient (``retriable``) and
translates the last one into its own error; the policy only decides when to try again and when
to give up. Its clock and sleep are fields, so a test drives it without waiting.

>>> attempts = iter([ValueError("busy"), ValueError("busy"), None])
>>> def operation() -> str:
...     failure = next(attempts)
...     if failure is not None:
...         raise failure
...     return "done"
>>> RetryPolicy(sleep=lambda _: None).call(operation, retriable=lambda exc: isinstance(exc, ValueError))
'done'
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

__all__ = ["RetryPolicy"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Retry a transient failure every ``interval`` seconds until ``timeout`` seconds have passed.

    Args:
        timeout: seconds from the first attempt after which a failure is final; also the
            timeout a backend passes to each blocking call it makes.
        interval: seconds between two attempts.
        clock: monotonic seconds (``time.monotonic``).
        sleep: waits the given seconds (``time.sleep``).
    """

    timeout: float = 30.0
    interval: float = 0.2
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)

    def __post_init__(self) -> None:
        if self.timeout < 0 or self.interval <= 0:
            raise ValueError(f"expected timeout >= 0 and interval > 0, found {self.timeout} and {self.interval}")

    def call(self, operation: Callable[[], T], *, retriable: Callable[[Exception], bool]) -> T:
        """``operation()``, tried again while it raises a ``retriable`` failure and time is left.

        Raises:
            Exception: the failure that was not retriable, or the last one at the deadline,
                unchanged (the caller translates it).
        """
        deadline = self.clock() + self.timeout
        while True:
            try:
                return operation()
            except Exception as exc:  # classified by the backend; anything else propagates unchanged
                if not retriable(exc) or self.clock() > deadline:
                    raise
            self.sleep(self.interval)

    def until(self, check: Callable[[], bool]) -> bool:
        """Whether ``check()`` became true before the deadline (asked again every ``interval``)."""
        deadline = self.clock() + self.timeout
        while not check():
            if self.clock() > deadline:
                return False
            self.sleep(self.interval)
        return True

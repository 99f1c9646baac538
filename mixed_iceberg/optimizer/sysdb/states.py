"""Every transition between the states of the system database's rows, in one place.

The states are the kind enums of :mod:`mixed_iceberg.config.kinds` (``TaskStatus``,
``ProcessStatus``, ``TableStatus``), re-exported here for the callers of the system database.

Each :class:`Transition` names the verb that makes it, the states it leaves, the state it
enters, who may make it (its owner) and what bounds the state it enters (its deadline). The
verbs of :class:`~mixed_iceberg.optimizer.sysdb.database.SystemDatabase` build their
conditional ``UPDATE`` from these objects, so the table below is the state machine the code
runs, not a description of it. A state with no deadline is one a coordinator round acts on by
itself (PLANNED tasks are taken by idle executors, a RUNNING process whose tasks all ended is
committed) or one that has ended.

>>> TASK.claim.sources, TASK.claim.target
((<TaskStatus.PLANNED: 'PLANNED'>,), <TaskStatus.SCHEDULED: 'SCHEDULED'>)
>>> backoff_ms(60_000, failures=3)
240000
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from mixed_iceberg.config.kinds import OptimizingType, ProcessStatus, TableStatus, TaskStatus

__all__ = [
    "MAX_BACKOFF_MS",
    "PROCESS",
    "TABLE",
    "TASK",
    "ProcessStatus",
    "TableStatus",
    "TaskStatus",
    "Transition",
    "backoff_ms",
]


S = TypeVar("S", TaskStatus, ProcessStatus, TableStatus)


@dataclass(frozen=True, slots=True)
class Transition(Generic[S]):
    """One edge of a state machine: ``verb`` moves a row from one of ``sources`` to ``target``."""

    verb: str
    sources: tuple[S, ...]
    target: S
    owner: str
    deadline: str | None

    def __post_init__(self) -> None:
        if not self.sources or not self.owner:
            raise ValueError(f"{self.verb}: a transition needs the states it leaves and an owner")


_T = TaskStatus
_P = ProcessStatus
_S = TableStatus
_IN_FLIGHT = (_T.SCHEDULED, _T.ACKED)


class TASK:
    """The transitions of a task."""

    claim = Transition(
        "claim_task", (_T.PLANNED,), _T.SCHEDULED, "an executor thread of a live optimizer", "scheduled_ms + task-ack-timeout"
    )
    ack = Transition(
        "ack_task", (_T.SCHEDULED,), _T.ACKED, "the optimizer it is scheduled to", "lease_ms = start + task-execute-timeout"
    )
    complete = Transition("complete_task", (_T.ACKED,), _T.SUCCESS, "the optimizer running it, within its lease", None)
    retry = Transition(
        "fail_task", _IN_FLIGHT, _T.PLANNED, "the optimizer running it, or reset_expired when its lease ran out", None
    )
    fail = Transition("fail_task", _IN_FLIGHT, _T.FAILED, "as retry, once the run was its last (execute.num-retries)", None)
    give_back = Transition(
        "reset_expired / stop_optimizer",
        _IN_FLIGHT,
        _T.PLANNED,
        "reset_expired (its optimizer stopped heartbeating, or it was never acked), stop_optimizer",
        None,
    )
    cancel = Transition("finish_process", (_T.PLANNED, *_IN_FLIGHT), _T.CANCELED, "the holder of the table's lease", None)


class PROCESS:
    """The transitions of a process (it begins RUNNING: :meth:`create_process`)."""

    commit = Transition(
        "begin_commit",
        (_P.RUNNING, _P.COMMITTING),  # COMMITTING: the holder resumes a commit it could not record
        _P.COMMITTING,
        "the holder of the table's lease",
        "the table's lease_ms",
    )
    resume = Transition("reset_expired", (_P.COMMITTING,), _P.RUNNING, "reset_expired: the committer's table lease ran out", None)
    succeed = Transition("finish_process", (_P.RUNNING, _P.COMMITTING), _P.SUCCESS, "the holder of the table's lease", None)
    fail = Transition("finish_process", (_P.RUNNING, _P.COMMITTING), _P.FAILED, "the holder of the table's lease", None)
    cancel = Transition("finish_process", (_P.RUNNING, _P.COMMITTING), _P.CANCELED, "the holder of the table's lease", None)

    @classmethod
    def finish(cls, status: ProcessStatus) -> Transition[ProcessStatus]:
        """The transition that ends a process with ``status``."""
        ends = {_P.SUCCESS: cls.succeed, _P.FAILED: cls.fail, _P.CANCELED: cls.cancel}
        if status not in ends:
            raise ValueError(f"a process ends SUCCESS, FAILED or CANCELED, found {status}")
        return ends[status]


#: A table with no process in flight, which a coordinator may plan.
_RESTING = (_S.IDLE, _S.FAILED, _S.PLANNING)


class TABLE:
    """The transitions of a table's runtime (a table enters IDLE when first discovered: ``sync_tables``)."""

    plan = Transition(
        "begin_planning", _RESTING, _S.PLANNING, "the holder of the table's lease (claim_table)", "the table's lease_ms"
    )
    defer = Transition("defer_table", (_S.PLANNING,), _S.IDLE, "the holder of the table's lease", None)
    commit = Transition(
        "begin_commit",
        (_S.MINOR, _S.MAJOR, _S.FULL, _S.COMMITTING),
        _S.COMMITTING,
        "the holder of the table's lease",
        "the table's lease_ms",
    )
    succeed = Transition(
        "finish_process", (_S.MINOR, _S.MAJOR, _S.FULL, _S.COMMITTING), _S.IDLE, "the holder of the table's lease", None
    )
    fail = Transition(
        "fail_table / finish_process",
        (_S.IDLE, _S.PLANNING, _S.MINOR, _S.MAJOR, _S.FULL, _S.COMMITTING),
        _S.FAILED,
        "the holder of the table's lease",
        "next_plan_ms (the failure back-off)",
    )

    @classmethod
    def start(cls, kind: OptimizingType) -> Transition[TableStatus]:
        """``create_process``: the table shows the type of the process that now runs."""
        return Transition("create_process", _RESTING, TableStatus.optimizing(kind), "the holder of the table's lease", None)

    @classmethod
    def resume(cls, kind: OptimizingType) -> Transition[TableStatus]:
        """``reset_expired``: a committer's lease ran out; the table shows its process running again."""
        return Transition(
            "reset_expired", (_S.COMMITTING,), TableStatus.optimizing(kind), "reset_expired: the committer's lease ran out", None
        )

    cancel = Transition(
        "finish_process (CANCELED) / forget_process",
        (_S.MINOR, _S.MAJOR, _S.FULL, _S.COMMITTING),
        _S.IDLE,
        "the holder of the table's lease",
        None,
    )
    unstick = Transition(
        "reset_expired", (_S.PLANNING,), _S.IDLE, "reset_expired: the planner's lease ran out with no process recorded", None
    )


#: The longest a failing table waits before it is planned again.
MAX_BACKOFF_MS = 3_600_000


def backoff_ms(base_ms: int, failures: int) -> int:
    """How long a table waits after its ``failures``-th consecutive failure: ``base_ms``
    doubled per failure after the first, at most :data:`MAX_BACKOFF_MS`."""
    if failures < 1:
        return 0
    return int(min(MAX_BACKOFF_MS, base_ms * 2 ** (failures - 1)))

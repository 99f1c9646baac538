"""What the jobs of one optimizer share: its system database, group, tables, identity and stop signal."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from mixed_iceberg.optimizer.config import GroupConfig
from mixed_iceberg.optimizer.sysdb.database import SystemDatabase, now_ms
from mixed_iceberg.optimizer.tables import ServedTables

__all__ = ["OptimizerContext"]


@dataclass(slots=True)
class OptimizerContext:
    """One optimizer as its jobs see it.

    ``optimizer_id`` changes when the heartbeat registers the optimizer again (it was declared
    dead); every job reads it here, at the time it acts.
    """

    db: SystemDatabase
    group: GroupConfig
    tables: ServedTables
    stop: threading.Event = field(default_factory=threading.Event)
    optimizer_id: str = ""

    def lease(self) -> int:
        """The end of a table lease taken now (renewed by every heartbeat)."""
        return now_ms() + self.group.properties.heartbeat_timeout_ms

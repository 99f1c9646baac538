"""The dashboard's actions, each checked before it runs and recorded, whatever its outcome.

* ``optimize``: run self-optimizing of one table now, of a type (``minor``, ``major``, ``full``),
  as ``mixed-iceberg optimize --type`` does, in the ``serve`` process;
* ``pause`` / ``resume``: set ``self-optimizing.enabled`` to false / true;
* ``property``: set (or remove) one ``self-optimizing.*`` property, such as the group the table
  belongs to (``self-optimizing.group``) or its quota.

Values go through :meth:`~mixed_iceberg.table.MixedTable.update_properties`, so the option
registry checks them and a refused value answers with the registry's message. Every attempt is a
row of ``mixed_iceberg_dashboard_actions`` in the catalog's own database (catalog, table, action,
its arguments, outcome, message, who asked, when), so every ``serve`` process over the catalog
sees the same record; the table page lists a table's newest.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from sqlalchemy import BigInteger, Column, Engine, Integer, MetaData, String, Table, Text, insert, select

from mixed_iceberg.config.kinds import OptimizingType
from mixed_iceberg.exceptions import RequestRefusedError
from mixed_iceberg.service.catalogs import ServedCatalog

__all__ = ["PREFIX", "Action", "ActionLog", "optimize", "set_enabled", "set_property"]

#: The only properties the dashboard changes.
PREFIX = "self-optimizing."

_metadata = MetaData()
_actions = Table(
    "mixed_iceberg_dashboard_actions",
    _metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("catalog_name", String(255), nullable=False),
    Column("table_name", String(512), nullable=False, index=True),
    Column("action", String(64), nullable=False),
    Column("arguments", Text, nullable=False),
    Column("outcome", String(16), nullable=False),
    Column("message", Text, nullable=False),
    Column("actor", String(255), nullable=False),
    Column("at_ms", BigInteger, nullable=False),
)


@dataclass(frozen=True, slots=True)
class Action:
    """One recorded action."""

    table: str
    action: str
    arguments: dict[str, Any]
    #: ``done``, ``refused`` (bad input: nothing changed) or ``failed``.
    outcome: str
    message: str
    actor: str
    at_ms: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class ActionLog:
    """The actions on one catalog's tables, in its database."""

    _logs: ClassVar[dict[tuple[str, int], ActionLog]] = {}

    def __init__(self, engine: Engine, catalog: str) -> None:
        self.engine = engine
        self.catalog = catalog
        _metadata.create_all(engine, checkfirst=True)

    @classmethod
    def of(cls, served: ServedCatalog) -> ActionLog:
        """The log of ``served`` (its table is created once per process and engine)."""
        engine = served.sql().engine
        key = (served.name, id(engine))
        if key not in cls._logs:
            cls._logs[key] = ActionLog(engine, served.name)
        return cls._logs[key]

    def record(self, action: Action) -> None:
        with self.engine.begin() as connection:
            connection.execute(
                insert(_actions).values(
                    catalog_name=self.catalog,
                    table_name=action.table,
                    action=action.action,
                    arguments=json.dumps(action.arguments),
                    outcome=action.outcome,
                    message=action.message,
                    actor=action.actor,
                    at_ms=action.at_ms,
                )
            )

    def recent(self, table: str, limit: int = 50) -> list[Action]:
        """The table's newest actions, newest first."""
        query = (
            select(_actions)
            .where(_actions.c.catalog_name == self.catalog, _actions.c.table_name == table)
            .order_by(_actions.c.id.desc())
            .limit(limit)
        )
        with self.engine.connect() as connection:
            rows = connection.execute(query).all()
        return [Action(r.table_name, r.action, json.loads(r.arguments), r.outcome, r.message, r.actor, r.at_ms) for r in rows]


def optimize(served: ServedCatalog, table: str, kind: str) -> tuple[str, dict[str, Any]]:
    """Run optimizing of ``kind`` on ``table`` now; (message, result figures).

    Raises:
        RequestRefusedError: ``kind`` is not an optimizing type.
    """
    try:
        requested = OptimizingType(kind)
    except ValueError:
        choices = ", ".join(t.value for t in OptimizingType)
        raise RequestRefusedError(f"optimize {table}: expected a type among {choices}, found {kind!r}") from None
    result = served.mixed().load_table(table).optimizing.run(requested)
    figures = {k: getattr(v, "value", v) for k, v in asdict(result).items()}
    if result.type is None:
        return f"{requested.value} optimizing of {table}: nothing to optimize", figures
    return (
        f"{result.type.value} optimizing of {table}: {result.files_in} -> {result.files_out} file(s), "
        f"{result.tasks} task(s), committed {result.committed}",
        figures,
    )


def set_property(served: ServedCatalog, table: str, key: str, value: str | None) -> str:
    """Set ``key`` to ``value`` (None: remove it) on ``table``, checked by the option registry.

    Raises:
        RequestRefusedError: ``key`` is outside ``self-optimizing.*``.
        PropertyError: the registry refuses the value (its message says why).
    """
    if not key.startswith(PREFIX):
        raise RequestRefusedError(f"the dashboard changes {PREFIX}* properties only; found {key!r}")
    mixed = served.mixed().load_table(table)
    if value is None:
        mixed.update_properties(removals=[key])
        return f"{table}: {key} removed"
    mixed.update_properties({key: value})
    return f"{table}: {key}={value}"


def set_enabled(served: ServedCatalog, table: str, enabled: bool) -> str:
    """Resume (``enabled``) or pause self-optimizing of ``table``."""
    set_property(served, table, PREFIX + "enabled", "true" if enabled else "false")
    return f"{table}: self-optimizing {'resumed' if enabled else 'paused'}"


def now_ms() -> int:
    return int(time.time() * 1000)

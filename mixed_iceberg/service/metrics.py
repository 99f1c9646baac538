"""Metrics reports clients POST after a scan or a commit, kept for the dashboard.

Stored in one table of the catalog's own database (``mixed_iceberg_rest_metrics``: catalog,
namespace, table, report type, receipt time, the report's JSON), so every ``serve`` process
over the catalog sees them and nothing else needs running. Bounded: each insert deletes the
catalog's reports beyond the newest :data:`KEEP`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import BigInteger, Column, Engine, Integer, MetaData, String, Table, Text, delete, func, insert, select

__all__ = ["KEEP", "MetricsReport", "MetricsReports"]

#: Reports kept per catalog (the newest).
KEEP = 10_000

_metadata = MetaData()
_reports = Table(
    "mixed_iceberg_rest_metrics",
    _metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("catalog_name", String(255), nullable=False, index=True),
    Column("table_namespace", String(255), nullable=False),
    Column("table_name", String(255), nullable=False),
    Column("report_type", String(64), nullable=False),
    Column("received_ms", BigInteger, nullable=False),
    Column("report", Text, nullable=False),
)


@dataclass(frozen=True, slots=True)
class MetricsReport:
    """One stored report."""

    namespace: str
    table: str
    report_type: str
    received_ms: int
    report: dict[str, Any]


class MetricsReports:
    """The reports of one catalog, in its database."""

    def __init__(self, engine: Engine, catalog: str, keep: int = KEEP) -> None:
        self.engine = engine
        self.catalog = catalog
        self.keep = keep
        _metadata.create_all(engine, checkfirst=True)

    def record(self, namespace: str, table: str, report: Mapping[str, Any]) -> None:
        """Store ``report`` and drop the catalog's reports beyond the newest ``keep``."""
        with self.engine.begin() as connection:
            connection.execute(
                insert(_reports).values(
                    catalog_name=self.catalog,
                    table_namespace=namespace,
                    table_name=table,
                    report_type=str(report.get("report-type", "")),
                    received_ms=int(time.time() * 1000),
                    report=json.dumps(report),
                )
            )
            newest = connection.execute(select(func.max(_reports.c.id)).where(_reports.c.catalog_name == self.catalog)).scalar()
            if newest is not None and newest > self.keep:
                connection.execute(
                    delete(_reports).where(_reports.c.catalog_name == self.catalog, _reports.c.id <= newest - self.keep)
                )

    def recent(self, namespace: str, table: str, limit: int = 100) -> list[MetricsReport]:
        """The table's newest reports, newest first."""
        query = (
            select(_reports)
            .where(
                _reports.c.catalog_name == self.catalog,
                _reports.c.table_namespace == namespace,
                _reports.c.table_name == table,
            )
            .order_by(_reports.c.id.desc())
            .limit(limit)
        )
        with self.engine.connect() as connection:
            rows = connection.execute(query).all()
        return [MetricsReport(r.table_namespace, r.table_name, r.report_type, r.received_ms, json.loads(r.report)) for r in rows]

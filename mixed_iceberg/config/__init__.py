"""Typed configuration, parsed once at the edge: the option registry, every config object and every kind.

This package sits low: it imports only :mod:`mixed_iceberg.exceptions` and
:mod:`mixed_iceberg.arrow_types`, so every other package may depend on it and none of its
configs drags a service in.

Modules, one job each:

- ``registry``: every table property declared once (Amoro's key and default, parser, check,
  doc); ``docs/options.md`` is generated from it (``python -m mixed_iceberg.config``).
- ``kinds``: the enums of every kind (merge engine, optimizing type, file class, scheduling
  policy, container, task, process and table status).
- ``layout``, ``optimizing``, ``maintenance``, ``merge``, ``health``: the parts of a table's
  configuration; ``table``: :class:`TableConfig`, which holds them, one per load or refresh.
"""

from __future__ import annotations

from mixed_iceberg.config.health import HealthConfig
from mixed_iceberg.config.kinds import (
    Container,
    FileClass,
    HealthState,
    MergeEngine,
    OptimizingType,
    ProcessStatus,
    SchedulingPolicy,
    TableStatus,
    TaskStatus,
)
from mixed_iceberg.config.layout import LayoutConfig
from mixed_iceberg.config.maintenance import MaintenanceConfig
from mixed_iceberg.config.merge import MergeConfig
from mixed_iceberg.config.optimizing import OptimizingConfig
from mixed_iceberg.config.registry import OPTIONS, Option
from mixed_iceberg.config.table import TableConfig

__all__ = [
    "OPTIONS",
    "Container",
    "FileClass",
    "HealthConfig",
    "HealthState",
    "LayoutConfig",
    "MaintenanceConfig",
    "MergeConfig",
    "MergeEngine",
    "OptimizingConfig",
    "OptimizingType",
    "Option",
    "ProcessStatus",
    "SchedulingPolicy",
    "TableConfig",
    "TableStatus",
    "TaskStatus",
]

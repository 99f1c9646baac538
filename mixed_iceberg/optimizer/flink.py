"""The optimizer as a PyFlink job: each subtask is one optimizer of the group. The only module of the optimizer that imports PyFlink.

The job graph is ``datagen`` (one tick a second per subtask) -> :class:`OptimizerFunction`
-> ``blackhole``. The function's ``open()`` starts an :class:`~mixed_iceberg.optimizer.service.OptimizerService`
in the subtask's Python worker, and ``close()`` stops it. The service then runs in background
threads of that worker, as the ingest job's committers do. Each tick checks that the service
still runs and reports its counters. The job's parallelism is the group's execution capacity.
A second job for the same group adds capacity: the optimizers share the group's work through
the system database.

The configuration travels in the job graph, resolved on the client (:func:`pinned_config`):
the system database URL and every catalog's properties. The workers therefore depend neither
on the client's environment variables nor on its working directory.

Locally the function runs in PyFlink's thread mode (:data:`THREAD_MODE`, set by the job's
client): an interpreter embedded in the mini-cluster's JVM (pemja) instead of a Beam SDK worker
process per subtask, which would bring six Beam Fn API gRPC servers per subtask (flink-python
binds them to every interface; the job's client loads the loopback agent then, as the ingest job's
does: docs/ingest.md, "Network exposure"). Thread mode is expected to cost less CPU than process
mode too, but no stored run backs that yet: ``.venv/bin/python -m bench.optimizer_soak`` runs the
job in thread mode only and does not compare the two modes. Thread mode never calls the function's ``close()`` when its task is cancelled or fails (flink-python 2.2.1's ``EmbeddedPythonScalarFunctionOperator``
calls it only at the end of a bounded input; the operator's own ``close()`` only closes the
interpreter), so each service also stops itself once its subtask has not ticked for
``tick_timeout`` seconds: a failed or restarted task leaves no optimizer running behind it. A
session cluster's TaskManagers outlive every job, so there the job keeps the cluster's mode
(process, by default), whose workers end with their task.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pyflink.common import Configuration
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.table import DataTypes, StreamTableEnvironment
from pyflink.table.udf import FunctionContext, ScalarFunction, udf

from mixed_iceberg.catalog.config import default_config_path, load_catalog_config
from mixed_iceberg.optimizer.config import OptimizerConfig, parse_optimizer_config

__all__ = ["THREAD_MODE", "OptimizerFunction", "build_pipeline", "pinned_config"]

log = logging.getLogger(__name__)

#: The local job's Python execution mode (the module docstring says why).
THREAD_MODE = {"python.execution-mode": "thread"}

_SLOTS = "taskmanager.numberOfTaskSlots"


def pinned_config(config: OptimizerConfig, raw: Mapping[str, Any]) -> str:
    """``raw`` (the YAML file's mapping) with the catalogs resolved here, as JSON for the workers."""
    path = Path(config.catalog_config) if config.catalog_config else default_config_path()
    catalogs = []
    for name, overrides in config.catalogs.items():
        resolved = load_catalog_config(name, path, dict(overrides))
        properties = {"type": resolved.type, **resolved.storage.file_io_properties(), **resolved.properties}
        catalogs.append({"name": name, "properties": properties})
    pinned = {**raw, "system-database": config.system_database, "catalogs": catalogs}
    pinned.pop("catalog-config", None)
    return json.dumps(pinned)


class OptimizerFunction(ScalarFunction):  # type: ignore[misc]
    """Runs one optimizer of ``group`` for as long as the subtask lives; returns 1 per tick while it runs.

    The subtask gets a tick a second; ``tick_timeout`` seconds without one stop the service (in
    thread mode no ``close()`` says that the task is gone)."""

    def __init__(self, config_json: str, group: str, threads: int, tick_timeout: float = 30.0) -> None:
        self.config_json = config_json
        self.group = group
        self.threads = threads
        self.tick_timeout = tick_timeout
        self.service: Any = None
        self.last_tick = 0.0

    def open(self, function_context: FunctionContext | None) -> None:
        from mixed_iceberg.optimizer.service import OptimizerService

        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        config = parse_optimizer_config(json.loads(self.config_json), "optimizer job config")
        self.last_tick = time.monotonic()
        self.service = OptimizerService(config, self.group, threads=self.threads, container="flink").start()
        threading.Thread(target=self._watch, args=(self.service,), name="optimizer-tick-watchdog", daemon=True).start()

    def _watch(self, service: Any) -> None:
        while service.running:
            time.sleep(min(1.0, self.tick_timeout / 4))
            idle = time.monotonic() - self.last_tick
            if idle > self.tick_timeout and service.running:
                log.warning("optimizer %s: no tick for %.0f s, its subtask is gone; stopping", service.optimizer_id, idle)
                service.stop()

    def eval(self, tick: int) -> int:
        self.last_tick = time.monotonic()
        return 1 if self.service is not None and self.service.running else 0

    def close(self) -> None:
        if self.service is not None:
            self.service.stop()
            self.service = None


def build_pipeline(
    config_json: str,
    group: str,
    *,
    parallelism: int,
    threads: int,
    python: str,
    jars: list[Path] | None = None,
    settings: Mapping[str, str] | None = None,
) -> StreamExecutionEnvironment:
    """The job graph: ``parallelism`` optimizers of ``threads`` executor threads each."""
    flink = Configuration()
    values = {
        "python.executable": python,
        "python.client.executable": python,
        "pipeline.name": f"mixed-iceberg-optimizer-{group}",
        "python.fn-execution.bundle.size": "1",  # a tick is handed to the function at once
        **(settings or {}),
    }
    slots = values.get(_SLOTS, "1")
    if slots.isdigit() and int(slots) < parallelism:
        values[_SLOTS] = str(parallelism)  # a local mini-cluster: one TaskManager with a slot per subtask
    for key, value in values.items():
        flink.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(flink)
    if jars:
        env.add_jars(*(jar.resolve().as_uri() for jar in jars))
    env.set_parallelism(parallelism)
    t_env = StreamTableEnvironment.create(env)
    t_env.execute_sql(
        f"CREATE TEMPORARY TABLE ticks (n INT) WITH ('connector' = 'datagen', 'rows-per-second' = '{parallelism}', "
        "'fields.n.kind' = 'random', 'fields.n.min' = '0', 'fields.n.max' = '0')"
    )
    function = udf(OptimizerFunction(config_json, group, threads), result_type=DataTypes.INT())
    t_env.create_temporary_function("mixed_iceberg_optimizer", function)
    t_env.execute_sql("CREATE TEMPORARY TABLE done (n INT) WITH ('connector' = 'blackhole')")
    statements = t_env.create_statement_set()
    statements.add_insert_sql("INSERT INTO done SELECT mixed_iceberg_optimizer(n) FROM ticks")
    statements.attach_as_datastream()
    return env

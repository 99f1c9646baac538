"""Running the real ingest job (``jobs/ingest_cdc.py``) and the CDC producer from tests.

A job runs as its own process group (the Python client and the PyFlink gateway JVM that hosts
the mini-cluster), so :meth:`IngestJob.kill` is a ``kill -9`` of the whole tree.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyarrow as pa
from confluent_kafka import Producer

from mixed_iceberg import MixedTable
from mixed_iceberg.exceptions import NoSuchTableError
from mixed_iceberg.ingest.cdc import CdcFormat, CdcParser
from mixed_iceberg.ingest.config import load_ingest_config
from mixed_iceberg.ingest.dead_letter import DeadLetterContext
from mixed_iceberg.ingest.job import caught_up
from mixed_iceberg.ingest.runtime import load_table
from mixed_iceberg.ingest.writer import committed_offsets
from mixed_iceberg.logstore.base import Headers, LogStoreConsumer
from mixed_iceberg.logstore.kafka import KafkaLogStore
from tests.support.services import ROOT

__all__ = [
    "IngestJob",
    "IngestSetup",
    "produce",
    "produce_more",
    "produce_values",
    "read_dead_letters",
    "read_records",
    "read_topic",
]


@dataclass
class IngestSetup:
    """One isolated pipeline: its own topics, job name, table and warehouse."""

    root: Path
    bootstrap: str
    name: str
    parallelism: int = 2
    commit_interval_ms: int = 500
    env: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        # Topics, consumer groups and transactional ids outlive a test session in a reused
        # broker, so every setup gets names of its own.
        self.name = f"{self.name}-{uuid.uuid4().hex[:8]}"
        self.env = {
            **os.environ,
            "MIXED_ICEBERG_WAREHOUSE_DIR": str(self.root / "warehouse"),
            "MIXED_ICEBERG_KAFKA_BOOTSTRAP": self.bootstrap,
            "MIXED_ICEBERG_INGEST_JOB": self.name,
            "MIXED_ICEBERG_INGEST_TABLE": f"it.{self.name.replace('-', '_')}",
            "MIXED_ICEBERG_INGEST_TOPIC": f"{self.name}_cdc",
            "MIXED_ICEBERG_INGEST_DLQ": f"{self.name}_dlq",
            "MIXED_ICEBERG_INGEST_LOG_TOPIC": f"{self.name}_log",
            "FLINK_LOG_DIR": str(self.root / "flink-log"),
        }

    @property
    def topic(self) -> str:
        return self.env["MIXED_ICEBERG_INGEST_TOPIC"]

    def args(self) -> list[str]:
        return ["--set", f"parallelism={self.parallelism}", "--set", f"commit-interval-ms={self.commit_interval_ms}"]

    @contextlib.contextmanager
    def environment(self) -> Iterator[None]:
        """This pipeline's variables in ``os.environ`` (catalogs resolve ``${VAR}`` when loaded)."""
        saved = dict(os.environ)
        os.environ.update(self.env)
        try:
            yield
        finally:
            os.environ.clear()
            os.environ.update(saved)

    def table(self) -> MixedTable:
        with self.environment():
            return load_table(load_ingest_config(ROOT / "conf" / "ingest.yaml"))

    def table_next(self, partitions: int = 4) -> int:
        """The next source offsets the table holds, summed over the partitions (0 before the
        job created the table)."""
        try:
            table = self.table()
        except NoSuchTableError:
            return 0
        offsets = committed_offsets(table, self.env["MIXED_ICEBERG_INGEST_JOB"], self.topic, range(partitions))
        return sum(o or 0 for o in offsets.values())

    def wait_caught_up(self, timeout: float) -> None:
        """Wait until the table and LogStore hold the whole topic (the job's own check)."""
        deadline = time.monotonic() + timeout
        while True:
            with self.environment():
                if caught_up(load_ingest_config(ROOT / "conf" / "ingest.yaml")):
                    return
            assert time.monotonic() < deadline, f"{self.name}: not caught up after {timeout} s"
            time.sleep(0.5)

    def log_changes(self) -> pa.Table:
        """Every committed LogStore change (read_committed), with partition and offset."""
        reader = KafkaLogStore(self.bootstrap).reader(self.env["MIXED_ICEBERG_INGEST_LOG_TOPIC"])
        consumer = LogStoreConsumer(reader, self.table().arrow_schema())
        try:
            return consumer.read_all(idle_timeout=3.0)
        finally:
            consumer.close()


class IngestJob:
    """One run of the job as a subprocess (its own session, so kill -9 takes the JVM too).

    ``on_cluster``: submit it with ``flink run -py`` (through ``scripts/services/flink.sh``) to
    the running session cluster, the way docs/ingest.md says, instead of ``python jobs/...``.
    """

    def __init__(
        self,
        setup: IngestSetup,
        *,
        until_caught_up: bool = True,
        bounded: bool = False,
        timeout: float = 300.0,
        on_cluster: bool = False,
        extra: Sequence[str] = (),
    ) -> None:
        self.log_path = setup.root / f"job-{time.monotonic_ns()}.log"
        launcher = ["bash", "scripts/services/flink.sh", "run", "-py"] if on_cluster else [sys.executable]
        command = [*launcher, "jobs/ingest_cdc.py", "--config", "conf/ingest.yaml", *setup.args(), *extra]
        if until_caught_up:
            command += ["--until-caught-up", "--timeout", str(timeout)]
        if bounded:
            command.append("--bounded")
        self._log = self.log_path.open("w")
        self.proc = subprocess.Popen(
            command, env=setup.env, cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def wait(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout)
        finally:
            self._log.close()

    def kill(self) -> None:
        """kill -9 of the whole process group (client, gateway JVM, Python workers)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)
        self._log.close()

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")


def produce(
    setup: IngestSetup,
    events: int,
    keys: int,
    bad: int = 0,
    seed: int = 7,
    *,
    first_key: int = 0,
    transaction: bool = False,
    nested: bool = False,
) -> dict[str, object]:
    """Run ``scripts/produce_cdc.py`` (``transaction``: all in one Kafka transaction; ``nested``:
    with its list and struct columns); returns its oracle (final state and counts)."""
    oracle = setup.root / f"oracle-{seed}-{first_key}.json"
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "produce_cdc.py"), "--bootstrap", setup.bootstrap, "--topic", setup.topic,
         "--events", str(events), "--keys", str(keys), "--bad", str(bad), "--seed", str(seed), "--oracle", str(oracle),
         "--first-key", str(first_key), *(["--transaction"] if transaction else []), *(["--nested"] if nested else [])],
        check=True, env=setup.env, cwd=ROOT, capture_output=True, timeout=300,
    )  # fmt: skip
    loaded: dict[str, object] = json.loads(oracle.read_text())
    return loaded


def produce_more(setup: IngestSetup, oracle: dict[str, object], events: int, keys: int, seed: int) -> dict[str, object]:
    """Continue a produced stream: Debezium events over ``keys`` keys that start from ``oracle``'s
    final state (so updates and deletes hit rows an earlier run committed), sent through
    ``scripts/produce_cdc.py --replay``; returns the new oracle."""
    final = oracle["final"]
    assert isinstance(final, dict)
    live: dict[int, dict[str, object]] = {int(k): v for k, v in final.items()}
    rng = random.Random(seed)
    lines = []
    for _ in range(events):
        key = rng.randrange(keys)
        after = {"id": key, "customer": f"c{key % 97}", "qty": rng.randrange(1, 100), "price": round(rng.uniform(1, 500), 2)}
        before = live.get(key)
        if before is None:
            message = {"before": None, "after": after, "op": "c"}
            live[key] = after
        elif rng.random() < 0.7:
            message = {"before": before, "after": after, "op": "u"}
            live[key] = after
        else:
            message = {"before": before, "after": None, "op": "d"}
            del live[key]
        lines.append(json.dumps({**message, "ts_ms": 0}, separators=(",", ":")))
    dump = setup.root / f"more-{seed}.ndjson"
    dump.write_text("\n".join(lines) + "\n")
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "produce_cdc.py"), "--bootstrap", setup.bootstrap, "--topic", setup.topic,
         "--replay", str(dump)],
        check=True, env=setup.env, cwd=ROOT, capture_output=True, timeout=300,
    )  # fmt: skip
    return {"events": events, "bad": 0, "final": {str(k): v for k, v in live.items()}}


def read_records(bootstrap: str, topic: str) -> tuple[pa.Array, npt.NDArray[np.int32], npt.NDArray[np.int64], list[Headers]]:
    """All committed values of ``topic`` with partitions, offsets and headers, partition by partition in offset order."""
    reader = KafkaLogStore(bootstrap).reader(topic, headers=True)
    values, partitions, offsets, headers = [], [], [], []
    try:
        while True:
            batch = reader.fetch(50_000, 3.0)
            if len(batch) == 0:
                break
            values.append(batch.values)
            partitions.append(batch.partitions)
            offsets.append(batch.offsets)
            headers.extend(batch.headers or [])
    finally:
        reader.close()
    if not values:
        return pa.array([], pa.binary()), np.zeros(0, np.int32), np.zeros(0, np.int64), []
    parts, offs = np.concatenate(partitions), np.concatenate(offsets)
    order = np.lexsort((offs, parts))
    return pa.concat_arrays(values).take(pa.array(order)), parts[order], offs[order], [headers[i] for i in order.tolist()]


def read_topic(bootstrap: str, topic: str) -> tuple[pa.Array, npt.NDArray[np.int32]]:
    """All committed values of ``topic`` and their partitions, partition by partition in offset order."""
    values, partitions, _, _ = read_records(bootstrap, topic)
    return values, partitions


def read_dead_letters(bootstrap: str, topic: str) -> list[tuple[bytes, DeadLetterContext]]:
    """Every committed dead letter of ``topic``: the rejected message's bytes and its context headers."""
    values, _, _, headers = read_records(bootstrap, topic)
    return [(value, DeadLetterContext.from_headers(h)) for value, h in zip(values.to_pylist(), headers, strict=True)]


def produce_values(setup: IngestSetup, values: Sequence[bytes], partitions: Sequence[int]) -> None:
    """Produce ``values`` as they are (no key) to the source topic, each to its partition."""
    producer = Producer({"bootstrap.servers": setup.bootstrap, "enable.idempotence": True})
    for value, partition in zip(values, partitions, strict=True):
        producer.produce(setup.topic, value, partition=partition)
    left = producer.flush(60)
    assert left == 0, f"{left} messages to {setup.topic} not delivered"


def expected_changes(setup: IngestSetup) -> pa.Table:
    """What the LogStore must hold: the source topic parsed per partition in offset order."""
    table = setup.table()
    values, _ = read_topic(setup.bootstrap, setup.topic)
    parser = CdcParser(table.arrow_schema(), table.primary_key, CdcFormat.DEBEZIUM_JSON)
    return parser.parse(values, np.arange(len(values))).changes


__all__ += ["expected_changes"]

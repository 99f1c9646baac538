"""A real Debezium source: Kafka Connect's REST API, a PostgreSQL source table, the comparison.

Shared by ``tests/integration/test_debezium_postgres.py`` and ``scripts/demo_postgres.py``.
The source table's columns are those of ``conf/ingest-debezium.yaml``; :func:`source_rows`
reads PostgreSQL's state in the types the ingest job maps Debezium's encodings to (so it can
be compared value by value with the merged read, :func:`table_rows`).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import psycopg2
import psycopg2.extensions
from confluent_kafka import Consumer, TopicPartition

from mixed_iceberg import MixedTable

__all__ = [
    "COLUMNS",
    "ConnectClient",
    "SourceTable",
    "connector_config",
    "debezium_messages",
    "semantic_types",
    "source_rows",
    "table_rows",
    "wait_for_snapshot",
]

#: The source table's columns (PostgreSQL types); the table's are in conf/ingest-debezium.yaml.
COLUMNS: dict[str, str] = {
    "id": "bigint PRIMARY KEY",
    "amount": "numeric(12, 2)",
    "day": "date",
    "at": "timestamp",
    "at_ms": "timestamp(3)",  # io.debezium.time.Timestamp: milliseconds (time.precision.mode=adaptive)
    "atz": "timestamptz",
    "t_ms": "time(3)",  # io.debezium.time.Time: int32 milliseconds
    "uid": "uuid",
    "note": "text",
    "flag": "boolean",
    "raw": "bytea",
    "doc": "jsonb",
}
#: Columns as PostgreSQL is asked for them: uuid and jsonb as their text (what Debezium sends).
_SELECT = ", ".join(f"{c}::text" if COLUMNS[c] in ("uuid", "jsonb") else c for c in COLUMNS)


class ConnectClient:
    """Kafka Connect's REST API (``scripts/services/connect.sh url``)."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"{self.url}{path}", data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                text = response.read()
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"{method} {path}: expected a 2xx answer, found {exc.code}: {exc.read().decode()}") from exc
        return json.loads(text) if text else None

    def create(self, name: str, config: dict[str, str]) -> None:
        self._call("POST", "/connectors", {"name": name, "config": config})

    def status(self, name: str) -> dict[str, Any]:
        status: dict[str, Any] = self._call("GET", f"/connectors/{name}/status")
        return status

    def restart(self, name: str) -> None:
        """Restart the connector and its tasks (they resume from the committed source offsets)."""
        self._call("POST", f"/connectors/{name}/restart?includeTasks=true&onlyFailed=false")

    def delete(self, name: str) -> None:
        self._call("DELETE", f"/connectors/{name}")

    def wait_running(self, name: str, timeout: float = 60.0) -> None:
        """Until the connector and its one task run; a failed task raises with its trace."""
        deadline = time.monotonic() + timeout
        status: dict[str, Any] = {}
        while time.monotonic() < deadline:
            try:
                status = self.status(name)
            except RuntimeError:  # 404 until the worker has read the new config
                time.sleep(0.3)
                continue
            tasks = status.get("tasks", [])
            failed = [t for t in tasks if t["state"] == "FAILED"]
            if failed:
                raise RuntimeError(f"connector {name}: task failed: {failed[0].get('trace', '')[:3000]}")
            if status["connector"]["state"] == "RUNNING" and tasks and all(t["state"] == "RUNNING" for t in tasks):
                return
            time.sleep(0.3)
        raise TimeoutError(f"connector {name}: expected RUNNING within {timeout} s, found {status}")


def connector_config(*, host: str, port: int, database: str, table: str, prefix: str, partitions: int = 2) -> dict[str, str]:
    """Debezium's PostgreSQL connector for ``public.<table>``, to topic ``<prefix>.public.<table>``.

    pgoutput (built into PostgreSQL 10+), a slot and a publication of this table only, named
    after ``prefix``; every encoding is Debezium's default (decimal.handling.mode=precise,
    time.precision.mode=adaptive, binary.handling.mode=bytes); the topic is created with
    ``partitions`` partitions (keyed by the primary key, as Debezium writes it)."""
    return {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "tasks.max": "1",
        "database.hostname": host,
        "database.port": str(port),
        "database.user": "postgres",
        "database.password": "",
        "database.dbname": database,
        "topic.prefix": prefix,
        "plugin.name": "pgoutput",
        "slot.name": prefix,
        "publication.name": prefix,
        "publication.autocreate.mode": "filtered",
        "table.include.list": f"public.{table}",
        "snapshot.mode": "initial",
        "topic.creation.default.replication.factor": "1",
        "topic.creation.default.partitions": str(partitions),
    }


@dataclass
class SourceTable:
    """A table in the private PostgreSQL cluster, with the columns of :data:`COLUMNS`."""

    dsn: str
    name: str

    def connect(self) -> psycopg2.extensions.connection:
        connection = psycopg2.connect(self.dsn)
        connection.autocommit = True
        return connection

    def create(self) -> None:
        with self.connect() as connection, connection.cursor() as cursor:
            columns = ", ".join(f"{name} {kind}" for name, kind in COLUMNS.items())
            cursor.execute(f"DROP TABLE IF EXISTS public.{self.name}")
            cursor.execute(f"CREATE TABLE public.{self.name} ({columns})")

    def insert(self, cursor: psycopg2.extensions.cursor, row: Mapping[str, object]) -> None:
        """Insert ``row``, a value for every column of :data:`COLUMNS` by name: the statement is
        built from that one list, so a column added there cannot shift a caller's values into
        the wrong columns (it is refused here instead)."""
        if set(row) != set(COLUMNS):
            missing, unknown = [c for c in COLUMNS if c not in row], [c for c in row if c not in COLUMNS]
            raise ValueError(
                f"{self.name}: expected a value for each of {list(COLUMNS)}, found none for {missing}, unknown {unknown}"
            )
        names = ", ".join(COLUMNS)
        values = ", ".join(f"%({c})s" for c in COLUMNS)
        cursor.execute(f"INSERT INTO public.{self.name} ({names}) VALUES ({values})", dict(row))

    def drop(self, slot: str) -> None:
        """Drop the table, and the replication slot and publication a connector made for it.

        An active slot cannot be dropped: the connector's task holds it until it has stopped."""
        with self.connect() as connection, connection.cursor() as cursor:
            deadline = time.monotonic() + 30
            while True:
                cursor.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,))
                found = cursor.fetchone()
                if found is None:
                    break
                if not found[0]:
                    cursor.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"replication slot {slot} still active after 30 s")
                time.sleep(0.3)
            cursor.execute(f'DROP PUBLICATION IF EXISTS "{slot}"')
            cursor.execute(f"DROP TABLE IF EXISTS public.{self.name}")


def source_rows(connection: psycopg2.extensions.connection, table: str) -> list[tuple[object, ...]]:
    """PostgreSQL's rows ordered by id, in the ingest job's mapping: numeric -> Decimal, date,
    timestamp (any precision) -> naive datetime, timestamptz -> aware datetime, time -> time, uuid/text/jsonb -> str (jsonb
    as PostgreSQL prints it, which is what Debezium sends), boolean, bytea -> bytes."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {_SELECT} FROM public.{table} ORDER BY id")
        rows = cursor.fetchall()
    return [tuple(bytes(v) if isinstance(v, memoryview) else v for v in row) for row in rows]


def table_rows(table: MixedTable) -> list[tuple[object, ...]]:
    """The merged read ordered by id, as Python values (timestamptz aware, in UTC)."""
    merged = table.scan().to_arrow().select(list(COLUMNS)).sort_by("id")
    return [tuple(row[c] for c in COLUMNS) for row in merged.to_pylist()]


def _records(bootstrap: str, topic: str, timeout: float) -> Iterator[tuple[int, int, Any]]:
    """(partition, offset, decoded JSON value or None for a tombstone) of every message now in ``topic``."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"debezium-read-{time.monotonic_ns()}", "enable.auto.commit": False}
    )
    try:
        metadata = consumer.list_topics(topic, timeout=timeout).topics[topic]
        if metadata.error is not None:
            return
        ends: dict[int, int] = {}
        assignment = []
        for partition in metadata.partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout)
            if high > low:
                ends[partition] = high
                assignment.append(TopicPartition(topic, partition, low))
        if not assignment:
            return
        consumer.assign(assignment)
        deadline = time.monotonic() + timeout * 6
        while ends and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            partition, offset = message.partition(), message.offset()
            if partition is None or offset is None:
                continue
            value = message.value()
            yield partition, offset, None if value is None else json.loads(value)
            if offset + 1 >= ends.get(partition, 0):
                ends.pop(partition, None)
    finally:
        consumer.close()


def debezium_messages(bootstrap: str, topic: str, timeout: float = 5.0) -> Iterator[tuple[int, int, dict[str, Any] | None]]:
    """(partition, offset, payload or None for a tombstone) of every message now in ``topic``."""
    for partition, offset, decoded in _records(bootstrap, topic, timeout):
        payload = decoded.get("payload", decoded) if isinstance(decoded, dict) else None
        yield partition, offset, payload


def semantic_types(bootstrap: str, topic: str, timeout: float = 5.0) -> dict[str, str | None]:
    """Column -> the semantic type name (None: a plain type) of the after image in the first
    message of ``topic`` that carries a schema: what the connector says each column is."""
    for _, _, decoded in _records(bootstrap, topic, timeout):
        if isinstance(decoded, dict) and isinstance(decoded.get("schema"), dict):
            after = next(f for f in decoded["schema"]["fields"] if f["field"] == "after")
            return {f["field"]: f.get("name") for f in after["fields"]}
    raise AssertionError(f"{topic}: no message with a schema")


def wait_for_snapshot(bootstrap: str, topic: str, rows: int, timeout: float) -> None:
    """Until the snapshot's ``rows`` reads (op r) are in ``topic``. The task runs before its
    slot exists; rows changed before that would be read by the snapshot, not streamed."""
    deadline = time.monotonic() + timeout
    while sum(1 for _, _, p in debezium_messages(bootstrap, topic) if p is not None and p["op"] == "r") < rows:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{topic}: expected the snapshot's {rows} rows within {timeout} s")
        time.sleep(0.5)

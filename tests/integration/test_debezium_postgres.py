"""A real Debezium source: PostgreSQL (pgoutput) -> Kafka Connect + Debezium -> Kafka -> the
PyFlink ingest job -> the table, whose merged read must equal PostgreSQL's final state."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import random
import shutil
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import psycopg2.extensions
import pytest

from mixed_iceberg.ingest.config import load_ingest_config
from mixed_iceberg.ingest.runtime import load_table
from tests.support.debezium import (
    COLUMNS,
    ConnectClient,
    SourceTable,
    connector_config,
    debezium_messages,
    semantic_types,
    source_rows,
    table_rows,
    wait_for_snapshot,
)
from tests.support.ingest import IngestJob, IngestSetup, read_topic
from tests.support.make import make_command
from tests.support.services import CONNECT, POSTGRES, ROOT
from tests.support.sockets import ListenerWatch, assert_loopback_only

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("java") is None or (shutil.which("mvn") is None and not (ROOT / ".jars" / "connect").exists()),
        reason="needs Java 17 and Maven: Kafka, Kafka Connect and Debezium run on the JVM, their jars come from Maven Central",
    ),
]

CONFIG = "conf/ingest-debezium.yaml"
_TEXT = "abcxyzé€😀 '\"\\\n\t%_"
_OFFSETS = [dt.timezone(dt.timedelta(minutes=m)) for m in (-600, -330, 0, 60, 345, 840)]


@pytest.fixture(scope="module")
def connect_url(kafka_bootstrap: str) -> Iterator[str]:
    with CONNECT.leased() as url:
        yield url


@pytest.fixture(scope="module")
def logical_postgres(postgres_url: str) -> str:
    """The private cluster with logical WAL: `start` restarts one that runs without it."""
    POSTGRES.run("start", timeout=600)
    parts = urlsplit(postgres_url)
    return f"postgresql://{parts.username}@{parts.hostname}:{parts.port}{parts.path}"


def random_values(rng: random.Random) -> dict[str, object]:
    """Non-key column values, each NULL now and then, with the edges of each type."""

    def maybe(value: object) -> object:
        return None if rng.random() < 0.1 else value

    unscaled = rng.choice([0, 1, -1, 10**12 - 1, -(10**12 - 1), rng.randrange(-(10**12) + 1, 10**12)])
    return {
        "amount": maybe(decimal.Decimal(unscaled).scaleb(-2)),
        "day": maybe(dt.date(1900, 1, 1) + dt.timedelta(days=rng.randrange(73_000))),
        "at": maybe(dt.datetime(1900, 1, 1) + dt.timedelta(microseconds=rng.randrange(6_300_000_000_000_000))),
        # Whole milliseconds: PostgreSQL would round finer values to its precision 3 (and a
        # time to 24:00:00, which Python's time cannot hold).
        "at_ms": maybe(dt.datetime(1900, 1, 1) + dt.timedelta(milliseconds=rng.randrange(6_300_000_000_000))),
        "t_ms": maybe((dt.datetime(2000, 1, 1) + dt.timedelta(milliseconds=rng.randrange(86_400_000))).time()),
        "atz": maybe(
            dt.datetime(1950, 1, 1, tzinfo=dt.UTC).astimezone(rng.choice(_OFFSETS))
            + dt.timedelta(microseconds=rng.randrange(3_000_000_000_000_000))
        ),
        "uid": maybe(str(uuid.UUID(int=rng.getrandbits(128)))),
        "note": maybe("".join(rng.choice(_TEXT) for _ in range(rng.randrange(0, 30)))),
        "flag": maybe(rng.random() < 0.5),
        "raw": maybe(rng.randbytes(rng.choice([0, 1, 2, 3, rng.randrange(40)]))),
        "doc": maybe(json.dumps({"k": rng.randrange(100), "s": "".join(rng.choice(_TEXT) for _ in range(5)), "l": [1, None]})),
    }


class Workload:
    """Changes to the source table, tracking which keys are live."""

    def __init__(self, connection: psycopg2.extensions.connection, table: str, seed: int) -> None:
        self.connection = connection
        self.table = table
        self.rng = random.Random(seed)
        self.live: set[int] = set()
        self.next_key = 0

    def _execute(self, cursor: psycopg2.extensions.cursor, sql: str, params: dict[str, object] | tuple[object, ...]) -> None:
        cursor.execute(sql.replace("{t}", f"public.{self.table}"), params)

    def insert(self, cursor: psycopg2.extensions.cursor) -> None:
        row = {"id": self.next_key, **random_values(self.rng)}
        names = ", ".join(row)
        self._execute(cursor, f"INSERT INTO {{t}} ({names}) VALUES ({', '.join(f'%({c})s' for c in row)})", row)
        self.live.add(self.next_key)
        self.next_key += 1

    def update(self, cursor: psycopg2.extensions.cursor) -> None:
        key = self.rng.choice(sorted(self.live))
        values = random_values(self.rng)
        chosen = self.rng.sample(sorted(values), self.rng.randrange(1, len(values) + 1))
        sets = ", ".join(f"{c} = %({c})s" for c in chosen)
        self._execute(cursor, f"UPDATE {{t}} SET {sets} WHERE id = %(id)s", {**{c: values[c] for c in chosen}, "id": key})

    def move_key(self, cursor: psycopg2.extensions.cursor) -> None:
        """A primary-key change: Debezium sends a delete of the old key and a create of the new."""
        key = self.rng.choice(sorted(self.live))
        self._execute(cursor, "UPDATE {t} SET id = %s, note = %s WHERE id = %s", (self.next_key, f"moved from {key}", key))
        self.live.discard(key)
        self.live.add(self.next_key)
        self.next_key += 1

    def delete(self, cursor: psycopg2.extensions.cursor) -> None:
        key = self.rng.choice(sorted(self.live))
        self._execute(cursor, "DELETE FROM {t} WHERE id = %s", (key,))
        self.live.discard(key)

    def statements(self, count: int) -> None:
        """``count`` single-statement transactions of every kind."""
        with self.connection.cursor() as cursor:
            for _ in range(count):
                self.rng.choices([self.insert, self.update, self.move_key, self.delete], weights=[3, 4, 1, 2])[0](cursor)

    def transactions(self, count: int, size: int) -> None:
        """``count`` transactions of ``size`` statements each, one of them inserting and deleting
        the same key, and updating one key twice."""
        self.connection.autocommit = False
        try:
            with self.connection.cursor() as cursor:
                for _ in range(count):
                    self.insert(cursor)
                    self.delete_key(cursor, self.next_key - 1)
                    for _ in range(size):
                        self.rng.choices([self.insert, self.update, self.move_key, self.delete], weights=[3, 4, 1, 2])[0](cursor)
                    self.update(cursor)
                    self.connection.commit()
        finally:
            self.connection.autocommit = True

    def delete_key(self, cursor: psycopg2.extensions.cursor, key: int) -> None:
        self._execute(cursor, "DELETE FROM {t} WHERE id = %s", (key,))
        self.live.discard(key)

    def mark(self, marker: str) -> int:
        """Set ``note`` of a live row to ``marker``; returns its key."""
        key = min(self.live)
        with self.connection.cursor() as cursor:
            self._execute(cursor, "UPDATE {t} SET note = %s WHERE id = %s", (marker, key))
        return key


def wait_for_marker(bootstrap: str, topic: str, marker: str, timeout: float) -> list[dict[str, object]]:
    """Every payload of ``topic`` once the change that set ``marker`` is in it."""
    deadline = time.monotonic() + timeout
    while True:
        payloads = [p for _, _, p in debezium_messages(bootstrap, topic) if p is not None]
        if any((p.get("after") or {}).get("note") == marker for p in payloads):  # type: ignore[union-attr]
            return payloads
        assert time.monotonic() < deadline, f"{topic}: the change that set {marker!r} did not arrive within {timeout} s"
        time.sleep(1)


def test_debezium_postgres_changes_land_in_the_table_value_by_value(
    kafka_bootstrap: str, connect_url: str, logical_postgres: str, tmp_path: Path
) -> None:
    started = time.monotonic()
    run = uuid.uuid4().hex[:8]
    source = SourceTable(logical_postgres, f"dbz_src_{run}")
    prefix = f"dbz{run}"
    topic = f"{prefix}.public.{source.name}"
    connect = ConnectClient(connect_url)
    parts = urlsplit(logical_postgres)
    assert parts.hostname is not None
    assert parts.port is not None
    source.create()
    connection = source.connect()
    try:
        workload = Workload(connection, source.name, seed=15)
        with connection.cursor() as cursor:
            for _ in range(150):  # read by the snapshot (op r)
                workload.insert(cursor)
        config = connector_config(
            host=parts.hostname, port=parts.port, database=parts.path.lstrip("/"), table=source.name, prefix=prefix
        )
        connect.create(prefix, config)
        try:
            connect.wait_running(prefix)
            wait_for_snapshot(kafka_bootstrap, topic, 150, timeout=60)
            workload.statements(150)
            workload.transactions(10, size=6)
            connect.restart(prefix)
            workload.statements(60)  # while the connector restarts
            connect.wait_running(prefix)
            workload.transactions(5, size=4)
            workload.statements(60)
            marker = f"final-{run}"
            workload.mark(marker)
            payloads = wait_for_marker(kafka_bootstrap, topic, marker, timeout=90)
        finally:
            connect.delete(prefix)
        ops = Counter(str(p["op"]) for p in payloads)
        assert ops["r"] == 150, ops
        assert min(ops["c"], ops["u"], ops["d"]) > 0, ops
        # The columns the schema's unit decides: milliseconds for precision 3 (adaptive mode).
        names = semantic_types(kafka_bootstrap, topic)
        assert (names["at"], names["at_ms"], names["t_ms"]) == (
            "io.debezium.time.MicroTimestamp",
            "io.debezium.time.Timestamp",
            "io.debezium.time.Time",
        ), names
        caught_up_at = time.monotonic()

        setup = IngestSetup(tmp_path, kafka_bootstrap, "it-debezium")
        setup.env["MIXED_ICEBERG_INGEST_TOPIC"] = topic
        job = IngestJob(setup, timeout=240, extra=["--config", CONFIG])
        assert job.wait(300) == 0, job.output()[-5000:]
        job_s = time.monotonic() - caught_up_at

        with setup.environment():
            ingest_config = load_ingest_config(ROOT / CONFIG)
            table = load_table(ingest_config)
        expected = source_rows(connection, source.name)
        got = table_rows(table)
        assert len(expected) == len(workload.live) > 100
        assert [r[0] for r in got] == [r[0] for r in expected]
        for want, have in zip(expected, got, strict=True):
            assert dict(zip(COLUMNS, have, strict=True)) == dict(zip(COLUMNS, want, strict=True))
        letters, _ = read_topic(kafka_bootstrap, setup.env["MIXED_ICEBERG_INGEST_DLQ"])
        assert len(letters) == 0, letters.to_pylist()[:3]
        print(
            f"debezium test: {sum(ops.values())} messages {dict(ops)}; job {job_s:.1f} s; total {time.monotonic() - started:.1f} s"
        )
    finally:
        connection.close()
        source.drop(slot=prefix)


def test_kafka_connect_listens_on_loopback_only(connect_url: str) -> None:
    assert_loopback_only(CONNECT)


def test_make_demo_postgres_shows_the_table_equal_to_postgresql(
    kafka_bootstrap: str, connect_url: str, logical_postgres: str, tmp_path: Path
) -> None:
    """``make demo-postgres`` (docs/debezium.md) as a user runs it, on the services this module
    runs anyway; its ingest job listens on loopback only, as ``make demo``'s jobs do."""
    started = time.monotonic()
    log = tmp_path / "make-demo-postgres.log"
    with log.open("w+") as output:
        make = subprocess.Popen(make_command("demo-postgres"), cwd=ROOT, stdout=output, stderr=subprocess.STDOUT, text=True)
        with ListenerWatch(lambda: [make.pid]).running() as watch:
            code = make.wait(600)
        output.seek(0)
        text = output.read()
    assert code == 0, text[-5000:]
    assert "value by value: equal" in text, text[-5000:]
    assert watch.workers, "the demo's ingest job was not seen running"
    assert watch.exposed() == [], watch.report()
    print(f"make demo-postgres: {time.monotonic() - started:.1f} s")

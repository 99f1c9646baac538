"""`make demo-postgres`: a real Debezium source, PostgreSQL -> Kafka Connect -> Kafka -> the table.

Starts the private PostgreSQL cluster (scripts/services/postgres.sh, wal_level=logical), Kafka
(kafka.sh) and a Kafka Connect worker with Debezium's PostgreSQL connector (connect.sh; its
jars come from Maven Central on first use). Creates a source table with numeric, date,
timestamp, timestamptz, uuid, text, boolean, bytea and jsonb columns and a few rows, starts the
connector (it snapshots those rows), makes changes (updates, a primary-key change, deletes, a
transaction), waits until Debezium has sent them, runs the PyFlink ingest job
(jobs/ingest_cdc.py with conf/ingest-debezium.yaml) until it has committed everything, and
prints the merged table beside PostgreSQL's. It then deletes the connector, its replication
slot and the source table, and stops the services it started. Each run uses a fresh table
under .warehouse/postgres-demo.
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import psycopg2.extensions

    from tests.support.debezium import SourceTable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SERVICES = ROOT / "scripts" / "services"
CONFIG = ROOT / "conf" / "ingest-debezium.yaml"


def _service(name: str, command: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        ["bash", str(SERVICES / f"{name}.sh"), command], capture_output=True, text=True, env=env, cwd=ROOT, check=False
    )
    if command != "status" and proc.returncode != 0:
        raise SystemExit(f"demo: {name}.sh {command} failed ({proc.returncode}):\n{proc.stderr}")
    return proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""


def _running(name: str) -> bool:
    return subprocess.run(["bash", str(SERVICES / f"{name}.sh"), "status"], capture_output=True, check=False).returncode == 0


def _row(key: int) -> dict[str, object]:
    """A source row with a value for every column, by name (SourceTable.insert checks that it
    names each column of tests/support/debezium.py's COLUMNS, the one definition of them)."""
    return {
        "id": key,
        "amount": decimal.Decimal(key * 1234567) / 100,
        "day": dt.date(2024, 1, key),
        "at": dt.datetime(2024, 1, key, 12, 0, 0, key),
        "at_ms": dt.datetime(2024, 1, key, 12, 30, 0, key * 1000),
        "atz": dt.datetime(2024, 1, key, 12, tzinfo=dt.timezone(dt.timedelta(hours=key - 4))),
        "t_ms": dt.time(key, 15, 0, key * 1000),
        "uid": str(uuid.uuid4()),
        "note": f"order {key}",
        "flag": key % 2 == 0,
        "raw": bytes(range(key)),
        "doc": f'{{"items": {key}}}',
    }


def _changes(cursor: psycopg2.extensions.cursor, source: SourceTable) -> None:
    """What happens to the source table once the connector streams: each kind of change."""
    run, table = cursor.execute, source.name
    run(f"UPDATE {table} SET amount = amount * 2, note = 'doubled', flag = NOT flag WHERE id IN (1, 2)")
    run(f"UPDATE {table} SET id = 100, note = 'key moved from 3' WHERE id = 3")  # a delete + a create
    run(f"DELETE FROM {table} WHERE id = 4")
    run("BEGIN")
    late = {**_row(9), "amount": decimal.Decimal("-0.01"), "note": "in a transaction", "flag": None, "raw": b"\x00\xff"}
    source.insert(cursor, {**late, "atz": dt.datetime(1999, 12, 31, 23, 59, 59, tzinfo=dt.timezone(dt.timedelta(hours=14)))})
    run(f"UPDATE {table} SET raw = '\\xcafe', doc = doc || '{{\"seen\": true}}' WHERE id = 5")
    run(f"DELETE FROM {table} WHERE id = 6")
    run("COMMIT")


def main() -> int:
    if shutil.which("java") is None or (shutil.which("mvn") is None and not (ROOT / ".jars" / "connect").exists()):
        print("demo-postgres: Java 17 and Maven are needed (Kafka, Kafka Connect and Debezium run on the JVM)", flush=True)
        return 2
    from tests.support.debezium import (
        COLUMNS,
        ConnectClient,
        SourceTable,
        connector_config,
        debezium_messages,
        wait_for_snapshot,
    )

    started = [name for name in ("postgres", "kafka", "connect") if not _running(name)]
    print(f"demo-postgres: starting {', '.join(started) or 'nothing'} (already running: "
          f"{', '.join(n for n in ('postgres', 'kafka', 'connect') if n not in started) or 'none'})", flush=True)  # fmt: skip
    pg_url = _service("postgres", "start")
    bootstrap = _service("kafka", "start")
    connect_url = _service("connect", "start", env={**os.environ, "MIXED_ICEBERG_KAFKA_BOOTSTRAP": bootstrap})
    parts = urlsplit(pg_url)
    assert parts.hostname is not None
    assert parts.port is not None
    dsn = f"postgresql://{parts.username}@{parts.hostname}:{parts.port}{parts.path}"
    run = f"{int(time.time())}"
    source = SourceTable(dsn, f"demo_orders_{run}")
    prefix = f"pgdemo{run}"
    topic = f"{prefix}.public.{source.name}"
    connect = ConnectClient(connect_url)
    warehouse = ROOT / ".warehouse" / "postgres-demo"
    shutil.rmtree(warehouse, ignore_errors=True)
    warehouse.mkdir(parents=True)
    env = {**os.environ, "MIXED_ICEBERG_WAREHOUSE_DIR": str(warehouse), "MIXED_ICEBERG_KAFKA_BOOTSTRAP": bootstrap,
           "MIXED_ICEBERG_INGEST_JOB": f"pg-demo-{run}", "MIXED_ICEBERG_INGEST_TOPIC": topic,
           "MIXED_ICEBERG_INGEST_DLQ": f"{prefix}_dlq", "FLINK_LOG_DIR": str(warehouse / "flink-log")}  # fmt: skip
    connector_created = False
    source.create()
    connection = source.connect()
    try:
        with connection.cursor() as cursor:
            for key in range(1, 9):
                source.insert(cursor, _row(key))
        print(f"demo-postgres: source table public.{source.name} with 8 rows; starting the connector", flush=True)
        connect.create(prefix, connector_config(host=parts.hostname, port=parts.port, database=parts.path.lstrip("/"),
                                                table=source.name, prefix=prefix))  # fmt: skip
        connector_created = True
        connect.wait_running(prefix)
        wait_for_snapshot(bootstrap, topic, 8, timeout=60)  # changes before it would be read by it
        with connection.cursor() as cursor:
            _changes(cursor, source)
            cursor.execute(f"UPDATE {source.name} SET note = 'last change' WHERE id = 8")
        deadline = time.monotonic() + 90
        while True:
            payloads = [p for _, _, p in debezium_messages(bootstrap, topic) if p is not None]
            ops = [str(p["op"]) for p in payloads]
            if any((p.get("after") or {}).get("note") == "last change" for p in payloads):
                break
            if time.monotonic() > deadline:
                print("demo-postgres: Debezium did not send the changes within 90 s; see .services/connect/worker.log")
                return 1
            time.sleep(1)
        print(f"demo-postgres: {len(ops)} Debezium messages in {topic} (ops: {' '.join(sorted(set(ops)))}); "
              "running the PyFlink ingest job until it has committed them", flush=True)  # fmt: skip
        t0 = time.monotonic()
        with (warehouse / "job.log").open("w") as log:
            code = subprocess.call(
                [sys.executable, "jobs/ingest_cdc.py", "--config", str(CONFIG), "--until-caught-up", "--timeout", "300"],
                env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        if code != 0:
            print(f"demo-postgres: the job failed ({code}); see {warehouse / 'job.log'}")
            return code
        print(f"demo-postgres: job caught up in {time.monotonic() - t0:.1f} s (incl. JVM and mini-cluster start)", flush=True)
        return _report(connection, source.name, env, list(COLUMNS))
    finally:
        connection.close()
        if connector_created:
            connect.delete(prefix)
        source.drop(slot=prefix)
        for name in reversed(started):
            _service(name, "stop")
        if started:
            print(f"demo-postgres: stopped {', '.join(reversed(started))}", flush=True)


def _cell(value: object) -> str:
    if isinstance(value, bytes):
        return "\\x" + value.hex()
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).isoformat(sep=" ")
    text = "NULL" if value is None else str(value)
    return text if len(text) <= 36 else text[:35] + "…"


def _print_rows(title: str, columns: list[str], rows: list[tuple[object, ...]]) -> None:
    cells = [columns, *([_cell(v) for v in row] for row in rows)]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    print(f"\n{title}")
    for number, line in enumerate(cells):
        print("  " + "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())
        if number == 0:
            print("  " + "  ".join("-" * w for w in widths))


def _report(connection: psycopg2.extensions.connection, table: str, env: dict[str, str], columns: list[str]) -> int:
    from mixed_iceberg.ingest.config import load_ingest_config
    from mixed_iceberg.ingest.runtime import load_table
    from tests.support.debezium import source_rows, table_rows

    os.environ.update(env)
    target = load_table(load_ingest_config(CONFIG))
    got = table_rows(target)
    want = source_rows(connection, table)
    _print_rows(f"PostgreSQL public.{table} ({len(want)} rows; timestamptz shown in UTC):", columns, want)
    _print_rows(f"merged read of {target.name} ({len(got)} rows):", columns, got)
    equal = got == want
    print(f"\nvalue by value: {'equal' if equal else 'DIFFERENT'}")
    return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main())

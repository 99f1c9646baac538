"""`make demo`: the whole mission end to end on the embedded defaults: streaming CDC in, self-optimizing on its own.

1. Starts the private Kafka broker (scripts/services/kafka.sh; fetched from Maven Central on
   first use).
2. Produces a Debezium CDC stream at a steady rate, with a few malformed messages.
3. Runs both PyFlink jobs together: the ingest job (jobs/ingest_cdc.py, conf/ingest.yaml) and
   the optimizer job (jobs/optimizer_job.py, one optimizer group, its own system database).
   Nobody schedules any optimizing.
4. While they run, prints every few seconds:
   * the ChangeStore's unmerged files and the BaseStore's files;
   * the merged-read time;
   * the optimizer's backlog.

   File counts and read time rise while change piles up and fall back as the optimizer merges
   it.
5. Finally checks the merged view against the producer's oracle, then shows the LogStore and the
   dead-letter topic.

Each run uses fresh topics, a fresh table and a fresh system database under
.warehouse/ingest-demo. Without Java or Maven it falls back to scripts/demo.py (the same format
through the library, no Kafka or Flink).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]
KAFKA_SH = ROOT / "scripts/services/kafka.sh"
sys.path.insert(0, str(ROOT))


def _run(*command: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(command, check=True, capture_output=True, text=True, env=env, cwd=ROOT).stdout.strip()


def _start(command: list[str], env: dict[str, str], log: IO[bytes]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(command, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def _job_env(env: dict[str, str], job: str) -> dict[str, str]:
    """``env`` with a Flink log folder of the job's own: each job's JVM writes
    ``flink-<user>-python-<host>.log`` there and truncates it at start, so in one folder the
    second job to start erased the first one's log."""
    return {**env, "FLINK_LOG_DIR": str(Path(env["FLINK_LOG_DIR"]) / job)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=45_000)
    parser.add_argument("--keys", type=int, default=5_000)
    parser.add_argument("--rate", type=float, default=1_500.0, help="events per second of the CDC stream")
    parser.add_argument("--bad", type=int, default=5)
    parser.add_argument("--every", type=float, default=5.0, help="seconds between two status lines")
    args = parser.parse_args()
    if shutil.which("java") is None or (shutil.which("mvn") is None and not (ROOT / ".jars/kafka").exists()):
        print("demo: Java 17 and Maven are needed for Kafka and Flink; running the library-only demo instead", flush=True)
        return subprocess.call([sys.executable, str(ROOT / "scripts/demo.py")])
    started_kafka = subprocess.run(["bash", str(KAFKA_SH), "status"], capture_output=True).returncode != 0
    print("demo: starting Kafka (KRaft, 127.0.0.1)" if started_kafka else "demo: using the running Kafka broker", flush=True)
    bootstrap = _run("bash", str(KAFKA_SH), "start").splitlines()[-1]
    run = f"demo{int(time.time())}"
    warehouse = ROOT / ".warehouse" / "ingest-demo"
    shutil.rmtree(warehouse, ignore_errors=True)
    warehouse.mkdir(parents=True)
    env = {**os.environ, "MIXED_ICEBERG_WAREHOUSE_DIR": str(warehouse), "MIXED_ICEBERG_KAFKA_BOOTSTRAP": bootstrap,
           "MIXED_ICEBERG_INGEST_JOB": run, "MIXED_ICEBERG_INGEST_TOPIC": f"{run}_cdc", "MIXED_ICEBERG_INGEST_DLQ": f"{run}_dlq",
           "MIXED_ICEBERG_INGEST_LOG_TOPIC": f"{run}_log", "FLINK_LOG_DIR": str(warehouse / "flink-log"),
           "MIXED_ICEBERG_SYSTEM_DB": f"sqlite:///{warehouse}/optimizer.db"}  # fmt: skip
    os.environ.update(env)
    jobs: list[subprocess.Popen[bytes]] = []
    try:
        table = _create_table()
        oracle = warehouse / "oracle.json"
        logs = {name: (warehouse / f"{name}.log").open("wb") for name in ("producer", "ingest", "optimizer")}
        print("demo: starting the PyFlink ingest job and the optimizer job (group 'default', one optimizer)", flush=True)
        optimizer_config = _optimizer_config(warehouse)
        optimizer = _start(
            [
                sys.executable,
                "jobs/optimizer_job.py",
                "--config",
                str(optimizer_config),
                "--group",
                "default",
                "--parallelism",
                "1",
            ],
            _job_env(env, "optimizer"),
            logs["optimizer"],
        )
        jobs.append(optimizer)
        ingest = _start(
            [sys.executable, "jobs/ingest_cdc.py", "--progress-interval", "0"], _job_env(env, "ingest"), logs["ingest"]
        )
        jobs.append(ingest)
        _wait_for_optimizer(warehouse, optimizer)
        producer = _start(
            [sys.executable, "scripts/produce_cdc.py", "--bootstrap", bootstrap, "--topic", env["MIXED_ICEBERG_INGEST_TOPIC"],
             "--events", str(args.events), "--keys", str(args.keys), "--bad", str(args.bad), "--rate", str(args.rate),
             "--oracle", str(oracle)], env, logs["producer"])  # fmt: skip
        jobs.append(producer)
        print(f"demo: producing {args.events:,} CDC events at {args.rate:,.0f}/s; nobody schedules any optimizing", flush=True)
        t0 = time.monotonic()
        print(f"\n{'t (s)':>6} {'change files':>12} {'base files':>10} {'delete files':>12} {'read (s)':>9} "
              f"{'rows':>7} {'backlog':>8} {'optimized':>9}", flush=True)  # fmt: skip
        last = -args.every
        ingested_at: float | None = None
        while True:
            time.sleep(0.5)
            for job, name in ((ingest, "ingest"), (optimizer, "optimizer")):
                if job.poll() is not None:
                    print(f"demo: the {name} job stopped ({job.returncode}); see {warehouse / (name + '.log')}", flush=True)
                    return 1
            now = time.monotonic() - t0
            if ingested_at is None and producer.poll() is not None and _caught_up():
                ingested_at = now
                print(
                    f"demo: the stream ended and the ingest job holds all of it ({now:.0f} s); the optimizer drains", flush=True
                )
            if now - last < args.every:
                continue
            last = now
            status = _status(table, warehouse)
            _print_status(now, status)
            drained = status["change_files"] == 0 and status["backlog"] == 0
            if ingested_at is not None and (drained or now - ingested_at > 120):
                break
        print(f"demo: done in {time.monotonic() - t0:.0f} s", flush=True)
        for job in (ingest, optimizer):
            job.send_signal(signal.SIGTERM)
        optimizer.wait(120)
        return _report(oracle, bootstrap, env)
    finally:
        for job in jobs:
            if job.poll() is None:
                os.killpg(job.pid, signal.SIGTERM)
                try:
                    job.wait(60)
                except subprocess.TimeoutExpired:
                    os.killpg(job.pid, signal.SIGKILL)
        if started_kafka:
            _run("bash", str(KAFKA_SH), "stop")
            print("demo: Kafka stopped", flush=True)


def _create_table() -> Any:
    """The ingest job's table, created here (as the job would) with a demo's optimizing cadence:
    planned at most every 3 s, and change data merged within 10 s even when little comes
    (Amoro's defaults: a minute, and an hour)."""
    from mixed_iceberg.ingest.config import load_ingest_config
    from mixed_iceberg.ingest.runtime import load_table

    table = load_table(load_ingest_config(ROOT / "conf/ingest.yaml"), create=True)
    table.update_properties({"self-optimizing.min-plan-interval": "3000", "self-optimizing.minor.trigger.interval": "10000"})
    return table


def _optimizer_config(warehouse: Path) -> Path:
    """conf/optimizer.yaml with a demo's refresh interval (2 s instead of 10 s)."""
    import yaml

    raw = yaml.safe_load((ROOT / "conf/optimizer.yaml").read_text())
    for group in raw["optimizer_groups"]:
        group.setdefault("properties", {}).update({"refresh-interval": "2s", "maintenance-interval": "0"})
    path = warehouse / "optimizer.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def _wait_for_optimizer(warehouse: Path, job: subprocess.Popen[bytes], timeout: float = 180.0) -> None:
    """Until the optimizer job's optimizer registered (both JVMs are up by then, roughly)."""
    from mixed_iceberg.optimizer.sysdb.database import SystemDatabase

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and job.poll() is None:
        db = SystemDatabase(f"sqlite:///{warehouse}/optimizer.db")
        try:
            if db.live_optimizers("default", 60_000):
                return
        except Exception:  # the job has not created its database yet
            pass
        finally:
            db.dispose()
        time.sleep(1.0)
    raise RuntimeError(f"demo: the optimizer job did not start within {timeout:.0f} s; see {warehouse / 'optimizer.log'}")


def _caught_up() -> bool:
    """Whether the table holds every record of the CDC topic (the ingest job's own check)."""
    from mixed_iceberg.ingest.config import load_ingest_config, pin_catalog
    from mixed_iceberg.ingest.job import caught_up

    return caught_up(pin_catalog(load_ingest_config(ROOT / "conf/ingest.yaml")))


def _status(table: Any, warehouse: Path) -> dict[str, Any]:
    from mixed_iceberg.optimizer.sysdb.database import SystemDatabase
    from mixed_iceberg.optimizing.collect import collect

    table.refresh()
    collected = collect(table.handle)
    started = time.monotonic()
    rows = table.scan().to_arrow().num_rows
    read_s = time.monotonic() - started
    db = SystemDatabase(f"sqlite:///{warehouse}/optimizer.db")
    try:
        tasks = db.tasks()
        processes = db.processes()
    except Exception:  # the optimizer job has not created its database yet
        tasks, processes = [], []
    finally:
        db.dispose()
    return {
        "change_files": len(collected.change_files),
        "base_files": len(collected.data_files),
        "delete_files": len(collected.delete_files),
        "read_s": read_s,
        "rows": rows,
        "backlog": sum(1 for t in tasks if t.status in ("PLANNED", "SCHEDULED", "ACKED")),
        "optimized": sum(1 for p in processes if p.status == "SUCCESS"),
    }


def _print_status(now: float, s: dict[str, Any]) -> None:
    print(f"{now:6.0f} {s['change_files']:>12,} {s['base_files']:>10,} {s['delete_files']:>12,} {s['read_s']:>9.2f} "
          f"{s['rows']:>7,} {s['backlog']:>8,} {s['optimized']:>9,}", flush=True)  # fmt: skip


def _report(oracle_path: Path, bootstrap: str, env: dict[str, str]) -> int:
    from mixed_iceberg.ingest.config import load_ingest_config
    from mixed_iceberg.ingest.dead_letter import DeadLetterContext
    from mixed_iceberg.ingest.runtime import load_table
    from mixed_iceberg.logstore.base import LogStoreConsumer
    from mixed_iceberg.logstore.kafka import KafkaLogStore

    config = load_ingest_config(ROOT / "conf/ingest.yaml")
    table = load_table(config)
    merged = table.scan().to_arrow().sort_by("id")
    oracle = json.loads(oracle_path.read_text())["final"]
    expected = {int(k): (v["customer"], v["qty"], v["price"]) for k, v in oracle.items()}
    got = {r["id"]: (r["customer"], r["qty"], r["price"]) for r in merged.to_pylist()}
    print(f"\nmerged view of {table.name} (first 10 of {merged.num_rows:,} rows):")
    print(merged.slice(0, 10).to_pandas().to_string(index=False))
    log = LogStoreConsumer(KafkaLogStore(bootstrap).reader(env["MIXED_ICEBERG_INGEST_LOG_TOPIC"]), table.arrow_schema())
    changes = log.read_all(idle_timeout=2.0)
    log.close()
    dlq = KafkaLogStore(bootstrap).reader(env["MIXED_ICEBERG_INGEST_DLQ"], headers=True)
    letters = dlq.fetch(10_000, 3.0)
    dlq.close()
    snapshots = list(table.change_store.snapshots()) if table.change_store is not None else []
    base_snapshots = [s for s in table.base_store.snapshots() if (s.summary or {}).get("mixed-iceberg.optimizing.type")]
    counts = changes.group_by("_change_action").aggregate([("_change_action", "count")]).to_pylist()
    print(f"\nrows in the merged view:        {merged.num_rows:,}")
    print(f"rows in the producer's oracle:  {len(expected):,}  -> {'equal' if got == expected else 'DIFFERENT'}")
    print(f"ChangeStore snapshots:          {len(snapshots):,}")
    print(f"optimizer commits (BaseStore):  {len(base_snapshots):,}")
    print(
        f"LogStore changes (committed):   {changes.num_rows:,}  {sorted((c['_change_action'], c['_change_action_count']) for c in counts)}"
    )
    print(f"dead letters:                   {len(letters):,}")
    # A dead letter is the source record's bytes unchanged; why and where from are in its headers.
    for value, headers in list(zip(letters.values.to_pylist(), letters.headers or [], strict=True))[:3]:
        letter = DeadLetterContext.from_headers(headers)
        print(f"  {letter.topic}/{letter.partition}@{letter.offset}: {letter.reason[:70]}  value={value[:40]!r}")
    return 0 if got == expected else 1


if __name__ == "__main__":
    sys.exit(main())

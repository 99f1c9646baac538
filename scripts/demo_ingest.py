"""`make demo`: the real streaming pipeline, end to end, on the embedded defaults.

Starts the private Kafka broker (scripts/services/kafka.sh; fetched from Maven Central on
first use), produces a Debezium CDC stream with a few malformed messages, runs the PyFlink
ingest job (jobs/ingest_cdc.py, conf/ingest.yaml) until it has committed everything, then
prints the merged view, the counts against the producer's oracle, the LogStore and the
dead-letter topic, and stops what it started. Each run uses fresh topics and a fresh table
under .warehouse/ingest-demo. Without Java or Maven it falls back to scripts/demo.py (the
same format through the library, no Kafka/Flink).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KAFKA_SH = ROOT / "scripts/services/kafka.sh"


def _run(*command: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(command, check=True, capture_output=True, text=True, env=env, cwd=ROOT).stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--keys", type=int, default=5_000)
    parser.add_argument("--bad", type=int, default=5)
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
    env = {**os.environ, "MIXED_ICEBERG_WAREHOUSE_DIR": str(warehouse), "MIXED_ICEBERG_KAFKA_BOOTSTRAP": bootstrap,
           "MIXED_ICEBERG_INGEST_JOB": run, "MIXED_ICEBERG_INGEST_TOPIC": f"{run}_cdc", "MIXED_ICEBERG_INGEST_DLQ": f"{run}_dlq",
           "MIXED_ICEBERG_INGEST_LOG_TOPIC": f"{run}_log", "FLINK_LOG_DIR": str(warehouse / "flink-log")}  # fmt: skip
    try:
        oracle_path = warehouse / "oracle.json"
        warehouse.mkdir(parents=True)
        print(_run(sys.executable, "scripts/produce_cdc.py", "--bootstrap", bootstrap, "--topic", env["MIXED_ICEBERG_INGEST_TOPIC"],
                   "--events", str(args.events), "--keys", str(args.keys), "--bad", str(args.bad), "--oracle", str(oracle_path), env=env))  # fmt: skip
        print("demo: running the PyFlink ingest job until it has committed everything", flush=True)
        t0 = time.monotonic()
        with (warehouse / "job.log").open("w") as log:
            code = subprocess.call(
                [sys.executable, "jobs/ingest_cdc.py", "--until-caught-up", "--timeout", "600"],
                env=env,
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        if code != 0:
            print(f"demo: the job failed ({code}); see {warehouse / 'job.log'}", flush=True)
            return code
        print(f"demo: job caught up in {time.monotonic() - t0:.1f} s (incl. JVM and mini-cluster start)", flush=True)
        os.environ.update(env)
        return _report(oracle_path, bootstrap, env)
    finally:
        if started_kafka:
            _run("bash", str(KAFKA_SH), "stop")
            print("demo: Kafka stopped", flush=True)


def _report(oracle_path: Path, bootstrap: str, env: dict[str, str]) -> int:
    from mixed_iceberg.ingest.config import load_ingest_config
    from mixed_iceberg.ingest.dead_letter import DeadLetterContext
    from mixed_iceberg.ingest.runtime import load_table
    from mixed_iceberg.logstore.base import LogStoreConsumer
    from mixed_iceberg.logstore.kafka import KafkaLogReader

    config = load_ingest_config(ROOT / "conf/ingest.yaml")
    table = load_table(config)
    merged = table.scan().to_arrow().sort_by("id")
    oracle = json.loads(oracle_path.read_text())["final"]
    expected = {int(k): (v["customer"], v["qty"], v["price"]) for k, v in oracle.items()}
    got = {r["id"]: (r["customer"], r["qty"], r["price"]) for r in merged.to_pylist()}
    print(f"\nmerged view of {table.name} (first 10 of {merged.num_rows:,} rows):")
    print(merged.slice(0, 10).to_pandas().to_string(index=False))
    log = LogStoreConsumer(KafkaLogReader(bootstrap, env["MIXED_ICEBERG_INGEST_LOG_TOPIC"]), table.arrow_schema())
    changes = log.read_all(idle_timeout=2.0)
    log.close()
    dlq = KafkaLogReader(bootstrap, env["MIXED_ICEBERG_INGEST_DLQ"], headers=True)
    letters = dlq.fetch(10_000, 3.0)
    dlq.close()
    snapshots = list(table.change_store.snapshots()) if table.change_store is not None else []
    counts = changes.group_by("_change_action").aggregate([("_change_action", "count")]).to_pylist()
    print(f"\nrows in the merged view:        {merged.num_rows:,}")
    print(f"rows in the producer's oracle:  {len(expected):,}  -> {'equal' if got == expected else 'DIFFERENT'}")
    print(f"ChangeStore snapshots:          {len(snapshots):,}")
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

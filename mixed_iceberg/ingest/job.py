"""``python jobs/ingest_cdc.py --config conf/ingest.yaml``: run the streaming CDC ingest job.

Locally this starts a Flink mini-cluster in the PyFlink gateway JVM; under ``flink run -py``
the same code submits to the cluster. ``--until-caught-up`` (demo, tests, benchmark) cancels
the job once the table (and the LogStore) hold every record the source had when it was
checked; ``--bounded`` uses Flink's bounded Kafka mode instead.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import sysconfig
import time
from pathlib import Path

from mixed_iceberg.exceptions import ConfigError, NoSuchTableError
from mixed_iceberg.ingest.config import IngestConfig, load_ingest_config, pin_catalog
from mixed_iceberg.ingest.runtime import load_table, prepare
from mixed_iceberg.ingest.writer import committed_offsets, log_position_group
from mixed_iceberg.logstore.kafka import committed_positions, readable_from, watermarks

__all__ = ["caught_up", "connector_jars", "main"]

log = logging.getLogger(__name__)
_ROOT = Path(__file__).resolve().parents[2]


def connector_jars() -> list[Path]:
    """Flink's Kafka SQL connector: ``MIXED_ICEBERG_FLINK_JARS`` (``:``-separated) or ``.jars/flink``."""
    listed = os.environ.get("MIXED_ICEBERG_FLINK_JARS")
    jars = (
        [Path(p) for p in listed.split(os.pathsep) if p]
        if listed
        else sorted((_ROOT / ".jars" / "flink").glob("flink-sql-connector-kafka-*.jar"))
    )
    if not jars:
        raise ConfigError(
            "no Flink Kafka connector jar: run `bash scripts/services/kafka.sh jars` or set MIXED_ICEBERG_FLINK_JARS"
        )
    return jars


def caught_up(config: IngestConfig) -> bool:
    """Whether the table (and LogStore position) hold every record the source topic has now.

    A partition whose recorded position is below its end offset may still be consumed: the
    offsets left are transaction markers or aborted records (a transactional CDC producer,
    such as Debezium with exactly-once delivery), so those partitions are asked whether a
    read-committed consumer finds a record from there.
    """
    source = config.source
    marks = watermarks(source.bootstrap_servers, source.topic)
    try:
        table = load_table(config)
    except NoSuchTableError:  # the job has not created it yet
        return False
    done = committed_offsets(table, config.job_name, source.topic, sorted(marks))
    starts = {p: done[p] or low for p, (low, _) in marks.items()}
    if table.options.log_store_enabled or config.dead_letter_topic:
        address = table.options.log_store_address or source.bootstrap_servers
        # Not a stable fetch: a subtask that died inside a transaction leaves its offsets pending
        # until its restart fences them, and a stable fetch would wait (and time out) until then.
        # Committed positions only: at worst one poll behind a commit in flight.
        group = log_position_group(config.job_name)
        positions = committed_positions(address, group, source.topic, sorted(marks), stable=False)
        starts = {p: min(start, positions[p] or marks[p][0]) for p, start in starts.items()}
    behind = {p: start for p, start in starts.items() if start < marks[p][1]}
    return not behind or not readable_from(source.bootstrap_servers, source.topic, behind)


def _overrides(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ConfigError(f"--set expects key=value, found {pair!r}")
        out[key] = value
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Streaming CDC ingestion into a Mixed-Iceberg table (PyFlink).")
    parser.add_argument("--config", default=str(_ROOT / "conf" / "ingest.yaml"))
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a config key (dotted)")
    parser.add_argument("--bounded", action="store_true", help="stop at the source's end offsets (Flink bounded mode)")
    parser.add_argument("--until-caught-up", action="store_true", help="cancel once everything in the source is committed")
    parser.add_argument("--timeout", type=float, default=0.0, help="give up after this many seconds (0: never)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    config = pin_catalog(load_ingest_config(args.config, _overrides(args.set)))
    prepare(config)
    if args.until_caught_up and caught_up(config):
        log.info("%s: table and LogStore already hold everything in %s; nothing to run", config.job_name, config.source.topic)
        return 0
    # Python workers (and thread mode's pemja, if configured) see this venv through PYTHONPATH.
    site = sysconfig.get_paths()["purelib"]
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (site, str(_ROOT), os.environ.get("PYTHONPATH")) if p)
    # On a local mini-cluster PyFlink runs every Python worker as a thread of this client
    # process ("loopback"): one GIL for all writer subtasks and this poller. PyFlink's own
    # switch makes it start one worker process per subtask, as a cluster does.
    os.environ.setdefault("_python_worker_execution_mode", "process")
    from mixed_iceberg.ingest.flink import build_pipeline

    env = build_pipeline(config, connector_jars(), sys.executable, bounded=args.bounded)
    started = time.monotonic()
    if not args.until_caught_up:
        env.execute(config.job_name)
        return 0
    client = env.execute_async(config.job_name)
    try:
        while not caught_up(config):
            # Also notices a job (or gateway JVM) that died: the status call then fails.
            status = str(client.get_job_status().result())
            if status in ("FAILED", "CANCELED", "FINISHED"):
                log.error("job ended (%s) before catching up", status)
                return 1
            if args.timeout and time.monotonic() - started > args.timeout:
                log.error("not caught up after %.0f s; cancelling", args.timeout)
                return 1
            time.sleep(1.0)  # each check opens Kafka clients and reads table metadata
        log.info("caught up after %.1f s; cancelling the job", time.monotonic() - started)
        return 0
    finally:
        client.cancel().result()

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
from pathlib import Path

from mixed_iceberg.exceptions import ConfigError, MixedIcebergError, NoSuchTableError
from mixed_iceberg.flink_client import LOCAL_CLUSTER_DEFAULTS, loopback_agent, prepare_flink_client
from mixed_iceberg.flink_job import TERMINAL, job_status
from mixed_iceberg.ingest.config import IngestConfig, load_ingest_config, pin_catalog
from mixed_iceberg.ingest.monitor import (
    FlinkRest,
    TableProbe,
    WatchOptions,
    local_rest_settings,
    progress_log,
    rest_url,
    watch,
)
from mixed_iceberg.ingest.runtime import prepare

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
    read-committed consumer finds a record from there. The LogStore positions are read without
    a stable fetch (see :class:`~mixed_iceberg.ingest.monitor.TableProbe`).
    """
    probe = TableProbe(config)
    try:
        state = probe.state()
        return probe.caught_up(state)
    except NoSuchTableError:  # the job has not created it yet
        return False
    finally:
        probe.close()


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
    parser.add_argument(
        "--progress-interval",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="a progress report every this many seconds (0: none, and without --until-caught-up the client "
        "does not watch the job at all: for `flink run -d`)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress reports; failures and restarts still")
    parser.add_argument(
        "--max-restarts", type=int, default=5, help="cancel the job and exit 1 once it restarted more often than this"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    _progress_output(quiet=args.quiet)
    on_cli = "PYFLINK_GATEWAY_PORT" in os.environ  # under `flink run`: the cluster's JVMs, not ours
    try:
        config = pin_catalog(load_ingest_config(args.config, _overrides(args.set)))
        # Local: the mini-cluster's JVM loads the agent that keeps the Python workers' gRPC
        # servers on loopback (a cluster's TaskManagers load it through their own config).
        agent = None if on_cli else loopback_agent()
        prepare(config)
    except MixedIcebergError as exc:
        # What a user got wrong (a missing file, a bad --set, an unknown catalog) is one line,
        # as in the optimizer job, not a traceback.
        print(f"ingest job: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, ConfigError) else 1
    if args.until_caught_up and caught_up(config):
        log.info("%s: table and LogStore already hold everything in %s; nothing to run", config.job_name, config.source.topic)
        return 0
    options = WatchOptions(
        until_caught_up=args.until_caught_up,
        timeout=args.timeout,
        progress_interval=0.0 if args.quiet else args.progress_interval,
        max_restarts=args.max_restarts,
    )
    watching = args.until_caught_up or args.quiet or args.progress_interval > 0
    # On a local mini-cluster PyFlink would run every Python worker as a thread of this client
    # ("loopback"): one GIL for all writer subtasks and this poller. prepare_flink_client makes it
    # start one worker process per subtask, as a cluster does.
    prepare_flink_client(agent=agent)
    from mixed_iceberg.ingest.flink import build_pipeline

    # A local mini-cluster listens on loopback only, without REST submit or cancel (the job's
    # `flink` settings, applied on top, may say otherwise); watched, its REST port is known.
    local = {**LOCAL_CLUSTER_DEFAULTS, **(local_rest_settings(config.flink) if watching else {})}
    settings = {} if on_cli else local
    env = build_pipeline(config, connector_jars(), sys.executable, bounded=args.bounded, settings=settings)
    if not watching:
        env.execute(config.job_name)
        return 0
    probe = TableProbe(config)
    try:
        probe.state()  # the commits before the job are not counted
    except MixedIcebergError as exc:  # the source's Kafka went away since prepare(): one line
        probe.close()
        print(f"ingest job: {exc}", file=sys.stderr)
        return 1
    url = rest_url({**settings, **config.flink})
    client = env.execute_async(config.job_name)
    try:
        return watch(client, probe, FlinkRest(url) if url else None, options)
    finally:
        probe.close()
        if job_status(client) not in TERMINAL:
            client.cancel().result()


def _progress_output(*, quiet: bool) -> None:
    """Progress lines without the logger's name (they are the client's output, not a log)."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", datefmt="%H:%M:%S"))
    progress_log.addHandler(handler)
    progress_log.propagate = False
    progress_log.setLevel(logging.WARNING if quiet else logging.INFO)

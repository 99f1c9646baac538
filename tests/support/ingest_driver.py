"""The ingest job's Python side without Flink, for crash tests that need many restarts.

``python -m tests.support.ingest_driver --config conf/ingest.yaml [--set key=value ...]`` runs
what the job's client and writer subtasks run (:func:`~mixed_iceberg.ingest.runtime.prepare`,
then one :class:`~mixed_iceberg.ingest.runtime.IngestRuntime` fed by a read-committed consumer
of the source from the resume plan) in one process, until the source is caught up. A restart
takes about as long as a Python start (the PyFlink job's takes a JVM and a mini-cluster), so a
test can kill it at every crash point many times (:mod:`mixed_iceberg.faults`). Each batch is
committed at once (no buffering thread), so a crash point is reached in the batch that reads it.
"""

from __future__ import annotations

import argparse
import logging
import sys

from mixed_iceberg.ingest.config import load_ingest_config, pin_catalog
from mixed_iceberg.ingest.job import caught_up
from mixed_iceberg.ingest.runtime import IngestRuntime, prepare
from mixed_iceberg.logstore.kafka import KafkaLogStore

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", required=True)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--max-records", type=int, default=2_000, help="records per batch (per commit)")
    args = parser.parse_args(argv)
    # Milliseconds since the process started first: tests read restart times off the log.
    logging.basicConfig(level=logging.INFO, format="%(relativeCreated)d %(levelname)s %(name)s: %(message)s")
    overrides = dict(pair.split("=", 1) for pair in args.set)
    config = pin_catalog(load_ingest_config(args.config, overrides))
    plan = prepare(config)
    print(f"prepared: start={plan.start}", flush=True)
    runtime = IngestRuntime(config)
    reader = KafkaLogStore(config.source.bootstrap_servers).reader(config.source.topic, start=plan.start)
    try:
        idle = 0
        while idle < 3 or not caught_up(config):
            records = reader.fetch(args.max_records, timeout=0.5)
            idle = idle + 1 if len(records) == 0 else 0
            for partition in sorted(set(records.partitions.tolist())):
                mask = records.partitions == partition
                runtime.ingest(partition, records.offsets[mask], records.values.filter(mask))
        print("caught up", flush=True)
        return 0
    finally:
        reader.close()
        runtime.close()


if __name__ == "__main__":
    sys.exit(main())

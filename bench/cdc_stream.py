"""A steady CDC stream: ``python -m bench.cdc_stream --topic T --events N --keys K --rate R --oracle FILE``.

The events of ``scripts/produce_cdc.py`` (its ``generate``: a random walk of inserts, updates
and deletes over ``--keys`` keys, Debezium JSON keyed by primary key) and its oracle file, but
paced every 50 ms; the oracle also lists every key the stream touched (``touched``), so a
stream into a table that already holds those keys has a known outcome: the touched keys as in
``final`` (absent: deleted), the others as they were. ``produce_cdc.py --rate`` paces per chunk of 10,000 events, so below 10,000
events/s it sends a burst of 10,000 and then sleeps: at 1,000 events/s the ingest job saw one
burst every 10 s, one commit per partition, instead of a stream.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path
from typing import Any

from bench.harness import ROOT

SLICE_S = 0.05


def _generator() -> Any:
    """``generate`` of scripts/produce_cdc.py (a script, not a module of a package)."""
    spec = importlib.util.spec_from_file_location("produce_cdc", ROOT / "scripts/produce_cdc.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", default="127.0.0.1:19092")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--events", type=int, required=True)
    parser.add_argument("--keys", type=int, required=True)
    parser.add_argument("--first-key", type=int, default=0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rate", type=float, default=0.0, help="events per second (0: as fast as possible)")
    parser.add_argument("--oracle", type=Path, required=True)
    parser.add_argument("--ready", type=Path, help="written (epoch seconds) right before the first event is sent")
    args = parser.parse_args(argv)

    from confluent_kafka import Producer

    from mixed_iceberg.logstore.kafka import KafkaLogStore

    generate = _generator()
    KafkaLogStore(args.bootstrap).ensure_topic(args.topic, args.partitions)
    producer = Producer({"bootstrap.servers": args.bootstrap, "linger.ms": 20, "enable.idempotence": True})
    per_slice = max(1, round(args.rate * SLICE_S)) if args.rate else 10_000
    if args.ready is not None:
        args.ready.write_text(f"{time.time():.3f}")
    started = time.monotonic()
    stamp = b""
    touched: set[bytes] = set()
    for count, (key, value) in enumerate(generate(args.events, args.keys, 0, args.seed, args.first_key)):
        touched.add(key)
        if count % per_slice == 0:
            if args.rate:
                ahead = count / args.rate - (time.monotonic() - started)
                if ahead > 0:
                    time.sleep(ahead)
            stamp = f'"ts_ms":{int(time.time() * 1000)},'.encode()
            producer.poll(0)
        while True:
            try:
                producer.produce(args.topic, value=value.replace(b'"ts_ms":0,', stamp, 1), key=key)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(60):
        raise SystemExit(f"{len(producer)} messages still unsent to {args.topic} after 60 s")
    elapsed = time.monotonic() - started
    final = generate.final
    args.oracle.write_text(json.dumps({"events": args.events, "bad": 0, "visible_ms": int(time.time() * 1000),
                                       "final": {str(k): v for k, v in final.items()},
                                       "touched": sorted(int(k) for k in touched), "cpu_s": time.process_time()}))  # fmt: skip
    print(f"produced {args.events} messages to {args.topic} in {elapsed:.1f} s ({args.events / max(elapsed, 1e-9):,.0f}/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

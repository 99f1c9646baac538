"""Produce a CDC stream (Debezium JSON) to Kafka: generated, or replayed from Debezium files.

    python scripts/produce_cdc.py --topic orders_cdc --events 100000 --keys 10000 --oracle final.json
    python scripts/produce_cdc.py --topic orders_cdc --replay dump1.ndjson dump2.ndjson

Generated events follow a random walk over ``--keys`` primary keys: an insert for a key that
is not live, else an update (70 %) or a delete; ``--bad`` adds malformed messages at random
positions (they must end in the dead-letter topic). Messages are keyed by primary key, so
Kafka's partitioner keeps each key in one partition (per-key order). ``--oracle`` writes the
final state (``{id: row}``), the counts and ``visible_ms`` (when the last message could be read)
as JSON. ``ts_ms`` is the time each chunk is produced, so the job can measure freshness.
``--transaction`` produces the whole stream in one Kafka transaction, so a read-committed
consumer (the ingest job) sees all of it at once, when it commits: a backlog handed to a job
that is already running. ``--first-key`` shifts the keys, so streams can share a topic and
their oracles add up. ``--nested`` adds a list column ``tags`` (``list<int>``) and a struct column
``dims`` (``struct<w: double, label: string, ok: boolean>``), with nulls at every level, for a table
that declares them (tests/integration/test_ingest_pipeline.py). Replayed files hold one Debezium message per line
(envelope or bare payload); their key is taken from ``--key-field`` of the after/before image.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mixed_iceberg.logstore.kafka import KafkaLogStore

_CHUNK = 10_000


def _nested(key: int, qty: int, price: float) -> dict[str, object]:
    """The ``--nested`` columns of one image: a null, an empty list, null elements and fields."""
    tags = None if qty % 13 == 0 else [None if (qty + j) % 7 == 0 else qty * j - key % 50 for j in range(qty % 4)]
    dims = None if qty % 11 == 0 else {"w": price / 8, "label": None if key % 5 == 0 else f"l{qty % 3}", "ok": qty % 2 == 0}
    return {"tags": tags, "dims": dims}


def generate(
    events: int, keys: int, bad: int, seed: int, first_key: int = 0, *, nested: bool = False
) -> Iterator[tuple[bytes | None, bytes]]:
    """(key, value) pairs over keys ``first_key`` to ``first_key + keys - 1``; the oracle is kept in ``generate.final``."""
    rng = np.random.default_rng(seed)
    chosen = rng.integers(first_key, first_key + keys, events)
    coin = rng.random(events)
    qty = rng.integers(1, 100, events)
    price = np.round(rng.uniform(1, 500, events), 2)
    bad_at = set(rng.choice(events + bad, bad, replace=False).tolist()) if bad else set()
    live: dict[int, dict[str, object]] = {}
    produced = 0
    for i in range(events):
        while produced in bad_at:
            produced += 1
            yield (
                None,
                rng.choice(
                    [
                        b"{not json",
                        b'{"op":"x","after":{"id":1}}',
                        b'{"op":"c","after":{"qty":1}}',
                        b'{"op":"c","after":{"id":"abc"}}',
                    ]
                ),
            )
        key = int(chosen[i])
        after: dict[str, object] = {"id": key, "customer": f"c{key % 97}", "qty": int(qty[i]), "price": float(price[i])}
        if nested:
            after.update(_nested(key, int(qty[i]), float(price[i])))
        before = live.get(key)
        if before is None:
            op, image_before, image_after = "c", None, after
            live[key] = after
        elif coin[i] < 0.7:
            op, image_before, image_after = "u", before, after
            live[key] = after
        else:
            op, image_before, image_after = "d", before, None
            del live[key]
        message = {"before": image_before, "after": image_after, "op": op, "ts_ms": 0, "source": {"table": "orders"}}
        produced += 1
        yield str(key).encode(), json.dumps(message, separators=(",", ":")).encode()
    while produced in bad_at:
        produced += 1
        yield None, b"{not json"
    generate.final = live  # type: ignore[attr-defined]


def replay(files: list[Path], key_field: str) -> Iterator[tuple[bytes | None, bytes]]:
    for path in files:
        with path.open("rb") as lines:
            for line in lines:
                if not line.strip():
                    continue
                try:
                    message = json.loads(line)
                    body = message.get("payload", message)
                    image = body.get("after") or body.get("before") or {}
                    key = str(image.get(key_field)).encode()
                except (ValueError, AttributeError):
                    key = None
                yield key, line.rstrip(b"\r\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap", default="127.0.0.1:19092")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--first-key", type=int, default=0, help="the smallest generated key")
    parser.add_argument("--transaction", action="store_true", help="produce everything in one Kafka transaction")
    parser.add_argument("--bad", type=int, default=0, help="malformed messages to mix in")
    parser.add_argument("--nested", action="store_true", help="add the list column tags and the struct column dims")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rate", type=float, default=0.0, help="events per second (0: as fast as possible)")
    parser.add_argument("--replay", type=Path, nargs="*", help="Debezium NDJSON files to replay instead")
    parser.add_argument("--key-field", default="id")
    parser.add_argument("--oracle", type=Path, help="write the final state and counts here (generated streams)")
    args = parser.parse_args()

    from confluent_kafka import Producer

    KafkaLogStore(args.bootstrap).ensure_topic(args.topic, args.partitions)
    settings: dict[str, object] = {
        "bootstrap.servers": args.bootstrap,
        "linger.ms": 20,
        "enable.idempotence": True,
        "queue.buffering.max.messages": 1_000_000,
    }
    if args.transaction:
        # Long enough for millions of messages; the broker's default ceiling is 15 minutes.
        settings.update({"transactional.id": f"produce-cdc-{args.topic}-{time.time_ns()}", "transaction.timeout.ms": 600_000})
    producer = Producer(settings)
    if args.transaction:
        producer.init_transactions(60)
        producer.begin_transaction()
    if args.replay:
        stream = replay(args.replay, args.key_field)
    else:
        stream = generate(args.events, args.keys, args.bad, args.seed, args.first_key, nested=args.nested)
    started = time.monotonic()
    count = 0
    now_marker = b'"ts_ms":0,'
    for key, value in stream:
        if count % _CHUNK == 0:
            stamp = f'"ts_ms":{int(time.time() * 1000)},'.encode()
            if args.rate:
                ahead = count / args.rate - (time.monotonic() - started)
                if ahead > 0:
                    time.sleep(ahead)
        while True:
            try:
                producer.produce(args.topic, value=value.replace(now_marker, stamp, 1), key=key)
                break
            except BufferError:
                producer.poll(0.05)
        count += 1
    if producer.flush(60):
        raise SystemExit(f"{len(producer)} messages still unsent to {args.topic} after 60 s")
    if args.transaction:
        producer.commit_transaction(60)
    visible_ms = int(time.time() * 1000)
    elapsed = time.monotonic() - started
    print(f"produced {count} messages to {args.topic} in {elapsed:.1f} s ({count / max(elapsed, 1e-9):,.0f}/s)")
    if args.oracle and not args.replay:
        final = generate.final  # type: ignore[attr-defined]
        args.oracle.write_text(
            json.dumps(
                {
                    "events": args.events,
                    "bad": args.bad,
                    "visible_ms": visible_ms,
                    "final": {str(k): v for k, v in final.items()},
                }
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

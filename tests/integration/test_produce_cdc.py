"""scripts/produce_cdc.py against the real broker: shifted keys and one-transaction streams.

The ingest benchmark hands a running job a whole backlog at once by producing it in one Kafka
transaction (the job reads committed records only), on a topic an earlier stream already
used, with keys of its own so the oracles add up.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mixed_iceberg.logstore.kafka import KafkaLogStore
from tests.support.ingest import read_topic

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _produce(bootstrap: str, topic: str, oracle: Path, *extra: str) -> dict[str, object]:
    subprocess.run(
        [sys.executable, str(ROOT / "scripts/produce_cdc.py"), "--bootstrap", bootstrap, "--topic", topic,
         "--events", "3000", "--keys", "300", "--oracle", str(oracle), *extra],
        check=True, cwd=ROOT, capture_output=True, timeout=120,
    )  # fmt: skip
    loaded: dict[str, object] = json.loads(oracle.read_text())
    return loaded


def test_a_transactional_stream_with_shifted_keys_lands_whole_and_says_when(kafka_bootstrap: str, tmp_path: Path) -> None:
    topic = f"produce_cdc_{time.time_ns()}"
    before = int(time.time() * 1000)
    plain = _produce(kafka_bootstrap, topic, tmp_path / "plain.json")
    shifted = _produce(kafka_bootstrap, topic, tmp_path / "tx.json", "--transaction", "--first-key", "1000")

    plain_keys = {int(k) for k in plain["final"]}  # type: ignore[attr-defined]
    shifted_keys = {int(k) for k in shifted["final"]}  # type: ignore[attr-defined]
    assert plain_keys <= set(range(300))
    assert shifted_keys <= set(range(1000, 1300))
    assert len(plain_keys) > 200
    assert len(shifted_keys) > 200
    assert before <= int(plain["visible_ms"]) <= int(shifted["visible_ms"]) <= int(time.time() * 1000)  # type: ignore[call-overload]

    values, _ = read_topic(kafka_bootstrap, topic)  # read committed
    assert len(values) == 6000
    # A transaction leaves one commit marker per partition it wrote to: offsets without a record.
    marks = KafkaLogStore(kafka_bootstrap).watermarks(topic)
    assert sum(high - low for low, high in marks.values()) == 6000 + len(marks)

"""The PyFlink changelog sink (docs/flink.md): a user's pipeline that emits retractions, into a table.

One job run: a ``GROUP BY`` aggregate (``+I``, then ``-U``/``+U`` per new row of a key) sunk into
a keyed table whose merge engine is ``aggregation`` with ``sum``, which folds every change row:
``-U`` takes back what its ``+I``/``+U`` added. So the merged read equals Flink's final result
only if every change reached the table exactly once and with its RowKind (a lost or repeated
update pair, or a ``-U`` turned into a ``-D``... would each move a sum).
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from mixed_iceberg.catalog import MixedCatalog, load_catalog
from mixed_iceberg.logstore.kafka import KafkaLogStore
from tests.support.services import ROOT, exported
from tests.support.sink_pipeline import expected

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("n", pa.int64()), pa.field("s", pa.int64())])
SUMS = {"merge-engine": "aggregation", "fields.n.aggregate-function": "sum", "fields.s.aggregate-function": "sum"}


@pytest.fixture(scope="module")
def format_jar() -> Path:
    """The staging topic's format (built with javac against the venv's PyFlink; cached)."""
    built = subprocess.run(
        ["bash", str(ROOT / "scripts" / "jars" / "changelog-format.sh")], check=True, capture_output=True, text=True, timeout=300
    )
    return Path(built.stdout.strip())


@pytest.fixture
def catalog(tmp_path: Path, kafka_bootstrap: str, format_jar: Path) -> Iterator[MixedCatalog]:
    with exported("MIXED_ICEBERG_WAREHOUSE_DIR", str(tmp_path / "warehouse")):
        catalog = load_catalog("local")
        catalog.create_namespace("it")
        yield catalog


def run_pipeline(root: Path, table: str, name: str, rows: int, keys: int, rate: int) -> subprocess.Popen[bytes]:
    """The pipeline as a process group of its own (client, gateway JVM, Python workers)."""
    log_path = root / f"{name}-{uuid.uuid4().hex[:6]}.log"
    command = [sys.executable, "-m", "tests.support.sink_pipeline", "--table", table, "--name", name,
               "--rows", str(rows), "--keys", str(keys), "--rate", str(rate), "--checkpoint-dir", str(root / "checkpoints")]  # fmt: skip
    env = {**os.environ, "FLINK_LOG_DIR": str(root / "flink-log")}
    with log_path.open("w") as log:  # the child writes to its own copy of the descriptor
        return subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def merged(catalog: MixedCatalog, identifier: str) -> dict[int, tuple[int, int]]:
    rows = catalog.load_table(identifier).scan().to_arrow().to_pylist()
    return {row["k"]: (row["n"], row["s"]) for row in rows}


def test_group_by_changelog_lands_once_with_its_row_kinds(catalog: MixedCatalog, tmp_path: Path, kafka_bootstrap: str) -> None:
    name = f"it-sink-{uuid.uuid4().hex[:8]}"
    identifier = f"it.{name.replace('-', '_')}"
    catalog.create_table(identifier, SCHEMA, primary_key=["k"], properties=SUMS)
    rows, keys = 20_000, 100
    job = run_pipeline(tmp_path, f"local.{identifier}", name, rows, keys, rate=10_000)
    assert job.wait(300) == 0, next(tmp_path.glob(f"{name}-*.log")).read_text()[-4000:]

    assert merged(catalog, identifier) == expected(rows, keys)
    # The staging topic carried the update pairs as such (not as -D/+I).
    staged = KafkaLogStore(kafka_bootstrap).watermarks(f"mixed-iceberg-sink.{name}")
    assert sum(high for _, high in staged.values()) >= 2 * (rows - keys)

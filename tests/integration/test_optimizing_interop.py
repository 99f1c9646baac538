"""After optimizing, independent readers see the BaseStore we see (position deletes applied)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mixed_iceberg import load_catalog
from mixed_iceberg.cli.main import main
from tests.support.duckdb_iceberg import read_iceberg
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog, rows_of

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("partition_by", [None, ["cat"]], ids=["unpartitioned", "partitioned"])
def test_pyiceberg_and_duckdb_read_the_optimized_base_store_identically(tmp_path: Path, partition_by: list[str] | None) -> None:
    table = local_catalog(tmp_path).create_table(
        "db.t", ORDERS_SCHEMA, primary_key=["id"], partition_by=partition_by, properties={"self-optimizing.target-size": "1024"}
    )
    table.bulk_load(changes([("+I", k, "ab"[k % 2], k, 1.0) for k in range(200)]).drop_columns(["_change_action"]))
    with table.new_transaction() as txn:
        txn.write(changes([*[("-D", k, "ab"[k % 2], k, 1.0) for k in range(0, 200, 7)], ("+I", 500, "a", 5, 5.0)]))
    merged = rows_of(table.scan().to_arrow())
    table.optimizing.run("minor")
    base = table.refresh().base_store
    assert 1 in base.inspect.files().column("content").to_pylist(), "segments should carry position deletes now"
    ours = rows_of(base.scan().to_arrow())
    assert ours == merged
    assert rows_of(read_iceberg(base.metadata_location).select(ORDERS_SCHEMA.names)) == ours


def test_cli_status_and_optimize(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    conf = tmp_path / "catalogs.yaml"
    conf.write_text(
        f"catalogs:\n  - name: t\n    type: sql\n    properties:\n      uri: sqlite:///{tmp_path}/c.db\n      warehouse: {tmp_path}/wh\n"
    )

    keyed = load_catalog("t", config_path=conf).create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    for i in range(13):
        with keyed.new_transaction() as txn:
            txn.write(changes([("+I", i, "a", i, 1.0)]))
    env_conf = ["--catalog", "t"]
    monkeypatch.setenv("MIXED_ICEBERG_CATALOGS", str(conf))
    assert main([*env_conf, "status", "db.t", "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["pending"] == "minor"
    assert status["change_files_unmerged"] == 13
    assert main([*env_conf, "optimize", "db.t", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["committed"] is True
    assert main([*env_conf, "status", "db.t", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pending"] is None
    assert main([*env_conf, "status", "db.missing"]) == 2
    assert "does not exist" in capsys.readouterr().err
    cli = subprocess.run([sys.executable, "-m", "mixed_iceberg.cli.main", "--help"], capture_output=True, text=True, check=True)
    assert "optimize" in cli.stdout

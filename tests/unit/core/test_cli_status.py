"""``mixed-iceberg status`` reports what a table's metadata says, honestly named: base records,
position-deleted records, unmerged change inserts and deletes, and a delete ratio counting both
kinds of delete."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mixed_iceberg.cli.main import main
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog


def _status(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["status", "db.t", "--json"]) == 0
    report: dict[str, object] = json.loads(capsys.readouterr().out)
    return report


def test_status_counts_change_deletes_and_then_position_deletes_in_the_delete_ratio(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = local_catalog(tmp_path)
    conf = tmp_path / "catalogs.yaml"
    conf.write_text(
        f"catalogs:\n  - name: local\n    type: sql\n    properties:\n      uri: sqlite:///{tmp_path}/catalog.db\n      warehouse: {tmp_path}/wh\n"
    )
    monkeypatch.setenv("MIXED_ICEBERG_CATALOGS", str(conf))
    table = catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    table.bulk_load(changes([("+I", k, "a", k, 1.0) for k in range(10)]).drop_columns(["_change_action"]))
    with table.new_transaction() as txn:
        txn.write(changes([("-D", k, "a", k, 1.0) for k in range(5)]))
    counts = ("base_records", "base_position_deleted_records", "change_insert_records_unmerged", "change_delete_records_unmerged")
    report = _status(capsys)
    assert [report[key] for key in counts] == [10, 0, 0, 5]
    assert report["delete_ratio"] == 0.5  # 5 deletes of the 10 rows written, not 0
    assert report["records"] is None, "no field claims to count the merged view's rows while change deletes are unmerged"
    table.optimizing.run("minor")  # the change deletes become position deletes
    report = _status(capsys)
    assert [report[key] for key in counts] == [10, 5, 0, 0]
    assert report["delete_ratio"] == 0.5
    assert report["records"] == 5, "nothing left to merge: metadata tells the merged count"

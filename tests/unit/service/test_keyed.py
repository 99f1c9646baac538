"""A keyed Mixed-Iceberg table through REST: its two stores are visible and readable; a plain
client's write that would break one row per key is refused (403); mixed-iceberg's own writes pass."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from starlette.testclient import TestClient

from mixed_iceberg import load_catalog
from mixed_iceberg.service.keyed import WRITER_HEADER, WRITER_MARKER
from tests.unit.service.conftest import PREFIX


@pytest.fixture
def keyed(client: TestClient, tmp_path: Path) -> TestClient:
    catalog = load_catalog("local", config_path=tmp_path / "home" / "catalogs.yaml")
    catalog.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    table = catalog.create_table("db.orders", schema, primary_key=["id"])
    table.bulk_load(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema))
    changes = pa.table(
        {"id": [3], "v": ["c"], "_change_action": ["+I"]}, schema=schema.append(pa.field("_change_action", pa.string()))
    )
    with table.new_transaction(("test", 1)) as txn:
        txn.write(changes)
    return client


def _snapshot_update(client: TestClient, name: str, summary: dict[str, str]) -> tuple[list[Any], list[Any]]:
    metadata = client.get(f"{PREFIX}/namespaces/db/tables/{name}").json()["metadata"]
    parent = metadata.get("current-snapshot-id")
    snapshot_id = random.randint(1, 2**62)
    snapshot = {
        "snapshot-id": snapshot_id,
        "sequence-number": metadata["last-sequence-number"] + 1,
        "timestamp-ms": 1_700_000_000_000,
        "manifest-list": f"{metadata['location']}/metadata/snap-{snapshot_id}.avro",
        "summary": {"operation": "append", **summary},
        "schema-id": metadata["current-schema-id"],
        **({"parent-snapshot-id": parent} if parent else {}),
    }
    updates = [
        {"action": "add-snapshot", "snapshot": snapshot},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": snapshot_id},
    ]
    return [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": parent}], updates


def test_a_keyed_table_shows_as_its_two_stores(keyed: TestClient) -> None:
    names = [item["name"] for item in keyed.get(f"{PREFIX}/namespaces/db/tables").json()["identifiers"]]
    assert names == ["orders", "orders_change_"]
    for name in names:
        assert keyed.get(f"{PREFIX}/namespaces/db/tables/{name}").status_code == 200


@pytest.mark.parametrize("store", ["orders", "orders_change_"])
def test_a_plain_snapshot_on_a_keyed_store_is_refused_and_a_marked_one_passes(keyed: TestClient, store: str) -> None:
    requirements, updates = _snapshot_update(keyed, store, {})
    refused = keyed.post(f"{PREFIX}/namespaces/db/tables/{store}", json={"requirements": requirements, "updates": updates})
    assert refused.status_code == 403
    assert WRITER_MARKER in refused.json()["error"]["message"]
    requirements, updates = _snapshot_update(keyed, store, {WRITER_MARKER: "mine"})
    accepted = keyed.post(f"{PREFIX}/namespaces/db/tables/{store}", json={"requirements": requirements, "updates": updates})
    assert accepted.status_code == 200, accepted.text


def test_structural_changes_need_mixed_icebergs_own_client(keyed: TestClient) -> None:
    for update in (
        {"action": "set-properties", "updates": {"mixed-format.primary-key-fields": "v"}},
        {"action": "remove-properties", "removals": ["table-format"]},
        {"action": "set-default-spec", "spec-id": 0},
        {"action": "set-location", "location": keyed.get(f"{PREFIX}/namespaces/db/tables/orders").json()["metadata"]["location"]},
    ):
        body = {"requirements": [], "updates": [update]}
        assert keyed.post(f"{PREFIX}/namespaces/db/tables/orders", json=body).status_code == 403, update
    body = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"self-optimizing.enabled": "false"}}]}
    assert keyed.post(f"{PREFIX}/namespaces/db/tables/orders", json=body).status_code == 200
    marked = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"mixed-format.note": "x"}}]}
    assert keyed.post(f"{PREFIX}/namespaces/db/tables/orders", json=marked, headers={WRITER_HEADER: "1"}).status_code == 200


def test_a_rollback_of_one_store_is_refused(keyed: TestClient) -> None:
    metadata = keyed.get(f"{PREFIX}/namespaces/db/tables/orders_change_").json()["metadata"]
    current = metadata["current-snapshot-id"]
    requirements, updates = _snapshot_update(keyed, "orders_change_", {WRITER_MARKER: "mine"})
    assert (
        keyed.post(
            f"{PREFIX}/namespaces/db/tables/orders_change_", json={"requirements": requirements, "updates": updates}
        ).status_code
        == 200
    )
    rollback = {
        "requirements": [],
        "updates": [{"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": current}],
    }
    assert keyed.post(f"{PREFIX}/namespaces/db/tables/orders_change_", json=rollback).status_code == 403


def test_the_change_store_alone_is_not_dropped_or_renamed_and_the_base_store_takes_both(keyed: TestClient) -> None:
    assert keyed.delete(f"{PREFIX}/namespaces/db/tables/orders_change_").status_code == 403
    rename = {"source": {"namespace": ["db"], "name": "orders_change_"}, "destination": {"namespace": ["db"], "name": "x"}}
    assert keyed.post(f"{PREFIX}/tables/rename", json=rename).status_code == 403
    rename = {"source": {"namespace": ["db"], "name": "orders"}, "destination": {"namespace": ["db"], "name": "sales"}}
    assert keyed.post(f"{PREFIX}/tables/rename", json=rename).status_code == 204
    names = [item["name"] for item in keyed.get(f"{PREFIX}/namespaces/db/tables").json()["identifiers"]]
    assert names == ["sales", "sales_change_"]
    assert keyed.delete(f"{PREFIX}/namespaces/db/tables/sales").status_code == 204
    assert keyed.get(f"{PREFIX}/namespaces/db/tables").json()["identifiers"] == []


def test_mixed_icebergs_own_client_commits_snapshots_without_the_summary_marker(keyed: TestClient) -> None:
    """Its bulk loads, optimizing and maintenance commits carry no commit id, so no marker: the header speaks for them."""
    requirements, updates = _snapshot_update(keyed, "orders", {})
    body = {"requirements": requirements, "updates": updates}
    assert (
        keyed.post(f"{PREFIX}/namespaces/db/tables/orders", json=body, headers={WRITER_HEADER: "mixed-iceberg"}).status_code
        == 200
    )

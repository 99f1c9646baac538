"""Commits: requirements in Iceberg Java's words, updates applied, transactions all or nothing,
server-side retry of a lost race, no orphan metadata file after a refused or lost commit."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.types import StringType
from starlette.testclient import TestClient

from mixed_iceberg.service.commits import Committer
from tests.unit.service.conftest import PREFIX, SCHEMA, create_table


def _table(client: TestClient, name: str = "t") -> dict[str, Any]:
    metadata: dict[str, Any] = client.get(f"{PREFIX}/namespaces/db/tables/{name}").json()["metadata"]
    return metadata


def _commit(client: TestClient, name: str, requirements: list[dict[str, Any]], updates: list[dict[str, Any]]) -> Any:
    return client.post(f"{PREFIX}/namespaces/db/tables/{name}", json={"requirements": requirements, "updates": updates})


def add_snapshot(client: TestClient, name: str, parent: int | None, branch: str | None = "main") -> int:
    """Commit an empty append snapshot (no data files: a manifest list is not read by the server)."""
    snapshot_id = random.randint(1, 2**62)
    metadata = _table(client, name)
    snapshot = {
        "snapshot-id": snapshot_id,
        "sequence-number": metadata["last-sequence-number"] + 1,
        "timestamp-ms": 1_700_000_000_000,
        "manifest-list": f"{metadata['location']}/metadata/snap-{snapshot_id}.avro",
        "summary": {"operation": "append"},
        "schema-id": 0,
    }
    if parent is not None:
        snapshot["parent-snapshot-id"] = parent
    updates: list[dict[str, Any]] = [{"action": "add-snapshot", "snapshot": snapshot}]
    requirements: list[dict[str, Any]] = []
    if branch is not None:
        updates.append({"action": "set-snapshot-ref", "ref-name": branch, "type": "branch", "snapshot-id": snapshot_id})
        requirements.append({"type": "assert-ref-snapshot-id", "ref": branch, "snapshot-id": parent})
    response = _commit(client, name, requirements, updates)
    assert response.status_code == 200, response.text
    return snapshot_id


def _metadata_files(warehouse: Path) -> set[Path]:
    return set(warehouse.rglob("*.metadata.json"))


@pytest.mark.parametrize(
    ("requirement", "message"),
    [
        ({"type": "assert-create"}, "Requirement failed: table already exists"),
        (
            {"type": "assert-table-uuid", "uuid": "00000000-0000-0000-0000-000000000000"},
            "Requirement failed: UUID does not match",
        ),
        (
            {"type": "assert-current-schema-id", "current-schema-id": 7},
            "Requirement failed: current schema changed: expected id 7 != 0",
        ),
        (
            {"type": "assert-last-assigned-field-id", "last-assigned-field-id": 9},
            "Requirement failed: last assigned field id changed",
        ),
        (
            {"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": 1},
            "Requirement failed: last assigned partition id changed",
        ),
        ({"type": "assert-default-spec-id", "default-spec-id": 3}, "Requirement failed: default partition spec changed"),
        ({"type": "assert-default-sort-order-id", "default-sort-order-id": 4}, "Requirement failed: default sort order changed"),
        (
            {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 5},
            "Requirement failed: branch or tag main is missing, expected 5",
        ),
    ],
)
def test_a_failed_requirement_is_a_409_in_java_words_and_writes_nothing(
    client: TestClient, warehouse: Path, requirement: dict[str, Any], message: str
) -> None:
    create_table(client)
    before = _metadata_files(warehouse)
    response = _commit(client, "t", [requirement], [{"action": "set-properties", "updates": {"k": "v"}}])
    assert response.status_code == 409, response.text
    assert response.json()["error"]["type"] == "CommitFailedException"
    assert response.json()["error"]["message"].startswith(message)
    assert _metadata_files(warehouse) == before
    assert "k" not in _table(client)["properties"]


def test_a_moved_branch_is_reported_as_java_words_it(client: TestClient) -> None:
    create_table(client)
    first = add_snapshot(client, "t", parent=None)
    add_snapshot(client, "t", parent=first)
    stale = _commit(client, "t", [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": first}], [])
    assert stale.status_code == 409
    assert stale.json()["error"]["message"].startswith(f"Requirement failed: branch main has changed: expected id {first} != ")
    created = _commit(client, "t", [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": None}], [])
    assert created.json()["error"]["message"] == "Requirement failed: branch main was created concurrently"


def test_updates_of_every_kind_apply(client: TestClient) -> None:
    created = create_table(client)
    uuid = created["metadata"]["table-uuid"]
    new_schema = {
        **SCHEMA,
        "schema-id": 1,
        "fields": [*SCHEMA["fields"], {"id": 3, "name": "w", "type": "int", "required": False}],
    }
    updates = [
        {"action": "add-schema", "schema": new_schema, "last-column-id": 3},
        {"action": "set-current-schema", "schema-id": -1},
        {
            "action": "add-spec",
            "spec": {"spec-id": 1, "fields": [{"source-id": 1, "field-id": 1000, "name": "id_b", "transform": "bucket[4]"}]},
        },
        {"action": "set-default-spec", "spec-id": -1},
        {
            "action": "add-sort-order",
            "sort-order": {
                "order-id": 1,
                "fields": [{"source-id": 1, "transform": "identity", "direction": "asc", "null-order": "nulls-first"}],
            },
        },
        {"action": "set-default-sort-order", "sort-order-id": -1},
        {"action": "set-properties", "updates": {"a": "1", "b": "2"}},
        {"action": "remove-properties", "removals": ["b"]},
    ]
    requirements = [
        {"type": "assert-table-uuid", "uuid": uuid},
        {"type": "assert-current-schema-id", "current-schema-id": 0},
        {"type": "assert-last-assigned-field-id", "last-assigned-field-id": 2},
        {"type": "assert-default-spec-id", "default-spec-id": 0},
        {"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": 999},
        {"type": "assert-default-sort-order-id", "default-sort-order-id": 0},
    ]
    response = _commit(client, "t", requirements, updates)
    assert response.status_code == 200, response.text
    metadata = _table(client)
    assert metadata["current-schema-id"] == 1
    assert metadata["default-spec-id"] == 1
    assert metadata["default-sort-order-id"] == 1
    assert metadata["properties"]["a"] == "1"
    assert "b" not in metadata["properties"]
    assert response.json()["metadata-location"] != created["metadata-location"]
    assert metadata["metadata-log"][-1]["metadata-file"] == created["metadata-location"]


def test_an_unknown_update_or_requirement_type_is_a_400(client: TestClient) -> None:
    create_table(client)
    assert _commit(client, "t", [], [{"action": "make-coffee"}]).status_code == 400
    assert _commit(client, "t", [{"type": "assert-nothing"}], []).status_code == 400
    assert _commit(client, "t", [], [{"action": "set-current-schema", "schema-id": 42}]).status_code == 400


def test_a_commit_to_a_missing_table_is_a_404(client: TestClient) -> None:
    client.post(f"{PREFIX}/namespaces", json={"namespace": ["db"]})
    response = _commit(client, "nope", [], [{"action": "set-properties", "updates": {"k": "v"}}])
    assert response.status_code == 404
    assert response.json()["error"]["message"] == "Table does not exist: db.nope"


def test_a_staged_create_lands_with_assert_create(client: TestClient) -> None:
    client.post(f"{PREFIX}/namespaces", json={"namespace": ["db"]})
    staged = client.post(f"{PREFIX}/namespaces/db/tables", json={"name": "s", "schema": SCHEMA, "stage-create": True}).json()
    metadata = staged["metadata"]
    updates = [
        {"action": "assign-uuid", "uuid": metadata["table-uuid"]},
        {"action": "upgrade-format-version", "format-version": 2},
        {"action": "add-schema", "schema": metadata["schemas"][0], "last-column-id": 2},
        {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": metadata["partition-specs"][0]},
        {"action": "set-default-spec", "spec-id": -1},
        {"action": "add-sort-order", "sort-order": metadata["sort-orders"][0]},
        {"action": "set-default-sort-order", "sort-order-id": -1},
        {"action": "set-location", "location": metadata["location"]},
        {"action": "set-properties", "updates": {"created": "staged"}},
    ]
    response = _commit(client, "s", [{"type": "assert-create"}], updates)
    assert response.status_code == 200, response.text
    assert _table(client, "s")["properties"]["created"] == "staged"
    again = _commit(client, "s", [{"type": "assert-create"}], updates)
    assert again.status_code == 409
    assert again.json()["error"]["message"] == "Requirement failed: table already exists"


def _transaction(client: TestClient, changes: list[dict[str, Any]]) -> Any:
    return client.post(f"{PREFIX}/transactions/commit", json={"table-changes": changes})


def _change(name: str, requirements: list[dict[str, Any]], key: str) -> dict[str, Any]:
    return {
        "identifier": {"namespace": ["db"], "name": name},
        "requirements": requirements,
        "updates": [{"action": "set-properties", "updates": {key: "yes"}}],
    }


def test_a_transaction_lands_on_every_table(client: TestClient) -> None:
    create_table(client, name="a")
    create_table(client, name="b")
    response = _transaction(client, [_change("a", [], "tx"), _change("b", [], "tx")])
    assert response.status_code == 204, response.text
    assert _table(client, "a")["properties"]["tx"] == "yes"
    assert _table(client, "b")["properties"]["tx"] == "yes"


def test_a_transaction_with_one_failed_requirement_changes_no_table(client: TestClient, warehouse: Path) -> None:
    create_table(client, name="a")
    create_table(client, name="b")
    before = _metadata_files(warehouse)
    stale = [{"type": "assert-current-schema-id", "current-schema-id": 5}]
    response = _transaction(client, [_change("a", [], "tx"), _change("b", stale, "tx")])
    assert response.status_code == 409
    assert "tx" not in _table(client, "a")["properties"]
    assert "tx" not in _table(client, "b")["properties"]
    assert _metadata_files(warehouse) == before
    missing = _transaction(client, [_change("a", [], "tx"), _change("nope", [], "tx")])
    assert missing.status_code == 404
    assert "tx" not in _table(client, "a")["properties"]


def test_a_transaction_whose_swap_fails_midway_rolls_back_every_table(client: TestClient, warehouse: Path) -> None:
    """Table b moves on after the transaction read it: the one database transaction rolls back
    a's swap too, the written files go, and the retry (requirements still hold) lands both."""
    create_table(client, name="a")
    create_table(client, name="b")
    committer = _committer(client)
    raced: list[bool] = []

    def race() -> None:
        if not raced:
            raced.append(True)
            catalog: SqlCatalog = committer.catalog
            table = catalog.load_table(("db", "b"))
            with table.transaction() as txn:
                txn.set_properties({"other": "writer"})

    committer.before_swap = race
    response = _transaction(client, [_change("a", [], "tx"), _change("b", [], "tx")])
    assert response.status_code == 204, response.text
    b = _table(client, "b")["properties"]
    assert b["other"] == "writer"
    assert b["tx"] == "yes"
    assert _table(client, "a")["properties"]["tx"] == "yes"
    live = {m["metadata-file"] for name in "ab" for m in _table(client, name)["metadata-log"]}
    live |= {client.get(f"{PREFIX}/namespaces/db/tables/{name}").json()["metadata-location"] for name in "ab"}
    assert {p.as_uri() for p in _metadata_files(warehouse)} == live, "the lost attempt's files are deleted"


def _committer(client: TestClient) -> Committer:
    service = client.app.state.service  # type: ignore[attr-defined]
    committer: Committer = service.committer(service.catalogs.get("local"))
    return committer


def test_a_lost_race_is_retried_on_the_server_when_the_requirements_still_hold(client: TestClient, warehouse: Path) -> None:
    create_table(client)
    committer = _committer(client)
    races = 0

    def race() -> None:
        nonlocal races
        if races < 2:
            races += 1
            table = committer.catalog.load_table(("db", "t"))
            with table.transaction() as txn:
                txn.set_properties({f"other{races}": "x"})

    committer.before_swap = race
    response = _commit(
        client,
        "t",
        [{"type": "assert-current-schema-id", "current-schema-id": 0}],
        [{"action": "set-properties", "updates": {"mine": "1"}}],
    )
    assert response.status_code == 200, response.text
    properties = _table(client)["properties"]
    assert {properties["other1"], properties["other2"], properties["mine"]} == {"x", "1"}
    assert races == 2
    live = {m["metadata-file"] for m in _table(client)["metadata-log"]} | {response.json()["metadata-location"]}
    assert {p.as_uri() for p in _metadata_files(warehouse)} == live


def test_a_race_that_breaks_a_requirement_is_a_409_not_a_retry(client: TestClient) -> None:
    create_table(client)
    committer = _committer(client)

    def race() -> None:
        committer.before_swap = None
        table = committer.catalog.load_table(("db", "t"))
        with table.update_schema() as update:
            update.add_column("x", StringType())

    committer.before_swap = race
    response = _commit(
        client,
        "t",
        [{"type": "assert-current-schema-id", "current-schema-id": 0}],
        [{"action": "set-properties", "updates": {"mine": "1"}}],
    )
    assert response.status_code == 409
    assert response.json()["error"]["message"].startswith("Requirement failed: current schema changed: expected id 0 != 1")


def test_retries_run_out_with_a_409(client: TestClient) -> None:
    create_table(client)
    committer = _committer(client)
    committer.min_wait = committer.max_wait = 0.0

    def race() -> None:
        table = committer.catalog.load_table(("db", "t"))
        with table.transaction() as txn:
            txn.set_properties({"n": str(random.random())})

    committer.before_swap = race
    response = _commit(client, "t", [], [{"action": "set-properties", "updates": {"mine": "1"}}])
    assert response.status_code == 409
    assert "lost the race" in response.json()["error"]["message"]


def test_re_adding_an_equal_sort_order_schema_or_spec_reuses_its_id_as_iceberg_java_does(client: TestClient) -> None:
    created = create_table(client)["metadata"]
    order = {
        "order-id": 1,
        "fields": [{"source-id": 1, "transform": "identity", "direction": "desc", "null-order": "nulls-last"}],
    }
    updates = [{"action": "add-sort-order", "sort-order": order}, {"action": "set-default-sort-order", "sort-order-id": -1}]
    assert _commit(client, "t", [], updates).status_code == 200
    # A replace transaction sends the same order (and the same schema and spec) again.
    again = [
        *updates,
        {"action": "add-schema", "schema": created["schemas"][0]},
        {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": created["partition-specs"][0]},
        {"action": "set-default-spec", "spec-id": -1},
    ]
    response = _commit(client, "t", [], again)
    assert response.status_code == 200, response.text
    metadata = _table(client)
    assert [o["order-id"] for o in metadata["sort-orders"]] == [0, 1]
    assert metadata["default-sort-order-id"] == 1
    assert len(metadata["schemas"]) == 1
    assert len(metadata["partition-specs"]) == 1
    other = {
        "order-id": 1,
        "fields": [{"source-id": 2, "transform": "identity", "direction": "asc", "null-order": "nulls-first"}],
    }
    taken = [{"action": "add-sort-order", "sort-order": other}, {"action": "set-default-sort-order", "sort-order-id": -1}]
    assert _commit(client, "t", [], taken).status_code == 200
    assert _table(client)["default-sort-order-id"] == 2, "a new order whose id is taken gets the next one"


def test_format_version_3_tables_are_created_upgraded_and_keep_column_defaults(client: TestClient, warehouse: Path) -> None:
    client.post(f"{PREFIX}/namespaces", json={"namespace": ["db"]})
    schema = {
        **SCHEMA,
        "fields": [{"id": 1, "name": "c", "type": "int", "required": True, "initial-default": 12, "write-default": 10}],
    }
    body = {"name": "v3", "schema": schema, "properties": {"format-version": "3"}}
    created = client.post(f"{PREFIX}/namespaces/db/tables", json=body)
    assert created.status_code == 200, created.text
    metadata = created.json()["metadata"]
    assert metadata["format-version"] == 3
    assert metadata["next-row-id"] == 0
    assert metadata["schemas"][0]["fields"][0]["initial-default"] == 12
    assert metadata["schemas"][0]["fields"][0]["write-default"] == 10
    create_table(client, name="v2")
    upgraded = _commit(client, "v2", [], [{"action": "upgrade-format-version", "format-version": 3}])
    assert upgraded.status_code == 200, upgraded.text
    loaded = _table(client, "v2")
    assert loaded["format-version"] == 3
    assert loaded["next-row-id"] == 0


def test_metadata_files_that_fall_off_the_log_are_deleted_when_the_table_asks(client: TestClient, warehouse: Path) -> None:
    """Iceberg's catalogs delete a commit's dropped metadata files under
    write.metadata.delete-after-commit.enabled (Amoro sets it on both stores): Java clients, which
    leave it to the catalog, must not pile up metadata files through serve."""
    create_table(
        client, properties={"write.metadata.delete-after-commit.enabled": "true", "write.metadata.previous-versions-max": "1"}
    )
    parent = None
    for _ in range(4):
        parent = add_snapshot(client, "t", parent=parent)
    kept = _metadata_files(warehouse)
    assert len(kept) == 2  # the current file and one previous, as the log keeps
    log = [entry["metadata-file"] for entry in _table(client, "t")["metadata-log"]]
    assert {p.as_uri() for p in kept} == {*log, client.get(f"{PREFIX}/namespaces/db/tables/t").json()["metadata-location"]}

    create_table(client, name="keep")  # without the property nothing is deleted
    parent = None
    for _ in range(3):
        parent = add_snapshot(client, "keep", parent=parent)
    assert len([p for p in _metadata_files(warehouse) if "keep" in str(p)]) == 4

"""Every route of the REST catalog answers as the spec says: shapes, status codes, error model."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from mixed_iceberg.service.routes.config import ENDPOINTS
from tests.unit.service.conftest import PREFIX, SCHEMA, create_table


def _error(response: object, status: int, error_type: str) -> str:
    assert response.status_code == status, response.text  # type: ignore[attr-defined]
    body = response.json()  # type: ignore[attr-defined]
    assert body["error"]["code"] == status
    assert body["error"]["type"] == error_type
    message: str = body["error"]["message"]
    return message


def test_config_hands_out_the_prefix_and_exactly_the_served_endpoints(client: TestClient) -> None:
    for query in ("", "?warehouse=local"):
        body = client.get(f"/v1/config{query}").json()
        assert body["overrides"] == {"prefix": "catalogs/local"}
        assert body["defaults"] == {}
        assert body["endpoints"] == ENDPOINTS
    served = [(r.methods, r.path) for r in client.app.routes]  # type: ignore[attr-defined]
    for endpoint in ENDPOINTS:
        method, path = endpoint.split(" ")
        path = path.replace("/v1/{prefix}", "/v1/catalogs/{catalog}")
        assert any(method in methods and p == path for methods, p in served), endpoint


def test_config_of_an_unknown_warehouse_is_a_404_not_a_500(client: TestClient) -> None:
    assert "No such warehouse" in _error(client.get("/v1/config?warehouse=nope"), 404, "NotFoundException")


def test_config_accepts_the_warehouse_location(client: TestClient, warehouse: Path) -> None:
    assert client.get(f"/v1/config?warehouse={warehouse.as_uri()}").json()["overrides"]["prefix"] == "catalogs/local"


def test_an_unknown_catalog_prefix_is_a_404(client: TestClient) -> None:
    _error(client.get("/v1/catalogs/other/namespaces"), 404, "NotFoundException")


def test_namespace_lifecycle(client: TestClient) -> None:
    created = client.post(f"{PREFIX}/namespaces", json={"namespace": ["db"], "properties": {"owner": "me"}})
    assert created.json() == {"namespace": ["db"], "properties": {"owner": "me"}}
    assert client.head(f"{PREFIX}/namespaces/db").status_code == 204
    assert client.get(f"{PREFIX}/namespaces/db").json() == {"namespace": ["db"], "properties": {"owner": "me"}}
    assert client.get(f"{PREFIX}/namespaces").json() == {"namespaces": [["db"]]}
    update = client.post(f"{PREFIX}/namespaces/db/properties", json={"removals": ["owner", "gone"], "updates": {"a": "1"}})
    assert update.json() == {"updated": ["a"], "removed": ["owner"], "missing": ["gone"]}
    assert client.get(f"{PREFIX}/namespaces/db").json()["properties"] == {"a": "1"}
    assert client.delete(f"{PREFIX}/namespaces/db").status_code == 204
    assert client.head(f"{PREFIX}/namespaces/db").status_code == 404


def test_namespace_errors_use_the_spec_types_and_java_messages(client: TestClient) -> None:
    assert _error(client.get(f"{PREFIX}/namespaces/nope"), 404, "NoSuchNamespaceException") == "Namespace does not exist: nope"
    assert _error(client.delete(f"{PREFIX}/namespaces/nope"), 404, "NoSuchNamespaceException")
    message = _error(client.get(f"{PREFIX}/namespaces?parent=non-existing"), 404, "NoSuchNamespaceException")
    assert message == "Namespace does not exist: non-existing"
    client.post(f"{PREFIX}/namespaces", json={"namespace": ["db"]})
    assert "Namespace already exists" in _error(
        client.post(f"{PREFIX}/namespaces", json={"namespace": ["db"]}), 409, "AlreadyExistsException"
    )
    both = client.post(f"{PREFIX}/namespaces/db/properties", json={"removals": ["a"], "updates": {"a": "1"}})
    _error(both, 422, "UnprocessableEntityException")
    _error(client.post(f"{PREFIX}/namespaces", json={"namespace": []}), 400, "BadRequestException")


def test_a_namespace_with_a_table_or_a_child_is_not_dropped(client: TestClient) -> None:
    create_table(client, "full")
    assert "is not empty" in _error(client.delete(f"{PREFIX}/namespaces/full"), 409, "NamespaceNotEmptyException")
    client.post(f"{PREFIX}/namespaces", json={"namespace": ["parent", "child"]})
    _error(client.delete(f"{PREFIX}/namespaces/parent"), 409, "NamespaceNotEmptyException")


def test_nested_namespaces_list_under_their_parent(client: TestClient) -> None:
    for namespace in (["a"], ["a", "b"], ["a", "c"], ["a", "b", "d"]):
        assert client.post(f"{PREFIX}/namespaces", json={"namespace": namespace}).status_code in (200, 409)
    assert client.get(f"{PREFIX}/namespaces?parent=a").json()["namespaces"] == [["a", "b"], ["a", "c"]]
    assert client.get(f"{PREFIX}/namespaces?parent=a%1Fb").json()["namespaces"] == [["a", "b", "d"]]
    assert client.head(f"{PREFIX}/namespaces/a%1Fb").status_code == 204


@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_listings_page_through_every_name_once(client: TestClient, size: int) -> None:
    for name in ("n1", "n2", "n3", "n4", "n5"):
        client.post(f"{PREFIX}/namespaces", json={"namespace": [name]})
        create_table(client, "paged", name)
    for url, key in ((f"{PREFIX}/namespaces", "namespaces"), (f"{PREFIX}/namespaces/paged/tables", "identifiers")):
        seen, token = [], None
        while True:
            query = f"?pageSize={size}" + (f"&pageToken={token}" if token else "")
            body = client.get(url + query).json()
            assert len(body[key]) <= size
            seen += body[key]
            token = body.get("next-page-token")
            if token is None:
                break
        names = [item[0] if key == "namespaces" else item["name"] for item in seen]
        assert names == sorted(set(names))
        assert len(names) == (6 if key == "namespaces" else 5)


def test_a_bad_page_size_is_a_400(client: TestClient) -> None:
    _error(client.get(f"{PREFIX}/namespaces?pageSize=0"), 400, "BadRequestException")
    _error(client.get(f"{PREFIX}/namespaces?pageSize=x"), 400, "BadRequestException")


def test_table_create_load_head_and_drop(client: TestClient, warehouse: Path) -> None:
    result = create_table(client, properties={"k": "v"})
    assert result["metadata-location"].startswith(warehouse.as_uri())
    assert result["metadata"]["properties"]["k"] == "v"
    assert Path(result["metadata-location"].removeprefix("file://")).exists()
    loaded = client.get(f"{PREFIX}/namespaces/db/tables/t").json()
    assert loaded["metadata"]["table-uuid"] == result["metadata"]["table-uuid"]
    assert client.head(f"{PREFIX}/namespaces/db/tables/t").status_code == 204
    assert client.get(f"{PREFIX}/namespaces/db/tables").json() == {"identifiers": [{"namespace": ["db"], "name": "t"}]}
    assert client.delete(f"{PREFIX}/namespaces/db/tables/t").status_code == 204
    assert client.head(f"{PREFIX}/namespaces/db/tables/t").status_code == 404


def test_table_errors(client: TestClient) -> None:
    assert _error(client.get(f"{PREFIX}/namespaces/db/tables/t"), 404, "NoSuchTableException") == "Table does not exist: db.t"
    create_table(client)
    assert (
        _error(client.get(f"{PREFIX}/namespaces/db/tables/nope"), 404, "NoSuchTableException") == "Table does not exist: db.nope"
    )
    again = client.post(f"{PREFIX}/namespaces/db/tables", json={"name": "t", "schema": SCHEMA})
    assert _error(again, 409, "AlreadyExistsException") == "Table already exists: db.t"
    missing_ns = client.post(f"{PREFIX}/namespaces/nope/tables", json={"name": "t", "schema": SCHEMA})
    assert _error(missing_ns, 404, "NoSuchNamespaceException") == "Namespace does not exist: nope"
    _error(client.delete(f"{PREFIX}/namespaces/db/tables/nope"), 404, "NoSuchTableException")
    _error(client.get(f"{PREFIX}/namespaces/db/tables/t?snapshots=some"), 400, "BadRequestException")


def test_stage_create_commits_nothing(client: TestClient, warehouse: Path) -> None:
    client.post(f"{PREFIX}/namespaces", json={"namespace": ["db"]})
    staged = client.post(f"{PREFIX}/namespaces/db/tables", json={"name": "s", "schema": SCHEMA, "stage-create": True})
    assert staged.status_code == 200
    assert "metadata-location" not in staged.json()
    assert staged.json()["metadata"]["location"].startswith(warehouse.as_uri())
    assert client.head(f"{PREFIX}/namespaces/db/tables/s").status_code == 404
    assert not any(warehouse.rglob("*.metadata.json"))


def test_load_with_snapshots_refs_leaves_out_unreferenced_snapshots(client: TestClient) -> None:
    from tests.unit.service.test_commits import add_snapshot

    create_table(client)
    first = add_snapshot(client, "t", parent=None)
    add_snapshot(client, "t", parent=first, branch=None)  # a snapshot no ref points at
    all_ = client.get(f"{PREFIX}/namespaces/db/tables/t?snapshots=all").json()["metadata"]["snapshots"]
    refs = client.get(f"{PREFIX}/namespaces/db/tables/t?snapshots=refs").json()["metadata"]["snapshots"]
    assert len(all_) == 2
    assert [s["snapshot-id"] for s in refs] == [first]


def test_a_load_repeating_the_answer_etag_is_a_bodiless_304_until_the_table_changes(client: TestClient) -> None:
    """The spec's conditional load: each table answer carries an ETag, a load sending it back in
    If-None-Match gets 304 while the table is unchanged, and the full answer once it changed.
    A commit's answer is tagged like the load that would follow it."""
    from tests.unit.service.test_commits import add_snapshot

    url = f"{PREFIX}/namespaces/db/tables/t"
    created = client.post(f"{PREFIX}/namespaces", json={"namespace": ["db"]})
    created = client.post(f"{PREFIX}/namespaces/db/tables", json={"name": "t", "schema": SCHEMA})
    loaded = client.get(url)
    tag = loaded.headers["ETag"]
    assert tag == created.headers["ETag"]
    unchanged = client.get(url, headers={"If-None-Match": tag})
    assert (unchanged.status_code, unchanged.content, unchanged.headers["ETag"]) == (304, b"", tag)
    assert client.get(url, headers={"If-None-Match": f'"other", W/{tag}'}).status_code == 304
    assert client.get(url, headers={"If-None-Match": "*"}).status_code == 304
    refs = client.get(f"{url}?snapshots=refs")
    assert refs.headers["ETag"] != tag  # another representation of the same version
    assert client.get(url, headers={"If-None-Match": refs.headers["ETag"]}).status_code == 200

    add_snapshot(client, "t", parent=None)
    changed = client.get(url, headers={"If-None-Match": tag})
    assert changed.status_code == 200
    assert changed.headers["ETag"] != tag
    assert len(changed.json()["metadata"]["snapshots"]) == 1


def test_a_commit_answers_the_metadata_it_wrote_as_a_load_would(client: TestClient) -> None:
    """The commit's answer is built from the metadata file's own JSON (not serialised twice):
    it must equal the next load's answer, field for field."""
    from tests.unit.service.test_commits import _commit, add_snapshot

    create_table(client)
    first = add_snapshot(client, "t", parent=None)
    answer = _commit(client, "t", [], [{"action": "set-properties", "updates": {"k": "v"}}])
    loaded = client.get(f"{PREFIX}/namespaces/db/tables/t")
    assert answer.json() == loaded.json()
    assert answer.headers["ETag"] == loaded.headers["ETag"]
    assert answer.json()["metadata"]["current-snapshot-id"] == first


def test_rename_moves_the_table_and_reports_conflicts(client: TestClient) -> None:
    create_table(client, name="a")
    create_table(client, name="b")
    body = {"source": {"namespace": ["db"], "name": "a"}, "destination": {"namespace": ["db"], "name": "c"}}
    assert client.post(f"{PREFIX}/tables/rename", json=body).status_code == 204
    assert client.head(f"{PREFIX}/namespaces/db/tables/c").status_code == 204
    assert client.head(f"{PREFIX}/namespaces/db/tables/a").status_code == 404
    taken = {"source": {"namespace": ["db"], "name": "c"}, "destination": {"namespace": ["db"], "name": "b"}}
    assert (
        _error(client.post(f"{PREFIX}/tables/rename", json=taken), 409, "AlreadyExistsException") == "Table already exists: db.b"
    )
    missing = {"source": {"namespace": ["db"], "name": "x"}, "destination": {"namespace": ["db"], "name": "y"}}
    assert "Table does not exist" in _error(client.post(f"{PREFIX}/tables/rename", json=missing), 404, "NoSuchTableException")
    no_ns = {"source": {"namespace": ["db"], "name": "c"}, "destination": {"namespace": ["nope"], "name": "y"}}
    _error(client.post(f"{PREFIX}/tables/rename", json=no_ns), 404, "NoSuchNamespaceException")


def test_register_adopts_a_metadata_file_of_the_warehouse(client: TestClient) -> None:
    location = create_table(client)["metadata-location"]
    client.delete(f"{PREFIX}/namespaces/db/tables/t")
    registered = client.post(f"{PREFIX}/namespaces/db/register", json={"name": "again", "metadata-location": location})
    assert registered.status_code == 200, registered.text
    assert registered.json()["metadata-location"] == location
    taken = client.post(f"{PREFIX}/namespaces/db/register", json={"name": "again", "metadata-location": location})
    _error(taken, 409, "AlreadyExistsException")


def test_purge_deletes_the_table_files(client: TestClient) -> None:
    location = create_table(client)["metadata-location"]
    assert client.delete(f"{PREFIX}/namespaces/db/tables/t?purgeRequested=true").status_code == 204
    assert not Path(location.removeprefix("file://")).exists()


def test_metrics_reports_are_stored_for_the_dashboard(client: TestClient) -> None:
    create_table(client)
    report = {
        "report-type": "commit-report",
        "table-name": "db.t",
        "snapshot-id": 1,
        "sequence-number": 1,
        "operation": "append",
        "metrics": {},
    }
    assert client.post(f"{PREFIX}/namespaces/db/tables/t/metrics", json=report).status_code == 204
    stored = client.app.state.service  # type: ignore[attr-defined]
    recent = stored.metrics(stored.catalogs.get("local")).recent("db", "t")
    assert [r.report for r in recent] == [report]
    _error(client.post(f"{PREFIX}/namespaces/db/tables/t/metrics", json={"x": 1}), 400, "BadRequestException")
    _error(client.post(f"{PREFIX}/namespaces/db/tables/nope/metrics", json=report), 404, "NoSuchTableException")


def test_an_unknown_route_answers_in_the_error_model(client: TestClient) -> None:
    _error(client.get("/v1/nothing"), 404, "NoSuchEndpointException")


def test_metrics_reports_are_bounded_to_the_newest(tmp_path: Path) -> None:
    from sqlalchemy import create_engine

    from mixed_iceberg.service.metrics import MetricsReports

    reports = MetricsReports(create_engine(f"sqlite:///{tmp_path / 'm.db'}"), "local", keep=3)
    for number in range(7):
        reports.record("db", "t", {"report-type": "scan-report", "n": number})
    assert [r.report["n"] for r in reports.recent("db", "t")] == [6, 5, 4]

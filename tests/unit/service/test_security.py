"""Security and bad input: tokens, the OAuth2 exchange, no writes outside the warehouse, no
secrets in answers, oversized or malformed bodies refused with the spec's 400."""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from mixed_iceberg.exceptions import ConfigError
from mixed_iceberg.service.server import SecretFilter
from mixed_iceberg.service.settings import ServiceConfig, load_service_config
from tests.unit.service.conftest import PREFIX, SCHEMA, Factory, create_table


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


def test_without_a_token_every_route_is_refused_with_401(make_client: Factory) -> None:
    client = make_client(tokens=frozenset({"s3cr3t"}))
    for method, url in (("GET", "/v1/config"), ("GET", f"{PREFIX}/namespaces"), ("POST", f"{PREFIX}/namespaces")):
        response = client.request(method, url, json={"namespace": ["x"]})
        assert response.status_code == 401
        assert response.json()["error"]["type"] == "NotAuthorizedException"
        assert "s3cr3t" not in response.text
    wrong = client.get("/v1/config", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    right = client.get("/v1/config", headers={"Authorization": "Bearer s3cr3t"})
    assert right.status_code == 200
    assert "s3cr3t" not in right.text


def test_client_credentials_are_exchanged_for_a_token_that_opens_the_routes(make_client: Factory) -> None:
    client = make_client(credentials={"app": "app-secret"})
    form = {"grant_type": "client_credentials", "client_id": "app", "client_secret": "app-secret", "scope": "catalog"}
    token = client.post("/v1/oauth/tokens", data=form).json()
    assert token["token_type"] == "bearer"
    assert token["expires_in"] > 0
    assert "app-secret" not in token["access_token"]
    auth = {"Authorization": f"Bearer {token['access_token']}"}
    assert client.get(f"{PREFIX}/namespaces", headers=auth).status_code == 200
    refreshed = client.post(
        "/v1/oauth/tokens",
        data={"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "subject_token": token["access_token"]},
    )
    assert refreshed.status_code == 200
    bad = client.post("/v1/oauth/tokens", data={**form, "client_secret": "wrong"})
    assert bad.status_code == 401
    assert bad.json()["error"] == "invalid_client"
    forged = token["access_token"].rsplit(".", 1)[0] + ".AAAA"
    assert client.get(f"{PREFIX}/namespaces", headers={"Authorization": f"Bearer {forged}"}).status_code == 401
    assert client.post("/v1/oauth/tokens", data={"grant_type": "password"}).status_code == 400


def test_without_tokens_configured_no_token_is_asked_for(client: TestClient) -> None:
    assert client.get(f"{PREFIX}/namespaces").status_code == 200


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "::"])
def test_a_non_loopback_bind_without_a_token_refuses_to_start(host: str) -> None:
    with pytest.raises(ConfigError, match="no token is configured"):
        ServiceConfig(host=host).check_bind()
    ServiceConfig(host=host, tokens=frozenset({"t"})).check_bind()
    ServiceConfig(host="127.0.0.1").check_bind()


def test_tokens_come_from_the_environment_or_a_file_and_never_show(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "tokens").write_text("from-file\n")
    (tmp_path / "service.yaml").write_text(json.dumps({"auth": {"tokens-file": str(tmp_path / "tokens")}}))
    monkeypatch.setenv("MIXED_ICEBERG_REST_TOKENS", "env-a,env-b")
    monkeypatch.setenv("MIXED_ICEBERG_REST_CREDENTIALS", "app:cred-secret")
    config = load_service_config(tmp_path / "service.yaml")
    assert config.tokens == {"env-a", "env-b", "from-file"}
    assert config.credentials == {"app": "cred-secret"}
    for shown in (repr(config), str(config)):
        assert not any(secret in shown for secret in ("env-a", "from-file", "cred-secret"))


def test_the_log_masks_every_secret() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "token %s and %s", ("s3cr3t", "other"), None)
    assert SecretFilter(["s3cr3t"]).filter(record)
    assert record.getMessage() == "token *** and other"


@pytest.mark.parametrize("name", ["..", ".", "a.b", "a\\b", "", " "])
def test_path_like_table_names_are_refused_and_nothing_is_written(client: TestClient, warehouse: Path, name: str) -> None:
    client.post(f"{PREFIX}/namespaces", json={"namespace": ["db"]})
    before = _files(warehouse)
    response = client.post(f"{PREFIX}/namespaces/db/tables", json={"name": name, "schema": SCHEMA})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["type"] == "BadRequestException"
    assert _files(warehouse) == before


@pytest.mark.parametrize(
    "path", ["/namespaces/a%2Fb", "/namespaces/a%2F..%2F..", "/namespaces/db/tables/..%2Fx", "/namespaces/%2E%2E"]
)
def test_path_like_segments_are_refused_before_routing(client: TestClient, path: str) -> None:
    response = client.get(PREFIX + path)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["type"] == "BadRequestException"


@pytest.mark.parametrize("namespace", [["a/b"], [".."], ["a", ""], ["a.b"]])
def test_path_like_namespaces_are_refused(client: TestClient, namespace: list[str]) -> None:
    assert client.post(f"{PREFIX}/namespaces", json={"namespace": namespace}).status_code == 400
    assert client.get(f"{PREFIX}/namespaces").json()["namespaces"] == []


def test_locations_outside_the_warehouse_are_refused_and_nothing_is_written(
    client: TestClient, warehouse: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    client.post(f"{PREFIX}/namespaces", json={"namespace": ["db"]})
    before = _files(tmp_path)
    attempts = [
        ("POST", f"{PREFIX}/namespaces/db/tables", {"name": "t", "schema": SCHEMA, "location": str(outside)}),
        ("POST", f"{PREFIX}/namespaces/db/tables", {"name": "t", "schema": SCHEMA, "location": f"{warehouse.as_uri()}/../x"}),
        (
            "POST",
            f"{PREFIX}/namespaces/db/tables",
            {"name": "t", "schema": SCHEMA, "properties": {"write.metadata.path": str(outside)}},
        ),
        ("POST", f"{PREFIX}/namespaces", {"namespace": ["n2"], "properties": {"location": str(outside)}}),
        ("POST", f"{PREFIX}/namespaces/db/properties", {"updates": {"location": "s3://other/x"}}),
        ("POST", f"{PREFIX}/namespaces/db/register", {"name": "r", "metadata-location": f"{outside}/v1.metadata.json"}),
    ]
    for method, url, body in attempts:
        response = client.request(method, url, json=body)
        assert response.status_code == 403, (url, body, response.text)
        assert response.json()["error"]["type"] == "ForbiddenException"
    assert _files(tmp_path) - before <= {p for p in _files(tmp_path) if p.name.startswith("catalog.db")}
    create_table(client)
    for update in (
        {"action": "set-location", "location": str(outside)},
        {"action": "set-properties", "updates": {"write.data.path": str(outside)}},
    ):
        before = _files(warehouse)
        response = client.post(f"{PREFIX}/namespaces/db/tables/t", json={"requirements": [], "updates": [update]})
        assert response.status_code == 403, response.text
        assert _files(warehouse) == before


def test_a_location_inside_the_warehouse_in_any_spelling_is_accepted(client: TestClient, warehouse: Path) -> None:
    client.post(f"{PREFIX}/namespaces", json={"namespace": ["db"]})
    for name, location in (("a", f"file:{warehouse}/x/a"), ("b", f"{warehouse.as_uri()}/x/b"), ("c", f"{warehouse}/x/c")):
        response = client.post(f"{PREFIX}/namespaces/db/tables", json={"name": name, "schema": SCHEMA, "location": location})
        assert response.status_code == 200, response.text


def test_oversized_and_malformed_bodies_are_400s(make_client: Factory) -> None:
    client = make_client(**{"max-body-bytes": 200})
    big = client.post(f"{PREFIX}/namespaces", json={"namespace": ["db"], "properties": {"x": "y" * 500}})
    assert big.status_code == 400
    assert "exceeds the limit" in big.json()["error"]["message"]

    def chunks():  # type: ignore[no-untyped-def]
        yield b'{"namespace": ["db"], "properties": {"x": "'
        yield b"y" * 500
        yield b'"}}'

    streamed = client.post(f"{PREFIX}/namespaces", content=chunks(), headers={"content-type": "application/json"})
    assert streamed.status_code == 400
    assert "exceeds the limit" in streamed.json()["error"]["message"]
    for body in (b"{not json", b"[1, 2]", b'"text"', b"\xff\xfe"):
        response = client.post(f"{PREFIX}/namespaces", content=body)
        assert response.status_code == 400, body
        assert response.json()["error"]["type"] == "BadRequestException"
    assert client.get(f"{PREFIX}/namespaces").json()["namespaces"] == []


def test_catalog_secrets_never_reach_a_client_or_the_masked_log(
    make_client: Factory, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    catalogs = tmp_path / "secret-catalogs.yaml"
    catalogs.write_text(
        json.dumps(
            {
                "catalogs": [
                    {
                        "name": "pg",
                        "type": "sql",
                        "storage": {
                            "type": "s3",
                            "endpoint": "http://127.0.0.1:1",
                            "access-key-id": "AKIA-SECRET",
                            "secret-access-key": "S3-SECRET-KEY",
                        },
                        "properties": {
                            "uri": "postgresql+psycopg2://user:DB-PASSWORD@127.0.0.1:1/db",
                            "warehouse": "s3://bucket/wh",
                        },
                    }
                ]
            }
        )
    )
    client = make_client(**{"catalogs-file": catalogs})
    with caplog.at_level(logging.INFO):
        answers = [client.get("/v1/config"), client.get("/v1/catalogs/pg/namespaces"), client.get("/v1/config?warehouse=nope")]
    assert answers[1].status_code == 503
    for answer in answers:
        assert not any(secret in answer.text for secret in ("AKIA-SECRET", "S3-SECRET-KEY", "DB-PASSWORD")), answer.text
    assert "DB-PASSWORD" in caplog.text, "the log names the catalog's URI (which is why serve masks it)"
    served = client.app.state.service.catalogs  # type: ignore[attr-defined]
    mask = SecretFilter(served.secrets())
    for record in caplog.records:
        mask.filter(record)
        assert not any(secret in record.getMessage() for secret in ("AKIA-SECRET", "S3-SECRET-KEY", "DB-PASSWORD"))


def test_client_credentials_in_http_basic_authentication_are_accepted(make_client: Factory) -> None:
    """DuckDB's iceberg extension sends them so (client_secret_basic, RFC 6749 2.3.1)."""
    client = make_client(credentials={"duck": "s3cret value"})
    basic = base64.b64encode(b"duck:s3cret+value").decode()
    token = client.post(
        "/v1/oauth/tokens", data={"grant_type": "client_credentials"}, headers={"Authorization": f"Basic {basic}"}
    )
    assert token.status_code == 200, token.text
    wrong = base64.b64encode(b"duck:nope").decode()
    refused = client.post(
        "/v1/oauth/tokens", data={"grant_type": "client_credentials"}, headers={"Authorization": f"Basic {wrong}"}
    )
    assert refused.status_code == 401


def test_the_log_mask_leaves_words_that_merely_contain_a_short_token() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "tokens required; Bearer tok", None, None)
    SecretFilter(["tok"]).filter(record)
    assert record.getMessage() == "tokens required; Bearer ***"

"""A REST app over a fresh SQLite catalog, driven in-process by Starlette's TestClient."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from mixed_iceberg.service import create_app
from mixed_iceberg.service.settings import ServiceConfig
from tests.support.rest_server import write_catalogs

SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [
        {"id": 1, "name": "id", "type": "long", "required": False},
        {"id": 2, "name": "v", "type": "string", "required": False},
    ],
}

Factory = Callable[..., TestClient]


@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[Factory]:
    """A factory of clients: ``make_client(tokens=..., credentials=..., max_body_bytes=...)``."""
    clients: list[TestClient] = []

    def make(**settings: Any) -> TestClient:
        catalogs = write_catalogs(tmp_path / "home")
        config = ServiceConfig.model_validate({"catalogs-file": catalogs, **settings})
        client = TestClient(create_app(config), raise_server_exceptions=True)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture
def client(make_client: Factory) -> TestClient:
    return make_client()


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    return tmp_path / "home" / "warehouse"


PREFIX = "/v1/catalogs/local"


def create_table(client: TestClient, namespace: str = "db", name: str = "t", **extra: Any) -> dict[str, Any]:
    """Create ``namespace`` (if needed) and the table; the load result."""
    client.post(f"{PREFIX}/namespaces", json={"namespace": [namespace]})
    response = client.post(f"{PREFIX}/namespaces/{namespace}/tables", json={"name": name, "schema": SCHEMA, **extra})
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result

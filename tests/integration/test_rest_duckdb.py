"""DuckDB's Iceberg REST attach against a live ``mixed-iceberg serve`` (issue 35 item 4).

DuckDB 1.5.5's iceberg extension comes from its PyPI wheel and loads offline
(tests/support/duckdb_iceberg.py). It shares no code with pyiceberg or this project, so what is
protected is the wire protocol as an independent client speaks it: DuckDB attaches the served
catalog with OAuth2 client credentials (the exchange at ``/v1/oauth/tokens``, which DuckDB
authenticates with HTTP Basic), lists a table pyiceberg created, reads exactly the rows
pyiceberg wrote, and its own INSERT commits through the server so that pyiceberg reads the row
back. A configured bearer token works as well; a wrong token or secret is refused. The server
has its own credentials, so it is not the session's open ``rest_server``.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import DateType, DoubleType, LongType, NestedField, StringType

from tests.support.duckdb_iceberg import attach_rest, connect
from tests.support.rest_server import RestServer

pytestmark = pytest.mark.integration

TOKEN = "duckdb-client-token"
CLIENT = ("duckdb", "duckdb-client-secret")
SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "name", StringType(), required=False),
    NestedField(3, "price", DoubleType(), required=False),
    NestedField(4, "day", DateType(), required=False),
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestServer]:
    server = RestServer.start(tmp_path_factory.mktemp("rest-duckdb"), tokens=[TOKEN], credentials=dict([CLIENT]))
    try:
        yield server
    finally:
        server.stop()


def attach(con: duckdb.DuckDBPyConnection, server: RestServer, **auth: Any) -> None:
    """Attach the served catalog as ``lake`` (the statements docs/rest.md shows)."""
    for statement in attach_rest(server.uri, server.warehouse, **auth):
        con.execute(statement)


def _batch(ids: range) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "name": [f"n{i}" for i in ids],
            "price": pa.array([i * 1.5 for i in ids], pa.float64()),
            "day": pa.array([datetime.date(2026, 1, 1 + i % 28) for i in ids], pa.date32()),
        }
    )


def test_duckdb_lists_reads_and_inserts_into_a_table_pyiceberg_wrote(server: RestServer) -> None:
    catalog = RestCatalog("rest", **server.pyiceberg_properties())
    catalog.create_namespace("duck")
    table = catalog.create_table("duck.sales", SCHEMA)
    table.append(_batch(range(0, 5)))
    table.append(_batch(range(5, 8)))  # two snapshots: DuckDB must read the current one whole
    expected = table.scan().to_arrow().sort_by("id")

    con = connect()
    try:
        attach(con, server, client=CLIENT)
        tables = con.execute("SELECT database, schema, name FROM (SHOW ALL TABLES) WHERE database = 'lake'").fetchall()
        assert tables == [("lake", "duck", "sales")]
        read = con.execute("SELECT id, name, price, day FROM lake.duck.sales ORDER BY id").to_arrow_table()
        assert read.to_pylist() == expected.to_pylist()

        con.execute("INSERT INTO lake.duck.sales VALUES (100, 'from duckdb', 2.5, DATE '2026-02-03')")
    finally:
        con.close()

    reloaded = catalog.load_table("duck.sales")
    current = reloaded.current_snapshot()
    assert current is not None
    assert current.summary is not None
    assert current.summary.operation.value == "append"
    assert len(reloaded.metadata.snapshots) == 3
    rows = reloaded.scan().to_arrow().sort_by("id").to_pylist()
    assert rows == [*expected.to_pylist(), {"id": 100, "name": "from duckdb", "price": 2.5, "day": datetime.date(2026, 2, 3)}]


def test_duckdb_with_a_configured_bearer_token_reads_too(server: RestServer) -> None:
    catalog = RestCatalog("rest", **server.pyiceberg_properties())
    catalog.create_namespace("duck_token")
    catalog.create_table("duck_token.t", SCHEMA).append(_batch(range(3)))
    con = connect()
    try:
        attach(con, server, token=TOKEN)
        assert con.execute("SELECT count(*) FROM lake.duck_token.t").fetchone() == (3,)
    finally:
        con.close()


@pytest.mark.parametrize(
    ("auth", "refusal"),
    [
        ({"token": "not-" + TOKEN}, r"/v1/config.*Unauthorized_401"),
        ({"client": (CLIENT[0], "not-" + CLIENT[1])}, r"OAuth2 token request failed \(Unauthorized_401\)"),
    ],
    ids=["wrong-token", "wrong-secret"],
)
def test_duckdb_without_valid_credentials_is_refused(server: RestServer, auth: dict[str, Any], refusal: str) -> None:
    con = connect()
    try:
        with pytest.raises(duckdb.Error, match=refusal) as refused:
            attach(con, server, **auth)  # the secret's token exchange, or ATTACH's /v1/config
        assert "not-" not in str(refused.value), "the credential is not echoed"
    finally:
        con.close()

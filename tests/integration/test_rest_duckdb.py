"""DuckDB's Iceberg REST attach against a live ``mixed-iceberg serve`` (issue 35 item 4).

DuckDB 1.5.5's iceberg extension comes from its PyPI wheel and loads offline
(tests/support/duckdb_iceberg.py). It shares no code with pyiceberg or this project, so what is
protected is the wire protocol as an independent client speaks it: DuckDB attaches the served
catalog with a bearer token, lists a table pyiceberg created, reads exactly the rows pyiceberg
wrote, and its own INSERT commits through the server so that pyiceberg reads the row back.
A client without the token is refused. The server has its own tokens, so it is not the
session's tokenless ``rest_server``.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator

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
SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "name", StringType(), required=False),
    NestedField(3, "price", DoubleType(), required=False),
    NestedField(4, "day", DateType(), required=False),
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestServer]:
    server = RestServer.start(tmp_path_factory.mktemp("rest-duckdb"), tokens=[TOKEN])
    try:
        yield server
    finally:
        server.stop()


def attach(con: duckdb.DuckDBPyConnection, server: RestServer, token: str) -> None:
    """Attach the served catalog as ``lake`` (the statements docs/rest.md shows)."""
    for statement in attach_rest(server.uri, server.warehouse, token):
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
        attach(con, server, TOKEN)
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


def test_duckdb_without_the_token_is_refused(server: RestServer) -> None:
    con = connect()
    try:
        with pytest.raises(duckdb.Error, match="Unauthorized_401") as refused:
            attach(con, server, "not-" + TOKEN)  # ATTACH asks /v1/config at once
        assert "not-" + TOKEN not in str(refused.value)
    finally:
        con.close()

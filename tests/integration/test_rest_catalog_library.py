"""The library over a REST catalog: ``load_catalog(type="rest", uri=...)`` against Iceberg's own
reference server (``iceberg_rest_reference``: Iceberg Java's REST handlers over a SQLite JDBC
catalog, an independent implementation of the protocol) and against ``mixed-iceberg serve``
(``rest_server``, which refuses a plain client's commits to a keyed table's stores: ours pass).
Each server is one process for the whole session.

Each behaviour is checked against the same steps on a SQL catalog where it has an answer to
compare with: a keyed table written through REST reads back, merged and as changes, exactly as
it does through the SQL catalog. The optimizer service finds the REST catalog's tables without
the SQL catalog's one-query pointer read (it lists and loads them) and optimizes them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyiceberg.table.snapshots import Operation

from mixed_iceberg import MixedCatalog, MixedTable, load_catalog
from mixed_iceberg.optimizer.config import parse_optimizer_config
from mixed_iceberg.optimizer.service import OptimizerService
from tests.support.iceberg_rest_reference import ReferenceServer
from tests.support.optimizer import DUE, successes, wait_for
from tests.support.rest_server import RestServer
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog, rows_of

pytestmark = pytest.mark.integration

#: A namespace of these tests' own: the kit, sharing the server, drops ``ns`` and ``newdb``.
NAMESPACE = "rest_lib"

_BATCHES = [
    [("+I", 1, "a", 1, 1.0), ("+I", 2, "b", 2, 2.0), ("+I", 3, "c", 3, 3.0)],
    [("-U", 2, "b", 2, 2.0), ("+U", 2, "B", 20, 2.5), ("-D", 3, "c", 3, 3.0), ("+I", 4, "d", 4, 4.0)],
    [("+I", 1, "again", 10, 1.5)],  # an insert over a live key: the latest wins
]


@pytest.fixture(params=["reference", "serve"])
def server_properties(request: pytest.FixtureRequest) -> dict[str, str]:
    """``load_catalog`` properties of a REST catalog on one of the two servers."""
    if request.param == "reference":
        reference: ReferenceServer = request.getfixturevalue("iceberg_rest_reference")
        return {"type": "rest", "uri": reference.uri}
    serve: RestServer = request.getfixturevalue("rest_server")
    return {"type": "rest", "uri": serve.uri, "warehouse": serve.warehouse}


@pytest.fixture
def rest_catalog(server_properties: dict[str, str]) -> Iterator[MixedCatalog]:
    catalog = load_catalog("remote", **server_properties)
    yield catalog
    for name in catalog.list_tables(NAMESPACE):
        catalog.purge_table(name)
    if NAMESPACE in catalog.list_namespaces():
        catalog.drop_namespace(NAMESPACE)


def _write(table: MixedTable) -> None:
    table.bulk_load(
        changes([("+I", k, "base", k, 0.5) for k in range(10, 15)]).drop_columns(["_change_action"]), commit_id=("loader", 1)
    )
    for sequence, batch in enumerate(_BATCHES, start=1):
        with table.new_transaction(("writer", sequence)) as txn:
            txn.write(changes(batch))


def test_a_keyed_table_through_rest_reads_back_merged_and_as_changes_as_through_sql(
    rest_catalog: MixedCatalog, tmp_path: Path
) -> None:
    sql_catalog = local_catalog(tmp_path / "sql")
    tables = {}
    for catalog in (rest_catalog, sql_catalog):
        table = catalog.create_table(f"{NAMESPACE}.orders", ORDERS_SCHEMA, primary_key=["id"], partition_by=["bucket(2, id)"])
        _write(table)
        with table.new_transaction(("writer", 2)) as txn:  # a replayed commit is a no-op
            txn.write(changes(_BATCHES[1]))
        tables[catalog.name] = catalog.load_table(f"{NAMESPACE}.orders")
    through_rest, through_sql = tables["remote"], tables["local"]
    assert list(through_rest.primary_key) == ["id"]
    assert through_rest.change_store is not None
    merged = rows_of(through_rest.scan().to_arrow())
    assert merged == rows_of(through_sql.scan().to_arrow())
    assert [r[:3] for r in merged][:4] == [(1, "again", 10), (2, "B", 20), (4, "d", 4), (10, "base", 10)]
    assert rows_of(through_rest.changes().to_arrow()) == rows_of(through_sql.changes().to_arrow())
    # The ChangeStore is an Iceberg table of the REST catalog, folded into its table when listed.
    assert rest_catalog.list_tables(NAMESPACE) == [f"{NAMESPACE}.orders"]
    assert rest_catalog.iceberg.table_exists(rest_catalog.change_identifier(f"{NAMESPACE}.orders"))


def test_a_writer_sees_another_clients_commit_through_its_conditional_loads(
    rest_catalog: MixedCatalog, server_properties: dict[str, str], request: pytest.FixtureRequest
) -> None:
    """Our client loads a table it knows with If-None-Match (``_pyiceberg/rest_catalog.py``): on
    serve, a writer's refresh before its next commit is a bodiless 304 (or skipped: the writer is
    alone), and a commit by another client is still seen (never a stale answer); a server without
    ETags answers in full."""
    table = rest_catalog.create_table(f"{NAMESPACE}.tagged", ORDERS_SCHEMA, primary_key=["id"])
    _write(table)
    other = load_catalog("remote", **server_properties).load_table(f"{NAMESPACE}.tagged")
    client = rest_catalog.iceberg
    before = client.not_modified + client.refreshes_skipped  # type: ignore[attr-defined]
    with table.new_transaction(("writer", 10)) as txn:
        txn.write(changes([("+I", 20, "mine", 1, 1.0)]))
    with table.new_transaction(("writer", 11)) as txn:
        txn.write(changes([("+I", 21, "mine", 1, 1.0)]))
    if request.node.callspec.params["server_properties"] == "serve":
        assert client.not_modified + client.refreshes_skipped >= before + 2  # type: ignore[attr-defined]
    with other.new_transaction(("other", 1)) as txn:  # other's own cached answer is stale: it must see 20 and 21
        txn.write(changes([("-D", 20, "mine", 1, 1.0), ("+I", 22, "theirs", 2, 2.0)]))
    with table.new_transaction(("writer", 12)) as txn:
        txn.write(changes([("+U", 22, "mine again", 3, 3.0)]))
    keys = {row[0]: row[1] for row in rows_of(table.scan().to_arrow())}
    assert (20 in keys, keys[21], keys[22]) == (False, "mine", "mine again")
    assert rows_of(other.scan().to_arrow()) == rows_of(table.scan().to_arrow())


def test_a_writer_alone_skips_its_refresh_and_a_stale_head_still_commits_exactly_once(rest_server: RestServer) -> None:
    """A writer whose table has been quiet commits without loading it first
    (``refresh_for_commit``); when another client did commit meanwhile, the stale head costs a
    409 and a retry, never a lost or doubled commit: a commit id the other client landed first
    (a zombie of the same writer) is skipped on the retry."""
    properties = {"type": "rest", "uri": rest_server.uri, "warehouse": rest_server.warehouse}
    catalog = load_catalog("remote", **properties)
    if NAMESPACE not in catalog.list_namespaces():
        catalog.create_namespace(NAMESPACE)
    table = catalog.create_table(f"{NAMESPACE}.alone", ORDERS_SCHEMA, primary_key=["id"])
    try:
        client = catalog.iceberg
        for sequence in (1, 2, 3):
            with table.new_transaction(("writer", sequence)) as txn:
                txn.write(changes([("+I", sequence, "mine", sequence, 1.0)]))
        skipped = client.refreshes_skipped  # type: ignore[attr-defined]
        assert skipped >= 1  # the third commit did not ask
        other = load_catalog("remote", **properties).load_table(f"{NAMESPACE}.alone")
        with other.new_transaction(("other", 1)) as txn:
            txn.write(changes([("-D", 1, "mine", 1, 1.0), ("+I", 10, "theirs", 10, 1.0)]))
        with other.new_transaction(("writer", 4)) as txn:  # a zombie lands the writer's next id first
            txn.write(changes([("+I", 4, "zombie", 4, 1.0)]))
        with table.new_transaction(("writer", 4)) as txn:  # stale head: 409, retry, id found committed
            txn.write(changes([("+I", 4, "mine", 4, 1.0), ("+I", 5, "never", 5, 1.0)]))
        assert client.refreshes_skipped == skipped + 1  # type: ignore[attr-defined]
        with table.new_transaction(("writer", 5)) as txn:  # after the conflict: a refresh again
            txn.write(changes([("+U", 10, "mine again", 11, 2.0)]))
        assert client.refreshes_skipped == skipped + 1  # type: ignore[attr-defined]
        keys = {row[0]: row[1] for row in rows_of(table.scan().to_arrow())}
        assert keys == {2: "mine", 3: "mine", 4: "zombie", 10: "mine again"}
        assert rows_of(other.scan().to_arrow()) == rows_of(table.scan().to_arrow())
    finally:
        catalog.purge_table(f"{NAMESPACE}.alone")


def test_the_client_reads_its_environment_once_unless_proxies_are_set(
    rest_server: RestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """requests reads proxy and CA bundle variables on every request unless the session stops
    trusting the environment; our client reads them once (``_pyiceberg/rest_catalog.py``), keeps
    the CA bundle, and leaves a session with proxy variables as requests has it."""
    properties = {"type": "rest", "uri": rest_server.uri, "warehouse": rest_server.warehouse}
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/etc/ssl/certs/ca-certificates.crt")
    session = load_catalog("remote", **properties).iceberg._session  # type: ignore[attr-defined]
    assert (session.trust_env, session.verify) == (False, "/etc/ssl/certs/ca-certificates.crt")
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there ...
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")  # ... and the server is not behind it
    catalog = load_catalog("remote", **properties)
    assert catalog.iceberg._session.trust_env  # type: ignore[attr-defined]
    assert isinstance(catalog.list_namespaces(), list)  # the server is still reached (NO_PROXY)


def test_optimizing_through_rest_commits_a_replace_and_keeps_the_rows(rest_catalog: MixedCatalog) -> None:
    table = rest_catalog.create_table(f"{NAMESPACE}.optimized", ORDERS_SCHEMA, primary_key=["id"])
    _write(table)
    before = rows_of(table.scan().to_arrow())
    result = table.optimizing.run("full")
    assert result is not None
    assert result.committed
    reloaded = rest_catalog.load_table(f"{NAMESPACE}.optimized")
    assert rows_of(reloaded.scan().to_arrow()) == before
    snapshot = reloaded.base_store.current_snapshot()
    assert snapshot is not None
    assert snapshot.summary is not None
    assert snapshot.summary.operation == Operation.REPLACE, snapshot.summary
    assert reloaded.optimizing.evaluate().type is None, "nothing is due after a full optimizing"


def test_rename_and_purge_through_rest_move_and_delete_both_stores(rest_catalog: MixedCatalog) -> None:
    table = rest_catalog.create_table(f"{NAMESPACE}.old", ORDERS_SCHEMA, primary_key=["id"])
    _write(table)
    expected = rows_of(table.scan().to_arrow())
    locations = [table.base_store.location(), table.change_store.location()]  # type: ignore[union-attr]
    renamed = rest_catalog.rename_table(f"{NAMESPACE}.old", f"{NAMESPACE}.new")
    assert rows_of(renamed.scan().to_arrow()) == expected
    assert not rest_catalog.iceberg.table_exists(rest_catalog.change_identifier(f"{NAMESPACE}.old"))
    rest_catalog.purge_table(f"{NAMESPACE}.new")
    assert rest_catalog.list_tables(NAMESPACE) == []
    assert not rest_catalog.iceberg.table_exists(rest_catalog.change_identifier(f"{NAMESPACE}.new"))
    for location in locations:
        folder = Path(location.removeprefix("file://").removeprefix("file:"))
        assert not folder.exists() or not any(p.is_file() for p in folder.rglob("*")), f"files left under {folder}"


def test_a_catalogs_yaml_rest_entry_serves_the_optimizer_service(
    rest_catalog: MixedCatalog, server_properties: dict[str, str], tmp_path: Path
) -> None:
    properties = {k: v for k, v in server_properties.items() if k != "type"}
    catalogs = tmp_path / "catalogs.yaml"
    catalogs.write_text(json.dumps({"catalogs": [{"name": "ref", "type": "rest", "properties": properties}]}))
    catalog = load_catalog("ref", config_path=catalogs)
    assert catalog.metadata_locations() is None  # no pointer read: discovery lists and loads
    table = catalog.create_table(
        f"{NAMESPACE}.served", ORDERS_SCHEMA, primary_key=["id"], properties={**DUE, "self-optimizing.group": "g"}
    )
    _write(table)
    before = rows_of(table.scan().to_arrow())
    config = parse_optimizer_config(
        {
            "system-database": f"sqlite:///{tmp_path}/system.db",
            "catalog-config": str(catalogs),
            "catalogs": ["ref"],
            "optimizer_groups": [
                {
                    "name": "g",
                    "properties": {"refresh-interval": "300ms", "heartbeat-interval": "200ms", "maintenance-interval": "0"},
                }
            ],
        }
    )
    service = OptimizerService(config, "g", threads=1).start()  # opens "ref" from the catalogs file
    try:
        wait_for(
            lambda: successes(service.db, f"ref.{NAMESPACE}.served") >= 1,
            what="the REST catalog's table optimized by the service",
        )
    finally:
        service.stop()
    table.refresh()
    assert rows_of(table.scan().to_arrow()) == before
    assert table.optimizing.evaluate().type is None

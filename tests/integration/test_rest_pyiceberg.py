"""pyiceberg's ``RestCatalog`` against a live ``mixed-iceberg serve`` process (issue 35 item 4).

One server for the module's plain tests (the session fixture), one with client credentials for
the token test. What is protected: a table created, appended to many times and evolved over
REST reads back exactly; a keyed table shows as its two stores and refuses a plain append; four processes appending to one table at once lose no commit (each
conflict is a 409 the client retries on fresh metadata), and so do two servers over one
PostgreSQL catalog with no coordinator between them; ``credential=`` gets a token through
the OAuth2 exchange and a client without one is refused.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import ForbiddenError, OAuthError, RESTError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from mixed_iceberg import load_catalog
from tests.support.rest_server import RestServer
from tests.support.services import ROOT

pytestmark = pytest.mark.integration

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "v", StringType(), required=False))


def _catalog(server: RestServer) -> RestCatalog:
    return RestCatalog("rest", **server.pyiceberg_properties())


def test_many_tiny_appends_and_a_schema_change_read_back_equal(rest_server: RestServer) -> None:
    catalog = _catalog(rest_server)
    catalog.create_namespace_if_not_exists("appends")
    table = catalog.create_table("appends.t", SCHEMA)
    for i in range(12):
        table.append(pa.table({"id": pa.array([i], pa.int64()), "v": [f"v{i}"]}))
    with table.update_schema() as update:
        update.add_column("w", StringType())
    table.append(pa.table({"id": pa.array([12], pa.int64()), "v": ["v12"], "w": ["new"]}))

    again = _catalog(rest_server).load_table("appends.t")
    rows = again.scan().to_arrow().sort_by("id")
    assert rows.column("id").to_pylist() == list(range(13))
    assert rows.column("w").to_pylist() == [None] * 12 + ["new"]
    assert [field.name for field in again.schema().fields] == ["id", "v", "w"]
    assert len(again.metadata.snapshots) == 13


_WRITER = textwrap.dedent(
    """
    import sys, time
    import pyarrow as pa
    from pyiceberg.catalog.rest import RestCatalog
    from pyiceberg.exceptions import CommitFailedException

    uri, warehouse, worker, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    catalog = RestCatalog("rest", uri=uri, warehouse=warehouse)
    conflicts = 0
    for i in range(count):
        row = pa.table({"id": pa.array([worker * 1000 + i], pa.int64()), "v": [f"w{worker}"]})
        while True:
            table = catalog.load_table("race.t")
            try:
                table.append(row)
                break
            except CommitFailedException:
                conflicts += 1
    print(conflicts)
    """
)


def _append_race(uris: list[str], warehouse: str, writers: int = 4, count: int = 8) -> list[int]:
    """``writers`` processes (writer i through ``uris[i % len(uris)]``) each append ``count``
    one-row commits to ``race.t`` at once, retrying a 409 on fresh metadata; the ids they wrote."""
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, uris[worker % len(uris)], warehouse, str(worker), str(count)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for worker in range(writers)
    ]
    outputs = [process.communicate(timeout=240) for process in processes]
    assert [process.returncode for process in processes] == [0] * writers, [err for _, err in outputs]
    return sorted(worker * 1000 + i for worker in range(writers) for i in range(count))


def test_four_processes_appending_to_one_table_lose_no_commit(rest_server: RestServer) -> None:
    catalog = _catalog(rest_server)
    catalog.create_namespace_if_not_exists("race")
    catalog.create_table("race.t", SCHEMA)
    expected = _append_race([rest_server.uri], rest_server.warehouse)
    table = _catalog(rest_server).load_table("race.t")
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == expected
    assert len(table.metadata.snapshots) == len(expected)


def _children(pid: int) -> set[int]:
    found = subprocess.run(["pgrep", "-P", str(pid), "-f", "multiprocessing.spawn"], capture_output=True, text=True)
    return {int(line) for line in found.stdout.split()}


def test_serve_with_two_workers_loses_no_commit_and_replaces_a_killed_worker(tmp_path: Path) -> None:
    """``workers: 2``: uvicorn's supervisor runs two server processes on one socket; four
    writers through it lose no commit, a worker killed -9 is replaced, and stopping the server
    leaves no worker behind."""
    server = RestServer.start(tmp_path / "serve", workers=2)
    try:
        catalog = _catalog(server)
        catalog.create_namespace("race")
        catalog.create_table("race.t", SCHEMA)
        deadline = time.monotonic() + 30
        while len(workers := _children(server.process.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(workers) == 2, workers
        expected = _append_race([server.uri], server.warehouse)
        assert sorted(_catalog(server).load_table("race.t").scan().to_arrow().column("id").to_pylist()) == expected

        os.kill(min(workers), signal.SIGKILL)
        deadline = time.monotonic() + 60  # its own wait: the race before may have taken long on a busy machine
        while len(_children(server.process.pid) - workers) < 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        replaced = _children(server.process.pid)
        assert (len(replaced), min(workers) in replaced) == (2, False), (workers, replaced)
        assert len(_catalog(server).load_table("race.t").metadata.snapshots) == len(expected)
    finally:
        server.stop()
    assert server.process.returncode == 0
    assert not _children(server.process.pid)
    for pid in replaced:
        assert not Path(f"/proc/{pid}").exists(), f"worker {pid} outlived its server"


def test_two_servers_over_one_postgres_catalog_lose_no_commit(tmp_path: Path, postgres_url: str) -> None:
    # No coordinator between serve processes: the catalog's compare-and-set on the metadata
    # location is the only lock. Four writers, two on each server, append to one table.
    name = f"pg{uuid.uuid4().hex[:8]}"  # rows of its own in the shared database's iceberg_tables
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    catalogs = tmp_path / "catalogs.yaml"
    catalogs.write_text(
        json.dumps(
            {"catalogs": [{"name": name, "type": "sql", "properties": {"uri": postgres_url, "warehouse": str(warehouse)}}]}
        )
    )
    servers = [RestServer.start(tmp_path / f"serve{i}", catalogs_yaml=catalogs) for i in range(2)]
    try:
        catalog = _catalog(servers[0])
        catalog.create_namespace("race")
        catalog.create_table("race.t", SCHEMA)
        expected = _append_race([server.uri for server in servers], name)
        for server in servers:  # both see every commit
            table = _catalog(server).load_table("race.t")
            assert sorted(table.scan().to_arrow().column("id").to_pylist()) == expected
            assert len(table.metadata.snapshots) == len(expected)
    finally:
        for server in servers:
            server.stop()


def test_credential_gets_a_token_and_a_client_without_one_is_refused(tmp_path: Path) -> None:
    server = RestServer.start(tmp_path, credentials={"app": "app-secret"})
    try:
        catalog = _catalog(server)
        catalog.create_namespace("secured")
        catalog.create_table("secured.t", SCHEMA).append(pa.table({"id": pa.array([1], pa.int64()), "v": ["x"]}))
        assert catalog.load_table("secured.t").scan().to_arrow().num_rows == 1

        with pytest.raises((RESTError, OAuthError)):
            RestCatalog("anonymous", uri=server.uri, warehouse=server.warehouse).list_namespaces()
        with pytest.raises(OAuthError):
            RestCatalog("wrong", **{**server.pyiceberg_properties(), "credential": "app:wrong"})
        assert "app-secret" not in server.log.read_text()
    finally:
        server.stop()


def test_a_keyed_table_reads_as_its_two_stores_and_refuses_a_plain_append(rest_server: RestServer) -> None:
    """Amoro's internal catalog shows a keyed table as its BaseStore and ChangeStore; any client
    reads them, and a plain client's append (rows without transaction id or file offset) would
    break one row per key, so it is refused (403) and the stores stay as they were."""
    library = load_catalog("local", config_path=rest_server.home / "catalogs.yaml")
    library.create_namespace("keyed")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    table = library.create_table("keyed.orders", schema, primary_key=["id"])
    table.bulk_load(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema))

    catalog = _catalog(rest_server)
    assert sorted(catalog.list_tables("keyed")) == [("keyed", "orders"), ("keyed", "orders_change_")]
    base = catalog.load_table("keyed.orders")
    assert sorted(base.scan().to_arrow().column("id").to_pylist()) == [1, 2]
    snapshots = len(base.metadata.snapshots)
    with pytest.raises(ForbiddenError, match=r"mixed-iceberg\.commit\.writer"):
        base.append(pa.table({"id": [1], "v": ["dup"]}, schema=schema))
    assert len(catalog.load_table("keyed.orders").metadata.snapshots) == snapshots
    assert sorted(table.refresh().scan().to_arrow().column("id").to_pylist()) == [1, 2]

"""Each verb of ``mixed-iceberg`` against a real SQLite catalog and real tables: what people read,
what ``--json`` gives scripts, the registry's message for a bad property, one-line errors with
their exit codes, and options before or after the verb."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from mixed_iceberg import MixedCatalog
from mixed_iceberg.cli.exits import ExitCode
from mixed_iceberg.optimizer.config import load_optimizer_config
from mixed_iceberg.optimizer.service import OptimizerService
from tests.support.optimizer import OptimizerSetup, successes, wait_for
from tests.support.tables import ORDERS_SCHEMA
from tests.unit.cli.conftest import Run

SPEC = """table: db.orders
columns:
  - {name: id, type: long}
  - {name: cat, type: string}
  - {name: price, type: "decimal(10, 2)"}
primary-key: [id]
partition-by: ["bucket(4, id)"]
properties: {self-optimizing.quota: "0.3"}
"""


def test_catalogs_lists_every_entry_and_never_shows_a_secret(conf: Path, cli: Callable[..., Run]) -> None:
    run = cli("catalogs")
    assert run.code == 0
    assert "hunter2" not in run.out
    assert "local" in run.out
    assert "s3" in run.out
    data = cli("catalogs", "--json").json
    assert [c["name"] for c in data["catalogs"]] == ["local", "s3"]
    s3 = data["catalogs"][1]
    assert s3["storage"]["secret-access-key"] == "***"
    assert s3["storage"]["access-key-id"] == "admin"
    assert "hunter2" not in str(data)


def test_create_from_a_spec_then_describe_and_tables_show_it(tmp_path: Path, cli: Callable[..., Run]) -> None:
    spec = tmp_path / "orders.yaml"
    spec.write_text(SPEC)
    created = cli("create", str(spec))
    assert (created.code, created.out.strip()) == (0, "created local.db.orders (Mixed-Iceberg, keyed)")
    described = cli("describe", "db.orders", "--json").json
    assert described["primary_key"] == ["id"]
    assert [(c["name"], c["type"], c["required"]) for c in described["columns"]] == [
        ("id", "long", True),
        ("cat", "string", False),
        ("price", "decimal(10, 2)", False),
    ]
    assert described["partition_spec"] == [{"name": "id_bucket", "transform": "bucket[4]", "source": "id"}]
    assert described["change_store"] is not None
    assert described["properties"]["self-optimizing.quota"] == "0.3"
    text = cli("describe", "db.orders").out
    assert "bucket[4](id)" in text
    assert "decimal(10, 2)" in text
    again = cli("create", str(spec))
    assert again.code == ExitCode.USAGE
    assert again.err.splitlines() == ["mixed-iceberg: table db.orders already exists"]


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        (SPEC.replace("type: long", "type: lnog"), "expected Iceberg type names"),
        (SPEC.replace("table: db.orders", "table: db.orders\ncolour: red"), "colour"),
        (SPEC.replace('"0.3"', '"lots"'), "self-optimizing.quota"),
        (SPEC.replace("primary-key: [id]", "primary-key: [nope]"), "nope"),
    ],
    ids=["bad type", "unknown field", "bad property", "missing key column"],
)
def test_a_bad_spec_is_one_line_and_exit_code_2(tmp_path: Path, cli: Callable[..., Run], spec: str, says: str) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(spec)
    run = cli("create", str(path))
    assert run.code == ExitCode.USAGE, run.err
    (line,) = run.err.splitlines()
    assert line.startswith("mixed-iceberg: "), line
    assert says in line, line
    assert "Traceback" not in run.err


def test_properties_set_is_checked_by_the_option_registry(catalog: MixedCatalog, cli: Callable[..., Run]) -> None:
    catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    bad = cli("properties", "set", "db.t", "self-optimizing.quota=lots")
    assert bad.code == ExitCode.USAGE
    assert bad.err.splitlines() == [
        "mixed-iceberg: table db.t: property 'self-optimizing.quota': expected a number; found 'lots'"
    ]
    typo = cli("properties", "set", "db.t", "self-optimizing.qouta=0.2")
    assert "did you mean 'self-optimizing.quota'?" in typo.err
    assert cli("properties", "set", "db.t", "self-optimizing.quota=0.2", "self-optimizing.group=g").code == 0
    got = cli("properties", "get", "db.t", "self-optimizing.quota", "self-optimizing.target-size", "nobody.sets", "--json").json
    assert got == [
        {"key": "self-optimizing.quota", "value": "0.2", "source": "set"},
        {"key": "self-optimizing.target-size", "value": "134217728", "source": "default"},
        {"key": "nobody.sets", "value": None, "source": "unset"},
    ]
    assert cli("properties", "set", "db.t", "--unset", "self-optimizing.group").code == 0
    assert "self-optimizing.group" not in catalog.load_table("db.t").properties


@pytest.mark.parametrize(
    "argv",
    [
        ["--json", "--catalog", "local", "status", "db.t"],
        ["status", "db.t", "--json", "--catalog", "local"],
        ["--catalog", "local", "status", "--json", "db.t"],
    ],
    ids=["before", "after", "both sides"],
)
def test_options_go_before_or_after_the_verb(catalog: MixedCatalog, cli: Callable[..., Run], argv: list[str]) -> None:
    catalog.create_table("db.t", ORDERS_SCHEMA)
    run = cli(*argv)
    assert run.code == 0, run.err
    assert run.json["kind"] == "unkeyed"


def test_usage_errors_are_one_line_with_exit_code_2(cli: Callable[..., Run]) -> None:
    for argv in (["frobnicate"], ["status", "--nope"], ["optimize", "db.t", "--type", "mega"], []):
        run = cli(*argv)
        assert run.code == ExitCode.USAGE, argv
        assert len(run.err.splitlines()) == 1, (argv, run.err)
        assert run.out == ""


def test_tables_lists_kinds_and_a_table_that_does_not_load(catalog: MixedCatalog, cli: Callable[..., Run]) -> None:
    catalog.create_table("db.a", ORDERS_SCHEMA, primary_key=["id"])
    catalog.create_table("db.b", ORDERS_SCHEMA)
    catalog.iceberg.drop_table("db.a_change_")  # a keyed table without its ChangeStore does not load
    listed = cli("tables", "--json").json
    assert [(t["table"], t["kind"]) for t in listed] == [("db.a", None), ("db.b", "unkeyed")]
    assert "expected its ChangeStore" in listed[0]["error"]
    assert cli("tables", "db", "--names-only", "--json").json == [{"table": "db.a"}, {"table": "db.b"}]


def test_optimize_and_maintenance_report_what_they_did_with_progress_on_stderr(
    catalog: MixedCatalog, cli: Callable[..., Run]
) -> None:
    from tests.support.optimizer import due_table

    due_table(catalog, "t")
    run = cli("optimize", "db.t", "--progress")
    assert run.code == 0, run.err
    assert "minor" in run.out
    assert "committed" in run.out
    assert "db.t: evaluating what is due" in run.err
    assert "db.t: minor optimizing:" in run.err, "the engine's commit line is a progress line"
    quiet = cli("maintenance", "db.t", "--json", "-q")
    assert quiet.code == 0
    assert quiet.err == ""
    assert quiet.json["table"] == "db.t"
    assert set(quiet.json) >= {"change_ttl", "manifests", "expire", "orphans", "duration_s"}


def test_groups_optimizers_and_processes_read_what_a_real_optimizer_did(tmp_path: Path, cli: Callable[..., Run]) -> None:
    setup = OptimizerSetup(tmp_path / "opt")
    setup.table("t")
    service = OptimizerService(load_optimizer_config(setup.config_path), "default", catalogs={"local": setup.catalog})
    service.start()
    try:
        wait_for(lambda: successes(service.db, "local.db.t") >= 1, what="one optimizing of db.t")
        live = cli("optimizers", "--config", str(setup.config_path), "--json").json
        assert [(o["group"], o["live"]) for o in live] == [("default", True)]
    finally:
        service.stop()
    config = ["--config", str(setup.config_path)]
    processes = cli("processes", "db.t", *config, "--json").json
    assert processes
    assert processes[0]["table"] == "local.db.t"
    assert processes[-1]["status"] == "SUCCESS"
    assert processes[-1]["files_in"] > 0
    text = cli("processes", *config).out
    assert "local.db.t" in text
    assert "SUCCESS" in text
    assert cli("optimizers", *config, "--json").json == [], "a stopped optimizer is listed only with --all"
    assert [o["live"] for o in cli("optimizers", *config, "--all", "--json").json] == [False]
    groups = cli("groups", *config)
    assert "group default has no live optimizer" in groups.err
    assert "local.db.t" in groups.out

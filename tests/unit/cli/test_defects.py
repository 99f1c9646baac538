"""The defects a new user met with the CLI (issue 37, "Tried as a new user would"), each pinned:
status counts what the reader pays; the three kinds of table are told apart; ``optimize`` with
nothing due says why; exit codes are documented; no alembic chatter at an optimizer's start;
``--config`` help names the file the verb reads."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from mixed_iceberg import MixedCatalog, TableFormat
from mixed_iceberg.cli.exits import ExitCode
from tests.support.tables import ORDERS_SCHEMA, changes
from tests.unit.cli.conftest import Run

ROOT = Path(__file__).resolve().parents[3]
ROWS = changes([("+I", k, "a", k, 1.0) for k in range(10)]).drop_columns(["_change_action"])


def test_status_after_deleting_8_of_10_rows_does_not_claim_10_records(catalog: MixedCatalog, cli: Callable[..., Run]) -> None:
    table = catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    table.bulk_load(ROWS)
    with table.new_transaction() as txn:
        txn.write(changes([("-D", k, "a", k, 1.0) for k in range(8)]))
    report = cli("status", "db.t", "--json").json
    assert report["records"] is None, "the merged count is not known without a read: not 10"
    assert report["records_at_most"] == 10
    assert report["change_delete_records_unmerged"] == 8
    assert report["delete_ratio"] == 0.8  # the 8 unmerged deletes count, not 0
    text = cli("status", "db.t").out
    assert re.search(r"records\s+at most 10 \(8 unmerged change delete", text), text
    assert re.search(r"delete ratio\s+0\.8", text), text
    table.optimizing.run("minor")  # the deletes become position deletes: the count is exact now
    report = cli("status", "db.t", "--json").json
    assert (report["records"], report["records_at_most"], report["delete_ratio"]) == (2, 2, 0.8)


@pytest.mark.parametrize(
    ("create", "kind", "says"),
    [
        ({"table_format": TableFormat.ICEBERG}, "iceberg", "plain Iceberg"),
        ({}, "unkeyed", "Mixed-Iceberg, unkeyed"),
        ({"primary_key": ["id"]}, "keyed", "Mixed-Iceberg, keyed"),
    ],
)
def test_status_and_tables_tell_plain_iceberg_unkeyed_and_keyed_apart(
    catalog: MixedCatalog, cli: Callable[..., Run], create: dict[str, object], kind: str, says: str
) -> None:
    catalog.create_table("db.t", ORDERS_SCHEMA, **create)  # type: ignore[arg-type]
    report = cli("status", "db.t", "--json").json
    assert report["kind"] == kind
    assert f"({says})" in cli("status", "db.t").out
    keys = ["id"] if kind == "keyed" else []
    assert cli("tables", "--json").json == [{"table": "db.t", "kind": kind, "primary_key": keys, "error": None}]


def test_optimize_with_nothing_due_names_each_trigger_and_its_value(catalog: MixedCatalog, cli: Callable[..., Run]) -> None:
    table = catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    with table.new_transaction() as txn:
        txn.write(changes([("+I", 1, "a", 1, 1.0)]))
    run = cli("optimize", "db.t", "--json")
    assert run.code == 0
    assert run.json["type"] is None
    (partition,) = run.json["partitions"]
    assert "1 small file(s) < minor.trigger.file-count 12" in partition["reason"]
    assert "since the last optimizing (or creation) <= minor.trigger.interval 1h" in partition["reason"]
    assert "full.trigger.interval off" in partition["reason"]
    assert run.json["reason"] == "no partition's trigger is reached"
    assert "nothing due: no partition's trigger is reached" in cli("optimize", "db.t").out


def test_optimize_with_nothing_due_names_min_plan_interval_and_a_disabled_table(
    catalog: MixedCatalog, cli: Callable[..., Run]
) -> None:
    table = catalog.create_table(
        "db.t", ORDERS_SCHEMA, primary_key=["id"], properties={"self-optimizing.min-plan-interval": "3600000"}
    )
    with table.new_transaction() as txn:
        txn.write(changes([("+I", 1, "a", 1, 1.0)]))
    assert cli("optimize", "db.t", "--type", "minor").code == 0
    with table.new_transaction() as txn:
        txn.write(changes([("+I", 2, "a", 1, 1.0)] * 1))
    reason = cli("optimize", "db.t", "--json").json["reason"]
    assert re.fullmatch(r"optimized within self-optimizing.min-plan-interval 1h; may be planned in (59min|1h)", reason), reason
    table.update_properties({"self-optimizing.enabled": "false"})
    assert cli("optimize", "db.t", "--json").json["reason"] == "self-optimizing.enabled is false"


def test_every_exit_code_is_documented_in_docs_cli() -> None:
    page = (ROOT / "docs" / "cli.md").read_text()
    for code in ExitCode:
        assert re.search(rf"^\| {code.value} \| `{code.name}` \|", page, flags=re.MULTILINE), f"{code!r} is not in docs/cli.md"


def test_status_exit_code_is_not_0_whatever_it_finds(catalog: MixedCatalog, cli: Callable[..., Run]) -> None:
    missing = cli("status", "db.missing")
    assert missing.code == ExitCode.USAGE
    assert missing.out == ""
    assert missing.err.splitlines() == ["mixed-iceberg: table db.missing does not exist in catalog local"]
    unknown = cli("status", "db.t", "--catalog", "nowhere")
    assert unknown.code == ExitCode.USAGE
    assert len(unknown.err.splitlines()) == 1


def test_an_optimizer_start_prints_no_alembic_lines(tmp_path: Path) -> None:
    config = tmp_path / "optimizer.yaml"
    config.write_text(f"system-database: sqlite:///{tmp_path}/system.db\noptimizer_groups: [{{name: g}}]\ncatalogs: []\n")
    command = [sys.executable, "-m", "mixed_iceberg.cli.main", "optimizer", "--group", "g", "--config", str(config)]
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True, cwd=tmp_path
    )
    assert process.stderr is not None
    lines = []
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            line = process.stderr.readline()
            if not line:
                break
            lines.append(line)
            if "serves group g" in line:
                break
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        lines += process.communicate(timeout=30)[1].splitlines(keepends=True)
    assert any("serves group g" in line for line in lines), "".join(lines)
    assert not [line for line in lines if "alembic" in line], "".join(lines)


def test_config_help_names_the_file_the_verb_reads(conf: Path, cli: Callable[..., Run]) -> None:
    beside = conf.parent / "optimizer.yaml"
    help_text = cli("groups", "--help").out
    assert "(default conf/optimizer.yaml)" not in help_text
    assert str(beside) in re.sub(r"\s+", "", help_text), help_text  # argparse wraps lines at blanks
    beside.write_text(f"system-database: sqlite:///{conf.parent}/system.db\noptimizer_groups: [{{name: beside}}]\n")
    run = cli("groups", "--json")
    assert run.code == 0, run.err
    assert [g["group"] for g in run.json] == ["beside"], "groups read the file its help names"

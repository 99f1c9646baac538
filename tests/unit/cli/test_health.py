"""Health targets (``health.target.*``): declared in the option registry, judged green, amber or red
from metadata, shown by ``status``, and ``status --check`` exits non-zero when a target is missed
(5) or close (6), so that cron or CI can alert."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mixed_iceberg import MixedCatalog, MixedTable
from mixed_iceberg.cli.exits import ExitCode
from mixed_iceberg.config.health import HealthConfig
from mixed_iceberg.config.kinds import HealthState
from mixed_iceberg.exceptions import PropertyError
from mixed_iceberg.optimizing.health import TableFigures, judge
from tests.support.tables import ORDERS_SCHEMA, changes
from tests.unit.cli.conftest import Run

FIGURES = TableFigures(
    files=10, small_files=4, delete_ratio=0.25, equality_delete_files=0, oldest_unmerged_change_ms=1_000, read_bytes=4096
)


@pytest.mark.parametrize(
    ("properties", "state"),
    [
        ({}, HealthState.GREEN),
        ({"health.target.max-files": "20"}, HealthState.GREEN),
        ({"health.target.max-files": "12"}, HealthState.AMBER),  # 10 > 0.8 * 12
        ({"health.target.max-files": "12", "health.amber-ratio": "0.9"}, HealthState.GREEN),
        ({"health.target.max-files": "9"}, HealthState.RED),
        ({"health.target.max-delete-ratio": "0.2"}, HealthState.RED),
        ({"health.target.max-small-files": "5"}, HealthState.GREEN),
        ({"health.target.max-unmerged-change-age": "10s"}, HealthState.AMBER),  # 9 s old, at now_ms=10_000
        ({"health.target.max-unmerged-change-age": "8s", "health.target.max-files": "100"}, HealthState.RED),
        ({"health.target.max-read-bytes": "4096"}, HealthState.AMBER),  # at the target: not beyond it
    ],
)
def test_each_target_is_green_amber_or_red(properties: dict[str, str], state: HealthState) -> None:
    health = judge(FIGURES, HealthConfig.from_properties(properties), now_ms=10_000)
    assert health.state is state
    assert len(health.checks) == len([k for k in properties if k.startswith("health.target.")])


def test_the_score_weighs_small_files_deletes_and_equality_deletes() -> None:
    assert judge(FIGURES, HealthConfig.from_properties({}), now_ms=0).score == round(100 - 40 * 0.4 - 30 * 0.25)
    clean = TableFigures(
        files=3, small_files=0, delete_ratio=0.0, equality_delete_files=0, oldest_unmerged_change_ms=None, read_bytes=1
    )
    assert judge(clean, HealthConfig.from_properties({}), now_ms=0).score == 100


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("health.target.max-files", "0"),
        ("health.target.max-delete-ratio", "2"),
        ("health.target.max-unmerged-change-age", "soon"),
    ],
)
def test_a_bad_target_is_refused_with_the_registrys_message(
    catalog: MixedCatalog, cli: Callable[..., Run], key: str, value: str
) -> None:
    with pytest.raises(PropertyError, match=key):
        HealthConfig.from_properties({key: value})
    catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    run = cli("properties", "set", "db.t", f"{key}={value}")
    assert run.code == ExitCode.USAGE
    assert run.err.startswith(f"mixed-iceberg: table db.t: property '{key}': expected")
    assert cli("properties", "set", "db.t", "health.target.max-filez=3").err.endswith("did you mean 'health.target.max-files'?\n")


def _deleted_8_of_10(catalog: MixedCatalog, name: str) -> MixedTable:
    table = catalog.create_table(name, ORDERS_SCHEMA, primary_key=["id"])
    table.bulk_load(changes([("+I", k, "a", k, 1.0) for k in range(10)]).drop_columns(["_change_action"]))
    with table.new_transaction() as txn:
        txn.write(changes([("-D", k, "a", k, 1.0) for k in range(8)]))
    return table


def test_status_check_exits_5_on_a_missed_target_6_on_a_close_one_and_0_when_met(
    catalog: MixedCatalog, cli: Callable[..., Run]
) -> None:
    table = _deleted_8_of_10(catalog, "db.t")
    assert cli("status", "--check").code == ExitCode.OK, "no target set: nothing to miss"
    table.update_properties({"health.target.max-delete-ratio": "0.5"})  # 0.8, unmerged deletes included
    red = cli("status", "--check", "db.t")
    assert red.code == ExitCode.UNHEALTHY
    assert "red: health.target.max-delete-ratio 0.8 > 0.5" in red.out
    table.update_properties({"health.target.max-delete-ratio": "0.9"})
    assert cli("status", "--check", "db.t").code == ExitCode.WARNING  # 0.8 > 0.8 * 0.9
    table.update_properties({"health.target.max-delete-ratio": "1"})
    assert cli("status", "--check", "db.t").code == ExitCode.OK
    table.update_properties({"health.target.max-unmerged-change-age": "1ms"})  # the deletes are unmerged
    assert cli("status", "--check").code == ExitCode.UNHEALTHY
    table.optimizing.run("minor")
    assert cli("status", "--check").code == ExitCode.OK, "merged: no unmerged change left to age"
    report = cli("status", "db.t", "--json").json
    assert report["oldest_unmerged_change_ms"] is None
    assert report["health"]["state"] == "green"
    assert "score" in cli("status", "db.t").out


def test_status_check_of_the_whole_catalog_counts_a_table_that_does_not_load_as_missed(
    catalog: MixedCatalog, cli: Callable[..., Run]
) -> None:
    catalog.create_table("db.fine", ORDERS_SCHEMA, primary_key=["id"])
    catalog.create_table("db.broken", ORDERS_SCHEMA, primary_key=["id"])
    catalog.iceberg.drop_table("db.broken_change_")
    run = cli("status", "--check", "--json")
    assert run.code == ExitCode.UNHEALTHY
    states = {entry["table"]: (entry["state"], entry["error"] is None) for entry in run.json}
    assert states == {"db.broken": ("red", False), "db.fine": ("green", True)}

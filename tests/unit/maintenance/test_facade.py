"""``TableMaintenance``: typed results, one INFO line per step, gating by properties, and the oracle."""

from __future__ import annotations

import dataclasses
import logging
import random
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from mixed_iceberg import MixedTable, TableFormat
from mixed_iceberg.exceptions import PropertyError
from mixed_iceberg.optimizing.maintenance import (
    ChangeTtlResult,
    ExpireResult,
    MaintenanceResult,
    ManifestRewriteResult,
    OrphanResult,
    TableMaintenance,
)
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog
from tests.unit.maintenance.support import DAY, FakeClock, assert_replay_is_noop, base_rows, keyed_table, merged_rows

FACADE_LOGGER = "mixed_iceberg.optimizing.maintenance.facade"


def test_run_on_a_keyed_table_runs_the_enabled_steps(tmp_path: Path) -> None:
    table = keyed_table(tmp_path, commits=4)
    table.bulk_load(table.scan().to_arrow(), overwrite=True)
    before = merged_rows(table)
    result = TableMaintenance(table.refreshed, clock=FakeClock(8 * DAY)).run()
    assert isinstance(result, MaintenanceResult)
    assert isinstance(result.change_ttl, ChangeTtlResult)
    assert isinstance(result.manifests, ManifestRewriteResult)
    assert isinstance(result.expire, ExpireResult)
    assert result.orphans is None  # clean-orphan-file.enabled defaults to false, as in Amoro
    assert result.change_ttl.files_deleted > 0
    assert result.expire.snapshots_expired > 0
    assert result.duration_s >= result.expire.duration_s
    assert merged_rows(table) == before
    assert_replay_is_noop(table)


def test_properties_gate_the_steps_of_run(tmp_path: Path) -> None:
    table = keyed_table(tmp_path, commits=2, properties={"table-expire.enabled": "false", "clean-orphan-file.enabled": "true"})
    result = TableMaintenance(table.refreshed, clock=FakeClock(DAY)).run()
    assert result.expire is None
    assert isinstance(result.orphans, OrphanResult)


@pytest.mark.parametrize("table_format", [TableFormat.MIXED_ICEBERG, TableFormat.ICEBERG], ids=["unkeyed", "iceberg"])
def test_run_on_single_store_tables_skips_the_change_ttl(tmp_path: Path, table_format: TableFormat) -> None:
    table = local_catalog(tmp_path).create_table("db.log", ORDERS_SCHEMA, table_format=table_format)
    for _ in range(3):
        table.base_store.append(base_rows(5).cast(ORDERS_SCHEMA))
    before = merged_rows(table)
    result = TableMaintenance(table.refreshed, clock=FakeClock(DAY)).run()
    assert result.change_ttl is None
    assert result.expire is not None
    assert result.expire.snapshots_expired == 2
    assert merged_rows(table) == before


def test_results_are_frozen_and_reject_negative_counts(tmp_path: Path) -> None:
    result = TableMaintenance(keyed_table(tmp_path, commits=1).refreshed).expire_snapshots()
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.files_deleted = 3  # type: ignore[misc]
    with pytest.raises(ValueError, match=r"ExpireResult.files_deleted: expected >= 0, found -1"):
        ExpireResult(snapshots_expired=0, snapshots_kept=0, files_deleted=-1, bytes_deleted=0, duration_s=0.0)


def test_every_step_logs_one_info_line(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    maintenance = TableMaintenance(keyed_table(tmp_path, commits=2).refreshed, clock=FakeClock(DAY))
    steps: list[Callable[[], object]] = [
        maintenance.expire_snapshots,
        maintenance.clean_orphan_files,
        maintenance.expire_change_data,
        maintenance.rewrite_manifests,
        maintenance.clean_dangling_delete_files,
    ]
    for step in steps:
        caplog.clear()
        with caplog.at_level(logging.INFO, logger=FACADE_LOGGER):
            step()
        lines = [r for r in caplog.records if r.name == FACADE_LOGGER]
        assert len(lines) == 1, [r.getMessage() for r in lines]
        assert lines[0].getMessage().startswith("db.orders: ")
        assert " ms" in lines[0].getMessage()


def test_bad_duration_property_is_reported_with_key_expectation_and_value(tmp_path: Path) -> None:
    # Rejected where the property is set, before any table exists (not first at maintenance time).
    with pytest.raises(PropertyError) as info:
        keyed_table(tmp_path, commits=0, properties={"snapshot.keep.duration": "forever"})
    assert str(info.value) == (
        "table db.orders: property 'snapshot.keep.duration': expected a duration such as 720min, 12h, 7d, 30s or 500ms; "
        "found 'forever'"
    )


def _random_round(table: MixedTable, state: dict[int, tuple[object, ...]], rng: random.Random, round_no: int) -> None:
    rows: list[tuple[str, int, str | None, int | None, float | None]] = []
    for key in rng.sample(range(60), 8):
        cat = "abc"[key % 3]
        if key in state:
            old = state[key]
            rows.append(("-U" if rng.random() < 0.6 else "-D", key, cat, old[2], old[3]))  # type: ignore[arg-type]
            if rows[-1][0] == "-U":
                rows.append(("+U", key, cat, round_no, float(key)))
                state[key] = (key, cat, round_no, float(key))
            else:
                del state[key]
        else:
            rows.append(("+I", key, cat, round_no, float(key)))
            state[key] = (key, cat, round_no, float(key))
    with table.new_transaction(("oracle", round_no)) as txn:
        txn.write(changes(rows))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_interleaved_writes_merges_and_maintenance_read_like_a_plain_replay(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    table = local_catalog(tmp_path).create_table(
        "db.orders",
        ORDERS_SCHEMA,
        primary_key=["id"],
        partition_by=["cat"],
        properties={"clean-orphan-file.enabled": "true", "commit.manifest.min-count-to-merge": "3"},
    )
    state: dict[int, tuple[object, ...]] = {}
    clock = FakeClock()
    maintenance = TableMaintenance(table.refreshed, clock=clock)
    for round_no in range(12):
        _random_round(table, state, rng, round_no)
        if rng.random() < 0.4:
            table.bulk_load(table.scan().to_arrow(), overwrite=True)  # merges: advances the optimized sequence
        clock.advance(rng.choice([0.0, 0.5 * DAY, 3 * DAY]))
        step = rng.choice(["run", "expire", "ttl", "manifests", "orphans"])
        if step == "run":
            maintenance.run()
        elif step == "expire":
            maintenance.expire_snapshots()
        elif step == "ttl":
            maintenance.expire_change_data()
        elif step == "manifests":
            maintenance.rewrite_manifests()
        else:
            maintenance.clean_orphan_files()
        assert merged_rows(table) == sorted(state.values()), f"round {round_no} after {step}"
    assert_replay_is_noop(table, "oracle")
    # nothing leaked: every file under the stores' folders is still referenced
    assert maintenance.clean_orphan_files(timedelta(0), dry_run=True).orphans_found == 0

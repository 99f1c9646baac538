"""One damaged table never stops the optimizer service: it shows FAILED with a ``CorruptTableError``
naming the damaged file, and its healthy siblings are optimized as before, wherever the damage is
met (discovery, planning, executing, committing, maintenance).

Real parts: SQLite catalog and system database, real keyed tables whose files are damaged on disk
while the service runs in this process (its threads), which then reads them afresh.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mixed_iceberg import MixedCatalog, MixedTable
from mixed_iceberg.optimizer import execution as execution_module
from mixed_iceberg.optimizer.config import OptimizerConfig, parse_optimizer_config
from mixed_iceberg.optimizer.report import group_report, warnings
from mixed_iceberg.optimizer.service import OptimizerService
from mixed_iceberg.optimizer.sysdb.database import ProcessRecord, SystemDatabase, TaskRecord
from mixed_iceberg.optimizer.work import ExecutedTask
from tests.support.damage import damage, forget_reads, local
from tests.support.optimizer import churn, due_table, successes, wait_for

FAST = {
    "refresh-interval": "300ms",
    "heartbeat-interval": "200ms",
    "heartbeat-timeout": "3s",
    "maintenance-interval": "0",
    "failure-backoff": "1min",
}
#: Victims fail on their first damaged run: no retries to wait for.
NO_RETRIES = {"self-optimizing.execute.num-retries": "0"}


def _config(tmp_path: Path, **properties: str) -> OptimizerConfig:
    return parse_optimizer_config(
        {
            "system-database": f"sqlite:///{tmp_path}/system.db",
            "optimizer_groups": [{"name": "default", "properties": {**FAST, **properties}}],
        }
    )


def _failed_naming(db: SystemDatabase, name: str, location: str) -> bool:
    runtime = db.table(f"local.db.{name}")
    error = runtime.last_error if runtime is not None else None
    return runtime is not None and runtime.status == "FAILED" and error is not None and location in error


def test_each_kind_of_damage_marks_its_table_failed_naming_the_file_and_the_siblings_are_optimized(
    tmp_path: Path, catalog: MixedCatalog, services: list[OptimizerService]
) -> None:
    siblings = [due_table(catalog, "sibling_a"), due_table(catalog, "sibling_b")]
    kinds = ["metadata", "manifest-list", "manifest", "data-file", "delete-file"]
    victims = {kind: due_table(catalog, kind.replace("-", "_"), **NO_RETRIES) for kind in kinds}
    service = OptimizerService(_config(tmp_path), "default", threads=2, catalogs={"local": catalog})
    services.append(service.start())
    db = service.db
    everyone = [t.name.removeprefix("db.") for t in [*siblings, *victims.values()]]
    wait_for(
        lambda: all(successes(db, f"local.db.{name}") >= 1 for name in everyone), "every table optimized once (B and PD files)"
    )
    damaged = {}
    for kind, victim in victims.items():
        how = {"metadata": "truncate", "manifest-list": "garbage", "data-file": "remove"}.get(kind, "truncate")
        damaged[kind] = damage(victim, kind, how, catalog)
    for kind in ("data-file", "delete-file"):  # a full optimize reads every data and delete file
        victims[kind].update_properties({"self-optimizing.full.trigger.interval": "0"})
    forget_reads(catalog)  # what the update read again, so the service meets the damage itself
    for sibling in siblings:
        churn(sibling, 4)
    for kind, victim in victims.items():
        name = victim.name.removeprefix("db.")
        wait_for(lambda name=name, kind=kind: _failed_naming(db, name, damaged[kind]), f"{name} FAILED naming its damaged {kind}")
        runtime = db.table(f"local.db.{name}")
        assert runtime is not None
        assert runtime.last_error is not None
        assert "CorruptFileError" in runtime.last_error or "MissingFileError" in runtime.last_error, runtime.last_error
    wait_for(lambda: all(successes(db, f"local.{s.name}") >= 2 for s in siblings), "the siblings optimized again")
    report = group_report(db, service.config)
    listed = {t["table"]: t["status"] for t in report[0]["tables"]}
    assert {f"local.db.{v.name.removeprefix('db.')}" for v in victims.values()} <= {t for t, s in listed.items() if s == "FAILED"}
    assert sum(line.startswith("table local.db.") and "FAILED" in line for line in warnings(report)) == len(victims)
    assert service.running


def test_a_table_damaged_before_the_service_first_runs_is_listed_failed_and_its_sibling_is_optimized(
    tmp_path: Path, catalog: MixedCatalog, services: list[OptimizerService]
) -> None:
    sibling = due_table(catalog, "sibling")
    broken = due_table(catalog, "broken")
    location = damage(broken, "metadata", "garbage", catalog)
    service = OptimizerService(_config(tmp_path), "default", catalogs={"local": catalog})
    services.append(service.start())
    db = service.db
    wait_for(lambda: _failed_naming(db, "broken", location), "the damaged table FAILED in the default group")
    wait_for(lambda: successes(db, "local.db.sibling") >= 1, "its sibling optimized")
    assert {t.table_id for t in db.tables("default")} == {"local.db.broken", "local.db.sibling"}
    assert sibling.refresh().optimizing.evaluate().type is None


def test_damage_met_at_commit_or_in_maintenance_fails_only_that_table(
    tmp_path: Path, catalog: MixedCatalog, services: list[OptimizerService], monkeypatch: pytest.MonkeyPatch
) -> None:
    sibling = due_table(catalog, "sibling")
    at_commit = due_table(catalog, "at_commit")
    in_maintenance = due_table(catalog, "in_maintenance")
    damaged: dict[str, str] = {}
    real_run_task = execution_module.run_task

    def then_damage(table: MixedTable, process: ProcessRecord, task: TaskRecord) -> ExecutedTask:
        executed = real_run_task(table, process, task)
        if process.table_id == "local.db.at_commit" and "at_commit" not in damaged:
            damaged["at_commit"] = damage(at_commit, "metadata", "truncate", catalog)  # after the task, before the commit
        return executed

    monkeypatch.setattr(execution_module, "run_task", then_damage)
    service = OptimizerService(_config(tmp_path, **{"maintenance-interval": "1s"}), "default", catalogs={"local": catalog})
    services.append(service.start())
    db = service.db
    wait_for(lambda: _failed_naming(db, "at_commit", damaged.get("at_commit", "?")), "at_commit FAILED at its commit")
    runtime = db.table("local.db.at_commit")
    assert runtime is not None
    assert runtime.last_error is not None
    assert runtime.last_error.startswith("commit failed: CorruptFileError")
    # Maintenance: expiry reads the manifest lists of the snapshots it expires, which no plan reads.
    wait_for(lambda: successes(db, "local.db.in_maintenance") >= 1, "in_maintenance optimized")
    change = in_maintenance.refresh().change_store
    assert change is not None
    oldest = min(change.metadata.snapshots, key=lambda s: s.sequence_number)
    local(oldest.manifest_list).write_bytes(b"not a manifest list")
    forget_reads(catalog)
    in_maintenance.update_properties({"snapshot.keep.duration": "0min"})  # expire everything expirable
    wait_for(lambda: _failed_naming(db, "in_maintenance", oldest.manifest_list), "in_maintenance FAILED in maintenance")
    runtime = db.table("local.db.in_maintenance")
    assert runtime is not None
    assert runtime.maintenance_error is not None
    assert oldest.manifest_list in runtime.maintenance_error
    churn(sibling, 4)
    wait_for(lambda: successes(db, "local.db.sibling") >= 2, "the sibling optimized again")

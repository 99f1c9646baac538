"""Discovery reads what changed: a round loads only the tables whose metadata moved, finds new
tables, lets dropped ones go, follows renamed ones, and one damaged table never hides its
siblings.

Real parts: a SQLite catalog with real keyed and unkeyed tables, commits through the table
API. Loads are counted at :meth:`MixedCatalog.load_table`, the only way discovery reads a
table's properties.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mixed_iceberg import MixedCatalog, MixedTable
from mixed_iceberg.optimizer.discovery import SWEEP_ROUNDS, Discovery
from tests.support.damage import damage
from tests.support.optimizer import churn
from tests.support.tables import ORDERS_SCHEMA, local_catalog


class CountingCatalog(MixedCatalog):
    """The catalog as configured, counting the tables it loads (by name)."""

    def __init__(self, catalog: MixedCatalog, *, locations: bool = True) -> None:
        super().__init__(catalog.name, catalog.iceberg, catalog.separator)
        self.loads: list[str] = []
        self._locations = locations

    def load_table(self, identifier: str | tuple[str, ...]) -> MixedTable:
        self.loads.append(str(identifier))
        return super().load_table(identifier)

    def metadata_locations(self) -> dict[str, str] | None:
        # Without locations it stands for a catalog that cannot tell them (REST, Hive, Glue).
        return super().metadata_locations() if self._locations else None


@pytest.fixture
def catalog(tmp_path: Path) -> CountingCatalog:
    return CountingCatalog(local_catalog(tmp_path / "catalog"))


def create(catalog: MixedCatalog, name: str, *, keyed: bool = True, **properties: str) -> MixedTable:
    return catalog.create_table(f"db.{name}", ORDERS_SCHEMA, primary_key=["id"] if keyed else None, properties=dict(properties))


def discovery(
    catalog: MixedCatalog, group: str = "default", served_before: dict[str, tuple[str, float]] | None = None
) -> Discovery:
    known = served_before or {}
    return Discovery(group, [catalog.name], lambda _: catalog, known.get)


def served(found: Discovery) -> set[str]:
    return {s.table_id for s in found.round().served}


def test_a_round_loads_only_the_tables_whose_metadata_moved(catalog: CountingCatalog) -> None:
    keyed = [create(catalog, f"k{i}") for i in range(3)]
    unkeyed = create(catalog, "u", keyed=False)
    found = discovery(catalog)
    first = found.round()
    assert {s.table_id for s in first.served} == {"local.db.k0", "local.db.k1", "local.db.k2", "local.db.u"}
    assert first.loaded == 4
    assert first.moved == {s.table_id for s in first.served}  # first seen: moved
    catalog.loads.clear()

    idle = found.round()
    assert (idle.loaded, idle.moved, catalog.loads) == (0, frozenset(), [])  # nothing moved, nothing loaded

    churn(keyed[0], 1)  # a ChangeStore commit: data arrived, the properties did not change
    changed = found.round()
    assert (changed.loaded, changed.moved, catalog.loads) == (0, {"local.db.k0"}, [])

    keyed[1].update_properties({"self-optimizing.quota": "0.5"})  # the BaseStore's metadata moved
    unkeyed.update_properties({"self-optimizing.quota": "0.25"})
    reread = found.round()
    assert sorted(catalog.loads) == ["db.k1", "db.u"]
    assert reread.moved == {"local.db.k1", "local.db.u"}
    assert {s.table_id: s.quota for s in reread.served}["local.db.k1"] == 0.5
    assert found.round().moved == frozenset()


def test_a_new_table_is_found_a_dropped_one_leaves_and_a_renamed_one_is_followed(catalog: CountingCatalog) -> None:
    create(catalog, "kept")
    create(catalog, "dropped")
    create(catalog, "renamed")
    found = discovery(catalog)
    assert served(found) == {"local.db.kept", "local.db.dropped", "local.db.renamed"}
    create(catalog, "new", keyed=False)
    catalog.drop_table("db.dropped")
    catalog.rename_table("db.renamed", "db.moved")
    catalog.loads.clear()
    after = found.round()
    assert {s.table_id for s in after.served} == {"local.db.kept", "local.db.new", "local.db.moved"}
    assert after.moved == {"local.db.new", "local.db.moved"}
    assert sorted(catalog.loads) == ["db.moved", "db.new"]
    assert found.known == 3  # no record is kept of what left


def test_a_table_leaves_when_disabled_or_moved_to_another_group_and_comes_back(catalog: CountingCatalog) -> None:
    table = create(catalog, "t")
    found = discovery(catalog)
    assert served(found) == {"local.db.t"}
    table.update_properties({"self-optimizing.group": "other"})
    assert served(found) == set()
    assert {s.table_id for s in discovery(catalog, "other").round().served} == {"local.db.t"}
    table.update_properties({"self-optimizing.group": "default", "self-optimizing.enabled": "false"})
    assert served(found) == set()
    table.update_properties({"self-optimizing.enabled": "true"})
    assert served(found) == {"local.db.t"}


def test_a_damaged_table_is_served_by_the_group_that_served_it_and_never_hides_its_siblings(
    catalog: CountingCatalog,
) -> None:
    siblings = [create(catalog, f"s{i}") for i in range(2)]
    broken = create(catalog, "broken", **{"self-optimizing.group": "other"})
    churn(siblings[0], 1)
    damage(broken, "metadata", "garbage", catalog)
    # Never served: the default group takes it (to fail it with its damage); no other group does.
    assert served(discovery(catalog)) == {"local.db.s0", "local.db.s1", "local.db.broken"}
    assert served(discovery(catalog, "other")) == set()
    # Served before by "other": it stays there, with its quota, and is read again every round.
    found = discovery(catalog, "other", {"local.db.broken": ("other", 0.3)})
    assert served(found) == {"local.db.broken"}
    for _ in range(2):
        catalog.loads.clear()
        round_ = found.round()
        assert [(s.table_id, s.quota) for s in round_.served] == [("local.db.broken", 0.3)]
        assert catalog.loads == ["db.broken"]


def test_a_catalog_without_metadata_locations_finds_new_tables_at_once_and_moves_within_a_sweep(tmp_path: Path) -> None:
    catalog = CountingCatalog(local_catalog(tmp_path / "catalog"), locations=False)
    tables = [create(catalog, f"t{i}") for i in range(SWEEP_ROUNDS * 2)]
    found = discovery(catalog)
    assert found.round().loaded == len(tables)
    create(catalog, "new")
    catalog.drop_table("db.t0")
    after = found.round()
    assert "local.db.new" in after.moved
    assert "local.db.t0" not in {s.table_id for s in after.served}
    assert after.loaded < len(tables) // 2  # the new table and a slice of the known ones
    churn(tables[5], 1)
    moved: set[str] = set()
    for _ in range(SWEEP_ROUNDS):
        moved |= found.round().moved
    assert moved == {"local.db.t5"}

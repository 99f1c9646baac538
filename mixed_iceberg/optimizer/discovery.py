"""Discovery: the tables of the configured catalogs that one optimizer group serves, found by
reading what changed rather than loading every table every round.

A table is served by a group when its ``self-optimizing.enabled`` is true and its
``self-optimizing.group`` names the group. Both are table properties, kept in the BaseStore's
metadata file, so they can only change when that file's location moves. One
:class:`Discovery` keeps a small record per table of its catalogs (the metadata locations it
last read, its ChangeStore's name, whether the group serves it) and, on every round:

* a SQL catalog (:meth:`MixedCatalog.metadata_locations`): reads the metadata location of every
  store in one query; a table seen for the first time, or whose BaseStore location moved, is
  loaded and its properties read; the others are not loaded at all. A name that is gone
  leaves (a dropped table; a renamed one leaves under its old name and is found under its new
  one). A table whose BaseStore or ChangeStore location moved is reported as ``moved``: it
  holds commits its last evaluation did not see;
* any other catalog, which cannot tell a location without loading the table: its tables are
  listed, a new one is loaded, and a known one is loaded again once every
  :data:`SWEEP_ROUNDS` rounds (a slice of them each round), when its moves show.

A table whose properties cannot be read (see :mod:`mixed_iceberg.optimizer.service` for the
damaged ones) is tried again every round, and meanwhile served by the group that served it,
as ``served_before`` tells: one broken table never stops the discovery of its siblings.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from mixed_iceberg.catalog import MixedCatalog
from mixed_iceberg.catalog.markers import change_store_name
from mixed_iceberg.config.registry import OPT_ENABLED, OPT_GROUP, OPT_QUOTA
from mixed_iceberg.exceptions import CorruptTableError, MixedIcebergError, NoSuchTableError

__all__ = ["SWEEP_ROUNDS", "Discovery", "DiscoveryRound", "Served"]

log = logging.getLogger(__name__)

#: A catalog that cannot list metadata locations has each known table loaded again once in
#: this many rounds (a slice of its tables every round).
SWEEP_ROUNDS = 6


@dataclass(frozen=True, slots=True)
class Served:
    """A table the group serves: its system-database id, catalog, name and quota."""

    table_id: str
    catalog: str
    name: str
    quota: float


@dataclass(slots=True)
class _Record:
    """What discovery keeps of one table between rounds (a few strings, never the table)."""

    base: str | None  # the BaseStore's metadata location when last read
    change_name: str | None = None  # the catalog name of its ChangeStore (keyed tables)
    change: str | None = None  # the ChangeStore's metadata location when last read
    served: Served | None = None  # served by this group as of the last read
    retry: bool = False  # its properties could not be read: read again next round
    error: str | None = None  # the last error logged for it (logged once per error)


@dataclass(frozen=True, slots=True)
class DiscoveryRound:
    """One round's outcome.

    ``served``: the tables the group serves now. ``moved``: the ids of those first seen this
    round or whose metadata moved since the last round. ``regrouped``: whether a table
    joined or left the served ones, or its quota changed. ``loaded``: how many tables were
    loaded to read their properties.
    """

    served: list[Served]
    moved: frozenset[str]
    regrouped: bool
    loaded: int


@dataclass(slots=True)
class _Catalog:
    records: dict[str, _Record] = field(default_factory=dict)  # by table name
    rounds: int = 0
    change_stores: set[str] | None = None  # names of the ChangeStores seen (SQL catalogs)


class Discovery:
    """Discovery for ``group`` over the catalogs named ``catalogs``.

    Args:
        group: the optimizer group served.
        catalogs: the names of the catalogs to look in.
        catalog: opens a catalog by name.
        served_before: the group and quota the system database records for a table id (None:
            never served), asked only for a table whose properties cannot be read.
    """

    def __init__(
        self,
        group: str,
        catalogs: Iterable[str],
        catalog: Callable[[str], MixedCatalog],
        served_before: Callable[[str], tuple[str, float] | None],
    ) -> None:
        self.group = group
        self.catalog_names = list(catalogs)
        self._catalog = catalog
        self._served_before = served_before
        self._catalogs: dict[str, _Catalog] = {name: _Catalog() for name in self.catalog_names}
        self._regrouped = False

    @property
    def known(self) -> int:
        """Tables with a record (served or not) over every catalog."""
        return sum(len(c.records) for c in self._catalogs.values())

    def round(self, *, poll: bool = False) -> DiscoveryRound:
        """Look at every catalog once (see the module docstring). ``poll``: only at the catalogs
        that list metadata locations, whose round costs one query and loads only what moved."""
        served: list[Served] = []
        moved: set[str] = set()
        loaded = 0
        self._regrouped = False
        for name in self.catalog_names:
            state = self._catalogs[name]
            loaded += self._catalog_round(name, state, moved, poll=poll)
            served.extend(r.served for r in state.records.values() if r.served is not None)
        return DiscoveryRound(served, frozenset(moved), self._regrouped, loaded)

    def _drop(self, records: dict[str, _Record], gone: Iterable[str]) -> None:
        for name in gone:
            if records.pop(name).served is not None:
                self._regrouped = True

    def _keep(self, records: dict[str, _Record], name: str, record: _Record | None, moved: set[str]) -> None:
        """Keep what a read found of ``name`` (None: gone); a served table read is ``moved``."""
        before = records.pop(name, None)
        if record is not None:
            records[name] = record
            if record.served is not None:
                moved.add(record.served.table_id)
        if (before.served if before else None) != (record.served if record else None):
            self._regrouped = True

    def _catalog_round(self, catalog_name: str, state: _Catalog, moved: set[str], *, poll: bool) -> int:
        catalog = self._catalog(catalog_name)
        locations = catalog.metadata_locations()
        if locations is None:
            if poll:
                return 0
            state.rounds += 1
            return self._sweep(catalog_name, catalog, state, moved)
        records = state.records
        if not poll or state.change_stores is None:  # rebuilt on every full round
            state.change_stores = {r.change_name for r in records.values() if r.change_name is not None}
        change_stores = state.change_stores
        suffix = change_store_name("", catalog.separator)
        self._drop(records, [name for name in records if name not in locations])
        loaded = 0
        for name, base in locations.items():
            record = records.get(name)
            if record is None and (name in change_stores or (name.endswith(suffix) and name.removesuffix(suffix) in locations)):
                change_stores.add(name)  # a ChangeStore: its table's record follows it
            elif record is None or record.base != base or record.retry:
                read = self._read(catalog_name, catalog, name, base, record)
                loaded += 1
                self._keep(records, name, read, moved)
                if read is not None and read.change_name is not None:
                    change_stores.add(read.change_name)
            elif record.change_name is not None and locations.get(record.change_name) != record.change:
                record.change = locations.get(record.change_name)
                if record.served is not None:
                    moved.add(record.served.table_id)
        return loaded

    def _sweep(self, catalog_name: str, catalog: MixedCatalog, state: _Catalog, moved: set[str]) -> int:
        """A catalog without metadata locations: list its tables, load the new ones, the retried
        ones and this round's slice of the known ones."""
        names = [t for namespace in catalog.list_namespaces() for t in catalog.list_tables(namespace)]
        records = state.records
        self._drop(records, records.keys() - set(names))
        loaded = 0
        for position, name in enumerate(names):
            record = records.get(name)
            if record is not None and not record.retry and position % SWEEP_ROUNDS != state.rounds % SWEEP_ROUNDS:
                continue
            read = self._read(catalog_name, catalog, name, None, record)
            loaded += 1
            unmoved = record is not None and read is not None and (record.base, record.change) == (read.base, read.change)
            self._keep(records, name, read, set() if unmoved else moved)
        return loaded

    def _read(
        self, catalog_name: str, catalog: MixedCatalog, name: str, base: str | None, before: _Record | None
    ) -> _Record | None:
        """Load ``name`` and read whether the group serves it; None: it is gone."""
        table_id = f"{catalog_name}.{name}"
        try:
            table = catalog.load_table(name)
            properties = table.properties
            enabled = OPT_ENABLED.read(properties, name)
            group = OPT_GROUP.read(properties, name)
            quota = OPT_QUOTA.read(properties, name)
        except NoSuchTableError:
            # Dropped since it was listed; or, with a location, a store that is no table (a
            # ChangeStore whose table is gone): kept as unserved until it moves.
            return None if base is None else _Record(base)
        except CorruptTableError as exc:
            return self._unreadable(table_id, catalog_name, name, base, before, exc, damaged=True)
        except MixedIcebergError as exc:  # it stays unserved until its metadata moves
            record = _Record(base, error=str(exc))
            if before is None or before.error != record.error:
                log.warning("%s: not served: %s", table_id, exc)
            return record
        except Exception as exc:  # a transient failure of one table must not stop discovery
            return self._unreadable(table_id, catalog_name, name, base, before, exc, damaged=False)
        change = table.change_store
        return _Record(
            base=table.base_store.metadata_location,
            change_name=".".join(change.name()) if change is not None else None,
            change=change.metadata_location if change is not None else None,
            served=Served(table_id, catalog_name, name, quota) if enabled and group == self.group else None,
        )

    def _unreadable(
        self,
        table_id: str,
        catalog: str,
        name: str,
        base: str | None,
        before: _Record | None,
        exc: Exception,
        *,
        damaged: bool,
    ) -> _Record:
        """A table whose properties cannot be read now: served by the group that served it,
        and, damaged and never served, by the default group (which plans it, and fails it with
        the damage, so that it shows FAILED); not served when this group is neither. Read
        again next round."""
        known = self._served_before(table_id)
        served: Served | None = None
        if known is not None and known[0] == self.group:
            served = Served(table_id, catalog, name, known[1])
        elif known is None and damaged and self.group == OPT_GROUP.default:
            served = Served(table_id, catalog, name, OPT_QUOTA.default)
        record = _Record(
            base,
            change_name=before.change_name if before is not None else None,
            change=before.change if before is not None else None,
            served=served,
            retry=True,
            error=str(exc),
        )
        if served is not None and (before is None or before.error != record.error):  # once per error, not every round
            log.warning("%s: its properties cannot be read; served by group %s to record why: %s", table_id, self.group, exc)
        return record

"""``MixedCatalog``: create, load, list and drop Mixed-Iceberg and plain Iceberg tables.

A keyed table is created as two Iceberg tables, ``db.t`` (BaseStore) and ``db.t_change_``
(ChangeStore), with the same schema and partition spec, linked by Amoro's properties.

Everything a table is given is checked before anything is created: the schema (no reserved
column names, keyable key types), every property value (the option registry) and
``self-optimizing.filter`` against the schema.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence

import pyarrow as pa
from pyiceberg import exceptions as ice
from pyiceberg.catalog import Catalog
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table

from mixed_iceberg._pyiceberg import apply_patches
from mixed_iceberg._pyiceberg.sql_catalog import metadata_locations
from mixed_iceberg.catalog.locations import load_for_purge, purge_loaded, purge_store
from mixed_iceberg.catalog.markers import (
    CHANGE_IDENTIFIER,
    TABLE_STORE,
    change_store_name,
    primary_key_of,
    store_properties,
    table_format_of,
)
from mixed_iceberg.catalog.partitioning import partition_spec
from mixed_iceberg.config.merge import validate_merge_properties
from mixed_iceberg.exceptions import (
    ConfigError,
    CorruptTableError,
    InvalidIdentifierError,
    NamespaceExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableExistsError,
)
from mixed_iceberg.schema import arrow_schema, keyed_iceberg_schema
from mixed_iceberg.schema_evolution import complete_schema_change
from mixed_iceberg.table import MixedTable
from mixed_iceberg.table_properties import validate_table_properties
from mixed_iceberg.typedef import TableFormat, TableStore

__all__ = ["MixedCatalog", "TableIdentifier"]

log = logging.getLogger(__name__)

#: Seconds after which a ChangeStore without a BaseStore and without snapshots counts as left by
#: a create that was cut short (a create takes well under a second; this leaves a wide margin).
ORPHAN_AGE_S = 60


def _uuid_of(catalog: Catalog, identifier: str) -> object:
    """The table uuid of the store ``identifier``; None when it is gone or damaged."""
    try:
        return catalog.load_table(identifier).metadata.table_uuid
    except (ice.NoSuchTableError, CorruptTableError):
        return None


#: A table identifier as pyiceberg takes one: ``"db.orders"`` or ``("db", "orders")``.
TableIdentifier = str | tuple[str, ...]


def _name(identifier: TableIdentifier, what: str = "table identifier") -> str:
    """The dotted name of ``identifier`` (a tuple's parts joined, as pyiceberg joins them)."""
    if isinstance(identifier, str):
        return identifier
    if isinstance(identifier, tuple) and all(isinstance(p, str) and p and "." not in p for p in identifier):
        return ".".join(identifier)
    raise InvalidIdentifierError(f"{what}: expected a dotted string or a tuple of names without dots, found {identifier!r}")


def _split(identifier: TableIdentifier) -> tuple[str, str]:
    parts = _name(identifier).split(".")
    if len(parts) < 2 or not all(parts):
        raise InvalidIdentifierError(f"table identifier must be 'namespace.table', found {identifier!r}")
    return ".".join(parts[:-1]), parts[-1]


class MixedCatalog:
    """A pyiceberg catalog that understands Mixed-Iceberg tables."""

    def __init__(self, name: str, iceberg: Catalog, separator: str = "_") -> None:
        apply_patches()  # pyiceberg reads Amoro's blob types only with them (mixed_iceberg._pyiceberg)
        self.name = name
        self.iceberg = iceberg
        self.separator = separator

    def __repr__(self) -> str:
        return f"MixedCatalog({self.name!r}, {type(self.iceberg).__name__})"

    def change_identifier(self, identifier: TableIdentifier) -> str:
        """The catalog name of a keyed table's ChangeStore (``db.t`` -> ``db.t_change_``)."""
        namespace, table = _split(identifier)
        return f"{namespace}.{change_store_name(table, self.separator)}"

    def create_table(
        self,
        identifier: TableIdentifier,
        schema: pa.Schema | Schema,
        primary_key: Sequence[str] | None = None,
        partition_by: Sequence[str] | PartitionSpec | None = None,
        properties: Mapping[str, str] | None = None,
        *,
        table_format: TableFormat = TableFormat.MIXED_ICEBERG,
    ) -> MixedTable:
        """Create a table: keyed when ``primary_key`` is given, else unkeyed (or plain Iceberg).

        Raises:
            TableExistsError: the table (or its ChangeStore name) is taken.
            PropertyError: a property is unknown or malformed, or ``self-optimizing.filter``
                does not parse or names a column the schema lacks.
            MissingKeyError: a key column is not in the schema.
            InvalidSchemaError: a column takes a reserved name, or a key column a type that
                cannot be a key.
        """
        namespace, _ = _split(identifier)
        identifier = _name(identifier)
        user = dict(properties or {})
        keys = list(primary_key or [])
        if keys and table_format != TableFormat.MIXED_ICEBERG:
            raise ConfigError(f"{identifier}: a primary key needs table_format MIXED_ICEBERG, found {table_format.value}")
        iceberg_schema = keyed_iceberg_schema(schema, keys, table=identifier)
        validate_table_properties(user, iceberg_schema, identifier)
        columns = {f.name: f.type for f in arrow_schema(iceberg_schema, field_ids=False)}
        validate_merge_properties(user, columns, keys, identifier)
        spec = partition_spec(partition_by, iceberg_schema)
        if self.iceberg.table_exists(identifier):
            raise TableExistsError(f"table {identifier} already exists")
        self.iceberg.create_namespace_if_not_exists(namespace)
        if table_format == TableFormat.ICEBERG:
            base = self._create(identifier, iceberg_schema, spec, {"format-version": "2", **user})
            return MixedTable(identifier, TableFormat.ICEBERG, base, None, ())
        if not keys:
            base = self._create(identifier, iceberg_schema, spec, store_properties(user, TableStore.BASE, None, None))
            return MixedTable(identifier, TableFormat.MIXED_ICEBERG, base, None, ())
        change_id = self.change_identifier(identifier)
        if self.iceberg.table_exists(change_id):
            self._clear_orphan_change_store(identifier, change_id)
        # The ChangeStore first: a keyed table appears when its BaseStore does, so a reader never
        # finds a BaseStore whose ChangeStore is not there yet.
        change = self._create(change_id, iceberg_schema, spec, store_properties(user, TableStore.CHANGE, keys, None))
        try:
            base = self._create(
                identifier, change.schema(), change.spec(), store_properties(user, TableStore.BASE, keys, change_id)
            )
        except BaseException:
            # No half-created keyed table is ever left behind, nor its folder: the name keeps
            # its <warehouse>/<db>/<table> location for the next create. Only our own
            # ChangeStore goes (a concurrent create of the same name may have taken the name).
            if _uuid_of(self.iceberg, change_id) == change.metadata.table_uuid:
                purge_store(self.iceberg, change_id)
            raise
        log.info("created keyed table %s (ChangeStore %s, key %s)", identifier, change_id, keys)
        return MixedTable(identifier, TableFormat.MIXED_ICEBERG, base, change, keys)

    def _clear_orphan_change_store(self, identifier: str, change_id: str) -> None:
        """Purge ``change_id`` when it is a ChangeStore left by a create of ``identifier`` that
        was cut short (no BaseStore ever pointed at it, so it holds nothing) and that create
        is over (:data:`ORPHAN_AGE_S`); else its name is taken.

        Raises:
            TableExistsError: ``change_id`` is another table, or a ChangeStore with snapshots,
                or one younger than :data:`ORPHAN_AGE_S` (a create of the same name under way).
        """
        try:
            store = self.iceberg.load_table(change_id)
        except ice.NoSuchTableError:
            return
        props = store.properties
        if props.get(TABLE_STORE) != TableStore.CHANGE.value:
            raise TableExistsError(f"table {identifier}: its ChangeStore name {change_id} is already taken")
        if store.metadata.snapshots:
            raise TableExistsError(
                f"table {identifier}: its ChangeStore name {change_id} is taken by a ChangeStore without its "
                f"table, holding data (left by a drop cut short); drop_table({change_id!r}) or purge_table it first"
            )
        age_s = time.time() - int(props.get("table.create-timestamp", "0")) / 1000
        if age_s < ORPHAN_AGE_S:
            raise TableExistsError(
                f"table {identifier}: its ChangeStore {change_id} was created {age_s:.0f} s ago by a create "
                f"that has not finished (or was cut short: retry after {ORPHAN_AGE_S} s)"
            )
        log.warning("table %s: purging ChangeStore %s left by a create cut short %.0f s ago", identifier, change_id, age_s)
        purge_store(self.iceberg, change_id)

    def _create(self, identifier: str, schema: Schema, spec: PartitionSpec, properties: dict[str, str]) -> Table:
        try:
            return self.iceberg.create_table(identifier, schema=schema, partition_spec=spec, properties=properties)
        except ice.TableAlreadyExistsError as exc:
            raise TableExistsError(f"table {identifier} already exists") from exc

    def load_table(self, identifier: TableIdentifier) -> MixedTable:
        """Load a keyed, unkeyed or plain Iceberg table.

        Raises:
            NoSuchTableError: nothing by that name.
            CorruptTableError: a keyed table whose ChangeStore is missing, or a metadata file of
                either store that does not parse (``CorruptFileError``) or is gone
                (``MissingFileError``).
        """
        _split(identifier)
        identifier = _name(identifier)
        try:
            base = self.iceberg.load_table(identifier)
        except ice.NoSuchTableError as exc:
            raise NoSuchTableError(f"table {identifier} does not exist in catalog {self.name}") from exc
        props = base.properties
        if table_format_of(props) != TableFormat.MIXED_ICEBERG:
            return MixedTable(identifier, TableFormat.ICEBERG, base, None, ())
        if props.get(TABLE_STORE) == TableStore.CHANGE.value:
            raise NoSuchTableError(f"{identifier} is a ChangeStore; load its table instead")
        keys = primary_key_of(props)
        if not keys:
            return MixedTable(identifier, TableFormat.MIXED_ICEBERG, base, None, ())
        change_id = props.get(CHANGE_IDENTIFIER) or self.change_identifier(identifier)
        try:
            change = self.iceberg.load_table(change_id)
        except ice.NoSuchTableError as exc:
            raise CorruptTableError(f"keyed table {identifier}: expected its ChangeStore {change_id}, found none") from exc
        table = MixedTable(identifier, TableFormat.MIXED_ICEBERG, base, change, keys)
        if complete_schema_change(table.handle):  # a schema change cut short between the stores' commits
            table.refresh()
        return table

    def table_exists(self, identifier: TableIdentifier) -> bool:
        """Whether a table (keyed, unkeyed or plain Iceberg) by that name exists."""
        return bool(self.iceberg.table_exists(_name(identifier)))

    def rename_table(self, from_identifier: TableIdentifier, to_identifier: TableIdentifier) -> MixedTable:
        """Rename a table; a keyed table's ChangeStore follows its name (``db.t_change_``), and
        the BaseStore's link to it is updated. Files stay where they are.

        Raises:
            NoSuchTableError: nothing by ``from_identifier``.
            TableExistsError: ``to_identifier`` (or its ChangeStore name) is taken.
        """
        from_identifier, to_identifier = _name(from_identifier), _name(to_identifier)
        table = self.load_table(from_identifier)
        namespace, _ = _split(to_identifier)
        if self.iceberg.table_exists(to_identifier):
            raise TableExistsError(f"cannot rename {from_identifier}: table {to_identifier} already exists")
        self.iceberg.create_namespace_if_not_exists(namespace)
        if table.change_store is None:
            self.iceberg.rename_table(from_identifier, to_identifier)
            return self.load_table(to_identifier)
        old_change = ".".join(table.change_store.name())
        new_change = self.change_identifier(to_identifier)
        if self.iceberg.table_exists(new_change):
            raise TableExistsError(f"cannot rename {from_identifier}: its new ChangeStore name {new_change} is taken")
        try:
            self.iceberg.rename_table(old_change, new_change)
        except ice.ForbiddenError:
            # A REST server that keeps a keyed table's stores together (mixed-iceberg serve)
            # refuses to rename a ChangeStore alone and renames both with the BaseStore.
            self.iceberg.rename_table(from_identifier, to_identifier)
            renamed = self.load_table(to_identifier)
            log.info("renamed table %s to %s (both stores, by the catalog)", from_identifier, to_identifier)
            return renamed
        try:
            self.iceberg.rename_table(from_identifier, to_identifier)
            base = self.iceberg.load_table(to_identifier)
            with base.transaction() as txn:
                txn.set_properties({CHANGE_IDENTIFIER: new_change})
        except BaseException:
            # Back to the old names, so the table loads as before (the BaseStore's link untouched).
            if self.iceberg.table_exists(to_identifier) and not self.iceberg.table_exists(from_identifier):
                self.iceberg.rename_table(to_identifier, from_identifier)
            self.iceberg.rename_table(new_change, old_change)
            raise
        log.info("renamed table %s to %s (ChangeStore %s)", from_identifier, to_identifier, new_change)
        return self.load_table(to_identifier)

    def metadata_locations(self) -> dict[str, str] | None:
        """The current metadata file of every Iceberg table of the catalog (each store of a
        keyed table: ``db.t`` and ``db.t_change_``), by dotted name, read in one query and
        without parsing a file; None when the catalog cannot tell without loading each table
        (a catalog other than SQL). A location that did not move is a store that did not change."""
        return metadata_locations(self.iceberg)

    def list_namespaces(self, namespace: str | tuple[str, ...] = "") -> list[str]:
        """Namespaces (under ``namespace``, when given), as dotted names.

        Raises:
            NoSuchNamespaceError: ``namespace`` does not exist.
        """
        namespace = _name(namespace, "namespace") if namespace else ""
        try:
            return sorted(".".join(ident) for ident in self.iceberg.list_namespaces(namespace or ()))
        except ice.NoSuchNamespaceError as exc:
            raise NoSuchNamespaceError(f"namespace {namespace!r} does not exist in catalog {self.name}") from exc

    def create_namespace(self, namespace: str | tuple[str, ...], properties: Mapping[str, str] | None = None) -> None:
        """Create a namespace.

        Raises:
            NamespaceExistsError: it already exists.
        """
        namespace = _name(namespace, "namespace")
        try:
            self.iceberg.create_namespace(namespace, dict(properties or {}))
        except ice.NamespaceAlreadyExistsError as exc:
            raise NamespaceExistsError(f"namespace {namespace!r} already exists in catalog {self.name}") from exc

    def drop_namespace(self, namespace: str | tuple[str, ...]) -> None:
        """Drop an empty namespace.

        Raises:
            NoSuchNamespaceError: it does not exist.
            NamespaceNotEmptyError: it still holds tables.
        """
        namespace = _name(namespace, "namespace")
        try:
            self.iceberg.drop_namespace(namespace)
        except ice.NoSuchNamespaceError as exc:
            raise NoSuchNamespaceError(f"namespace {namespace!r} does not exist in catalog {self.name}") from exc
        except ice.NamespaceNotEmptyError as exc:
            tables = self.list_tables(namespace)
            raise NamespaceNotEmptyError(
                f"namespace {namespace!r}: expected no tables to drop it, found {tables}; drop them first"
            ) from exc

    def list_tables(self, namespace: str | tuple[str, ...]) -> list[str]:
        """Tables of ``namespace``, ChangeStores folded into their tables."""
        namespace = _name(namespace, "namespace")
        try:
            names = sorted(".".join(ident) for ident in self.iceberg.list_tables(namespace))
        except ice.NoSuchNamespaceError:
            return []
        present = set(names)
        suffix = f"{self.separator}change{self.separator}"
        return [n for n in names if not (n.endswith(suffix) and n.removesuffix(suffix) in present)]

    def drop_table(self, identifier: TableIdentifier, *, purge: bool = False) -> None:
        """Drop a table from the catalog (both stores of a keyed one); its files stay.

        As in Iceberg (Java's ``dropTable(id)`` without purge, pyiceberg's ``drop_table``), the
        files stay where they are: data, delete, manifest and metadata files, so another
        catalog may still register the table, and nothing is deleted by mistake. A table
        created later under the same name gets a folder of its own. :meth:`purge_table` (or
        ``purge=True``) deletes the files too. A damaged table (a metadata file, manifest list
        or manifest that does not parse) is dropped all the same.

        Raises:
            NoSuchTableError: nothing by that name (or the name of a ChangeStore).
        """
        if purge:
            self.purge_table(identifier)
            return
        identifier = _name(identifier)
        for position, store in enumerate(self._store_names(identifier)):
            try:
                self.iceberg.drop_table(store)
            except ice.NoSuchTableError:
                if position == 0:
                    raise NoSuchTableError(f"table {identifier} does not exist in catalog {self.name}") from None
                # The ChangeStore went with its BaseStore: a REST server that keeps a keyed
                # table's stores together (mixed-iceberg serve) drops both.
        log.info("dropped table %s; its files are kept", identifier)

    def purge_table(self, identifier: TableIdentifier) -> None:
        """Drop a table (both stores of a keyed one) and delete every file of it, as pyiceberg's
        ``purge_table``: data, delete, manifest, manifest-list, metadata and statistics
        (Puffin) files, and each store's folder with whatever else it holds
        (:mod:`mixed_iceberg.catalog.locations`).

        A damaged table is purged too: files listed only by a damaged manifest list or manifest
        go with the store's folder (those elsewhere are unknown, and logged), and the folder of
        a store whose current metadata file does not parse is found from its older metadata
        files or Iceberg's layout (else it is kept, and logged).

        Raises:
            NoSuchTableError: nothing by that name (or the name of a ChangeStore).
        """
        identifier = _name(identifier)
        # Every store is read before any is dropped: a REST server that keeps a keyed table's
        # stores together (mixed-iceberg serve) drops the ChangeStore with its BaseStore, and
        # its files are found from what was read here.
        targets = [load_for_purge(self.iceberg, store) for store in self._store_names(identifier)]
        for position, target in enumerate(targets):
            purge_loaded(self.iceberg, target, dropped_already=position > 0)
        log.info("purged table %s", identifier)

    def _store_names(self, identifier: str) -> list[str]:
        """The catalog names of the table's stores, its BaseStore first (the table is gone for
        readers with it, never a BaseStore without its ChangeStore; a ChangeStore left by a drop
        cut short is purged by the next create of the name); those of a table whose metadata is
        damaged too (its ChangeStore then found by its name alone).

        Raises:
            NoSuchTableError: nothing by that name (or the name of a ChangeStore).
        """
        _split(identifier)
        change = self.change_identifier(identifier)
        try:
            properties = self.iceberg.load_table(identifier).properties
        except ice.NoSuchTableError as exc:
            raise NoSuchTableError(f"table {identifier} does not exist in catalog {self.name}") from exc
        except CorruptTableError:
            owner = self._owner_of_change_store(identifier)
            if owner is not None and self.iceberg.table_exists(owner):
                raise NoSuchTableError(f"{identifier} is the ChangeStore of {owner}; drop that table instead") from None
            return [identifier, change] if self._is_change_store(change) else [identifier]
        if table_format_of(properties) != TableFormat.MIXED_ICEBERG:
            return [identifier]
        if properties.get(TABLE_STORE) == TableStore.CHANGE.value:
            owner = self._owner_of_change_store(identifier)
            if owner is not None and self.iceberg.table_exists(owner):
                raise NoSuchTableError(f"{identifier} is the ChangeStore of {owner}; drop that table instead")
            return [identifier]  # left by a create or drop cut short: it goes alone
        if not primary_key_of(properties):
            return [identifier]
        change = properties.get(CHANGE_IDENTIFIER) or change
        return [identifier, change] if self.iceberg.table_exists(change) else [identifier]

    def _owner_of_change_store(self, identifier: str) -> str | None:
        """The table whose ChangeStore ``identifier`` is by its name (``db.t_change_`` -> ``db.t``)."""
        namespace, name = _split(identifier)
        suffix = change_store_name("", self.separator)
        return f"{namespace}.{name.removesuffix(suffix)}" if name.endswith(suffix) and name != suffix else None

    def _is_change_store(self, identifier: str) -> bool:
        """Whether ``identifier`` is a ChangeStore (one whose metadata is damaged counts: its
        name is all that is left to tell)."""
        try:
            return self.iceberg.load_table(identifier).properties.get(TABLE_STORE) == TableStore.CHANGE.value
        except ice.NoSuchTableError:
            return False
        except CorruptTableError:
            return True

"""``MixedCatalog``: create, load, list and drop Mixed-Iceberg and plain Iceberg tables.

A keyed table is created as two Iceberg tables, ``db.t`` (BaseStore) and ``db.t_change_``
(ChangeStore), with the same schema and partition spec, linked by Amoro's properties.

Everything a table is given is checked before anything is created: the schema (no reserved
column names, keyable key types), every property value (the option registry) and
``self-optimizing.filter`` against the schema.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import pyarrow as pa
from pyiceberg import exceptions as ice
from pyiceberg.catalog import Catalog
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table

from mixed_iceberg._pyiceberg import apply_patches
from mixed_iceberg.catalog.locations import purge_store
from mixed_iceberg.catalog.markers import (
    CHANGE_IDENTIFIER,
    TABLE_STORE,
    change_store_name,
    primary_key_of,
    store_properties,
    table_format_of,
)
from mixed_iceberg.catalog.partitioning import partition_spec
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
from mixed_iceberg.reader.merge_options import validate_merge_properties
from mixed_iceberg.schema import arrow_schema, keyed_iceberg_schema
from mixed_iceberg.schema_evolution import complete_schema_change
from mixed_iceberg.table import MixedTable
from mixed_iceberg.table_properties import validate_table_properties
from mixed_iceberg.typedef import TableFormat, TableStore

__all__ = ["MixedCatalog"]

log = logging.getLogger(__name__)


def _split(identifier: str) -> tuple[str, str]:
    parts = identifier.split(".")
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

    def change_identifier(self, identifier: str) -> str:
        namespace, table = _split(identifier)
        return f"{namespace}.{change_store_name(table, self.separator)}"

    def create_table(
        self,
        identifier: str,
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
            raise TableExistsError(f"table {identifier}: its ChangeStore name {change_id} is already taken")
        base = self._create(identifier, iceberg_schema, spec, store_properties(user, TableStore.BASE, keys, change_id))
        try:
            change = self._create(change_id, base.schema(), base.spec(), store_properties(user, TableStore.CHANGE, keys, None))
        except BaseException:
            # No half-created keyed table is ever left behind, nor its folder: the name keeps
            # its <warehouse>/<db>/<table> location for the next create.
            purge_store(self.iceberg, base)
            raise
        log.info("created keyed table %s (ChangeStore %s, key %s)", identifier, change_id, keys)
        return MixedTable(identifier, TableFormat.MIXED_ICEBERG, base, change, keys)

    def _create(self, identifier: str, schema: Schema, spec: PartitionSpec, properties: dict[str, str]) -> Table:
        try:
            return self.iceberg.create_table(identifier, schema=schema, partition_spec=spec, properties=properties)
        except ice.TableAlreadyExistsError as exc:
            raise TableExistsError(f"table {identifier} already exists") from exc

    def load_table(self, identifier: str) -> MixedTable:
        """Load a keyed, unkeyed or plain Iceberg table.

        Raises:
            NoSuchTableError: nothing by that name.
            CorruptTableError: a keyed table whose ChangeStore is missing.
        """
        _split(identifier)
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

    def table_exists(self, identifier: str) -> bool:
        """Whether a table (keyed, unkeyed or plain Iceberg) by that name exists."""
        return bool(self.iceberg.table_exists(identifier))

    def rename_table(self, from_identifier: str, to_identifier: str) -> MixedTable:
        """Rename a table; a keyed table's ChangeStore follows its name (``db.t_change_``), and
        the BaseStore's link to it is updated. Files stay where they are.

        Raises:
            NoSuchTableError: nothing by ``from_identifier``.
            TableExistsError: ``to_identifier`` (or its ChangeStore name) is taken.
        """
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
        self.iceberg.rename_table(old_change, new_change)
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

    def list_namespaces(self, namespace: str = "") -> list[str]:
        """Namespaces (under ``namespace``, when given), as dotted names.

        Raises:
            NoSuchNamespaceError: ``namespace`` does not exist.
        """
        try:
            return sorted(".".join(ident) for ident in self.iceberg.list_namespaces(namespace or ()))
        except ice.NoSuchNamespaceError as exc:
            raise NoSuchNamespaceError(f"namespace {namespace!r} does not exist in catalog {self.name}") from exc

    def create_namespace(self, namespace: str, properties: Mapping[str, str] | None = None) -> None:
        """Create a namespace.

        Raises:
            NamespaceExistsError: it already exists.
        """
        try:
            self.iceberg.create_namespace(namespace, dict(properties or {}))
        except ice.NamespaceAlreadyExistsError as exc:
            raise NamespaceExistsError(f"namespace {namespace!r} already exists in catalog {self.name}") from exc

    def drop_namespace(self, namespace: str) -> None:
        """Drop an empty namespace.

        Raises:
            NoSuchNamespaceError: it does not exist.
            NamespaceNotEmptyError: it still holds tables.
        """
        try:
            self.iceberg.drop_namespace(namespace)
        except ice.NoSuchNamespaceError as exc:
            raise NoSuchNamespaceError(f"namespace {namespace!r} does not exist in catalog {self.name}") from exc
        except ice.NamespaceNotEmptyError as exc:
            tables = self.list_tables(namespace)
            raise NamespaceNotEmptyError(
                f"namespace {namespace!r}: expected no tables to drop it, found {tables}; drop them first"
            ) from exc

    def list_tables(self, namespace: str) -> list[str]:
        """Tables of ``namespace``, ChangeStores folded into their tables."""
        try:
            names = sorted(".".join(ident) for ident in self.iceberg.list_tables(namespace))
        except ice.NoSuchNamespaceError:
            return []
        present = set(names)
        suffix = f"{self.separator}change{self.separator}"
        return [n for n in names if not (n.endswith(suffix) and n.removesuffix(suffix) in present)]

    def drop_table(self, identifier: str, *, purge: bool = False) -> None:
        """Drop a table (both stores of a keyed one); ``purge`` also deletes every file of it.

        Purging deletes each store's folder with everything in it, statistics (Puffin) files
        included (see :mod:`mixed_iceberg.catalog.locations`).

        Raises:
            NoSuchTableError: nothing by that name.
        """
        table = self.load_table(identifier)
        for store in (table.change_store, table.base_store):
            if store is None:
                continue
            if purge:
                purge_store(self.iceberg, store)
            else:
                self.iceberg.drop_table(store.name())
        log.info("dropped table %s (purge=%s)", identifier, purge)

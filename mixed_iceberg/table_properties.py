"""Property checks that need the table's schema, on top of the option registry's; property changes.

:func:`validate_table_properties` runs wherever properties enter a table (``create_table`` and
:func:`update_properties`), so that a value which would break every later commit, write or
optimizing run is refused when it is given. ``self-optimizing.filter`` is parsed here with the
parser the optimizer uses, and its columns are looked up in the schema.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from pyiceberg.exceptions import CommitFailedException
from pyiceberg.expressions import BooleanExpression
from pyiceberg.schema import Schema

from mixed_iceberg.config.registry import OPT_FILTER, RESERVED_KEYS, check_key, validate_properties
from mixed_iceberg.exceptions import CommitConflictError, InvalidFilterError, PropertyError
from mixed_iceberg.reader.filters import parse_filter

if TYPE_CHECKING:
    from mixed_iceberg.handle import TableHandle

__all__ = ["optimizing_filter", "update_properties", "validate_table_properties"]

log = logging.getLogger(__name__)

#: Keys fixed at create that no property change may set or remove (besides the reserved ones):
#: a new merge engine would read the rows already stored differently.
FIXED_KEYS = ("format-version", "merge-engine", "sequence.field", "ignore-delete")
FIXED_PREFIXES = ("fields.",)


def optimizing_filter(properties: Mapping[str, str], schema: Schema, table: str) -> BooleanExpression | None:
    """The parsed ``self-optimizing.filter`` of ``properties``; None when unset.

    Raises:
        PropertyError: the filter does not parse, or names a column ``schema`` lacks.
    """
    raw = OPT_FILTER.read(properties, table)
    if not raw.strip():
        return None
    try:
        return parse_filter(raw, schema, table=table, subject=f"property {OPT_FILTER.key!r}")
    except InvalidFilterError as exc:
        raise PropertyError(str(exc)) from exc


def validate_table_properties(properties: Mapping[str, str], schema: Schema, table: str) -> None:
    """Refuse what :func:`~mixed_iceberg.config.registry.validate_properties` refuses, and a bad filter.

    Raises:
        PropertyError: an unknown or reserved key, a value that does not parse, or a
            ``self-optimizing.filter`` that does not fit ``schema``.
    """
    validate_properties(properties, table)
    optimizing_filter(properties, schema, table)


def update_properties(table: TableHandle, updates: Mapping[str, str] | None, removals: Iterable[str]) -> None:
    """Set ``updates`` and remove ``removals`` on every store of ``table`` (both of a keyed one).

    Everything is checked before either store changes. The ChangeStore is committed first and
    the BaseStore, whose properties are the table's, last; a change is idempotent, so after a
    failure in between, calling again with the same arguments completes it.

    Raises:
        PropertyError: a key both set and removed, a reserved or fixed key, an unknown key in
            an owned namespace, or a value that does not parse.
        CommitConflictError: another commit changed a store's metadata at the same moment.
    """
    if isinstance(removals, str):
        raise PropertyError(f"table {table.name}: removals: expected an iterable of keys, found the string {removals!r}")
    sets = dict(updates or {})
    drops = list(dict.fromkeys(removals))
    both = sorted(set(sets) & set(drops))
    if both:
        raise PropertyError(f"table {table.name}: expected each key either set or removed, found {both} in both")
    fixed = [key for key in (*sets, *drops) if key in FIXED_KEYS or key.startswith(FIXED_PREFIXES)]
    if fixed:
        raise PropertyError(f"table {table.name}: properties {fixed} are fixed when the table is created and cannot change")
    validate_table_properties(sets, table.schema(), table.name)
    current = table.base_store.properties
    for key in drops:
        if key in RESERVED_KEYS:
            raise PropertyError(f"table {table.name}: property {key!r} is written by mixed-iceberg itself and cannot be removed")
        if key not in current:  # a stored key unknown to the registry (an older writer's) may go
            check_key(key, table.name)
    if not sets and not drops:
        return
    for store in (table.change_store, table.base_store):
        if store is None:
            continue
        txn = store.transaction()
        if sets:
            txn.set_properties(sets)
        if drops:
            txn.remove_properties(*drops)
        try:
            txn.commit_transaction()
        except CommitFailedException as exc:
            raise CommitConflictError(
                f"table {table.name}: property change on {'.'.join(store.name())} lost a race with another commit; "
                f"retry it: {exc}"
            ) from exc
    log.info("%s: properties set %s, removed %s", table.name, sorted(sets), drops)

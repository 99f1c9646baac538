"""A commit's updates with Iceberg Java's id rules before pyiceberg applies them.

Iceberg Java's ``TableMetadata.Builder`` reuses an existing schema, partition spec or sort
order equal to the one a commit adds (``reuseOrCreateNewSchemaId`` and its siblings) and
gives a new one the next free id, whatever id the client put in it; ``-1`` in the following
``set-current-schema`` / ``set-default-spec`` / ``set-default-sort-order`` means "the one
just added". pyiceberg's ``update_table_metadata`` instead appends what it is given and
refuses a clash of ids ("Sort-order with id 1 already exists"), which Java clients hit on every
replace transaction. :func:`with_java_ids` rewrites the updates to Java's outcome: an equal
item's add is dropped and ``-1`` points at it; a new item whose id is taken gets the next one.
A table being created (no base metadata) keeps the client's ids, as Java's create does.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.update import (
    AddPartitionSpecUpdate,
    AddSchemaUpdate,
    AddSortOrderUpdate,
    SetCurrentSchemaUpdate,
    SetDefaultSortOrderUpdate,
    SetDefaultSpecUpdate,
    TableUpdate,
)

__all__ = ["with_java_ids"]


def with_java_ids(base: TableMetadata | None, updates: Sequence[TableUpdate]) -> tuple[TableUpdate, ...]:
    """``updates`` rewritten so that pyiceberg's application equals Iceberg Java's."""
    if base is None:
        return tuple(updates)
    schemas = list(base.schemas)
    specs = list(base.partition_specs)
    orders = list(base.sort_orders)
    last_schema = last_spec = last_order = None
    rewritten: list[TableUpdate] = []
    for update in updates:
        if isinstance(update, AddSchemaUpdate):
            same = next((s for s in schemas if s == update.schema_), None)
            if same is not None:
                last_schema = same.schema_id
                continue
            schema = update.schema_
            if any(s.schema_id == schema.schema_id for s in schemas):
                schema = schema.model_copy(update={"schema_id": max(s.schema_id for s in schemas) + 1})
                update = update.model_copy(update={"schema_": schema})
            schemas.append(schema)
            last_schema = schema.schema_id
        elif isinstance(update, AddPartitionSpecUpdate):
            compatible = next((s for s in specs if s.compatible_with(update.spec)), None)
            if compatible is not None:
                last_spec = compatible.spec_id
                continue
            spec = update.spec
            if any(s.spec_id == spec.spec_id for s in specs):
                spec = spec.model_copy(update={"spec_id": max(s.spec_id for s in specs) + 1})
                update = update.model_copy(update={"spec": spec})
            specs.append(spec)
            last_spec = spec.spec_id
        elif isinstance(update, AddSortOrderUpdate):
            order = update.sort_order
            equal = next((o for o in orders if o.fields == order.fields), None)
            if equal is not None:
                last_order = equal.order_id
                continue
            if any(o.order_id == order.order_id for o in orders):
                order = order.model_copy(update={"order_id": max(o.order_id for o in orders) + 1})
                update = update.model_copy(update={"sort_order": order})
            orders.append(order)
            last_order = order.order_id
        elif isinstance(update, SetCurrentSchemaUpdate) and update.schema_id == -1 and last_schema is not None:
            update = update.model_copy(update={"schema_id": last_schema})
        elif isinstance(update, SetDefaultSpecUpdate) and update.spec_id == -1 and last_spec is not None:
            update = update.model_copy(update={"spec_id": last_spec})
        elif isinstance(update, SetDefaultSortOrderUpdate) and update.sort_order_id == -1 and last_order is not None:
            update = update.model_copy(update={"sort_order_id": last_order})
        rewritten.append(update)
    return tuple(rewritten)

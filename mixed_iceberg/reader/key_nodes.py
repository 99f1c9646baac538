"""Which tree nodes a key-equality filter can touch: a point lookup reads one node's files.

A keyed table's writers place every row in a file of the tree node its key hash falls in (Amoro's
``DataTreeNode``: a file of node ``(mask, index)`` holds only keys whose hash ``h`` has
``h & mask == index``), in both stores. When the filter pins every primary-key column to a few
literals (``id = 5``, ``id IN (1, 2)``, ``a = 1 AND b = 'x'``), the keys it can match are known,
and so are their hashes: a file whose node covers none of them holds no version of those keys,
and the merge never needs it. Base and change files are pruned by the same rule, so no older
version of a key can resurface without its newer one.

Pure: the filter, the schema and the key in, the hashes out. Where a value does not convert to
the key column's Arrow type, or the pins multiply past :data:`MOST_KEYS`, nothing is pruned.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
from pyiceberg.expressions import AlwaysTrue, BooleanExpression, BoundEqualTo, BoundIn
from pyiceberg.expressions.visitors import bind
from pyiceberg.schema import Schema

from mixed_iceberg.format.javahash import key_hash
from mixed_iceberg.format.tree import DataTreeNode
from mixed_iceberg.reader.filters import conjuncts

__all__ = ["MOST_KEYS", "node_admits", "pinned_key_hashes"]

#: The most keys a filter may pin for its hashes to be worked out (the product of the pins).
MOST_KEYS = 4096


def _pins(
    keys_filter: BooleanExpression, schema: Schema, primary_key: Sequence[str], case_sensitive: bool
) -> dict[str, set[Any]] | None:
    """Each key column's allowed values (None: some key column is not pinned)."""
    pins: dict[str, set[Any]] = {}
    for conjunct in conjuncts(bind(schema, keys_filter, case_sensitive)):
        if isinstance(conjunct, BoundEqualTo):
            values = {conjunct.literal.value}
        elif isinstance(conjunct, BoundIn):
            values = {literal.value for literal in conjunct.literals}
        else:
            continue  # a range or an inequality narrows nothing here
        name = schema.find_column_name(conjunct.term.ref().field.field_id)
        if name is None:
            return None
        pins[name] = pins[name] & values if name in pins else values
    if any(name not in pins for name in primary_key):
        return None
    return pins


def _array(values: list[Any], arrow_type: pa.DataType) -> pa.Array:
    if isinstance(arrow_type, pa.ExtensionType):
        storage = [v.bytes if isinstance(v, uuid.UUID) else v for v in values]
        return pa.ExtensionArray.from_storage(arrow_type, pa.array(storage, arrow_type.storage_type))
    return pa.array(values, arrow_type)


def pinned_key_hashes(
    keys_filter: BooleanExpression,
    schema: Schema,
    primary_key: Sequence[str],
    arrow_schema: pa.Schema,
    *,
    case_sensitive: bool = True,
) -> npt.NDArray[np.int64] | None:
    """The key hashes of every key ``keys_filter`` (a conjunction over key columns) can match,
    or None when it does not pin every key column to at most :data:`MOST_KEYS` combinations."""
    if isinstance(keys_filter, AlwaysTrue) or not primary_key:
        return None
    pins = _pins(keys_filter, schema, primary_key, case_sensitive)
    if pins is None:
        return None
    sizes = [len(pins[name]) for name in primary_key]
    if 0 in sizes:
        return np.empty(0, np.int64)  # contradictory pins: no key matches
    if int(np.prod(sizes)) > MOST_KEYS:
        return None
    try:
        columns = [_array(sorted(pins[name], key=repr), arrow_schema.field(name).type) for name in primary_key]
    except (pa.ArrowException, KeyError, TypeError, ValueError, OverflowError):
        return None
    grid = np.indices(sizes).reshape(len(sizes), -1)
    hashes = key_hash([column.take(pa.array(index)) for column, index in zip(columns, grid, strict=True)])
    return hashes.astype(np.int64)


def node_admits(node: DataTreeNode, hashes: npt.NDArray[np.int64] | None) -> bool:
    """Whether a file of ``node`` may hold a key of ``hashes`` (None: any key)."""
    return hashes is None or bool(np.any((hashes & node.mask) == node.index))

"""Pure, I/O-free Mixed-Iceberg format primitives: tree nodes, the key hash, file names."""

from __future__ import annotations

from mixed_iceberg.format.filenames import (
    FileNameMeta,
    WriterIdentity,
    file_name,
    format_file_name,
    is_optimizing_pos_delete_file,
    optimizing_pos_delete_file_name,
    parse_base,
    parse_change,
    parse_file_type,
)
from mixed_iceberg.format.javahash import bucket_index, java_hash_codes, key_hash, tree_node_ids
from mixed_iceberg.format.tree import DataTreeNode, check_mask

__all__ = [
    "DataTreeNode",
    "FileNameMeta",
    "WriterIdentity",
    "bucket_index",
    "check_mask",
    "file_name",
    "format_file_name",
    "is_optimizing_pos_delete_file",
    "java_hash_codes",
    "key_hash",
    "optimizing_pos_delete_file_name",
    "parse_base",
    "parse_change",
    "parse_file_type",
    "tree_node_ids",
]

"""One Iceberg store at a time, by concern.

* :mod:`~mixed_iceberg.store.write`: data and position-delete files (Parquet, with pyiceberg's
  statistics), rows split by partition and tree node, Iceberg Java's partition paths.
* :mod:`~mixed_iceberg.store.manifests`: metadata only: a snapshot's live files (cached manifest
  entries), which delete files apply to which data file, the scan plan.
* :mod:`~mixed_iceberg.store.equality_deletes`: reading another engine's equality deletes.
* :mod:`~mixed_iceberg.store.commit`: idempotent, validated commits by commit id.
"""

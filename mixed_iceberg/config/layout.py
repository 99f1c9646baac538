"""The file layout of a table: bucket counts, write target size, upsert and LogStore."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mixed_iceberg.config.registry import (
    BASE_HASH_BUCKET,
    CHANGE_HASH_BUCKET,
    LOG_STORE_ADDRESS,
    LOG_STORE_ENABLED,
    LOG_STORE_MESSAGE_TOPIC,
    LOG_STORE_TOPIC,
    TARGET_FILE_SIZE,
    UPSERT_ENABLED,
)

__all__ = ["LayoutConfig"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LayoutConfig:
    """How a table's files are laid out and written: the part of its configuration every writer needs.

    Parsed at every load and refresh (:class:`mixed_iceberg.config.table.TableConfig`), so a bad
    value here fails at once, before anything is written. The optimizer's own sizes are in
    :class:`~mixed_iceberg.config.optimizing.OptimizingConfig`, which refers to this for the bucket count.
    """

    base_buckets: int
    change_buckets: int
    target_file_size: int
    upsert: bool
    log_store_enabled: bool
    log_store_address: str
    log_store_topic: str

    @classmethod
    def from_properties(cls, properties: Mapping[str, str], table: str = "") -> LayoutConfig:
        """Parse ``properties`` (BaseStore properties of the table).

        Raises:
            PropertyError: a known key holds a bad value.
        """
        return cls(
            base_buckets=BASE_HASH_BUCKET.read(properties, table),
            change_buckets=CHANGE_HASH_BUCKET.read(properties, table),
            target_file_size=TARGET_FILE_SIZE.read(properties, table),
            upsert=UPSERT_ENABLED.read(properties, table),
            log_store_enabled=LOG_STORE_ENABLED.read(properties, table),
            log_store_address=LOG_STORE_ADDRESS.read(properties, table),
            log_store_topic=LOG_STORE_MESSAGE_TOPIC.read(properties, table) or LOG_STORE_TOPIC.read(properties, table),
        )

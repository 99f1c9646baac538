"""Every registry key is read by a config field: a key declared and documented but read by
nothing (as ``clean-dangling-delete-files.enabled`` once was) fails here.

Keys that no config of ours reads say who does (``Option.read_elsewhere``): Iceberg keys the
writer or the commit reads from each store's own properties, and keys with the one value
mixed-iceberg supports.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pytest

from mixed_iceberg.config.registry import OPTIONS, Option
from mixed_iceberg.config.table import TableConfig
from mixed_iceberg.optimizer.config import GROUP_OPTIONS, GroupProperties


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The keys every :meth:`Option.read` call asks for while the test runs."""
    seen: set[str] = set()
    read = Option.read

    def recording(self: Option[Any], properties: Mapping[str, str], table: str = "", *, owner: str = "") -> Any:
        seen.add(self.key)
        return read(self, properties, table, owner=owner)

    monkeypatch.setattr(Option, "read", recording)
    return seen


def test_every_table_key_is_read_by_a_config_field(reads: set[str]) -> None:
    config = TableConfig.from_properties({}, columns={"id": pa.int64(), "v": pa.string()}, primary_key=("id",), table="t")
    parts = [config.layout, config.optimizing, config.maintenance, config.merge, config.health]  # parses every part
    assert all(part is not None for part in parts)
    unread = sorted(key for key, option in OPTIONS.items() if key not in reads and not option.read_elsewhere)
    assert unread == [], f"registry keys no config field reads: {unread}"


def test_keys_read_elsewhere_are_not_read_by_a_config_field_too(reads: set[str]) -> None:
    """``read_elsewhere`` is for keys no config reads; a key that gains a field loses it."""
    config = TableConfig.from_properties({}, columns={"id": pa.int64()}, primary_key=("id",))
    parts = [config.layout, config.optimizing, config.maintenance, config.merge, config.health]
    assert all(part is not None for part in parts)
    both = sorted(key for key, option in OPTIONS.items() if key in reads and option.read_elsewhere)
    assert both == []


def test_every_group_key_is_read_by_a_group_property(reads: set[str]) -> None:
    GroupProperties.parse({}, "g")
    assert sorted(set(GROUP_OPTIONS) - reads) == []

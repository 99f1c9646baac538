"""Maintenance settings: Amoro's duration grammar, defaults, and errors that name key, expectation and value."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

from mixed_iceberg.exceptions import PropertyError
from mixed_iceberg.optimizing.maintenance import MaintenanceConfig, parse_duration


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("720min", timedelta(minutes=720)),
        ("12h", timedelta(hours=12)),
        ("7d", timedelta(days=7)),
        ("30s", timedelta(seconds=30)),
        ("500ms", timedelta(milliseconds=500)),
        ("2 hours", timedelta(hours=2)),
        ("1DAY", timedelta(days=1)),
        ("15m", timedelta(minutes=15)),
        ("0min", timedelta(0)),
        ("60000", timedelta(minutes=1)),  # Amoro/Flink: a bare number is milliseconds
    ],
)
def test_durations_parse_like_amoro(raw: str, expected: timedelta) -> None:
    assert parse_duration(raw) == expected


@pytest.mark.parametrize("raw", ["", "min", "12 weeks", "-5min", "1.5h", "12hh", "twelve hours"])
def test_bad_durations_raise_naming_key_expectation_and_value(raw: str) -> None:
    with pytest.raises(PropertyError) as info:
        parse_duration(raw, "snapshot.keep.duration", "db.orders")
    message = str(info.value)
    assert "db.orders" in message
    assert "'snapshot.keep.duration'" in message
    assert "expected a duration such as 720min" in message
    assert f"found {raw!r}" in message


def test_defaults_are_amoros() -> None:
    config = MaintenanceConfig.from_properties({})
    assert config == MaintenanceConfig(
        expire_enabled=True,
        snapshot_keep=timedelta(minutes=720),
        snapshot_min_count=1,
        change_ttl=timedelta(days=7),
        orphan_enabled=False,
        orphan_min_age=timedelta(minutes=2880),
        manifest_target_size=8 * 1024 * 1024,
        manifest_min_count=100,
        clean_dangling_deletes=True,
    )


def test_properties_are_parsed_once_into_typed_values() -> None:
    config = MaintenanceConfig.from_properties(
        {
            "table-expire.enabled": "false",
            "snapshot.keep.duration": "2h",
            "snapshot.keep.min-count": "3",
            "change.data.ttl.minutes": "60",
            "clean-orphan-file.enabled": "true",
            "clean-orphan-file.min-existing-time-minutes": "5",
            "commit.manifest.target-size-bytes": "1024",
            "commit.manifest.min-count-to-merge": "10",
            "clean-dangling-delete-files.enabled": "false",
        }
    )
    assert config == MaintenanceConfig(
        expire_enabled=False,
        snapshot_keep=timedelta(hours=2),
        snapshot_min_count=3,
        change_ttl=timedelta(hours=1),
        orphan_enabled=True,
        orphan_min_age=timedelta(minutes=5),
        manifest_target_size=1024,
        manifest_min_count=10,
        clean_dangling_deletes=False,
    )


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("snapshot.keep.duration", "soon", "expected a duration"),
        ("snapshot.keep.min-count", "0", "expected a positive count"),
        ("change.data.ttl.minutes", "-1", "expected minutes >= 0"),
        ("commit.manifest.target-size-bytes", "big", "expected an integer"),
        ("commit.manifest.min-count-to-merge", "0", "expected a positive count"),
    ],
)
def test_bad_property_values_name_the_key(key: str, value: str, expected: str) -> None:
    with pytest.raises(PropertyError) as info:
        MaintenanceConfig.from_properties({key: value}, "db.orders")
    assert f"'{key}'" in str(info.value)
    assert expected in str(info.value)
    assert f"found {value!r}" in str(info.value)


def test_config_rejects_impossible_values() -> None:
    with pytest.raises(ValueError, match="snapshot_min_count: expected >= 1, found 0"):
        dataclasses.replace(MaintenanceConfig.from_properties({}), snapshot_min_count=0)

"""The option registry: Amoro's keys and defaults, typed parsing, the generated docs."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from mixed_iceberg.config.layout import LayoutConfig
from mixed_iceberg.config.registry import OPTIONS, Option, options_markdown, validate_properties
from mixed_iceberg.exceptions import PropertyError


@pytest.mark.parametrize(
    ("key", "default"),
    [
        ("base.file-index.hash-bucket", 4),
        ("change.file-index.hash-bucket", 4),
        ("write.target-file-size-bytes", 134217728),
        ("self-optimizing.target-size", 134217728),
        ("self-optimizing.fragment-ratio", 8),
        ("self-optimizing.min-target-size-ratio", 0.75),
        ("self-optimizing.minor.trigger.file-count", 12),
        ("self-optimizing.minor.trigger.interval", 3600000),
        ("self-optimizing.major.trigger.duplicate-ratio", 0.1),
        ("self-optimizing.full.trigger.interval", -1),
        ("self-optimizing.max-file-count", 10000),
        ("change.data.ttl.minutes", 10080),
        ("clean-orphan-file.min-existing-time-minutes", 2880),
    ],
)
def test_defaults_are_amoros(key: str, default: object) -> None:
    """Amoro's default, as users write it; the typed default is what it parses to."""
    option = OPTIONS[key]
    assert option.default_text == str(default)
    assert option.parse(option.default_text) == option.default


@pytest.mark.parametrize(
    ("key", "typed"),
    [
        ("self-optimizing.minor.trigger.interval", timedelta(hours=1)),
        ("self-optimizing.full.trigger.interval", None),
        ("self-optimizing.min-plan-interval", timedelta(minutes=1)),
        ("base.refresh-interval", None),
        ("snapshot.keep.duration", timedelta(hours=12)),
        ("change.data.ttl.minutes", timedelta(days=7)),
        ("clean-orphan-file.min-existing-time-minutes", timedelta(days=2)),
    ],
)
def test_durations_are_timedeltas_and_off_is_none(key: str, typed: timedelta | None) -> None:
    assert OPTIONS[key].default == typed
    assert OPTIONS[key].read({key: OPTIONS[key].default_text}) == typed


@pytest.mark.parametrize("key", ["self-optimizing.full.trigger.interval", "base.refresh-interval"])
def test_minus_one_is_off_and_a_count_is_milliseconds(key: str) -> None:
    assert OPTIONS[key].read({key: "-1"}) is None
    assert OPTIONS[key].read({key: "1500"}) == timedelta(milliseconds=1500)


def test_every_default_is_what_its_spelling_parses_to() -> None:
    for option in OPTIONS.values():
        if option.default is not None or option.spelled is not None:
            assert option.parse(option.default_text) == option.default, option.key


def test_options_are_declared_by_keyword_only() -> None:
    with pytest.raises(TypeError):
        Option("k", str, "", "doc")  # type: ignore[misc]


def test_typed_options_parse_once() -> None:
    options = LayoutConfig.from_properties(
        {"change.file-index.hash-bucket": "16", "write.upsert.enabled": "TRUE", "log-store.topic": "t"}
    )
    assert (options.change_buckets, options.base_buckets, options.upsert, options.log_store_topic) == (16, 4, True, "t")


def test_iceberg_namespaces_pass_through() -> None:
    validate_properties({"commit.retry.num-retries": "2", "write.parquet.compression-codec": "zstd", "format-version": "2"})


def test_non_string_value_is_rejected() -> None:
    with pytest.raises(PropertyError, match="expected a string value, found bool"):
        validate_properties({"write.upsert.enabled": True})  # type: ignore[dict-item]


def test_docs_table_is_generated_from_the_registry() -> None:
    docs = Path(__file__).resolve().parents[3] / "docs" / "options.md"
    assert docs.read_text() == options_markdown(), "regenerate with: python -m mixed_iceberg.config > docs/options.md"


def test_bad_duration_is_rejected_when_the_property_is_set() -> None:
    with pytest.raises(PropertyError, match=r"snapshot\.keep\.duration.*expected a duration such as 720min.*found 'forever'"):
        validate_properties({"snapshot.keep.duration": "forever"}, "db.t")
    validate_properties({"snapshot.keep.duration": "12h"})

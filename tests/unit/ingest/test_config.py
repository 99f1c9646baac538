"""conf/ingest.yaml parses into typed, frozen settings; bad values say what was expected."""

from __future__ import annotations

from pathlib import Path

import pytest

from mixed_iceberg.exceptions import ConfigError
from mixed_iceberg.ingest.cdc import CdcFormat
from mixed_iceberg.ingest.config import IngestConfig, load_ingest_config

SHIPPED = Path(__file__).resolve().parents[3] / "conf" / "ingest.yaml"


def test_shipped_config_parses_with_env_and_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MIXED_ICEBERG_INGEST_TOPIC", "t1")
    config = load_ingest_config(SHIPPED, {"parallelism": "3", "source.format": "changelog-json"})
    assert config.source.topic == "t1"
    assert config.parallelism == 3
    assert config.source.format is CdcFormat.CHANGELOG_JSON
    assert config.create_table is not None
    assert config.create_table.arrow_schema().field("id").nullable is False
    assert IngestConfig.from_json(config.to_json()) == config


@pytest.mark.parametrize(
    ("key", "value"), [("parallelism", "0"), ("commit-interval-ms", "5"), ("source.format", "avro"), ("job-name", "a b")]
)
def test_bad_values_are_rejected(key: str, value: str) -> None:
    with pytest.raises(ConfigError, match="ingest config"):
        load_ingest_config(SHIPPED, {key: value})

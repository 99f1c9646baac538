"""conf/ingest.yaml parses into typed, frozen settings; bad values say what was expected."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("confluent_kafka", reason="the kafka extra: mixed_iceberg.ingest.runtime imports the Kafka backend")

from mixed_iceberg.exceptions import ConfigError
from mixed_iceberg.ingest.cdc import CdcFormat
from mixed_iceberg.ingest.config import IngestConfig, load_ingest_config, pin_catalog
from mixed_iceberg.ingest.runtime import load_table

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


def test_a_pinned_catalog_ignores_the_workers_environment_and_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MIXED_ICEBERG_WAREHOUSE_DIR", str(tmp_path / "client"))
    shipped = IngestConfig.from_json(pin_catalog(load_ingest_config(SHIPPED, {"table": "db.pinned"})).to_json())
    assert shipped.catalog_config is not None
    assert Path(shipped.catalog_config).is_absolute()
    # A TaskManager's Python worker: another environment, another working directory.
    monkeypatch.setenv("MIXED_ICEBERG_WAREHOUSE_DIR", str(tmp_path / "worker"))
    monkeypatch.chdir(tmp_path)
    table = load_table(shipped, create=True)
    assert table.base_store.location().startswith((tmp_path / "client").as_uri())
    assert not (tmp_path / "worker").exists()


@pytest.mark.filterwarnings("ignore:.* has been deprecated since version:DeprecationWarning")  # pyflink.table, at import
def test_local_task_slots_follow_the_parallelism_and_a_bad_count_is_refused() -> None:
    from mixed_iceberg.ingest.flink import flink_settings  # imports pyflink

    # conf/ingest.yaml gives the mini-cluster 2 slots: a parallelism of 4 would wait for slots forever
    settings = flink_settings(load_ingest_config(SHIPPED, {"parallelism": "4"}), "python3")
    assert settings["taskmanager.numberOfTaskSlots"] == "4"
    assert settings["python.executable"] == "python3"
    assert flink_settings(load_ingest_config(SHIPPED, {"parallelism": "1"}), "python3")["taskmanager.numberOfTaskSlots"] == "2"
    shipped = load_ingest_config(SHIPPED, {})
    bad = shipped.model_copy(update={"flink": {**shipped.flink, "taskmanager.numberOfTaskSlots": "two"}})
    with pytest.raises(ConfigError, match="expected a positive integer, found 'two'"):
        flink_settings(bad, "python3")


@pytest.mark.filterwarnings("ignore:.* has been deprecated since version:DeprecationWarning")  # pyflink.table, at import
def test_the_local_cluster_listens_on_loopback_unless_the_flink_section_says_otherwise() -> None:
    from mixed_iceberg.flink_client import LOCAL_CLUSTER_DEFAULTS
    from mixed_iceberg.ingest.flink import flink_settings  # imports pyflink

    shipped = load_ingest_config(SHIPPED, {})
    settings = flink_settings(shipped, "python3", LOCAL_CLUSTER_DEFAULTS)
    assert (settings["rest.bind-address"], settings["jobmanager.bind-host"]) == ("127.0.0.1", "127.0.0.1")
    assert settings["web.submit.enable"] == "false"
    mine = flink_settings(load_ingest_config(SHIPPED, {"flink.rest.bind-address": "0.0.0.0"}), "python3", LOCAL_CLUSTER_DEFAULTS)
    assert (mine["rest.bind-address"], mine["jobmanager.bind-host"]) == ("0.0.0.0", "127.0.0.1")


@pytest.mark.filterwarnings("ignore:.* has been deprecated since version:DeprecationWarning")  # pyflink.table, at import
def test_source_fetches_big_batches_unless_the_config_says_otherwise() -> None:
    from mixed_iceberg.ingest.flink import source_options  # imports pyflink

    shipped = load_ingest_config(SHIPPED, {})
    options = source_options(shipped)
    assert options["properties.max.partition.fetch.bytes"] == str(8 << 20)
    assert options["properties.isolation.level"] == "read_committed"
    assert options["topic"] == f"{shipped.source.topic};{shipped.wakeup_topic}"
    assert "scan.bounded.mode" not in options
    mine = shipped.model_copy(
        update={"source": shipped.source.model_copy(update={"properties": {"max.partition.fetch.bytes": "1048576"}})}
    )
    bounded = source_options(mine, bounded=True)
    assert bounded["properties.max.partition.fetch.bytes"] == "1048576"
    assert bounded["scan.bounded.mode"] == "latest-offset"

"""conf/optimizer.yaml: Amoro's group shape, typed group properties, clear errors naming group, key and value."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mixed_iceberg.exceptions import ConfigError
from mixed_iceberg.optimizer.config import GROUP_OPTIONS, Container, GroupConfig, load_optimizer_config, parse_optimizer_config
from mixed_iceberg.optimizer.service import OptimizerService
from tests.support.services import ROOT
from tests.support.tables import local_catalog


def test_the_shipped_config_parses() -> None:
    config = load_optimizer_config(ROOT / "conf" / "optimizer.yaml")
    assert config.group("default").container is Container.FLINK
    assert config.group("local").policy == "balanced"
    assert config.system_database.startswith("sqlite:///")
    assert list(config.catalogs) == ["local"]


def test_group_properties_parse_durations_and_defaults() -> None:
    group = GroupConfig.of(
        "g", "local", {"refresh-interval": "2s", "heartbeat-timeout": "1min", "break-quota-limit-enabled": False}
    )
    props = group.properties
    assert (props.refresh_interval_ms, props.heartbeat_timeout_ms, props.break_quota) == (2000, 60000, False)
    assert props.policy == GROUP_OPTIONS["scheduling-policy"].default == "quota"
    assert props.max_input_per_thread == 536870912


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        (
            {"schedulng-policy": "quota"},
            "optimizer group 'g': unknown property 'schedulng-policy'; did you mean 'scheduling-policy'?",
        ),
        (
            {"scheduling-policy": "fifo"},
            "optimizer group 'g': property 'scheduling-policy': expected quota or balanced, found 'fifo'",
        ),
        ({"refresh-interval": "soon"}, "property 'refresh-interval': expected a duration such as 720min"),
        ({"max-planning-parallelism": "0"}, "property 'max-planning-parallelism': expected a positive count, found '0'"),
        ({"heartbeat-interval": "30s", "heartbeat-timeout": "10s"}, "expected heartbeat-timeout above heartbeat-interval"),
    ],
)
def test_bad_group_properties_name_the_group_key_and_value(properties: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        GroupConfig.of("g", "local", properties)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"optimizer_groups": []}, "expected at least one entry under optimizer_groups"),
        ({"optimizer_groups": [{"name": "a"}, {"name": "a"}]}, "optimizer group 'a' is declared twice"),
        ({"optimizer_groups": [{"name": "a", "container": "yarn"}]}, "container: expected local or flink, found 'yarn'"),
        ({"optimizer_groups": [{"name": "a", "size": 3}]}, "unknown keys \\['size'\\]"),
        ({"optimizer_groups": [{"name": "a"}], "groups": []}, "unknown keys \\['groups'\\]"),
        ({"optimizer_groups": [{"name": "a"}], "catalogs": "local"}, "catalogs: expected catalog names"),
    ],
)
def test_bad_files_are_refused_before_anything_starts(raw: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_optimizer_config(raw)


def test_catalog_entries_may_carry_properties_and_variables_expand(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYSDB_TEST", f"sqlite:///{tmp_path}/s.db")
    file = tmp_path / "optimizer.yaml"
    file.write_text(
        "system-database: ${SYSDB_TEST}\n"
        "catalogs: [{name: lake, properties: {type: sql, uri: 'sqlite:///x.db'}}]\n"
        "optimizer_groups: [{name: g}]\n"
    )
    config = load_optimizer_config(file)
    assert config.system_database == f"sqlite:///{tmp_path}/s.db"
    assert dict(config.catalogs) == {"lake": {"type": "sql", "uri": "sqlite:///x.db"}}
    with pytest.raises(ConfigError, match="expected a group named 'h', found \\['g'\\]"):
        config.group("h")


def test_the_docs_list_every_group_property_with_its_default() -> None:
    """docs/optimizer.md's table of group properties is the registry's (no key missing or stale)."""
    text = (ROOT / "docs" / "optimizer.md").read_text()
    documented = dict(re.findall(r"^\| `([a-z-]+)` \| `?([^`|]+?)`? \|", text, flags=re.MULTILINE))
    assert set(documented) == set(GROUP_OPTIONS)
    for key, option in GROUP_OPTIONS.items():
        shown = documented[key].strip()
        assert option.parse(shown) == option.default, f"{key}: the docs say {shown}, the default is {option.default}"


def test_the_jobs_local_cluster_listens_on_loopback_unless_the_flink_section_says_otherwise() -> None:
    from mixed_iceberg.flink_client import local_cluster_settings

    groups = [{"name": "default", "container": "flink"}]
    assert load_optimizer_config(ROOT / "conf" / "optimizer.yaml").flink == {}
    defaults = local_cluster_settings(parse_optimizer_config({"optimizer_groups": groups}).flink)
    hosts = ("rest.bind-address", "jobmanager.bind-host", "taskmanager.bind-host", "taskmanager.host")
    assert {defaults[key] for key in hosts} == {"127.0.0.1"}
    assert defaults["web.submit.enable"] == defaults["web.cancel.enable"] == "false"
    # Binding elsewhere is an explicit setting, and only the keys set move.
    config = parse_optimizer_config(
        {"optimizer_groups": groups, "flink": {"rest.bind-address": "0.0.0.0", "web.submit.enable": "true"}}
    )
    mine = local_cluster_settings(config.flink)
    assert (mine["rest.bind-address"], mine["web.submit.enable"], mine["jobmanager.bind-host"]) == (
        "0.0.0.0",
        "true",
        "127.0.0.1",
    )
    with pytest.raises(ConfigError, match="flink: expected a mapping of Flink settings"):
        parse_optimizer_config({"optimizer_groups": groups, "flink": ["rest.port=1"]})


def test_a_catalog_handed_to_the_service_but_not_in_its_config_is_an_error_not_silence(tmp_path: Path) -> None:
    # Discovery looks at the config's catalogs only: a catalog handed in under another name was
    # never served, and nothing said so.
    config = parse_optimizer_config(
        {"system-database": f"sqlite:///{tmp_path}/system.db", "optimizer_groups": [{"name": "default"}]}
    )
    with pytest.raises(ConfigError, match=r"catalogs \['rest'\] are handed in but not among the config's catalogs \['local'\]"):
        OptimizerService(config, "default", catalogs={"rest": local_catalog(tmp_path / "c")})

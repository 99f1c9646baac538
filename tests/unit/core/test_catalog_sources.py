"""Catalogs open from properties alone or pyiceberg's configuration sources, as pyiceberg's
``load_catalog`` does, and contradictions between sources are refused instead of one winning."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pyiceberg.catalog.sql import SqlCatalog

from mixed_iceberg import load_catalog
from mixed_iceberg.catalog.config import load_catalog_config
from mixed_iceberg.exceptions import ConfigError
from tests.support.tables import ORDERS_SCHEMA


@pytest.fixture(autouse=True)
def _no_user_pyiceberg_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only what a test sets: no ~/.pyiceberg.yaml, no PYICEBERG_* variables of the machine."""
    home = tmp_path / "pyiceberg-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PYICEBERG_HOME", str(home))
    monkeypatch.chdir(home)
    for variable in [v for v in os.environ if v.upper().startswith("PYICEBERG_CATALOG")]:
        monkeypatch.delenv(variable)


def _props(root: Path) -> dict[str, str]:
    return {"uri": f"sqlite:///{root}/catalog.db", "warehouse": str(root / "wh")}


@pytest.mark.parametrize("with_type", [True, False], ids=["type-given", "type-inferred-from-uri"])
def test_properties_alone_open_a_catalog_of_that_name(tmp_path: Path, with_type: bool) -> None:
    catalog = load_catalog("lake", **({"type": "sql"} if with_type else {}), **_props(tmp_path))
    assert catalog.name == "lake"
    catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    assert catalog.list_tables("db") == ["db.t"]


def test_pyiceberg_environment_variables_define_a_catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYICEBERG_CATALOG__ENVCAT__URI", f"sqlite:///{tmp_path}/catalog.db")
    monkeypatch.setenv("PYICEBERG_CATALOG__ENVCAT__WAREHOUSE", str(tmp_path / "wh"))
    catalog = load_catalog("envcat")
    catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    assert load_catalog("envcat").table_exists("db.t")


def test_pyiceberg_yaml_defines_a_catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "conf-home"
    folder.mkdir()
    (folder / ".pyiceberg.yaml").write_text(
        f"catalog:\n  yamlcat:\n    type: sql\n    uri: sqlite:///{tmp_path}/catalog.db\n    warehouse: {tmp_path / 'wh'}\n"
    )
    monkeypatch.setenv("PYICEBERG_HOME", str(folder))
    assert load_catalog("yamlcat").name == "yamlcat"


def test_type_that_contradicts_the_catalogs_entry_is_refused() -> None:
    with pytest.raises(
        ConfigError, match=r"expected one catalog type, found 'sql' by .*catalogs.yaml.*'rest' by the type= argument"
    ):
        load_catalog("local", type="rest")


def test_type_that_contradicts_the_uri_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"'rest' by the type= argument, 'sql' by uri"):
        load_catalog("lake", type="rest", **_props(tmp_path))


def test_catalogs_file_and_pyiceberg_variables_disagreeing_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conf = tmp_path / "conf" / "catalogs.yaml"
    conf.parent.mkdir()
    conf.write_text(
        f"catalogs:\n  - name: both\n    type: sql\n    properties:\n      uri: sqlite:///{tmp_path}/a.db\n      warehouse: {tmp_path}/wh\n"
    )
    monkeypatch.setenv("PYICEBERG_CATALOG__BOTH__URI", f"sqlite:///{tmp_path}/b.db")
    with pytest.raises(ConfigError, match=r"sources disagree.*uri"):
        load_catalog("both", config_path=conf)
    monkeypatch.setenv("PYICEBERG_CATALOG__BOTH__URI", f"sqlite:///{tmp_path}/a.db")  # the same value: no contradiction
    assert load_catalog("both", config_path=conf).name == "both"


@pytest.mark.parametrize(
    ("name", "properties", "message"),
    [
        ("nowhere", {}, r"no catalog named 'nowhere'.*PYICEBERG_CATALOG__NOWHERE__URI"),
        ("glue", {"type": "glue", "warehouse": "/tmp/x"}, r"type expected one of \['sql', 'rest'\], found 'glue'"),
        ("half", {"uri": "sqlite:////tmp/x.db"}, r"needs properties 'uri' and 'warehouse'"),
    ],
)
def test_catalog_nobody_defines_fully_is_refused(name: str, properties: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_catalog(name, **properties)


def test_other_engines_see_our_tables_only_under_the_same_catalog_name(tmp_path: Path) -> None:
    load_catalog("lake", **_props(tmp_path)).create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    same = SqlCatalog("lake", **_props(tmp_path))
    other = SqlCatalog("elsewhere", **_props(tmp_path))
    assert ("db", "t") in same.list_tables("db")
    assert not other.table_exists("db.t")  # pyiceberg's SQL catalog filters its rows by name


def test_a_missing_catalogs_file_is_named_with_where_it_was_looked_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "nowhere" / "catalogs.yaml"
    monkeypatch.setenv("MIXED_ICEBERG_CATALOGS", str(missing))
    with pytest.raises(ConfigError) as raised:
        load_catalog("local")
    # Not just "no catalog named 'local' (found [])": the file itself is missing, and which file.
    assert f"the catalogs file {missing} (named by MIXED_ICEBERG_CATALOGS) does not exist" in str(raised.value)


def test_a_catalog_missing_from_an_existing_file_lists_the_names_it_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "catalogs.yaml"
    conf.write_text(
        f"catalogs:\n  - name: other\n    properties:\n      uri: sqlite:///{tmp_path}/a.db\n      warehouse: {tmp_path}/wh\n"
    )
    monkeypatch.setenv("MIXED_ICEBERG_CATALOGS", str(conf))
    with pytest.raises(
        ConfigError, match=r"no catalog named 'local': expected an entry in .*catalogs.yaml \(found \['other'\]\)"
    ):
        load_catalog("local")


@pytest.mark.parametrize("warehouse", ["local", "relative/wh", "s3://bucket/wh"])
def test_a_rest_catalogs_warehouse_goes_to_the_server_as_given(tmp_path: Path, warehouse: str) -> None:
    """A REST server interprets ``warehouse`` (a catalog name for ``serve``, a location for
    others): unlike a SQL catalog's, it is not made a local path, nor created."""
    config = load_catalog_config("remote", overrides={"type": "rest", "uri": "http://127.0.0.1:1", "warehouse": warehouse})
    assert config.type == "rest"
    assert config.properties["warehouse"] == warehouse
    assert not (Path.cwd() / warehouse).exists()

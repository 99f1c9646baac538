"""What the Flink SQL path and the changelog source refuse before any job is built: a statement
that is not ``INSERT INTO catalog.db.table [(cols)] <query>``, a table without a LogStore, a
column the changelog cannot carry exactly, a start time without a zone."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from mixed_iceberg.exceptions import ConfigError, InvalidIdentifierError, QueryError, UnsupportedColumnTypeError
from tests.support.tables import local_catalog

pytest.importorskip("pyflink", reason="the flink extra")
# Importing pyflink.table warns about its own deprecated classes.
pytestmark = pytest.mark.filterwarnings("ignore:.* has been deprecated since version:DeprecationWarning")


@pytest.mark.parametrize(
    ("statement", "target", "columns", "query"),
    [
        ("INSERT INTO local.db.t SELECT a, b FROM s", "local.db.t", None, "SELECT a, b FROM s"),
        ("  insert into `local`.`db`.`my t` (k, `v w`)\n  select * from s;  ", "local.db.my t", ["k", "v w"], "select * from s"),
        (
            "INSERT INTO local.db.t WITH x AS (SELECT 1 AS k) SELECT k FROM x",
            "local.db.t",
            None,
            "WITH x AS (SELECT 1 AS k) SELECT k FROM x",
        ),
        ("INSERT INTO local.db.t VALUES (1, 'a')", "local.db.t", None, "VALUES (1, 'a')"),
    ],
)
def test_the_insert_is_split_into_target_columns_and_query(statement: str, target: str, columns: Any, query: str) -> None:
    from mixed_iceberg.flink.sql import parse_insert

    assert parse_insert(statement) == (target, columns, query)


@pytest.mark.parametrize(
    ("statement", "error"),
    [
        ("SELECT * FROM s", QueryError),
        ("INSERT OVERWRITE local.db.t SELECT * FROM s", QueryError),
        ("INSERT INTO local.db.t PARTITION (p = 1) SELECT * FROM s", QueryError),
        ("INSERT INTO db.t SELECT * FROM s", InvalidIdentifierError),
        ("INSERT INTO local.db.t (k, ) SELECT * FROM s", QueryError),
    ],
)
def test_other_statements_are_refused(statement: str, error: type[Exception]) -> None:
    from mixed_iceberg.flink.sql import parse_insert

    with pytest.raises(error):
        parse_insert(statement)


def _table(tmp_path: Path, schema: pa.Schema, **properties: str) -> Any:
    catalog = local_catalog(tmp_path)
    catalog.create_namespace("db")
    return catalog.create_table("db.t", schema, primary_key=["k"], properties=properties)


LOGGED = {"log-store.enabled": "true", "log-store.address": "127.0.0.1:1", "log-store.message.topic": "t-log"}


def test_the_changelog_needs_a_logstore_and_exact_types(tmp_path: Path) -> None:
    from mixed_iceberg.flink import read_changelog

    t_env: Any = object()  # refused before the environment is used
    plain = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.string())])
    with pytest.raises(ConfigError, match=r"expected log-store\.enabled"):
        read_changelog(t_env, _table(tmp_path / "a", plain))
    timed = plain.append(pa.field("at", pa.time64("us")))
    with pytest.raises(UnsupportedColumnTypeError, match="'at'"):
        read_changelog(t_env, _table(tmp_path / "b", timed, **LOGGED))
    logged = _table(tmp_path / "c", plain, **LOGGED)
    with pytest.raises(ConfigError, match="timezone-aware"):
        read_changelog(t_env, logged, start=dt.datetime(2026, 1, 1))
    with pytest.raises(ConfigError, match="stop"):
        read_changelog(t_env, logged, stop="earliest")  # type: ignore[arg-type]

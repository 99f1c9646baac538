"""``mixed-iceberg sql``: DuckDB over the merged views (mixed_iceberg/query/terminal.py) answers
as the merged read does, reads nothing but the catalogs' tables, and stops at its limits."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from mixed_iceberg import MixedCatalog
from mixed_iceberg.cli.main import main
from mixed_iceberg.exceptions import QueryError
from mixed_iceberg.query import run_query
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog

pytest.importorskip("duckdb")


@pytest.fixture
def catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> MixedCatalog:
    """``local``: a keyed table db.orders with unmerged updates and deletes, and a plain Iceberg
    table db.events written by pyiceberg."""
    conf = tmp_path / "catalogs.yaml"
    conf.write_text(
        f"catalogs:\n  - name: local\n    type: sql\n    properties:\n      uri: sqlite:///{tmp_path}/catalog.db\n      warehouse: {tmp_path}/wh\n"
    )
    monkeypatch.setenv("MIXED_ICEBERG_CATALOGS", str(conf))
    catalog = local_catalog(tmp_path)
    orders = catalog.create_table("db.orders", ORDERS_SCHEMA, primary_key=["id"])
    orders.bulk_load(changes([("+I", k, "a" if k % 2 else "b", k, 1.0) for k in range(20)]).drop_columns(["_change_action"]))
    with orders.new_transaction() as txn:  # unmerged: an update, deletes and an insert
        txn.write(changes([("-U", 3, "a", 3, 1.0), ("+U", 3, "z", 300, 9.0), ("-D", 4, "b", 4, 1.0), ("-D", 5, "a", 5, 1.0)]))
        txn.write(changes([("+I", 50, "b", 50, 5.0)]))
    plain = catalog.iceberg.create_table("db.events", pa.schema([pa.field("id", pa.int64()), pa.field("cat", pa.string())]))
    plain.append(pa.table({"id": pa.array([3, 50, 7], pa.int64()), "cat": ["x", "y", "z"]}))
    return catalog


def _rows(result: pa.Table) -> list[tuple[object, ...]]:
    return [tuple(r.values()) for r in result.to_pylist()]


def test_queries_answer_over_the_merged_view_as_the_merged_read_does(catalog: MixedCatalog) -> None:
    merged = catalog.load_table("db.orders").scan().to_arrow()
    counted = run_query("SELECT cat, count(*) AS n, sum(qty) AS q FROM db.orders GROUP BY cat ORDER BY cat")
    expected = merged.group_by("cat").aggregate([("id", "count"), ("qty", "sum")]).sort_by("cat")
    assert _rows(counted.rows) == _rows(expected.select(["cat", "id_count", "qty_sum"]))
    assert _rows(run_query("SELECT id, cat, qty FROM local.db.orders WHERE id = 3").rows) == [(3, "z", 300)]
    assert run_query("SELECT count(*) FROM db.orders WHERE id IN (4, 5)").rows.column(0).to_pylist() == [0]
    # the pushed filter does not bring back the old version of key 3
    assert _rows(run_query("SELECT id FROM db.orders WHERE qty = 3").rows) == []
    joined = run_query("SELECT o.id, e.cat FROM db.orders o JOIN db.events e USING (id) ORDER BY o.id")
    assert _rows(joined.rows) == [(3, "x"), (7, "z"), (50, "y")]
    self_join = run_query("SELECT count(*) FROM db.orders a JOIN db.orders b ON a.id = b.id + 1")
    assert self_join.rows.column(0).to_pylist() == [16]  # keys 0-3, 6-19, 50: (k, k-1) both live for 16


def test_the_limit_cuts_the_rows_and_says_so(catalog: MixedCatalog) -> None:
    cut = run_query("SELECT id FROM db.orders ORDER BY id", limit=5)
    assert (cut.rows.column("id").to_pylist(), cut.truncated) == ([0, 1, 2, 3, 6], True)
    whole = run_query("SELECT id FROM db.orders", limit=19)  # every live key
    assert (whole.rows.num_rows, whole.truncated) == (19, False)


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT * FROM read_csv('/etc/passwd')", "file system operations are disabled"),
        ("SELECT * FROM '/etc/hostname'", "name it as"),  # a file scan by name: not a table
        ("COPY (SELECT 1) TO '/tmp/mixed-iceberg-sql.csv'", "one read-only SELECT"),
        ("ATTACH '/tmp/x.db'", "one read-only SELECT"),
        ("SET enable_external_access = true", "one read-only SELECT"),
        ("SELECT 1; SELECT 2", "one read-only SELECT"),
        ("SELECT * FROM orders", r"name it as \[catalog.\]namespace.table"),
        ("SELEC 1", "does not parse"),
        ("SELECT nope FROM db.orders", "nope"),
    ],
)
def test_only_one_select_over_the_catalogs_tables_runs(catalog: MixedCatalog, sql: str, message: str) -> None:
    with pytest.raises(QueryError, match=message):
        run_query(sql)
    assert not Path("/tmp/mixed-iceberg-sql.csv").exists()


def test_a_query_past_its_timeout_is_interrupted(catalog: MixedCatalog) -> None:
    slow = "SELECT count(*) FROM range(10000000000) a, db.orders"
    with pytest.raises(QueryError, match=r"timeout of 0\.5 s"):
        run_query(slow, timeout=0.5)


def test_the_cli_prints_a_table_json_or_csv(catalog: MixedCatalog, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sql", "SELECT id, cat FROM db.orders WHERE id < 3 ORDER BY id"]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0].split() == ["ID", "CAT"]
    assert "(3 rows" in text
    assert main(["sql", "SELECT id, cat FROM db.orders WHERE id < 3 ORDER BY id", "--csv"]) == 0
    assert capsys.readouterr().out.splitlines() == ['"id","cat"', '0,"b"', '1,"a"', '2,"b"']
    assert main(["--json", "sql", "SELECT id FROM db.orders ORDER BY id", "--limit", "2"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {"columns": ["id"], "rows": [{"id": 0}, {"id": 1}], "truncated": True}
    assert "--limit" in captured.err
    assert main(["sql", "DELETE FROM db.orders"]) == 2
    assert "read-only SELECT" in capsys.readouterr().err

"""Catalog operations and the on-disk layout other Amoro/Iceberg engines rely on."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mixed_iceberg import MixedTable, TableFormat, load_catalog
from mixed_iceberg.basestore.optimized_sequence import read_optimized_sequence
from mixed_iceberg.exceptions import ConfigError, MissingKeyError, NoSuchTableError, PropertyError, TableExistsError
from mixed_iceberg.format import key_hash
from mixed_iceberg.schema import FILE_OFFSET_FIELD_ID
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog, rows_of


def test_keyed_table_is_two_linked_iceberg_v2_tables(tmp_path: Path) -> None:
    catalog = local_catalog(tmp_path)
    catalog.create_table(
        "db.orders", ORDERS_SCHEMA, primary_key=["id"], partition_by=["cat"], properties={"change.file-index.hash-bucket": "8"}
    )
    base = catalog.iceberg.load_table("db.orders")
    change = catalog.iceberg.load_table("db.orders_change_")
    assert base.properties["table-format"] == change.properties["table-format"] == "MIXED_ICEBERG"
    assert base.properties["mixed-format.primary-key-fields"] == change.properties["mixed-format.primary-key-fields"] == "id"
    assert (base.properties["mixed-format.table-store"], change.properties["mixed-format.table-store"]) == ("base", "change")
    assert base.properties["mixed-format.change.identifier"] == "db.orders_change_"
    assert base.metadata.format_version == change.metadata.format_version == 2
    assert base.schema() == change.schema()
    assert base.spec() == change.spec()
    assert base.schema().find_field("id").required
    assert catalog.list_tables("db") == ["db.orders"]


def test_load_recognises_keyed_unkeyed_and_plain_iceberg_tables(tmp_path: Path) -> None:
    catalog = local_catalog(tmp_path)
    catalog.create_table("db.k", ORDERS_SCHEMA, primary_key=["id"])
    catalog.create_table("db.u", ORDERS_SCHEMA)
    catalog.create_table("db.i", ORDERS_SCHEMA, table_format=TableFormat.ICEBERG)
    k, u, i = (catalog.load_table(f"db.{n}") for n in "kui")
    assert (k.is_keyed, k.format, k.primary_key) == (True, TableFormat.MIXED_ICEBERG, ("id",))
    assert (u.is_keyed, u.format) == (False, TableFormat.MIXED_ICEBERG)
    assert (i.is_keyed, i.format) == (False, TableFormat.ICEBERG)
    assert sorted(catalog.list_tables("db")) == ["db.i", "db.k", "db.u"]


def test_separator_is_configurable(tmp_path: Path) -> None:
    catalog = load_catalog(
        "local", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"), **{"mixed-format.table-store.separator": "__"}
    )
    catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    assert catalog.iceberg.table_exists("db.t__change__")


def test_create_existing_and_load_or_drop_missing_raise(tmp_path: Path) -> None:
    catalog = local_catalog(tmp_path)
    catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    with pytest.raises(TableExistsError, match=r"db\.t already exists"):
        catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    with pytest.raises(NoSuchTableError, match=r"db\.nope does not exist"):
        catalog.load_table("db.nope")
    with pytest.raises(NoSuchTableError):
        catalog.drop_table("db.nope")


def test_drop_removes_both_stores(tmp_path: Path) -> None:
    catalog = local_catalog(tmp_path)
    catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    catalog.drop_table("db.t", purge=True)
    assert not catalog.iceberg.table_exists("db.t")
    assert not catalog.iceberg.table_exists("db.t_change_")


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        ({"self-optimizing.minor.trigger.file-cnt": "3"}, "did you mean 'self-optimizing.minor.trigger.file-count'"),
        ({"base.file-index.hash-bucket": "3"}, "expected a power of two, found '3'"),
        ({"write.upsert.enabled": "yes"}, "expected true or false"),
        ({"table-format": "ICEBERG"}, "written by mixed-iceberg itself"),
    ],
)
def test_bad_properties_are_rejected_before_anything_is_created(tmp_path: Path, properties: dict[str, str], message: str) -> None:
    catalog = local_catalog(tmp_path)
    with pytest.raises(PropertyError, match=re.escape(message)):
        catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"], properties=properties)
    assert catalog.list_tables("db") == []


def test_primary_key_must_exist(tmp_path: Path) -> None:
    with pytest.raises(MissingKeyError, match="not in the schema"):
        local_catalog(tmp_path).create_table("db.t", ORDERS_SCHEMA, primary_key=["order_id"])


def test_unknown_catalog_and_missing_env_are_config_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="no catalog named 'nope'"):
        load_catalog("nope")
    conf = tmp_path / "catalogs.yaml"
    conf.write_text("catalogs:\n  - name: x\n    type: sql\n    properties:\n      uri: ${MI_TEST_UNSET}\n      warehouse: w\n")
    monkeypatch.delenv("MI_TEST_UNSET", raising=False)
    with pytest.raises(ConfigError, match="MI_TEST_UNSET is not set"):
        load_catalog("x", config_path=conf)


def test_change_files_follow_amoro_names_offsets_and_buckets(tmp_path: Path) -> None:
    table = local_catalog(tmp_path).create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    with table.new_transaction() as txn:
        txn.write(
            changes(
                [("+I", k, "a", k, 1.0) for k in range(20)]
                + [("-U", 3, "a", 3, 1.0), ("+U", 3, "b", 4, 2.0), ("-D", 5, "a", 5, 1.0)]
            )
        )
    assert table.change_store is not None
    paths = table.change_store.inspect.files().column("file_path").to_pylist()
    pattern = re.compile(r"/data/(\d+)-(I|ED)-0-00000-0-\d+-\d{5}\.parquet$")
    assert all(pattern.search(p) for p in paths), paths
    for path in paths:
        node, _ = pattern.search(path).groups()  # type: ignore[union-attr]
        rows = pq.read_table(path.removeprefix("file://"))
        field = rows.schema.field("_file_offset")
        assert field.metadata[b"PARQUET:field_id"] == str(FILE_OFFSET_FIELD_ID).encode()
        expected_nodes = 4 + (key_hash([rows.column("id")]) & 3)
        assert set(expected_nodes.tolist()) == {int(node)}
    deleted = pa.concat_tables([pq.read_table(p.removeprefix("file://")) for p in paths if "-ED-" in p])
    assert sorted(zip(deleted.column("id").to_pylist(), deleted.column("_file_offset").to_pylist(), strict=True)) == [
        (3, 21),
        (5, 22),
    ]
    inserted = pa.concat_tables([pq.read_table(p.removeprefix("file://")) for p in paths if "-I-" in p])
    offsets = dict(zip(inserted.column("id").to_pylist(), inserted.column("_file_offset").to_pylist(), strict=False))
    assert offsets[0] == 1
    assert offsets[19] == 20
    assert sorted(
        o for i, o in zip(inserted.column("id").to_pylist(), inserted.column("_file_offset").to_pylist(), strict=True) if i == 3
    ) == [4, 21]


def test_bulk_overwrite_records_optimized_sequence_and_hides_older_changes(tmp_path: Path) -> None:
    table: MixedTable = local_catalog(tmp_path).create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    with table.new_transaction() as txn:
        txn.write(changes([("+I", 1, "a", 1, 1.0), ("+I", 2, "a", 2, 2.0)]))
    table.bulk_load(changes([("+I", 7, "z", 7, 7.0)]).drop_columns(["_change_action"]), overwrite=True)
    assert rows_of(table.scan().to_arrow()) == [(7, "z", 7, 7.0)]
    base = table.base_store
    assert read_optimized_sequence(base, base.current_snapshot()) == {"": 1}
    assert base.current_snapshot().summary["optimized-sequence.exist"] == "true"  # type: ignore[union-attr]
    with table.new_transaction() as txn:
        txn.write(changes([("-D", 7, "z", 7, 7.0), ("+I", 8, "y", 8, 8.0)]))
    assert rows_of(table.scan().to_arrow()) == [(8, "y", 8, 8.0)]


def test_bulk_append_rows_survive_earlier_deletes_of_their_key(tmp_path: Path) -> None:
    table = local_catalog(tmp_path).create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    with table.new_transaction() as txn:
        txn.write(changes([("+I", 1, "a", 1, 1.0), ("-D", 1, "a", 1, 1.0)]))
    table.bulk_load(changes([("+I", 1, "b", 2, 2.0)]).drop_columns(["_change_action"]))
    assert rows_of(table.scan().to_arrow()) == [(1, "b", 2, 2.0)]
    assert all("-B-1-" in p for p in table.base_store.inspect.files().column("file_path").to_pylist())

"""Memoised Avro readers and writers (compat): same files, and one build per schema."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic_core import to_json
from pyiceberg.avro.file import AvroFile
from pyiceberg.manifest import (
    MANIFEST_LIST_FILE_SCHEMAS,
    ManifestEntry,
    ManifestFile,
    ManifestWriterV2,
    data_file_with_partition,
    manifest_entry_schema_with_data_file,
)
from pyiceberg.utils.schema_conversion import AvroSchemaConversion

from mixed_iceberg._pyiceberg import apply_patches
from mixed_iceberg._pyiceberg.patches import AVRO_CACHE, MANIFEST_LISTS
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog, rows_of


def _commit(table, ids: range) -> None:  # type: ignore[no-untyped-def]
    for i in ids:
        with table.new_transaction(("w", i)) as txn:
            txn.write(changes([("+I", i, "abc"[i % 3], i, float(i))]))


def test_repeated_commits_reuse_avro_readers_and_writers(tmp_path: Path) -> None:
    table = local_catalog(tmp_path).create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    _commit(table, range(3))
    hits, misses = AVRO_CACHE.hits, AVRO_CACHE.misses
    _commit(table, range(3, 6))
    assert AVRO_CACHE.misses == misses  # nothing built again for the same schemas
    assert AVRO_CACHE.hits > hits
    assert [r[0] for r in rows_of(table.scan().to_arrow())] == list(range(6))


def test_files_carry_pyiceberg_schema_and_read_back(tmp_path: Path) -> None:
    # two tables, partitioned differently: their manifests have different schemas
    catalog = local_catalog(tmp_path)
    plain = catalog.create_table("db.plain", ORDERS_SCHEMA, primary_key=["id"])
    parted = catalog.create_table("db.parted", ORDERS_SCHEMA, primary_key=["id"], partition_by=["cat"])
    for table in (plain, parted, plain, parted):
        _commit(table, range(2))
    for table, partition_fields in ((plain, 0), (parted, 1)):
        store = table.change_store
        assert store is not None
        snapshot = store.refresh().current_snapshot()
        assert snapshot is not None
        manifests = snapshot.manifests(store.io)
        with AvroFile[ManifestFile](store.io.new_input(snapshot.manifest_list)) as reader:
            expected = json.dumps(AvroSchemaConversion().iceberg_to_avro(reader.schema, schema_name="manifest_file"))
            assert json.loads(reader.header.meta["avro.schema"]) == json.loads(expected)
        entries: list[ManifestEntry] = [e for m in manifests for e in m.fetch_manifest_entry(store.io)]
        assert len(entries) == 2  # one file per commit (the second round replays: no-ops)
        assert all(len(e.data_file.partition) == partition_fields for e in entries)
        assert sorted(r[0] for r in rows_of(table.scan().to_arrow())) == [0, 1]


def test_manifest_headers_are_pyiceberg_s(tmp_path: Path) -> None:
    table = local_catalog(tmp_path).create_table("db.t", ORDERS_SCHEMA, primary_key=["id"], partition_by=["cat"])
    _commit(table, range(4))
    store = table.change_store
    assert store is not None
    snapshot = store.refresh().current_snapshot()
    assert snapshot is not None
    for manifest in snapshot.manifests(store.io):
        with AvroFile[ManifestEntry](store.io.new_input(manifest.manifest_path)) as reader:
            meta = reader.header.meta
        assert meta["schema"] == store.schema().model_dump_json()
        assert meta["partition-spec"] == to_json(store.spec().fields).decode("utf-8")
        assert (meta["partition-spec-id"], meta["format-version"]) == (str(store.spec().spec_id), "2")
        writer = ManifestWriterV2(store.spec(), store.schema(), store.io.new_output(str(tmp_path / "x.avro")), 1, "deflate")
        fresh = manifest_entry_schema_with_data_file(2, data_file_with_partition(store.spec().partition_type(store.schema()), 2))
        assert writer._with_partition(2) == fresh
        assert json.loads(meta["avro.schema"]) == AvroSchemaConversion().iceberg_to_avro(fresh, schema_name="manifest_entry")


def test_kept_manifest_lists_equal_the_files(tmp_path: Path) -> None:
    props = {"commit.manifest.min-count-to-merge": "3"}  # merged lists too
    table = local_catalog(tmp_path).create_table("db.t", ORDERS_SCHEMA, primary_key=["id"], properties=props)
    _commit(table, range(7))
    store = table.change_store
    assert store is not None
    store.refresh()
    for snapshot in store.metadata.snapshots:
        kept = MANIFEST_LISTS.peek(snapshot.manifest_list)
        assert kept is not None, "the commit that wrote the list kept its manifests"
        with AvroFile[ManifestFile](
            store.io.new_input(snapshot.manifest_list), MANIFEST_LIST_FILE_SCHEMAS[2], read_types={-1: ManifestFile}
        ) as reader:
            on_disk = list(reader)
        assert list(kept) == on_disk  # sequence numbers as assigned in the file
        assert all(m.sequence_number >= 0 and m.min_sequence_number >= 0 for m in kept)
        assert snapshot.manifests(store.io) == on_disk
    hits = MANIFEST_LISTS.hits
    snapshot = store.current_snapshot()
    assert snapshot is not None
    snapshot.manifests(store.io)
    assert MANIFEST_LISTS.hits == hits + 1  # not read again


def _spec_varint(value: int) -> bytes:
    """The Avro spec's long encoding, written out: zigzag, then 7 bits a byte, low bits first."""
    zigzag = value * 2 if value >= 0 else -value * 2 - 1
    out = []
    while True:
        low, zigzag = zigzag & 0x7F, zigzag >> 7
        out.append(low | (0x80 if zigzag else 0))
        if not zigzag:
            return bytes(out)


def test_varints_are_the_avro_spec_s_and_read_back() -> None:
    """The one-piece ``write_int`` (patches._whole_varints) writes the bytes the spec defines,
    at every byte-length boundary and the ends of the long range, and pyiceberg reads them back."""
    import io

    from pyiceberg.avro.decoder import new_decoder
    from pyiceberg.avro.encoder import BinaryEncoder

    edges = [0, 1, -1, 63, -64, 64, -65, 127, 128, 8191, -8192, 8192, 2**31 - 1, -(2**31), 2**62, -(2**63), 2**63 - 1]
    values = edges + [(-1) ** k * 3**k for k in range(40)]
    apply_patches()  # as every catalog does
    assert BinaryEncoder.write_int.__module__ == "mixed_iceberg._pyiceberg.patches"
    stream = io.BytesIO()
    encoder = BinaryEncoder(stream)
    for value in values:
        encoder.write_int(value)
    assert stream.getvalue() == b"".join(_spec_varint(v) for v in values)
    decoder = new_decoder(stream.getvalue())
    assert [decoder.read_int() for _ in values] == values


def test_statistics_maps_are_written_as_pyiceberg_reads_them() -> None:
    """The one-piece ``MapWriter.write`` (patches._whole_varints) for int keys and long or binary
    values: the spec's bytes (a block count, the pairs, an empty block), read back by pyiceberg's
    map reader; other maps, and empty ones, keep pyiceberg's writer."""
    import io

    from pyiceberg.avro.decoder import new_decoder
    from pyiceberg.avro.encoder import BinaryEncoder
    from pyiceberg.avro.reader import BinaryReader, IntegerReader, MapReader, StringReader
    from pyiceberg.avro.writer import BinaryWriter, IntegerWriter, MapWriter, StringWriter

    apply_patches()  # as every catalog does
    assert MapWriter.write.__module__ == "mixed_iceberg._pyiceberg.patches"
    longs = {1: 15_000, 2: 0, 3: 127, 40: 2**40, 1000: 2**63 - 1}  # counts and sizes: never negative
    binaries = {1: b"\x00\x01\x02", 2: b"", 3: "é".encode(), 64: bytes(range(200))}
    strings = {"a": "x", "b": "yz"}
    cases = [
        (MapWriter(IntegerWriter(), IntegerWriter()), MapReader(IntegerReader(), IntegerReader()), longs),
        (MapWriter(IntegerWriter(), BinaryWriter()), MapReader(IntegerReader(), BinaryReader()), binaries),
        (MapWriter(StringWriter(), StringWriter()), MapReader(StringReader(), StringReader()), strings),
        (MapWriter(IntegerWriter(), IntegerWriter()), MapReader(IntegerReader(), IntegerReader()), {}),
    ]
    for map_writer, map_reader, value in cases:
        stream = io.BytesIO()
        map_writer.write(BinaryEncoder(stream), value)
        written = stream.getvalue()
        if value and isinstance(map_writer.key_writer, IntegerWriter):
            pairs = b"".join(
                _spec_varint(k) + (_spec_varint(v) if isinstance(v, int) else _spec_varint(len(v)) + v) for k, v in value.items()
            )
            assert written == _spec_varint(len(value)) + pairs + b"\x00"
        assert map_reader.read(new_decoder(written)) == value
    # A negative long too (pyiceberg's reader reads those back unsigned, so bytes only).
    stream = io.BytesIO()
    MapWriter(IntegerWriter(), IntegerWriter()).write(BinaryEncoder(stream), {3: -1, 4: -(2**63)})
    assert (
        stream.getvalue()
        == b"".join([_spec_varint(2), _spec_varint(3), _spec_varint(-1), _spec_varint(4)]) + _spec_varint(-(2**63)) + b"\x00"
    )

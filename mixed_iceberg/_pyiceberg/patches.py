"""Narrow, tested adjustments to pyiceberg 0.12 that Amoro's format needs.

pyiceberg 0.12 validates statistics blob types against a closed list (theta sketches and
deletion vectors). Amoro >= 0.6 attaches ``optimized-sequence`` and ``base-optimized-time``
blobs to BaseStore snapshots, so without this pyiceberg cannot even load a table that Amoro
(or we) optimized. The Iceberg spec leaves blob types open; we widen the field to ``str``.

pyiceberg 0.12 also ends every metadata update with a deep copy of the whole metadata
(iceberg-python #2673), three times per commit, at a cost that grows with the history.
:func:`updated_metadata` applies the same updates without that copy.

pyiceberg 0.12 builds the Avro readers and writers of every manifest and manifest list it
opens from the schema, by walking it, and converts the schema to and from Avro's JSON each
time, a visible share of a small commit (one manifest and one manifest list written, the parent's
manifest list read; the commit's components: ``.venv/bin/python -m bench.commit_profile``,
``bench/results/commit_profile-2026-12-06-4647a3f.json``). Readers and writers are stateless
(frozen, or read-only after construction), so :func:`apply` memoises them by schema, with the schema's own JSON as the key.

pyiceberg 0.12 also reads a snapshot's manifest list again on every ``Snapshot.manifests`` call
(each commit reads its parent's, which it wrote itself a moment before). Manifest lists are
immutable files written once under a unique name, so :data:`MANIFEST_LISTS` keeps the manifests
of the newest lists by path: the ones a commit writes (as the file holds them: sequence numbers
assigned) and the ones read.

pyiceberg 0.12's Cython Avro decoder reads every ``double`` at single precision
(``CythonBinaryDecoder.read_double`` is declared ``cpdef float``; fixed by
apache/iceberg-python#3808, after 0.12). Manifests hold doubles as the partition values of
identity fields over ``double`` columns: 0.1 read back as 0.10000000149011612, so a filter
``x = 0.1`` pruned the file that holds the row, and the partition's path (the key of its
optimized sequence) differed from the one written. ``DoubleReader`` reads the 8 bytes itself.

pyiceberg 0.12's ``BinaryEncoder.write_int`` writes a varint one byte at a time, a new
``bytes`` object and a stream write per byte: the hottest function of both a streaming commit
and an optimizer commit (every manifest entry is some thirty ints). :func:`_whole_varints`
builds each varint in one buffer and writes it once, the same bytes (2 to 3.5 times faster).
The column-statistics maps of a manifest entry (int keys, long or binary values: six of them,
most of an entry's bytes) are written the same way, a map in one piece (three times faster).
"""

from __future__ import annotations

import json
import struct
from datetime import datetime
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_json
from pyiceberg import manifest
from pyiceberg import table as table_models
from pyiceberg.avro import encoder, reader, resolver, writer
from pyiceberg.avro import file as avro_file
from pyiceberg.avro.codecs import AVRO_CODEC_KEY, CODEC_MAPPING_ICEBERG_TO_AVRO
from pyiceberg.catalog import rest
from pyiceberg.schema import Schema
from pyiceberg.table import metadata, statistics, update
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.update import TableUpdate
from pyiceberg.typedef import EMPTY_DICT
from pyiceberg.utils.datetime import datetime_to_millis
from pyiceberg.utils.schema_conversion import AvroSchemaConversion

from mixed_iceberg.caching import IdentityCache, LruCache

__all__ = ["AVRO_CACHE", "MANIFEST_LISTS", "apply", "updated_metadata"]

_applied = False


def apply() -> None:
    """Widen ``BlobMetadata.type`` to any string, and the rest above (idempotent)."""
    global _applied
    if _applied:
        return
    statistics.BlobMetadata.model_fields["type"].annotation = str
    # Every model that embeds BlobMetadata caches a validator built from the old field: the
    # metadata models, the updates, and the responses that carry metadata (a REST catalog's
    # LoadTable/CreateTable response, pyiceberg.catalog.rest; its commit response, pyiceberg.table).
    for module in (statistics, metadata, update, table_models, rest):
        for value in list(vars(module).values()):
            if isinstance(value, type) and issubclass(value, BaseModel) and value.__module__ == module.__name__:
                value.model_rebuild(force=True)
    _memoise_avro()
    _keep_manifest_lists()
    _full_precision_doubles()
    _whole_varints()
    _applied = True


#: The memoised Avro readers, writers, header schemas and schema JSON (hits and misses are counted).
AVRO_CACHE: LruCache[Any, Any] = LruCache(256)
_BY_IDENTITY: IdentityCache[Any] = IdentityCache(1024)


def _schema_key(schema: Any) -> tuple[str, str]:
    # Field ids, names, types and optionality: everything a reader or writer depends on.
    key: tuple[str, str] = _BY_IDENTITY.get_or_build((schema,), lambda: (type(schema).__name__, schema.model_dump_json()))
    return key


def _memoise_avro() -> None:
    resolve_writer, construct_writer = resolver.resolve_writer, resolver.construct_writer
    resolve_reader, construct_reader = resolver.resolve_reader, resolver.construct_reader

    def memo_resolve_writer(record_schema: Any, file_schema: Any) -> Any:
        key = ("resolve_writer", _schema_key(record_schema), _schema_key(file_schema))
        return AVRO_CACHE.get_or_build(key, lambda: resolve_writer(record_schema, file_schema))

    def memo_construct_writer(file_schema: Any) -> Any:
        return AVRO_CACHE.get_or_build(("construct_writer", _schema_key(file_schema)), lambda: construct_writer(file_schema))

    def memo_resolve_reader(
        file_schema: Any, read_schema: Any, read_types: Any = EMPTY_DICT, read_enums: Any = EMPTY_DICT
    ) -> Any:
        key = (
            "resolve_reader",
            _schema_key(file_schema),
            _schema_key(read_schema),
            tuple(sorted(read_types.items())),
            tuple(sorted(read_enums.items())),
        )
        return AVRO_CACHE.get_or_build(key, lambda: resolve_reader(file_schema, read_schema, read_types, read_enums))

    def memo_construct_reader(file_schema: Any, read_types: Any = EMPTY_DICT) -> Any:
        key = ("construct_reader", _schema_key(file_schema), tuple(sorted(read_types.items())))
        return AVRO_CACHE.get_or_build(key, lambda: construct_reader(file_schema, read_types))

    def memo_get_schema(header: avro_file.AvroFileHeader) -> Schema:
        text = header.meta.get(avro_file._SCHEMA_KEY)
        if text is None:
            return get_schema(header)  # raises pyiceberg's error
        # Schemas are frozen models: every reader of a file with this header may share one.
        schema: Schema = AVRO_CACHE.get_or_build(("schema", text), lambda: get_schema(header))
        return schema

    def memo_header_json(file_schema: Schema, schema_name: str) -> str:
        key = ("header", _schema_key(file_schema), schema_name)
        text: str = AVRO_CACHE.get_or_build(
            key, lambda: json.dumps(AvroSchemaConversion().iceberg_to_avro(file_schema, schema_name=schema_name))
        )
        return text

    def write_header(self: avro_file.AvroOutputFile[Any]) -> None:
        # pyiceberg 0.12's AvroOutputFile._write_header, with the schema JSON memoised.
        from pyiceberg.table import TableProperties

        codec_name = self.metadata.get(AVRO_CODEC_KEY, TableProperties.WRITE_AVRO_COMPRESSION_DEFAULT)
        if avro_codec_name := CODEC_MAPPING_ICEBERG_TO_AVRO.get(codec_name):
            codec_name = avro_codec_name
        json_schema = memo_header_json(self.file_schema, self.schema_name)
        meta = {**self.metadata, avro_file._SCHEMA_KEY: json_schema, AVRO_CODEC_KEY: codec_name}
        header = avro_file.AvroFileHeader(avro_file.MAGIC, meta, self.sync_bytes)
        memo_construct_writer(avro_file.META_SCHEMA).write(self.encoder, header)

    with_partition = manifest.ManifestWriter._with_partition

    def memo_with_partition(self: manifest.ManifestWriter, format_version: Any) -> Schema:
        # The spec and schema come from the table's metadata, shared by successive commits.
        schema: Schema = _BY_IDENTITY.get_or_build(
            (self._spec, self._schema, format_version), lambda: with_partition(self, format_version)
        )
        return schema

    def memo_meta(self: manifest.ManifestWriter) -> dict[str, str]:
        schema_json, spec_json = _BY_IDENTITY.get_or_build(
            (self._spec, self._schema, "meta"),
            lambda: (self._schema.model_dump_json(), to_json(self._spec.fields).decode("utf-8")),
        )
        return {  # pyiceberg 0.12's ManifestWriter._meta, with the JSON kept
            "schema": schema_json,
            "partition-spec": spec_json,
            "partition-spec-id": str(self._spec.spec_id),
            "format-version": str(self.version),
            AVRO_CODEC_KEY: self._compression,
        }

    get_schema = avro_file.AvroFileHeader.get_schema
    # pyiceberg.avro.file looks these up in its own namespace when it opens a file.
    replacements: dict[object, dict[str, object]] = {
        avro_file: {
            "resolve_writer": memo_resolve_writer,
            "construct_writer": memo_construct_writer,
            "resolve_reader": memo_resolve_reader,
            "construct_reader": memo_construct_reader,
        },
        avro_file.AvroFileHeader: {"get_schema": memo_get_schema},
        avro_file.AvroOutputFile: {"_write_header": write_header},
        manifest.ManifestWriter: {"_with_partition": memo_with_partition, "_meta": property(memo_meta)},
    }
    for owner, attributes in replacements.items():
        for name, value in attributes.items():
            setattr(owner, name, value)


def updated_metadata(
    base: TableMetadata, updates: tuple[TableUpdate, ...], metadata_location: str | None = None
) -> TableMetadata:
    """``base`` with ``updates`` applied, as pyiceberg's ``update_table_metadata``, minus its deep copy.

    The copy is defensive only: metadata models are frozen and every update builds new
    lists and dicts (pyiceberg 0.12's ``_apply_table_update``), so the result may share the
    unchanged parts with ``base``. ``base`` itself is returned when there is nothing to apply.
    """
    if not updates:
        return base
    context = update._TableMetadataUpdateContext()
    new = base
    for change in updates:
        new = update._apply_table_update(change, new, context)
    if context.has_changes():
        if metadata_location:
            new = update._update_table_metadata_log(new, metadata_location, base.last_updated_ms)
        if base.last_updated_ms == new.last_updated_ms:
            new = new.model_copy(update={"last_updated_ms": datetime_to_millis(datetime.now().astimezone())})
    new.spec().check_compatible(new.schema())
    new.sort_order().check_compatible(new.schema())
    return new


#: Manifests of the newest manifest lists, by the list's path.
MANIFEST_LISTS: LruCache[str, tuple[Any, ...]] = LruCache(256)


def _keep_manifest_lists() -> None:
    read_list = manifest._manifests

    def kept_manifests(io: Any, manifest_list: str) -> tuple[manifest.ManifestFile, ...]:
        manifests: tuple[manifest.ManifestFile, ...] = MANIFEST_LISTS.get_or_build(
            manifest_list, lambda: read_list(io, manifest_list)
        )
        return manifests

    def add_manifests(self: manifest.ManifestListWriter, manifest_files: list[manifest.ManifestFile]) -> Any:
        # pyiceberg 0.12's add_manifests, keeping the manifests as written.
        prepared = [self.prepare_manifest(manifest_file) for manifest_file in manifest_files]
        self._writer.write_block(prepared)
        location = self._output_file.location
        kept = MANIFEST_LISTS.peek(location) or ()  # a second block of the same list
        shared = tuple(manifest._manifest_cache.get_or_cache(m) for m in prepared)
        MANIFEST_LISTS.put(location, kept + shared)
        return self

    from pyiceberg.table import snapshots

    for owner in (manifest, snapshots):
        setattr(owner, "_manifests", kept_manifests)  # noqa: B010  (mypy: a module attribute)
    setattr(manifest.ManifestListWriter, "add_manifests", add_manifests)  # noqa: B010  (mypy: a method)


_DOUBLE = struct.Struct("<d")


def _full_precision_doubles() -> None:
    def read_double(self: reader.DoubleReader, decoder: Any) -> float:
        # pyiceberg 0.12's DoubleReader.read, without the Cython decoder's float narrowing.
        value: float = _DOUBLE.unpack(decoder.read(8))[0]
        return value

    setattr(reader.DoubleReader, "read", read_double)  # noqa: B010  (mypy: a method)


#: The one-byte varints, zigzag values 0..127 (ints -64..63).
_ONE_BYTE = tuple(bytes([value]) for value in range(0x80))


def _append_varint(out: bytearray, integer: int) -> None:
    """Append Avro's encoding of a long: zigzag, then 7 bits a byte, low bits first."""
    datum = (integer << 1) ^ (integer >> 63)
    while datum > 0x7F:
        out.append((datum & 0x7F) | 0x80)
        datum >>= 7
    out.append(datum)


#: Map value writers :func:`_whole_varints` writes in one piece (statistics maps' values).
_ONE_PIECE_VALUES = (writer.IntegerWriter, writer.BinaryWriter)


def _whole_varints() -> None:
    def write_int(self: encoder.BinaryEncoder, integer: int) -> None:
        # pyiceberg 0.12's BinaryEncoder.write_int, written in one piece.
        datum = (integer << 1) ^ (integer >> 63)
        if datum < 0x80:
            self.write(_ONE_BYTE[datum])
            return
        out = bytearray()
        _append_varint(out, integer)
        self.write(bytes(out))

    map_write = writer.MapWriter.write

    def write_map(self: writer.MapWriter, encoder_: encoder.BinaryEncoder, val: dict[Any, Any]) -> None:
        # pyiceberg 0.12's MapWriter.write (one block: its count, the pairs, an empty block),
        # in one piece for the statistics maps' int keys and long or binary values.
        values = type(self.value_writer)
        if not val or type(self.key_writer) is not writer.IntegerWriter or values not in _ONE_PIECE_VALUES:
            map_write(self, encoder_, val)
            return
        out = bytearray()
        _append_varint(out, len(val))
        for key, value in val.items():
            _append_varint(out, key)
            if values is writer.IntegerWriter:
                _append_varint(out, value)
            else:  # BinaryWriter: the length, then the bytes
                _append_varint(out, len(value))
                out += value
        out.append(0)
        encoder_.write(bytes(out))

    setattr(encoder.BinaryEncoder, "write_int", write_int)  # noqa: B010  (mypy: a method)
    setattr(writer.MapWriter, "write", write_map)  # noqa: B010  (mypy: a method)

"""Debezium's JSON encodings -> the table's Arrow types, column-wise. Pure: no I/O.

Debezium (with Kafka Connect's JsonConverter) writes some types in encodings JSON can carry:

==================================  =======================  ===================================
Debezium (PostgreSQL source)        JSON                     table type (Arrow)
==================================  =======================  ===================================
``Decimal`` (``numeric(p, s)``)     base64 string            ``decimal128(p, s)``
bytes (``bytea``)                   base64 string            ``binary`` / ``large_binary``
``Uuid`` (``uuid``)                 string ``8-4-4-4-12``    ``string``
``ZonedTimestamp`` (timestamptz)    ISO-8601 string (UTC)    ``timestamp(us, tz=UTC)``
``MicroTimestamp`` (timestamp)      int64 microseconds       ``timestamp(us)``
``MicroTime`` (time)                int64 microseconds       ``time64(us)``
``Date`` (date)                     int32 days               ``date32``
==================================  =======================  ===================================

That table is what a message without a schema (``schemas.enable=false``) is read as: nothing
in it says the unit. A message in Kafka Connect's envelope names each column's semantic type,
and :class:`Encoding` is what :mod:`.connect_schema` makes of it: milliseconds
(``io.debezium.time.Timestamp`` / ``Time``, Kafka Connect's ``Timestamp`` / ``Time``),
micro- or nanoseconds, days, ISO strings, decimals as text (``decimal.handling.mode=string``).

The decimal is the unscaled value as big-endian two's complement bytes (Java's
``BigInteger.toByteArray``), its scale the column's (``decimal.handling.mode=precise``).
:func:`debezium_json_type` says what ``pyarrow.json`` reads a column as, :func:`from_debezium`
turns what it read into the table's type. Every decoder works on whole buffers with NumPy:
no per-value Python. Malformed values raise ``pyarrow.ArrowInvalid`` (the parser dead-letters
the message that holds one); a type no encoding maps to raises
:class:`~mixed_iceberg.exceptions.UnsupportedColumnTypeError`.

>>> import pyarrow as pa
>>> from_debezium(pa.array(["AOU=", None]), pa.decimal128(5, 2)).to_pylist()
[Decimal('2.29'), None]
>>> from_debezium(pa.array(["3q2+7w=="]), pa.binary()).to_pylist()
[b'\\xde\\xad\\xbe\\xef']
"""

from __future__ import annotations

import enum

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from mixed_iceberg.exceptions import UnsupportedColumnTypeError

__all__ = [
    "Encoding",
    "base64_decode",
    "check_debezium_schema",
    "debezium_json_type",
    "decimal_from_bytes",
    "from_debezium",
]

_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_PAD = ord("=")
#: base64 byte -> its 6 bits; 64 for the padding '=', 255 for a byte outside the alphabet.
_SEXTET = np.full(256, 255, np.uint8)
_SEXTET[np.frombuffer(_ALPHABET, np.uint8)] = np.arange(64, dtype=np.uint8)
_SEXTET[_PAD] = 64
_DECIMAL_BYTES = 16  # decimal128: precision 38 at most, as in Iceberg
_SUPPORTED = (
    "boolean, integers, floats, string, decimal128, binary, fixed, date, time, timestamp, "
    "timestamptz, and lists and structs of booleans, numbers and strings"
)


class Encoding(enum.Enum):
    """How a column's values are written in a message, as its Kafka Connect schema says.

    ``None`` in place of an encoding means the message has no schema: the defaults of the
    module docstring's table (micro- for timestamps and times, days, base64, ISO strings)."""

    DAYS = "days"  # io.debezium.time.Date, org.apache.kafka.connect.data.Date: int32
    MILLIS = "millis"  # io.debezium.time.Timestamp / Time, Connect's Timestamp / Time
    MICROS = "micros"  # io.debezium.time.MicroTimestamp / MicroTime
    NANOS = "nanos"  # io.debezium.time.NanoTimestamp / NanoTime
    ISO = "iso"  # io.debezium.time.ZonedTimestamp: ISO-8601 with an offset
    DECIMAL_BYTES = "decimal-bytes"  # Connect's Decimal: base64 of the unscaled value
    DECIMAL_TEXT = "decimal-text"  # decimal.handling.mode=string: "-12345.67"
    BASE64 = "base64"  # Connect's bytes: base64 (binary.handling.mode=bytes)


_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
_UNIT_PER_SECOND = {Encoding.MILLIS: 1_000, Encoding.MICROS: 1_000_000, Encoding.NANOS: 1_000_000_000}
#: The fractional digits of a second each timestamp unit holds (ISO strings with more are cut).
_DIGITS = {"s": 0, "ms": 3, "us": 6, "ns": 9}


# -- buffers --------------------------------------------------------------------------------------
def _parts(values: pa.Array) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64], pa.Buffer | None]:
    """The bytes of a string/binary array (nulls as empty values), each value's offsets into them
    (``n + 1``, starting at 0), and a validity bitmap for ``n`` values at offset 0 (None: no nulls)."""
    validity = None
    if values.null_count:
        valid = pc.is_valid(values).to_numpy(zero_copy_only=False)
        validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
        values = pc.fill_null(values, pa.scalar(b"" if pa.types.is_binary(values.type) else "", values.type))
    wide = values.cast(pa.large_binary())
    offsets = np.frombuffer(wide.buffers()[1], np.int64)[wide.offset : wide.offset + len(wide) + 1]
    buffer = wide.buffers()[2]
    data = np.frombuffer(buffer, np.uint8) if buffer is not None else np.zeros(0, np.uint8)
    if len(offsets) == 0:
        return np.zeros(0, np.uint8), np.zeros(1, np.int64), validity
    return data[offsets[0] : offsets[-1]], offsets - offsets[0], validity


def _first_bad(mask: npt.NDArray[np.bool_]) -> int:
    return int(np.flatnonzero(mask)[0])


# -- decoders -------------------------------------------------------------------------------------
def base64_decode(values: pa.Array) -> pa.Array:
    """Standard, padded base64 (RFC 4648 section 4, as Java's ``Base64.getEncoder()`` writes)
    -> ``large_binary``; nulls stay null.

    Raises:
        pyarrow.ArrowInvalid: a value's length is not a multiple of 4, it holds a byte outside
            the alphabet, or '=' anywhere but as one or two bytes of padding at its end.
    """
    data, offsets, validity = _parts(values)
    n = len(offsets) - 1
    lengths = np.diff(offsets)
    ragged = lengths % 4 != 0
    if ragged.any():
        i = _first_bad(ragged)
        raise pa.ArrowInvalid(f"base64 value {i}: expected a length that is a multiple of 4, found {lengths[i]}")
    sextets = _SEXTET[data]
    if (sextets == 255).any():
        position = _first_bad(sextets == 255)
        raise pa.ArrowInvalid(f"base64: expected a byte of the base64 alphabet, found {bytes(data[position : position + 1])!r}")
    ends = offsets[1:]
    filled = lengths > 0
    last_pad = np.zeros(n, np.bool_)
    last_pad[filled] = data[ends[filled] - 1] == _PAD
    second_pad = np.zeros(n, np.bool_)
    second_pad[last_pad] = data[ends[last_pad] - 2] == _PAD
    pads = last_pad.astype(np.int64) + second_pad
    if np.count_nonzero(sextets == 64) != pads.sum():
        raise pa.ArrowInvalid("base64: expected '=' only as padding at the end of a value, found one inside")
    groups = np.where(sextets == 64, 0, sextets).astype(np.uint16).reshape(-1, 4)
    decoded = np.empty((len(groups), 3), np.uint8)
    decoded[:, 0] = ((groups[:, 0] << 2) | (groups[:, 1] >> 4)) & 0xFF
    decoded[:, 1] = ((groups[:, 1] << 4) | (groups[:, 2] >> 2)) & 0xFF
    decoded[:, 2] = ((groups[:, 2] << 6) | groups[:, 3]) & 0xFF
    flat = decoded.reshape(-1)
    if pads.any():  # the padding's bytes decode to zeros that are not part of the value
        keep = np.ones(len(flat), np.bool_)
        stop = ends // 4 * 3
        keep[stop[last_pad] - 1] = False
        keep[stop[second_pad] - 2] = False
        flat = flat[keep]
    out_offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths // 4 * 3 - pads, out=out_offsets[1:])
    return pa.Array.from_buffers(
        pa.large_binary(), n, [validity, pa.py_buffer(out_offsets), pa.py_buffer(np.ascontiguousarray(flat))]
    )


def decimal_from_bytes(values: pa.Array, kind: pa.Decimal128Type) -> pa.Array:
    """Big-endian two's complement unscaled values (binary) -> ``kind``, whose scale they have.

    Raises:
        pyarrow.ArrowInvalid: an empty value, one longer than 16 bytes, or a value with more
            digits than ``kind``'s precision.
    """
    data, offsets, validity = _parts(values)
    n = len(offsets) - 1
    lengths = np.diff(offsets)
    valid = np.ones(n, np.bool_) if validity is None else pc.is_valid(values).to_numpy(zero_copy_only=False)
    empty = valid & (lengths == 0)
    if empty.any():
        raise pa.ArrowInvalid(f"decimal value {_first_bad(empty)}: expected at least one byte, found none")
    if (lengths > _DECIMAL_BYTES).any():
        i = _first_bad(lengths > _DECIMAL_BYTES)
        raise pa.ArrowInvalid(f"decimal value {i}: expected at most {_DECIMAL_BYTES} bytes (precision 38), found {lengths[i]}")
    words = np.zeros((n, _DECIMAL_BYTES), np.uint8)
    starts = offsets[:-1]
    negative = np.zeros(n, np.bool_)
    negative[lengths > 0] = data[starts[lengths > 0]] >= 0x80
    words[negative] = 0xFF  # sign extension
    row = np.repeat(np.arange(n), lengths)
    position = np.arange(len(data)) - starts[row]
    words[row, lengths[row] - 1 - position] = data  # little-endian: the last byte first
    wide = pa.Array.from_buffers(pa.decimal128(38, kind.scale), n, [validity, pa.py_buffer(words)])
    if kind.precision < 38:
        return wide.cast(kind)  # checks the precision
    wide.validate(full=True)  # 16 bytes hold 39 digits: the full validation checks precision 38
    return wide


# -- the mapping ----------------------------------------------------------------------------------
def _plain(kind: pa.DataType) -> pa.DataType | None:
    """What ``pyarrow.json`` reads ``kind`` as when JSON carries it as itself (booleans,
    numbers, strings, and lists and structs of them), or None. Its reader takes no large
    lists (a table's list columns are large lists) and no maps: a JSON object's keys are read
    as a struct's fields, never as a map's keys."""
    if pa.types.is_boolean(kind) or pa.types.is_integer(kind) or pa.types.is_floating(kind):
        return kind
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_null(kind):
        return kind
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        element = _plain(kind.value_type)
        return pa.list_(kind.value_field.with_type(element)) if element is not None else None
    if pa.types.is_struct(kind):
        fields = [kind.field(i) for i in range(kind.num_fields)]
        types = [_plain(f.type) for f in fields]
        if any(t is None for t in types):
            return None
        return pa.struct([f.with_type(t) for f, t in zip(fields, types, strict=True)])
    return None


def debezium_json_type(kind: pa.DataType) -> pa.DataType:
    """What ``pyarrow.json`` reads a table column of type ``kind`` as in a Debezium message.

    Raises:
        UnsupportedColumnTypeError: no Debezium encoding maps to ``kind``.
    """
    if pa.types.is_date(kind):
        return pa.int32()
    if pa.types.is_timestamp(kind):
        return pa.string() if kind.tz is not None else pa.int64()
    if pa.types.is_time(kind):
        return pa.int64()
    if pa.types.is_decimal128(kind):
        return pa.string()
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind):
        return pa.string()
    if isinstance(kind, pa.BaseExtensionType):
        # The parser combines before and after images with compute kernels, which take no
        # extension types; Debezium's uuid is a string, and a string column keeps it as such.
        raise UnsupportedColumnTypeError(
            f"debezium-json: expected a column type of {_SUPPORTED}, found the extension type {kind}"
            f"{' (declare a uuid column as string)' if kind.extension_name == 'arrow.uuid' else ''}"
        )
    if pa.types.is_map(kind):
        raise UnsupportedColumnTypeError(
            f"debezium-json: expected a column type of {_SUPPORTED}, found the map {kind}: JSON carries a map as an "
            "object, which pyarrow's JSON reader reads only as a struct of known fields (declare a list of "
            "struct<key, value> and send the map as an array of such objects)"
        )
    plain = _plain(kind)
    if plain is not None:
        return plain
    raise UnsupportedColumnTypeError(f"debezium-json: expected a column type of {_SUPPORTED}, found {kind}")


def _rescaled(values: pa.Array, per_second: int, kind: pa.DataType) -> pa.Array:
    """Integer counts of ``1 / per_second`` seconds -> ``kind`` (a timestamp or time), floored
    to its unit: a nanosecond count lands on the microsecond at or before it, as Java's
    ``Instant.truncatedTo`` would (Arrow's cast would refuse the lost digits)."""
    counts = values.cast(pa.int64())
    target = _PER_SECOND[kind.unit]
    if target > per_second:
        counts = pc.multiply_checked(counts, target // per_second)  # raises on overflow
    elif target < per_second:
        floored = np.floor_divide(pc.fill_null(counts, 0).to_numpy(zero_copy_only=False), per_second // target)
        counts = pa.array(floored, pa.int64(), mask=pc.is_null(counts).to_numpy(zero_copy_only=False))
    storage = pa.int32() if pa.types.is_time32(kind) else pa.int64()
    return counts.cast(storage).cast(kind)


def _zoned(values: pa.Array, kind: pa.DataType) -> pa.Array:
    """ISO-8601 strings with an offset -> ``kind``, whatever their fractional digits (0 to 9)."""
    try:
        return values.cast(kind)
    except pa.ArrowInvalid:
        # Arrow parses at most the unit's digits (a timestamptz(7..9) of other sources has
        # more): cut the rest, which floors the instant as _rescaled does.
        digits = _DIGITS[kind.unit]
        cut = pc.replace_substring_regex(values, rf"(\.\d{{{digits}}})\d+" if digits else r"\.\d+", r"\1" if digits else "")
        return cut.cast(kind)


def from_debezium(values: pa.Array, kind: pa.DataType, encoding: Encoding | None = None) -> pa.Array:
    """``values`` as read for :func:`debezium_json_type` ``(kind)`` -> ``kind``.

    ``encoding``: what the message's schema says the values are (:mod:`.connect_schema` has
    checked that ``kind`` takes it); ``None``: the defaults of the module docstring.

    Raises:
        pyarrow.ArrowInvalid: a value that is not a valid encoding of ``kind``.
    """
    if encoding is Encoding.DECIMAL_TEXT:
        return values.cast(kind)  # checks precision and scale
    if encoding in _UNIT_PER_SECOND:
        return _rescaled(values, _UNIT_PER_SECOND[encoding], kind)
    if encoding is Encoding.ISO or (pa.types.is_timestamp(kind) and kind.tz is not None):
        return _zoned(values, kind)
    if pa.types.is_decimal128(kind):
        return decimal_from_bytes(base64_decode(values), kind)
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind):
        return base64_decode(values).cast(kind)
    if pa.types.is_timestamp(kind) and kind.tz is None and pa.types.is_integer(values.type):
        # MicroTimestamp: microseconds, whatever the table's unit.
        return values.cast(pa.timestamp("us")).cast(kind)
    if pa.types.is_time(kind) and pa.types.is_integer(values.type):
        return values.cast(pa.time64("us")).cast(kind)  # MicroTime
    return values.cast(kind)  # ZonedTimestamp (ISO-8601 with Z), dates, and the plain types


def check_debezium_schema(schema: pa.Schema, *, table: str) -> None:
    """Raise before a table is made (or read) from Debezium JSON if a column cannot be carried.

    Raises:
        UnsupportedColumnTypeError: naming the table, the column and its type.
    """
    for field in schema:
        try:
            debezium_json_type(field.type)
        except UnsupportedColumnTypeError as exc:
            raise UnsupportedColumnTypeError(f"table {table}: column {field.name!r}: {exc}") from exc

"""Amoro's primary-key hash, vectorized over Arrow arrays.

Amoro puts a row in tree node ``abs(Arrays.hashCode(pk)) & mask`` (``PrimaryKeyData.java``),
where ``pk`` holds the Java objects Iceberg's ``InternalRecordWrapper`` and Flink's
``RowDataWrapper`` return. Python files are only interchangeable with Java-written ones if
every key lands in the same node, so this module reproduces Java's ``hashCode`` bit for bit:

=============================================  ===============  ==========================
Arrow type                                     Java value       ``hashCode``
=============================================  ===============  ==========================
int8, int16, int32, uint8, uint16, date32      ``Integer``      the value (date: days)
int64; time, timestamp[s|ms|us] (as micros)    ``Long``         ``(int)(v ^ (v >>> 32))``
string, large_string, string_view              ``String``       over UTF-16 code units
bool                                           ``Boolean``      1231 / 1237
float16, float32 / float64                     ``Float``/...    ``floatToIntBits`` / ...
decimal128(p, s)                               ``BigDecimal``   ``31 * unscaled.hash + s``
binary, large_binary, fixed_size_binary        ``ByteBuffer``   bytes from the end, signed
uuid (``pa.uuid()``)                           ``UUID``         ``hi32 ^ lo32`` of msb^lsb
=============================================  ===============  ==========================

A uuid column must have the ``pa.uuid()`` type: as plain ``fixed_size_binary(16)`` it hashes
as a ``ByteBuffer`` (an Iceberg ``fixed(16)``). Amoro's Spark writer hashes uuids as strings;
this module follows the Flink and generic writers. Nanosecond times are refused: Iceberg
stores microseconds, and truncating silently could move keys between nodes.

Java ``int`` arithmetic wraps modulo 2**32, so every kernel works in ``uint32`` numpy arrays,
where wrapping is free and exact; no kernel loops over rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from mixed_iceberg.format.tree import check_mask

__all__ = ["bucket_index", "java_hash_codes", "key_hash", "tree_node_ids"]

Column: TypeAlias = pa.Array | pa.ChunkedArray
U32: TypeAlias = npt.NDArray[np.uint32]

_INT_MIN = np.int32(-(2**31))
_INT_MAX = np.int32(2**31 - 1)
_LOW32 = np.uint64(0xFFFFFFFF)
_MICROS_PER_UNIT = {"s": 1_000_000, "ms": 1_000, "us": 1}


def key_hash(columns: Sequence[Column]) -> npt.NDArray[np.int32]:
    """Amoro's ``PrimaryKeyData.hashCode()`` of every row: never negative.

    Args:
        columns: The primary-key columns in primary-key order, all of one length.

    Returns:
        ``abs(Arrays.hashCode(pk))`` per row, with ``Integer.MIN_VALUE`` mapped to
        ``Integer.MAX_VALUE`` as Amoro does.

    Raises:
        ValueError: If there are no columns, their lengths differ, or a type is unsupported.

    Example:
        >>> import pyarrow as pa
        >>> key_hash([pa.array([1, None], pa.int32()), pa.array(["a", "b"])]).tolist()
        [1089, 1059]
    """
    if not columns:
        raise ValueError("a primary key needs at least one column, found none")
    lengths = {len(column) for column in columns}
    if len(lengths) != 1:
        raise ValueError(f"primary-key columns must have one length, found lengths {sorted(lengths)}")
    h = np.ones(lengths.pop(), dtype=np.uint32)
    for column in columns:
        # Arrays.hashCode: h = 31 * h + element.hashCode(), null elements count 0.
        h = h * np.uint32(31) + java_hash_codes(column).view(np.uint32)
    signed = h.view(np.int32)
    return np.where(signed == _INT_MIN, _INT_MAX, np.abs(signed))


def bucket_index(columns: Sequence[Column], mask: int) -> npt.NDArray[np.int64]:
    """The tree-node index ``key_hash & mask`` of every row (``PrimaryKeyData.treeNode``).

    Args:
        columns: The primary-key columns in primary-key order.
        mask: ``bucket_count - 1``; must be ``2**h - 1``.
    """
    check_mask(mask)
    return key_hash(columns).astype(np.int64) & np.int64(mask)


def tree_node_ids(columns: Sequence[Column], mask: int) -> npt.NDArray[np.int64]:
    """The tree-node id ``mask + 1 + index`` of every row, as written into file names.

    Args:
        columns: The primary-key columns in primary-key order.
        mask: ``bucket_count - 1``; must be ``2**h - 1``.
    """
    return bucket_index(columns, mask) + np.int64(mask + 1)


def java_hash_codes(column: Column) -> npt.NDArray[np.int32]:
    """Java ``hashCode()`` of every element of one column; nulls give 0.

    Raises:
        ValueError: If Amoro's Java value class for the Arrow type is not known here.
    """
    if isinstance(column, pa.ChunkedArray):
        parts = [_array_hash(chunk) for chunk in column.chunks]
        merged = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint32)
        return merged.view(np.int32)
    return _array_hash(column).view(np.int32)


def _array_hash(arr: pa.Array) -> U32:
    out: U32
    if pa.types.is_dictionary(arr.type):
        codes = _array_hash(arr.dictionary)
        if len(codes) == 0:  # every index is null
            return np.zeros(len(arr), dtype=np.uint32)
        out = codes[np.asarray(arr.indices.fill_null(0))]
    else:
        out = _values_hash(arr)
    if arr.null_count:
        out = np.where(np.asarray(arr.is_null()), np.uint32(0), out)
    return out


def _values_hash(arr: pa.Array) -> U32:
    t = arr.type
    if pa.types.is_boolean(t):
        return np.where(_bits(arr), np.uint32(1231), np.uint32(1237))
    if pa.types.is_integer(t):
        if pa.types.is_signed_integer(t) and t.bit_width == 64:
            return _long_hash(_fixed(arr, np.int64))
        if t.bit_width <= 16 or (t.bit_width == 32 and pa.types.is_signed_integer(t)):
            # Flink widens TINYINT/SMALLINT to Integer; Iceberg has no narrower int.
            return _fixed(arr, np.dtype(t.to_pandas_dtype())).astype(np.int32).view(np.uint32)
    if pa.types.is_date32(t):
        return _fixed(arr, np.int32).view(np.uint32)
    if (pa.types.is_timestamp(t) or pa.types.is_time(t)) and t.unit in _MICROS_PER_UNIT:
        width = np.int64 if t.bit_width == 64 else np.int32
        return _long_hash(_fixed(arr, width).astype(np.int64) * np.int64(_MICROS_PER_UNIT[t.unit]))
    if pa.types.is_float16(t):
        return _values_hash(arr.cast(pa.float32()))
    if pa.types.is_float32(t):
        values = _fixed(arr, np.float32)
        # Float.hashCode is floatToIntBits: every NaN collapses to 0x7fc00000.
        return np.where(np.isnan(values), np.uint32(0x7FC00000), values.view(np.uint32))
    if pa.types.is_float64(t):
        values = _fixed(arr, np.float64)
        bits = np.where(np.isnan(values), np.int64(0x7FF8000000000000), values.view(np.int64))
        return _long_hash(bits)
    if pa.types.is_decimal128(t):
        return _decimal_hash(arr, t.scale)
    if pa.types.is_string_view(t):
        return _string_hash(arr.cast(pa.large_string()))
    if pa.types.is_binary_view(t):
        return _bytes_hash(*_offsets_and_data(arr.cast(pa.large_binary())))
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return _string_hash(arr)
    if isinstance(t, pa.UuidType):
        return _uuid_hash(arr.storage)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return _bytes_hash(*_offsets_and_data(arr))
    if pa.types.is_fixed_size_binary(t):
        width = t.byte_width
        data = _fixed(arr, np.uint8, per_value=width)
        return _bytes_hash(np.arange(len(arr) + 1, dtype=np.int64) * width, data)
    raise ValueError(
        f"cannot hash a primary-key column of Arrow type {t} as Amoro does; supported: "
        "int8/16/32/64, uint8/16, date32, time and timestamp in s/ms/us, bool, float16/32/64, "
        "decimal128, string, binary, fixed_size_binary, uuid"
    )


def _fixed(arr: pa.Array, dtype: npt.DTypeLike, per_value: int = 1) -> npt.NDArray[Any]:
    """The values buffer of a fixed-width array as numpy, zero-copy (null slots hold garbage)."""
    dt = np.dtype(dtype)
    count = len(arr) * per_value
    buf = arr.buffers()[1]
    if buf is None or count == 0:
        return np.zeros(count, dtype=dt)
    return np.frombuffer(buf, dtype=dt, count=count, offset=arr.offset * per_value * dt.itemsize)


def _bits(arr: pa.Array) -> npt.NDArray[np.bool_]:
    buf = arr.buffers()[1]
    if buf is None:
        return np.zeros(len(arr), dtype=bool)
    raw = np.frombuffer(buf, dtype=np.uint8)
    return np.unpackbits(raw, bitorder="little")[arr.offset : arr.offset + len(arr)].astype(bool)


def _long_hash(values: npt.NDArray[Any]) -> U32:
    """``Long.hashCode``: ``(int)(v ^ (v >>> 32))``."""
    v = values.view(np.uint64)
    return (v ^ (v >> np.uint64(32))).astype(np.uint32)


def _decimal_hash(arr: pa.Array, scale: int) -> U32:
    """``BigDecimal.hashCode`` = ``31 * BigInteger.hashCode(unscaled) + scale``.

    ``BigInteger.hashCode`` folds the big-endian 32-bit words of ``|unscaled|`` with
    ``h = 31 * h + word`` and multiplies by the sign; leading zero words add nothing, so all
    four words of the 128-bit value can be folded for every row.
    """
    words = _fixed(arr, np.dtype("<u8"), per_value=2).reshape(-1, 2)
    lo, hi = words[:, 0], words[:, 1]
    negative = (hi >> np.uint64(63)).astype(bool)
    # 128-bit two's-complement negation: invert both halves, carry into hi when lo was 0.
    abs_lo = np.where(negative, ~lo + np.uint64(1), lo)
    abs_hi = np.where(negative, ~hi + (lo == 0).astype(np.uint64), hi)
    h = np.zeros(len(arr), dtype=np.uint32)
    for word in (abs_hi >> np.uint64(32), abs_hi & _LOW32, abs_lo >> np.uint64(32), abs_lo & _LOW32):
        h = h * np.uint32(31) + word.astype(np.uint32)
    h = np.where(negative, np.uint32(0) - h, h)
    return h * np.uint32(31) + np.uint32(scale & 0xFFFFFFFF)


def _uuid_hash(storage: pa.Array) -> U32:
    """``UUID.hashCode``: ``hilo = msb ^ lsb``, then ``(int)(hilo >> 32) ^ (int) hilo``."""
    halves = _fixed(storage, np.dtype(">u8"), per_value=2).reshape(-1, 2)
    return _long_hash((halves[:, 0] ^ halves[:, 1]).astype(np.uint64))


def _offsets_and_data(arr: pa.Array) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8]]:
    """Offsets rebased to 0 and the bytes they index, for (large) string and binary arrays."""
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    dtype = np.dtype(np.int64 if large else np.int32)
    offsets_buf = arr.buffers()[1]
    if offsets_buf is None:
        return np.zeros(len(arr) + 1, dtype=np.int64), np.zeros(0, dtype=np.uint8)
    offsets = np.frombuffer(offsets_buf, dtype=dtype, count=len(arr) + 1, offset=arr.offset * dtype.itemsize).astype(np.int64)
    data_buf = arr.buffers()[2]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    return offsets - offsets[0], data[offsets[0] : offsets[-1]]


def _string_hash(arr: pa.Array) -> U32:
    """``String.hashCode``: ``h = 31 * h + c`` over UTF-16 code units, starting from 0."""
    if arr.null_count:
        # Null slots may cover arbitrary bytes; blank them so the buffer decodes.
        arr = arr.fill_null("")
    offsets, data = _offsets_and_data(arr)
    if data.size and data.max() >= 0x80:
        # UTF-16 units per UTF-8 byte: lead bytes of 4-byte sequences make a surrogate pair,
        # other lead bytes one unit, continuation bytes (10xxxxxx) none.
        units_per_byte = ((data & 0xC0) != 0x80).astype(np.int64) + (data >= 0xF0)
        offsets = np.concatenate(([0], np.cumsum(units_per_byte)))[offsets]
        text = data.tobytes().decode("utf-8")
        units: npt.NDArray[Any] = np.frombuffer(text.encode("utf-16-le"), dtype="<u2")
    else:
        units = data  # ASCII: one byte is one UTF-16 unit
    return _polynomial(units.astype(np.uint32), offsets, from_end=True)


def _bytes_hash(offsets: npt.NDArray[np.int64], data: npt.NDArray[Any]) -> U32:
    """``ByteBuffer.hashCode``: ``h = 1``, then ``h = 31 * h + b`` from the last byte back.

    Bytes are signed in Java, so ``0x80`` adds ``-128``.
    """
    lengths = np.diff(offsets)
    powers = _powers_of_31(int(lengths.max(initial=0)) + 1)
    signed = data.view(np.int8).astype(np.int32).view(np.uint32)
    seeded: U32 = powers[lengths]  # the initial h = 1, multiplied by 31 once per byte
    return seeded + _polynomial(signed, offsets, from_end=False)


def _polynomial(units: U32, offsets: npt.NDArray[np.int64], *, from_end: bool) -> U32:
    """Per segment, ``sum(unit * 31**e)`` modulo 2**32.

    ``e`` counts from the segment's last unit (``from_end``, String) or its first (ByteBuffer).
    Prefix sums over all units, differenced at the segment bounds, give every segment's sum in
    one pass; the subtraction is exact because both sides wrap modulo 2**32.
    """
    lengths = np.diff(offsets)
    if units.size == 0:
        return np.zeros(len(lengths), dtype=np.uint32)
    position = np.arange(units.size, dtype=np.int64)
    anchor = np.repeat(offsets[1:] - 1 if from_end else offsets[:-1], lengths)
    exponent = anchor - position if from_end else position - anchor
    terms = units * _powers_of_31(int(lengths.max()))[exponent]
    prefix: U32 = np.concatenate((np.zeros(1, dtype=np.uint32), np.cumsum(terms, dtype=np.uint32)))
    sums: U32 = prefix[offsets[1:]] - prefix[offsets[:-1]]
    return sums


def _powers_of_31(count: int) -> U32:
    """``31**0 .. 31**(count - 1)`` modulo 2**32."""
    powers = np.full(max(count, 1), 31, dtype=np.uint32)
    powers[0] = 1
    return np.cumprod(powers, dtype=np.uint32)

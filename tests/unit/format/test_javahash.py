"""Amoro's primary-key hash against values computed by real Java.

Every expected number below was printed by ``vectors/JavaHashVectors.java`` on JDK 17.0.15
(``javac -d /tmp/jhv JavaHashVectors.java && java -cp /tmp/jhv JavaHashVectors``); the Java
program builds each key from the same Java classes Amoro's key wrappers produce.
"""

from __future__ import annotations

import datetime as dt
import random
import shutil
import struct
import subprocess
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from mixed_iceberg.format import DataTreeNode, bucket_index, java_hash_codes, key_hash, tree_node_ids

VECTORS = Path(__file__).parent / "vectors" / "JavaHashVectors.java"

TS_2024 = dt.datetime(2024, 1, 15, 10, 30, 45, 123456)
UUID_EXAMPLE = uuid.UUID("123e4567-e89b-12d3-a456-426614174000")

# One key per case: a list of (Arrow type, value) columns, named as in JavaHashVectors.java.
CASES: dict[str, list[tuple[pa.DataType, Any]]] = {
    "int_zero": [(pa.int32(), 0)],
    "int_one": [(pa.int32(), 1)],
    "int_minus_one": [(pa.int32(), -1)],
    "int_42": [(pa.int32(), 42)],
    "int_max": [(pa.int32(), 2**31 - 1)],
    "int_min": [(pa.int32(), -(2**31))],
    "int_minus_100": [(pa.int32(), -100)],
    "int_hash_is_min_value": [(pa.int32(), 2147483617)],
    "tinyint_minus_5": [(pa.int8(), -5)],
    "smallint_30000": [(pa.int16(), 30000)],
    "long_zero": [(pa.int64(), 0)],
    "long_one": [(pa.int64(), 1)],
    "long_minus_one": [(pa.int64(), -1)],
    "long_max": [(pa.int64(), 2**63 - 1)],
    "long_min": [(pa.int64(), -(2**63))],
    "long_2pow32": [(pa.int64(), 2**32)],
    "long_big": [(pa.int64(), 123456789012345)],
    "long_negative": [(pa.int64(), -987654321098)],
    "str_empty": [(pa.string(), "")],
    "str_a": [(pa.string(), "a")],
    "str_hello": [(pa.string(), "hello")],
    "str_punctuation": [(pa.string(), "Hello, World!")],
    "str_accented": [(pa.string(), "café")],
    "str_accents": [(pa.string(), "naïve résumé")],
    "str_cjk": [(pa.string(), "中文字符")],
    "str_japanese": [(pa.string(), "日本語テキスト")],
    "str_emoji": [(pa.string(), "😀")],
    "str_emoji_inside": [(pa.string(), "a😀b")],
    "str_clef": [(pa.string(), "𝄞 music")],
    "str_long": [(pa.string(), "x" * 1000 + "ü")],
    "str_mixed": [(pa.string(), "Ünïcödé-😀-中")],
    "date_2024_01_15": [(pa.date32(), dt.date(2024, 1, 15))],
    "date_epoch": [(pa.date32(), dt.date(1970, 1, 1))],
    "date_1900_01_01": [(pa.date32(), dt.date(1900, 1, 1))],
    "date_9999_12_31": [(pa.date32(), dt.date(9999, 12, 31))],
    "ts_2024": [(pa.timestamp("us"), TS_2024)],
    "ts_epoch": [(pa.timestamp("us"), dt.datetime(1970, 1, 1))],
    "ts_pre_epoch": [(pa.timestamp("us"), dt.datetime(1900, 1, 1, 0, 0, 0, 1))],
    "tstz_2024_plus_2h": [(pa.timestamp("us", tz="UTC"), TS_2024.replace(tzinfo=dt.timezone(dt.timedelta(hours=2))))],
    "time_13_45_30": [(pa.time64("us"), dt.time(13, 45, 30, 123456))],
    "bool_true": [(pa.bool_(), True)],
    "bool_false": [(pa.bool_(), False)],
    "dec_123_45": [(pa.decimal128(5, 2), Decimal("123.45"))],
    "dec_minus_123_45": [(pa.decimal128(5, 2), Decimal("-123.45"))],
    "dec_zero_scale_2": [(pa.decimal128(10, 2), Decimal("0.00"))],
    "dec_38_digits": [(pa.decimal128(38, 9), Decimal("12345678901234567890123456789.123456789"))],
    "dec_minus_38_nines": [(pa.decimal128(38, 0), Decimal("-" + "9" * 38))],
    "dec_2pow64": [(pa.decimal128(38, 0), Decimal(2**64))],
    "dec_long_min": [(pa.decimal128(20, 0), Decimal(-(2**63)))],
    "dec_small": [(pa.decimal128(10, 4), Decimal("0.0001"))],
    "bin_empty": [(pa.binary(), b"")],
    "bin_123": [(pa.binary(), bytes([1, 2, 3]))],
    "bin_signed": [(pa.binary(), bytes([0xFF, 0x00, 0x7F, 0x80]))],
    "bin_hello": [(pa.binary(), b"hello")],
    "fixed_deadbeef": [(pa.binary(4), bytes([0xDE, 0xAD, 0xBE, 0xEF]))],
    "uuid_example": [(pa.uuid(), UUID_EXAMPLE.bytes)],
    "uuid_zero": [(pa.uuid(), bytes(16))],
    "uuid_ones": [(pa.uuid(), b"\xff" * 16)],
    "float_1_5": [(pa.float32(), 1.5)],
    "float_minus_zero": [(pa.float32(), -0.0)],
    "float_nan": [(pa.float32(), float("nan"))],
    "float_max": [(pa.float32(), 3.4028234663852886e38)],
    "double_1_5": [(pa.float64(), 1.5)],
    "double_minus_zero": [(pa.float64(), -0.0)],
    "double_nan": [(pa.float64(), float("nan"))],
    "double_pi": [(pa.float64(), 3.141592653589793)],
    "double_inf": [(pa.float64(), float("inf"))],
    "null_int": [(pa.int32(), None)],
    "comp_int_str": [(pa.int32(), 1), (pa.string(), "a")],
    "comp_long_str_date": [(pa.int64(), 123), (pa.string(), "中文"), (pa.date32(), dt.date(2024, 1, 15))],
    "comp_str_null": [(pa.string(), "x"), (pa.string(), None)],
    "comp_null_null": [(pa.int32(), None), (pa.string(), None)],
    "comp_str_str": [(pa.string(), "order-1"), (pa.string(), "customer-42")],
    "comp_six_types": [
        (pa.int32(), 7),
        (pa.int64(), -7),
        (pa.string(), "émoji😀"),
        (pa.bool_(), True),
        (pa.timestamp("us"), TS_2024),
        (pa.decimal128(5, 2), Decimal("123.45")),
    ],
}

# Pasted from the output of JavaHashVectors.java (JDK 17.0.15); see the module docstring.
JAVA_EXPECTED = {
    "int_zero": 31,
    "int_one": 32,
    "int_minus_one": 30,
    "int_42": 73,
    "int_max": 2147483618,
    "int_min": 2147483617,
    "int_minus_100": 69,
    "int_hash_is_min_value": 2147483647,
    "tinyint_minus_5": 26,
    "smallint_30000": 30031,
    "long_zero": 31,
    "long_one": 32,
    "long_minus_one": 31,
    "long_max": 2147483617,
    "long_min": 2147483617,
    "long_2pow32": 32,
    "long_big": 2045923504,
    "long_negative": 188157109,
    "str_empty": 31,
    "str_a": 128,
    "str_hello": 99162353,
    "str_punctuation": 1498789940,
    "str_accented": 3045952,
    "str_accents": 1991732279,
    "str_cjk": 621941064,
    "str_japanese": 304641972,
    "str_emoji": 1772930,
    "str_emoji_inside": 57849725,
    "str_clef": 1217222158,
    "str_long": 1638353637,
    "str_mixed": 1877448794,
    "date_2024_01_15": 19768,
    "date_epoch": 31,
    "date_1900_01_01": 25536,
    "date_9999_12_31": 2932927,
    "ts_2024": 2120142952,
    "ts_epoch": 31,
    "ts_pre_epoch": 1220232973,
    "tstz_2024_plus_2h": 730212458,
    "time_13_45_30": 2009484054,
    "bool_true": 1262,
    "bool_false": 1268,
    "dec_123_45": 382728,
    "dec_minus_123_45": 382662,
    "dec_zero_scale_2": 33,
    "dec_38_digits": 1731455482,
    "dec_minus_38_nines": 427198417,
    "dec_2pow64": 29822,
    "dec_long_min": 2147483617,
    "dec_small": 66,
    "bin_empty": 32,
    "bin_123": 32768,
    "bin_signed": 2767650,
    "bin_hello": 134464464,
    "fixed_deadbeef": 351072,
    "uuid_example": 1256478193,
    "uuid_zero": 31,
    "uuid_ones": 31,
    "float_1_5": 1069547551,
    "float_minus_zero": 2147483617,
    "float_nan": 2143289375,
    "float_max": 2139095070,
    "double_1_5": 1073217567,
    "double_minus_zero": 2147483617,
    "double_nan": 2146959391,
    "double_pi": 340593922,
    "double_inf": 2146435103,
    "null_int": 31,
    "comp_int_str": 1089,
    "comp_long_str_date": 20205945,
    "comp_str_null": 4681,
    "comp_null_null": 961,
    "comp_str_str": 537855140,
    "comp_six_types": 1560492914,
}


def _columns(case: list[tuple[pa.DataType, Any]], repeat: int = 1) -> list[pa.Array]:
    return [pa.array([value] * repeat, type=arrow_type) for arrow_type, value in case]


def test_every_java_case_has_a_python_twin() -> None:
    assert CASES.keys() == JAVA_EXPECTED.keys()


@pytest.mark.parametrize("name", list(JAVA_EXPECTED))
def test_key_hash_matches_java(name: str) -> None:
    assert key_hash(_columns(CASES[name])).tolist() == [JAVA_EXPECTED[name]]


def test_batches_of_mixed_lengths_hash_like_single_rows() -> None:
    # Group single-column cases by type, so one array holds strings of many lengths etc.
    by_type: dict[pa.DataType, list[str]] = {}
    for name, case in CASES.items():
        if len(case) == 1:
            by_type.setdefault(case[0][0], []).append(name)
    for arrow_type, names in by_type.items():
        values = [CASES[name][0][1] for name in names]
        # Reverse and slice so offsets into shared buffers are exercised too.
        array = pa.array([None, *values, *values[::-1]], type=arrow_type).slice(1)
        expected = [JAVA_EXPECTED[name] for name in names + names[::-1]]
        assert key_hash([array]).tolist() == expected, arrow_type


def test_chunked_dictionary_and_view_columns_hash_like_plain_arrays() -> None:
    words = ["a", "café", None, "😀", "a", "中文"]
    plain = key_hash([pa.array(words)])
    chunked = pa.chunked_array([pa.array(words[:2]), pa.array([], pa.string()), pa.array(words[2:])])
    assert key_hash([chunked]).tolist() == plain.tolist()
    assert key_hash([pa.array(words).dictionary_encode()]).tolist() == plain.tolist()
    assert key_hash([pa.array(words, pa.large_string())]).tolist() == plain.tolist()
    assert key_hash([pa.array(words, pa.string_view())]).tolist() == plain.tolist()
    assert key_hash([pa.array(words, pa.large_binary())]).tolist() != plain.tolist()


def test_coarser_time_units_hash_as_micros() -> None:
    ts = [TS_2024.replace(microsecond=123000), None]
    micros = key_hash([pa.array(ts, pa.timestamp("us"))]).tolist()
    assert key_hash([pa.array(ts, pa.timestamp("ms"))]).tolist() == micros
    t = [dt.time(13, 45, 30), dt.time(0, 0, 1)]
    assert key_hash([pa.array(t, pa.time32("s"))]).tolist() == key_hash([pa.array(t, pa.time64("us"))]).tolist()


@pytest.mark.parametrize(
    "arrow_type",
    [pa.uint32(), pa.uint64(), pa.timestamp("ns"), pa.time64("ns"), pa.date64(), pa.list_(pa.int32()), pa.null()],
)
def test_unsupported_key_types_are_refused(arrow_type: pa.DataType) -> None:
    with pytest.raises(ValueError, match="cannot hash a primary-key column"):
        key_hash([pa.nulls(2, arrow_type)])


def test_key_hash_refuses_no_columns_and_ragged_columns() -> None:
    with pytest.raises(ValueError, match="at least one column"):
        key_hash([])
    with pytest.raises(ValueError, match=r"one length, found lengths \[1, 2\]"):
        key_hash([pa.array([1]), pa.array([1, 2])])


@pytest.mark.parametrize(
    "arrow_type",
    [
        pa.bool_(),
        pa.int64(),
        pa.string(),
        pa.binary(),
        pa.binary(4),
        pa.uuid(),
        pa.decimal128(10, 2),
        pa.float64(),
        pa.time32("ms"),
    ],
)
def test_all_null_columns_hash_like_java_nulls(arrow_type: pa.DataType) -> None:
    # Arrays.hashCode([null]) = 31 * 1 + 0; Java's value is JAVA_EXPECTED["null_int"].
    assert key_hash([pa.nulls(3, arrow_type)]).tolist() == [JAVA_EXPECTED["null_int"]] * 3


def test_empty_columns_give_empty_hashes() -> None:
    assert key_hash([pa.array([], pa.string()), pa.array([], pa.int64())]).shape == (0,)
    assert java_hash_codes(pa.chunked_array([], pa.int32())).shape == (0,)


@pytest.mark.parametrize(
    ("name", "index"),
    [
        ("int_zero", 3),  # Java hash 31 = 0b11111
        ("int_one", 0),  # 32
        ("int_42", 1),  # 73
        ("str_hello", 1),  # 99162353
        ("long_big", 0),  # 2045923504
        ("int_hash_is_min_value", 3),  # Integer.MIN_VALUE mapped to MAX_VALUE
    ],
)
def test_four_buckets_put_keys_in_nodes_4_to_7(name: str, index: int) -> None:
    assert JAVA_EXPECTED[name] & 3 == index
    columns = _columns(CASES[name])
    assert bucket_index(columns, 3).tolist() == [index]
    assert tree_node_ids(columns, 3).tolist() == [4 + index]
    assert DataTreeNode.of_id(4 + index) == DataTreeNode(3, index)


def test_a_single_bucket_puts_every_key_in_the_root() -> None:
    assert tree_node_ids(_columns(CASES["str_hello"], repeat=3), 0).tolist() == [1, 1, 1]


def test_bucket_index_refuses_a_mask_that_is_not_a_power_of_two_minus_one() -> None:
    with pytest.raises(ValueError, match=r"2\*\*h - 1"):
        bucket_index([pa.array([1])], 5)


# --- cross-check against a live JVM ------------------------------------------------------


def _random_text(rng: random.Random) -> str:
    alphabet = ["a", "Z", "0", "-", " ", "é", "ß", "中", "テ", "😀", "𝄞", "\u00ff", "\u07ff", "\uffff"]
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))


def _random_rows(rng: random.Random, count: int) -> list[tuple[Any, ...]]:
    def maybe(value: Any) -> Any:
        return None if rng.random() < 0.1 else value

    rows = []
    for _ in range(count):
        rows.append(
            (
                maybe(rng.randint(-(2**31), 2**31 - 1)),
                maybe(rng.randint(-(2**63), 2**63 - 1)),
                maybe(_random_text(rng)),
                maybe(dt.date(1970, 1, 1) + dt.timedelta(days=rng.randint(-50_000, 50_000))),
                maybe(dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=rng.randint(-(2**50), 2**50))),
                maybe(rng.random() < 0.5),
                maybe(Decimal(rng.randint(-(10**38) + 1, 10**38 - 1)).scaleb(-10)),
                maybe(rng.randbytes(rng.randint(0, 9))),
                maybe(uuid.UUID(int=rng.getrandbits(128)).bytes),
                maybe(rng.uniform(-1e30, 1e30)),
            )
        )
    return rows


RANDOM_TYPES = [
    pa.int32(),
    pa.int64(),
    pa.string(),
    pa.date32(),
    pa.timestamp("us"),
    pa.bool_(),
    pa.decimal128(38, 10),
    pa.binary(),
    pa.uuid(),
    pa.float64(),
]


def _java_field(arrow_type: pa.DataType, value: Any) -> str:
    """Encode one value as the Java object Amoro's wrappers would hand to Arrays.hashCode."""
    if value is None:
        return "n:"
    if arrow_type == pa.int32():
        return f"i:{value}"
    if arrow_type == pa.int64():
        return f"l:{value}"
    if arrow_type == pa.string():
        return f"s:{value.encode('utf-8').hex()}"
    if arrow_type == pa.date32():
        return f"i:{(value - dt.date(1970, 1, 1)).days}"  # Integer days
    if arrow_type == pa.timestamp("us"):
        return f"l:{(value - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)}"  # Long micros
    if arrow_type == pa.bool_():
        return f"b:{str(value).lower()}"
    if arrow_type == pa.decimal128(38, 10):
        return f"d:{int(value.scaleb(10))}:10"
    if arrow_type == pa.binary():
        return f"y:{value.hex()}"
    if arrow_type == pa.uuid():
        return f"u:{uuid.UUID(bytes=value)}"
    return f"g:{struct.unpack('<q', struct.pack('<d', value))[0]}"


@pytest.mark.skipif(shutil.which("javac") is None or shutil.which("java") is None, reason="needs a JDK on PATH")
def test_random_keys_match_a_live_jvm(tmp_path: Path) -> None:
    rng = random.Random(20240115)
    rows = _random_rows(rng, 400)
    # Each row hashes a random non-empty subset of the columns, in random order.
    layouts = [rng.sample(range(len(RANDOM_TYPES)), rng.randint(1, 4)) for _ in range(4)]
    lines: list[str] = []
    expected_python: list[int] = []
    for layout in layouts:
        columns = [pa.array([row[i] for row in rows], RANDOM_TYPES[i]) for i in layout]
        expected_python.extend(key_hash(columns).tolist())
        lines.extend(",".join(_java_field(RANDOM_TYPES[i], row[i]) for i in layout) for row in rows)
    keys = tmp_path / "keys.txt"
    keys.write_text("\n".join(lines) + "\n", encoding="utf-8")
    subprocess.run(["javac", "-d", str(tmp_path), str(VECTORS)], check=True, timeout=120)
    result = subprocess.run(
        ["java", "-cp", str(tmp_path), "JavaHashVectors", str(keys)],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    java = [int(line) for line in result.stdout.split()]
    assert java == expected_python
    assert np.unique(np.array(java) & 3).size == 4  # the keys really spread over four buckets

"""CDC parsing: Debezium and Flink changelog JSON into change rows, bad messages into dead letters."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from mixed_iceberg.ingest.cdc import CdcFormat, CdcParser
from tests.support.tables import ORDERS_SCHEMA


def _parse(messages: list[object], fmt: CdcFormat = CdcFormat.DEBEZIUM_JSON):  # type: ignore[no-untyped-def]
    values = pa.array([m if m is None or isinstance(m, bytes) else json.dumps(m).encode() for m in messages], pa.binary())
    return CdcParser(ORDERS_SCHEMA, ["id"], fmt).parse(values, np.arange(10, 10 + len(messages)))


def test_debezium_ops_map_to_change_actions_in_message_order() -> None:
    parsed = _parse(
        [
            {"before": None, "after": {"id": 1, "cat": "a", "qty": 1, "price": 1.0}, "op": "c", "ts_ms": 7},
            {"before": {"id": 1, "cat": "a"}, "after": {"id": 1, "cat": "b", "qty": 2}, "op": "u"},
            {"payload": {"before": None, "after": {"id": 2}, "op": "r"}},
            {"before": {"id": 1}, "after": None, "op": "d"},
        ]
    )
    assert parsed.changes.column("_change_action").to_pylist() == ["+I", "-U", "+U", "+I", "-D"]
    assert parsed.changes.column("id").to_pylist() == [1, 1, 1, 2, 1]
    assert parsed.changes.column("cat").to_pylist() == ["a", "a", "b", None, None]
    assert parsed.offsets.tolist() == [10, 11, 11, 12, 13]
    assert parsed.event_ms.tolist() == [7, -1, -1, -1, -1]
    assert len(parsed.dead) == 0


def test_update_without_before_image_uses_after_for_the_retraction() -> None:
    parsed = _parse([{"before": None, "after": {"id": 5, "qty": 3}, "op": "u"}])
    assert parsed.changes.column("_change_action").to_pylist() == ["-U", "+U"]
    assert parsed.changes.column("id").to_pylist() == [5, 5]


def test_changelog_json_ops_pass_through() -> None:
    parsed = _parse(
        [
            {"op": "+I", "data": {"id": 1, "qty": 1}},
            {"op": "-U", "data": {"id": 1}},
            {"op": "+U", "data": {"id": 1, "qty": 2}},
            {"op": "-D", "data": {"id": 1}},
        ],
        CdcFormat.CHANGELOG_JSON,
    )
    assert parsed.changes.column("_change_action").to_pylist() == ["+I", "-U", "+U", "-D"]


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        (b"{not json", "malformed message"),
        (b"   ", "empty message"),
        (b"", "empty message"),
        (b"\t\r\n ", "empty message"),
        ("\u00a0\u2003".encode(), "empty message"),
        ({"before": None, "after": {"id": 1, "qty": "many"}, "op": "c"}, "malformed message"),
        ({"before": None, "after": {"id": None}, "op": "c"}, "null or missing primary key"),
        ({"before": None, "after": {"qty": 1}, "op": "c"}, "null or missing primary key"),
        ({"before": None, "after": {"id": 1}, "op": "x"}, "unknown op 'x'"),
        ({"before": None, "after": None, "op": "d"}, "missing image"),
        (b'{"op":"c","after":{"id":1}}{"op":"c","after":{"id":2}}', "exactly one JSON object"),
        (b"[1, 2]", "malformed message"),
    ],
)
def test_bad_messages_become_dead_letters_and_valid_neighbours_survive(message: object, reason: str) -> None:
    good = {"before": None, "after": {"id": 9, "qty": 1}, "op": "c"}
    parsed = _parse([good, message, good])
    assert parsed.changes.column("id").to_pylist() == [9, 9]
    assert parsed.offsets.tolist() == [10, 12]
    assert parsed.dead.offsets.tolist() == [11]
    assert reason in parsed.dead.reasons[0].as_py()


def test_whitespace_and_raw_newlines_around_valid_json_are_kept() -> None:
    parsed = _parse([b'  {"op":"c","after":{"id":1}}', b'{"op":"c",\r\n"after":\n{"id":2}}\n', b"\t{}"])
    assert parsed.changes.column("id").to_pylist() == [1, 2]
    assert parsed.dead.offsets.tolist() == [12]


def test_a_sliced_batch_parses_like_a_fresh_one() -> None:
    messages = [b" ", b'{"op":"c","after":{"id":1}}', b"", b'{"op":"d","before":{"id":1}}', b"{bad"]
    parser = CdcParser(ORDERS_SCHEMA, ["id"], CdcFormat.DEBEZIUM_JSON)
    sliced = parser.parse(pa.array([b"x", *messages, b"y"], pa.binary()).slice(1, len(messages)), np.arange(5))
    fresh = parser.parse(pa.array(messages, pa.binary()), np.arange(5))
    assert sliced.changes.equals(fresh.changes)
    assert sliced.dead.offsets.tolist() == fresh.dead.offsets.tolist() == [0, 2, 4]
    assert sliced.dead.reasons.to_pylist() == fresh.dead.reasons.to_pylist()


def test_tombstones_are_skipped_not_dead_lettered() -> None:
    parsed = _parse([None, {"before": None, "after": {"id": 1}, "op": "c"}])
    assert parsed.tombstones == 1
    assert parsed.changes.num_rows == 1
    assert len(parsed.dead) == 0


def test_many_bad_messages_among_many_good_are_all_isolated() -> None:
    rng = np.random.default_rng(3)
    bad = set(rng.choice(2000, 40, replace=False).tolist())
    messages: list[object] = [b"{oops" if i in bad else {"before": None, "after": {"id": i}, "op": "c"} for i in range(2000)]
    parsed = _parse(messages)
    assert sorted((parsed.dead.offsets - 10).tolist()) == sorted(bad)
    assert parsed.changes.num_rows == 2000 - len(bad)


def test_envelope_detection_does_not_change_what_bare_messages_parse_to() -> None:
    # The word "payload" in a value sends the batch through the envelope-aware read; a batch of
    # envelopes only, and a batch without the word, take the other paths. All agree.
    bare = [{"before": None, "after": {"id": i, "cat": "x", "qty": i}, "op": "c"} for i in range(3)]
    with_word = [*bare, {"before": None, "after": {"id": 3, "cat": '"payload"', "qty": 3}, "op": "c"}]
    wrapped = [{"schema": {"type": "struct"}, "payload": m} for m in with_word]
    plain, worded, enveloped = _parse(bare), _parse(with_word), _parse(wrapped)
    assert worded.changes.slice(0, 3).equals(plain.changes)
    assert enveloped.changes.equals(worded.changes)
    assert worded.changes.column("cat").to_pylist()[-1] == '"payload"'


def test_changelog_json_bytes_are_base64_decoded_at_every_level() -> None:
    """Flink's JSON format writes bytes as base64 text (Jackson's binary nodes): the text is not the value."""
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("raw", pa.large_binary()),
            pa.field("digest", pa.binary(4)),
            pa.field("parts", pa.large_list(pa.field("element", pa.large_binary()))),
            pa.field("meta", pa.struct([pa.field("sig", pa.large_binary()), pa.field("n", pa.int32())])),
        ]
    )
    message = {
        "op": "+I",
        "data": {"id": 1, "raw": "3q2+7w==", "digest": "AAECAw==", "parts": ["AQ==", None], "meta": {"sig": "/w==", "n": 2}},
    }
    empty = {"op": "+I", "data": {"id": 2, "raw": None, "parts": None, "meta": None}}
    values = pa.array([json.dumps(m).encode() for m in (message, empty)], pa.binary())
    parsed = CdcParser(schema, ["id"], CdcFormat.CHANGELOG_JSON).parse(values, np.arange(2))
    assert len(parsed.dead) == 0
    rows = parsed.changes.to_pylist()
    assert (rows[0]["raw"], rows[0]["digest"], rows[0]["parts"]) == (b"\xde\xad\xbe\xef", b"\x00\x01\x02\x03", [b"\x01", None])
    assert rows[0]["meta"] == {"sig": b"\xff", "n": 2}
    assert (rows[1]["raw"], rows[1]["parts"], rows[1]["meta"]) == (None, None, None)
    bad = pa.array([json.dumps({"op": "+I", "data": {"id": 3, "raw": "not base64!"}}).encode()], pa.binary())
    assert len(CdcParser(schema, ["id"], CdcFormat.CHANGELOG_JSON).parse(bad, np.arange(1)).dead) == 1

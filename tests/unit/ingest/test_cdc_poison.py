"""Poison messages: every byte string a topic can hold parses or becomes a dead letter, and the
dead letter holds exactly the bytes the topic held (issue 15)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mixed_iceberg.ingest.cdc import CdcFormat, CdcParser, ParsedChanges
from tests.support.services import ROOT
from tests.support.tables import ORDERS_SCHEMA

GOOD = b'{"before":null,"after":{"id":9,"cat":"ok","qty":1},"op":"c"}'


def _parse(messages: list[bytes]) -> ParsedChanges:
    return CdcParser(ORDERS_SCHEMA, ["id"], CdcFormat.DEBEZIUM_JSON).parse(
        pa.array(messages, pa.binary()), np.arange(len(messages))
    )


def _assert_clean(parsed: ParsedChanges) -> None:
    """Every output string is valid UTF-8 and the changes write to Parquet with statistics."""
    parsed.changes.validate(full=True)
    pq.write_table(parsed.changes, io.BytesIO(), write_statistics=True)


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        pytest.param(b"\x80abc", "not valid UTF-8", id="continuation-byte-first"),
        pytest.param(b"\xff", "not valid UTF-8", id="0xff"),
        pytest.param("\u00a0".encode()[:1], "not valid UTF-8", id="truncated-lead"),
        pytest.param(b'{"op":"c","after":{"id":1,"cat":"\xed\xa0\x80"}}', "not valid UTF-8", id="utf8-surrogate-in-string"),
        pytest.param(b'{"op":"c","after":{"id":1,"cat":"\xc0\x80"}}', "not valid UTF-8", id="overlong-in-string"),
        pytest.param(b'{"op":"c","after":{"id":1,"cat":"a\xe2\x82"}}', "not valid UTF-8", id="truncated-in-string"),
        pytest.param(b'{"op":"c","after":{"id":1,"\xff":1}}', "not valid UTF-8", id="invalid-in-a-key"),
        pytest.param(b'{"op":"c","after":{"id":1,"cat":"\\ud800"}}', "surrogate", id="lone-high-surrogate-escape"),
        pytest.param(b'{"op":"c","after":{"id":1,"cat":"\\udc00"}}', "surrogate", id="lone-low-surrogate-escape"),
        pytest.param(b"[1, 2]", "expected a JSON object, found an array", id="array"),
        pytest.param(b'"text"', "expected a JSON object, found a string", id="string"),
        pytest.param(b"-12.5e3", "expected a JSON object, found a number", id="number"),
        pytest.param(b"7" * 400, "expected a JSON object, found a number", id="huge-number"),
        pytest.param(b"true", "expected a JSON object, found a boolean", id="true"),
        pytest.param(b" \r\n\tfalse", "expected a JSON object, found a boolean", id="false-after-whitespace"),
        pytest.param(b"\xef\xbb\xbf" + GOOD, "found a byte-order mark", id="bom"),
        pytest.param(b"\x0b" + GOOD, "found byte 0x0b", id="vertical-tab-first"),
        pytest.param(b"\x00", "found byte 0x00", id="nul"),
        pytest.param(GOOD + b"\x00", "malformed message", id="nul-after-object"),
        pytest.param(GOOD + b" null", "exactly one JSON object", id="null-after-object"),
        pytest.param(GOOD + b"\n[1]", "malformed message", id="array-after-object-on-next-line"),
        pytest.param(b'{"op":"c","after":{"id":1,"cat":"a\nb"}}', "malformed message", id="raw-newline-in-string"),
        pytest.param(b'{"op":"c","after":{"id":1e400}}', "malformed message", id="number-out-of-range"),
    ],
)
def test_poison_is_dead_lettered_byte_for_byte_and_neighbours_survive(message: bytes, reason: str) -> None:
    parsed = _parse([GOOD, message, GOOD])
    assert parsed.dead.offsets.tolist() == [1]
    assert parsed.dead.values.to_pylist() == [message]
    assert reason in parsed.dead.reasons[0].as_py()
    assert parsed.dead.reasons[0].as_py().startswith("malformed message: ")
    assert parsed.offsets.tolist() == [0, 2]
    assert parsed.changes.column("id").to_pylist() == [9, 9]
    _assert_clean(parsed)


def test_a_batch_of_only_poison_is_all_dead_letters() -> None:
    poison = [b"\x80", b"null", b"[]", b"", b"{", GOOD[:-1]]
    parsed = _parse(poison)
    assert parsed.dead.offsets.tolist() == list(range(len(poison)))
    assert parsed.dead.values.to_pylist() == poison
    assert parsed.changes.num_rows == 0


NULL_BATCHES = [
    [b"null"],
    [b"null", GOOD, GOOD],  # heading the batch
    [GOOD, GOOD, b"{bad", b"null", GOOD],  # heading a bisection half
    [b"  \n null", GOOD],  # after whitespace
    [b"nullnull", GOOD],
    [b"null" + GOOD, GOOD],
]


def test_null_messages_never_reach_the_reader_that_segfaults_on_them() -> None:
    # pyarrow 20's JSON reader segfaults on a null heading a read: in a child process, so that
    # a regression fails this test instead of killing the test run.
    code = textwrap.dedent(
        f"""
        import json, sys
        import numpy as np, pyarrow as pa
        from mixed_iceberg.ingest.cdc import CdcFormat, CdcParser
        from tests.support.tables import ORDERS_SCHEMA
        parser = CdcParser(ORDERS_SCHEMA, ["id"], CdcFormat.DEBEZIUM_JSON)
        for batch in {NULL_BATCHES!r}:
            parsed = parser.parse(pa.array(batch, pa.binary()), np.arange(len(batch)))
            print(json.dumps({{"dead": parsed.dead.offsets.tolist(), "values": [v.hex() for v in parsed.dead.values.to_pylist()],
                              "reasons": parsed.dead.reasons.to_pylist(), "rows": parsed.offsets.tolist()}}), flush=True)
        """
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    lines = run.stdout.splitlines()
    assert run.returncode == 0, (
        f"the parser's process died ({run.returncode}) on {NULL_BATCHES[len(lines)]!r}: {run.stderr[-2000:]}"
    )
    for batch, line in zip(NULL_BATCHES, lines, strict=True):
        out = json.loads(line)
        bad = [i for i, m in enumerate(batch) if m != GOOD]
        assert out["dead"] == bad
        assert [bytes.fromhex(v) for v in out["values"]] == [batch[i] for i in bad]
        assert out["rows"] == [i for i, m in enumerate(batch) if m == GOOD]
        assert all(r.startswith("malformed message: ") for r in out["reasons"])


def test_dead_letters_keep_raw_newlines_and_carriage_returns() -> None:
    malformed = b'{"op":"c",\n"after":{"id":1,\r\n"cat":"x"}\r'  # the closing brace is missing
    valid = b'{"op":"c",\n"after":\r\n{"id":2}}\n'
    parsed = _parse([malformed, valid])
    assert parsed.dead.values.to_pylist() == [malformed]
    assert parsed.changes.column("id").to_pylist() == [2]


def test_a_message_larger_than_a_read_block_parses() -> None:
    big = json.dumps({"op": "c", "after": {"id": 3, "cat": "x" * (3 << 20)}}).encode()
    parsed = _parse([GOOD, big, GOOD])
    assert len(parsed.dead) == 0, parsed.dead.reasons.to_pylist()
    assert parsed.changes.column("id").to_pylist() == [9, 3, 9]


def test_valid_escapes_decode_to_valid_utf8() -> None:
    message = b'{"op":"c","after":{"id":1,"cat":"\\ud83d\\ude00 \\u0000 \\u00e9"}}'
    parsed = _parse([message])
    assert parsed.changes.column("cat").to_pylist() == ["\U0001f600 \x00 \u00e9"]
    _assert_clean(parsed)

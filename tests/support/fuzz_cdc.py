"""The CDC parser's fuzz target: what must hold for any batch of byte strings (issue 15).

One fuzz input is one batch, framed so that mutations make sense and a corpus file replays the
same way under every engine (:func:`decode_batch`): the first byte picks the wire format, the
rest splits at ``SEP`` into messages. A message that starts with ``0xC0`` is a reference
instead: ``C0 k`` is valid message ``k`` of the pool (Debezium or changelog JSON over a table
with string, int, double, date and timestamp columns), ``C0 k p rest`` that message with
``rest`` inserted at byte ``p``, and ``C0`` alone a tombstone (null value). 0xC0 and 0xC1 never
occur in UTF-8, so framing takes nothing from the inputs worth testing. One Debezium message of
the pool is in Kafka Connect's envelope with a whole schema (``at`` in milliseconds), so
mutations reach the reading of schemas too.

:func:`check_batch` asserts: no exception; every input is accounted for exactly once (a change
row's source offset, a dead letter or a tombstone); a dead letter holds the exact input bytes
and a reason; each message gives in the batch what it gives parsed alone (rows, or a dead
letter); every output string is valid UTF-8; the changes write to Parquet with statistics.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from mixed_iceberg.ingest.cdc import CdcFormat, CdcParser, ParsedChanges
from tests.support.connect_envelopes import column, envelope_schema

__all__ = ["POISON", "POOL", "SCHEMA", "SEP", "Batch", "check_batch", "check_pool", "decode_batch", "encode_batch"]

#: Messages that once stopped every partition of a subtask (a crash, or a commit failing forever).
POISON = [
    b"\x80\x81 not UTF-8",  # ArrowInvalid: Invalid UTF8 in the blank check
    b"null",  # pyarrow 20's JSON reader segfaults on a null heading a read
    b'{"op":"c","after":{"id":77,"cat":"\xff\xfe"}}',  # invalid UTF-8 in a string: the Parquet statistics raised
    b'{"op":"c",\n"after":{"id":78,\r\n"cat":"x"}',  # malformed, with raw newlines (came back as spaces)
    b'{"op":"c","after":{"id":79,"cat":"\\ud800"}}',  # a lone surrogate escape
    b"[1, 2]",
]

SEP = b"\xc1\xc1"
_REF = 0xC0
_MAX_MESSAGES = 24

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("name", pa.string()),
        ("qty", pa.int32()),
        ("price", pa.float64()),
        ("day", pa.date32()),
        ("at", pa.timestamp("us")),
    ]
)


_ENVELOPE_SCHEMA = envelope_schema(
    [
        column("id", "int64"),
        column("name", "string"),
        column("qty", "int32"),
        column("price", "double"),
        column("day", "int32", "io.debezium.time.Date"),
        column("at", "int64", "io.debezium.time.Timestamp"),
    ]
)


def _pool(fmt: CdcFormat) -> list[bytes]:
    rows = [
        {"id": 1, "name": "plain", "qty": 3, "price": 1.5, "day": 19000, "at": 1_700_000_000_000_000},
        {"id": 2, "name": "ünïcödé 😀 \u2028", "qty": -7, "price": -0.0, "day": 0, "at": 0},
        {"id": 3, "name": "", "qty": None, "price": 1e300, "day": -1, "at": -1},
        {"id": -4, "name": 'quote " backslash \\ nl \n', "qty": 2147483647, "price": None, "day": None, "at": None},
    ]
    out = []
    for i, row in enumerate(rows):
        if fmt is CdcFormat.DEBEZIUM_JSON:
            op = "cud"[i % 3] if i < 3 else "r"
            message: dict[str, object] = {
                "before": row if op in "ud" else None,
                "after": row if op != "d" else None,
                "op": op,
                "ts_ms": 1_700_000_000_000 + i,
                "source": {"table": "t", "lsn": i},
            }
            if i == 2:  # in Kafka Connect's envelope: its schema says `at` is in milliseconds
                message = {"schema": _ENVELOPE_SCHEMA, "payload": message}
        else:
            day = None if row["day"] is None else str(np.datetime64(int(str(row["day"])), "D"))
            at = None if row["at"] is None else str(np.datetime64(int(str(row["at"])), "us"))
            message = {"op": ("+I", "-U", "+U", "-D")[i], "data": {**row, "day": day, "at": at}}
        out.append(json.dumps(message, ensure_ascii=i % 2 == 0).encode())
    return out


POOL = {fmt: _pool(fmt) for fmt in CdcFormat}
_PARSERS = {fmt: CdcParser(SCHEMA, ["id"], fmt) for fmt in CdcFormat}


@dataclass(frozen=True, slots=True)
class Batch:
    fmt: CdcFormat
    messages: list[bytes | None]


def decode_batch(data: bytes) -> Batch:
    """The batch a fuzz input stands for (see the module docstring)."""
    fmt = CdcFormat.CHANGELOG_JSON if data[:1] and data[0] & 1 else CdcFormat.DEBEZIUM_JSON
    pool = POOL[fmt]
    messages: list[bytes | None] = []
    for part in data[1:].split(SEP)[:_MAX_MESSAGES] if len(data) > 1 else []:
        if part[:1] != bytes([_REF]):
            messages.append(part)
        elif len(part) == 1:
            messages.append(None)
        else:
            base = pool[part[1] % len(pool)]
            if len(part) == 2:
                messages.append(base)
            else:
                at = part[2] % (len(base) + 1)
                messages.append(base[:at] + part[3:] + base[at:])
    return Batch(fmt, messages)


def encode_batch(fmt: CdcFormat, messages: list[bytes | None]) -> bytes:
    """A fuzz input for ``messages`` as given (for corpus files; no pool references)."""
    for m in messages:
        if m is not None and (SEP in m or m[:1] == bytes([_REF])):
            raise ValueError(f"a message that the framing cannot hold: {m!r}")
    flag = b"\x01" if fmt is CdcFormat.CHANGELOG_JSON else b"\x00"
    return flag + SEP.join(bytes([_REF]) if m is None else m for m in messages)


def _outcome(parsed: ParsedChanges, offset: int) -> tuple[str, object]:
    """What the parse made of the message at ``offset``: its rows, or that it was dead-lettered."""
    if offset in parsed.dead.offsets.tolist():
        return ("dead", None)
    rows = np.flatnonzero(parsed.offsets == offset)
    return ("rows", parsed.changes.take(pa.array(rows, pa.int64())).to_pylist())


def check_batch(batch: Batch) -> None:
    """Parse ``batch`` and assert what the module docstring lists (AssertionError if not)."""
    parser = _PARSERS[batch.fmt]
    values = pa.array(batch.messages, pa.binary())
    offsets = np.arange(len(values), dtype=np.int64) * 3 + 5  # offsets need not start at 0 or be dense
    parsed = parser.parse(values, offsets)

    tombstone_at = {int(offsets[i]) for i, m in enumerate(batch.messages) if m is None}
    dead_at = parsed.dead.offsets.tolist()
    row_at = set(parsed.offsets.tolist())
    assert len(dead_at) == len(set(dead_at)), f"a message dead-lettered twice: {dead_at}"
    assert parsed.tombstones == len(tombstone_at)
    assert not (row_at & set(dead_at)), "a message both parsed and dead-lettered"
    assert not ((row_at | set(dead_at)) & tombstone_at), "a tombstone parsed or dead-lettered"
    assert row_at | set(dead_at) | tombstone_at == set(offsets.tolist()), "a message neither parsed nor dead-lettered"
    assert np.all(np.diff(parsed.offsets) >= 0), "change rows out of message order"

    by_offset = {int(offsets[i]): m for i, m in enumerate(batch.messages)}
    assert parsed.dead.values.to_pylist() == [by_offset[o] for o in dead_at], "a dead letter that is not its input's bytes"
    assert all(parsed.dead.reasons.is_valid().to_pylist()), "a dead letter without a reason"

    parsed.changes.validate(full=True)  # full: also checks that every string is UTF-8
    parsed.dead.reasons.validate(full=True)
    pq.write_table(parsed.changes, io.BytesIO(), write_statistics=True)

    for i, message in enumerate(batch.messages):
        if message is None:
            continue
        alone = parser.parse(pa.array([message], pa.binary()), offsets[i : i + 1])
        assert _outcome(alone, int(offsets[i])) == _outcome(parsed, int(offsets[i])), (
            f"message {i} parses differently alone: {message!r}"
        )


def check_pool() -> None:
    """Every pool message parses (else the fuzz would exercise little but the error path)."""
    for fmt, messages in POOL.items():
        parsed = _PARSERS[fmt].parse(pa.array(messages, pa.binary()), np.arange(len(messages)))
        assert len(parsed.dead) == 0, f"{fmt.value}: {parsed.dead.reasons.to_pylist()}"

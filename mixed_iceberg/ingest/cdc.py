"""CDC messages (Debezium JSON, Flink changelog JSON) -> Arrow change rows, plus dead letters.

Parsing is column-wise: the batch's messages are joined into one newline-delimited buffer and
read by ``pyarrow.json`` with an explicit schema; ops, images and keys are then checked and
expanded with Arrow/NumPy kernels. A message that breaks the JSON reader (malformed JSON, a
value of the wrong type) is isolated by bisection, so a few bad messages cost a few extra
reads of shrinking halves while every valid message is kept. Pure: no I/O.

Before the reader sees a message it is screened with whole-array kernels: a message that is
not valid UTF-8 (one Arrow validation of the batch, bisected only when it fails), empty, or
not a JSON object (its first byte after JSON whitespace is not ``{``) is dead-lettered at
once. Every other byte string a topic can hold either parses or is rejected by the reader;
none reaches it that could crash it (pyarrow 20's reader segfaults on a ``null`` heading a
read), and no string in the output is invalid UTF-8 (the Parquet writer's statistics would
fail on it). Dead letters carry each message's bytes exactly as given.

Debezium: ``op`` c/r -> +I(after); u -> -U(before, or after when the source sends no before
image) then +U(after); d -> -D(before). The ``{"schema":..., "payload":...}`` envelope is
accepted too. Flink changelog JSON: ``{"op": "+I|-U|+U|-D", "data": {...}}``.
Debezium columns whose encoding a connector setting changes (temporal, decimal, binary) are
decoded as the message's Kafka Connect schema says (:mod:`.connect_schema`: milliseconds for
``io.debezium.time.Timestamp``, microseconds for ``MicroTimestamp``, ...), schema by schema
over the batch; a message whose schema gives a column an encoding its type cannot take is a
dead letter naming both. A message without a schema is read as Debezium's defaults for
PostgreSQL columns of precision 4 to 6 (``Date`` = days, ``MicroTimestamp`` / ``MicroTime`` =
microseconds): nothing in it says otherwise. Changelog JSON carries them as ISO strings.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from mixed_iceberg.changestore.batch import ACTION_COLUMN
from mixed_iceberg.exceptions import UnsupportedColumnTypeError
from mixed_iceberg.ingest.connect_schema import BatchEncodings, batch_encodings
from mixed_iceberg.ingest.decode import base64_decode, debezium_json_type, from_debezium
from mixed_iceberg.logstore.format import join_lines
from mixed_iceberg.typedef import action_codes, action_names

__all__ = ["CdcFormat", "CdcParser", "DeadLetters", "ParsedChanges", "check_source_schema"]

_DEBEZIUM_OPS = ("c", "r", "u", "d")
_MISSING_IMAGE = "missing image"
#: Debezium's converter with schemas wraps each message as {"schema": ..., "payload": {...}}.
_PAYLOAD = b'"payload"'


class CdcFormat(enum.Enum):
    """Wire formats of CDC topics."""

    DEBEZIUM_JSON = "debezium-json"
    CHANGELOG_JSON = "changelog-json"


@dataclass(frozen=True, slots=True)
class DeadLetters:
    """Messages that cannot become changes, with why."""

    offsets: npt.NDArray[np.int64]
    values: pa.Array
    reasons: pa.Array

    def __len__(self) -> int:
        return len(self.offsets)


@dataclass(frozen=True, slots=True)
class ParsedChanges:
    """Change rows (table columns + ``_change_action``) in message order, and what was rejected.

    ``offsets`` and ``event_ms`` hold, per change row, the source offset and the event time of
    the message it came from (-1 when the message has none).
    """

    changes: pa.Table
    offsets: npt.NDArray[np.int64]
    event_ms: npt.NDArray[np.int64]
    dead: DeadLetters
    tombstones: int

    def __post_init__(self) -> None:
        if not self.changes.num_rows == len(self.offsets) == len(self.event_ms):
            raise ValueError("expected one offset and one event time per change row")


def _json_type(kind: pa.DataType, fmt: CdcFormat) -> pa.DataType:
    """What a column of type ``kind`` is read as; Debezium's encodings: :mod:`.decode`.

    Raises:
        UnsupportedColumnTypeError: ``fmt`` cannot carry ``kind``.
    """
    if fmt is CdcFormat.DEBEZIUM_JSON:
        return debezium_json_type(kind)
    return _changelog_json_type(kind)


def _binary(kind: pa.DataType) -> bool:
    return bool(pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind))


def _changelog_json_type(kind: pa.DataType) -> pa.DataType:
    """Flink's JSON format: temporal values as strings (nested too), bytes as base64 strings
    (Jackson's binary nodes), lists as arrays and rows as objects; the reader takes no large
    lists (a cast after the read makes the column's type)."""
    if pa.types.is_date(kind) or pa.types.is_timestamp(kind) or pa.types.is_time(kind) or _binary(kind):
        return pa.string()
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return pa.list_(kind.value_field.with_type(_changelog_json_type(kind.value_type)))
    if pa.types.is_struct(kind):
        return pa.struct([f.with_type(_changelog_json_type(f.type)) for f in kind])
    if pa.types.is_map(kind) or isinstance(kind, pa.BaseExtensionType):
        raise UnsupportedColumnTypeError(
            f"changelog-json: expected a column type pyarrow's JSON reader reads, found {kind}"
            + (": a JSON object reads only as a struct of known fields" if pa.types.is_map(kind) else "")
        )
    return kind


def _from_changelog_json(values: pa.Array, kind: pa.DataType) -> pa.Array:
    """``values`` as read for :func:`_changelog_json_type` ``(kind)`` -> ``kind``: base64 decoded
    to bytes at every level (a cast would keep the base64 text as the bytes), the rest cast.

    Raises:
        pyarrow.ArrowInvalid: a value that is not valid base64, or does not cast.
    """
    if _binary(kind):
        return base64_decode(values).cast(kind)
    if (pa.types.is_list(kind) or pa.types.is_large_list(kind)) and _has_binary(kind):
        decoded = _from_changelog_json(values.values, kind.value_type)
        rebuilt = pa.ListArray.from_arrays(values.offsets, decoded, mask=values.is_null() if values.null_count else None)
        return rebuilt.cast(kind)
    if pa.types.is_struct(kind) and _has_binary(kind):
        children = [_from_changelog_json(values.field(i), f.type) for i, f in enumerate(kind)]
        mask = values.is_null() if values.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(kind), mask=mask)
    return values.cast(kind)


def _has_binary(kind: pa.DataType) -> bool:
    if _binary(kind):
        return True
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _has_binary(kind.value_type)
    return pa.types.is_struct(kind) and any(_has_binary(f.type) for f in kind)


def check_source_schema(schema: pa.Schema, fmt: CdcFormat, *, table: str) -> None:
    """Raise, before anything is created or read, if ``fmt`` cannot carry a column of ``schema``.

    Raises:
        UnsupportedColumnTypeError: naming the table, the column and its type.
    """
    for field in schema:
        try:
            _json_type(field.type, fmt)
        except UnsupportedColumnTypeError as exc:
            raise UnsupportedColumnTypeError(f"table {table}: column {field.name!r}: {exc}") from exc


def _bytes_of(values: pa.Array) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int32], npt.NDArray[np.int32]]:
    """The used data bytes of a binary array (no nulls), and each value's start and stop in them."""
    offsets = np.frombuffer(values.buffers()[1], np.int32)[values.offset : values.offset + len(values) + 1]
    buffer = values.buffers()[2]
    data = np.frombuffer(buffer, np.uint8) if buffer is not None else np.zeros(0, np.uint8)
    base = offsets[0] if len(offsets) else 0
    return data[base : offsets[-1] if len(offsets) else 0], offsets[:-1] - base, offsets[1:] - base


def _not_utf8(values: pa.Array) -> list[int]:
    """Positions of the values that are not valid UTF-8: one validation of the whole array by
    Arrow, bisected only when it fails."""
    try:
        values.cast(pa.string())
    except pa.ArrowInvalid:
        if len(values) == 1:
            return [0]
        half = len(values) // 2
        return _not_utf8(values.slice(0, half)) + [half + i for i in _not_utf8(values.slice(half))]
    return []


def _utf8_reason(value: bytes) -> str:
    try:
        value.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"malformed message: not valid UTF-8 (JSON text must be): {exc.reason} at byte {exc.start}"
    raise AssertionError("expected invalid UTF-8")  # _not_utf8 found it


#: What a JSON text that is not an object starts with, by its first byte (after JSON whitespace).
_NOT_AN_OBJECT = {ord("["): "an array", ord('"'): "a string", ord("t"): "a boolean", ord("f"): "a boolean",
                  ord("n"): "null", ord("-"): "a number", 0xEF: "a byte-order mark"}  # fmt: skip


def _not_object_reason(first: int) -> str:
    found = _NOT_AN_OBJECT.get(first, "a number" if ord("0") <= first <= ord("9") else f"byte 0x{first:02x}")
    return f"malformed message: expected a JSON object, found {found}"


def _screen(
    values: pa.Array,
    data: npt.NDArray[np.uint8],
    starts: npt.NDArray[np.int32],
    stops: npt.NDArray[np.int32],
    utf8: npt.NDArray[np.bool_],
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.uint8]]:
    """Which messages are empty or whitespace only, and each message's first byte that is not
    JSON whitespace (0 for a blank one). Only messages whose first byte is whitespace or a
    multi-byte UTF-8 lead are looked at with the string kernels (a JSON object starts with
    ``{``): a handful, not the batch. ``utf8``: the messages known to be valid UTF-8 (the
    others are never handed to a string kernel).

    The first byte decides what reaches ``pyarrow.json``: its reader crashes the process on a
    ``null`` at the start of a read (pyarrow 20), and a text that is not an object is never a
    change anyway."""
    empty: npt.NDArray[np.bool_] = np.equal(stops, starts)
    first = data[np.minimum(starts, max(len(data) - 1, 0))] if len(data) else np.zeros(len(starts), np.uint8)
    first = np.where(empty, 0, first).astype(np.uint8)
    json_space = (first == 0x09) | (first == 0x0A) | (first == 0x0D) | (first == 0x20)
    # ASCII whitespace (\t \n \v \f \r, space) or a multi-byte UTF-8 lead (Unicode whitespace).
    candidate = ~empty & utf8 & (((first >= 0x09) & (first <= 0x0D)) | (first == 0x20) | (first >= 0x80))
    blank = empty.copy()
    suspects = np.flatnonzero(candidate)
    if len(suspects):
        text = pc.cast(values.take(pa.array(suspects)), pa.string(), safe=False)  # valid: checked by _not_utf8
        blank[suspects] = pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(text)), 0).to_numpy(zero_copy_only=False)
        spaced = np.flatnonzero(json_space[suspects] & ~blank[suspects])
        if len(spaced):
            trimmed = pc.cast(pc.utf8_ltrim(text.take(pa.array(spaced)), characters=" \t\n\r"), pa.binary())
            trimmed_data, trimmed_starts, _ = _bytes_of(trimmed)
            first[suspects[spaced]] = trimmed_data[trimmed_starts]  # not blank: a byte is left
    first[blank] = 0
    return blank, first


class CdcParser:
    """Parses batches of CDC messages for one table.

    >>> parser = CdcParser(table.arrow_schema(), table.primary_key, CdcFormat.DEBEZIUM_JSON)  # doctest: +SKIP
    >>> parsed = parser.parse(pa.array(messages, pa.binary()), offsets)                      # doctest: +SKIP
    """

    def __init__(self, schema: pa.Schema, primary_key: Sequence[str], fmt: CdcFormat) -> None:
        self.schema = schema
        self.primary_key = tuple(primary_key)
        self.format = fmt
        row = pa.struct([pa.field(f.name, _json_type(f.type, fmt)) for f in schema])
        if fmt is CdcFormat.DEBEZIUM_JSON:
            envelope = [("before", row), ("after", row), ("op", pa.string()), ("ts_ms", pa.int64())]
            fields = envelope
            # Read only for batches that hold the word: the nested payload struct costs about a
            # third of the read (python -m bench.cdc_parser).
            wrapped = pa.schema([*envelope, ("payload", pa.struct(envelope))])
        else:
            fields = [("data", row), ("op", pa.string()), ("ts_ms", pa.int64())]
            wrapped = None
        self._options = pj.ParseOptions(explicit_schema=pa.schema(fields), unexpected_field_behavior="ignore")
        self._wrapped_options = (
            pj.ParseOptions(explicit_schema=wrapped, unexpected_field_behavior="ignore") if wrapped is not None else None
        )

    # -- reading, with bisection around messages the JSON reader rejects -------------------------
    def _convert(self, image: pa.Array, encodings: BatchEncodings | None = None, which: int = 0) -> pa.StructArray:
        if self.format is CdcFormat.DEBEZIUM_JSON:
            columns = [pc.struct_field(image, [i]) for i in range(len(self.schema))]
            if encodings is None:
                children = [from_debezium(c, f.type) for c, f in zip(columns, self.schema, strict=True)]
            else:
                children = [
                    encodings.decode(c, f.type, which, i) for i, (c, f) in enumerate(zip(columns, self.schema, strict=True))
                ]
        else:
            children = [_from_changelog_json(pc.struct_field(image, [i]), f.type) for i, f in enumerate(self.schema)]
        names = [f.name for f in self.schema]
        return pa.StructArray.from_arrays(children, names=names, mask=pc.invert(pc.is_valid(image)))

    def _read(self, values: pa.Array, lines: bytes | None = None, encodings: BatchEncodings | None = None) -> pa.Table:
        """op, before, after (table types) and ts_ms of ``values``; raises ArrowInvalid on bad input.

        ``lines``: ``values`` already joined by :func:`join_lines`, if the caller has them;
        ``encodings``: what each message's schema says (None: no message of the batch holds
        the word "payload", so none is read as an envelope)."""
        if lines is None:
            lines = join_lines(values).to_pybytes()
        # parse() scanned the whole batch for the word once: no encodings, no payload in any part.
        wrapped = self._wrapped_options is not None and encodings is not None and _PAYLOAD in lines
        # Blocks split at newlines only, so each message stays whole; threads parse blocks in
        # parallel. A message longer than a block would straddle two ("straddling object").
        _, starts, stops = _bytes_of(values)
        longest = int((stops - starts).max()) if len(values) else 0
        options = pj.ReadOptions(block_size=max(1 << 20, len(lines) // 4 + 1, longest + 1), use_threads=True)
        parse_options = self._wrapped_options if wrapped else self._options
        raw = pj.read_json(pa.BufferReader(lines), read_options=options, parse_options=parse_options)
        if raw.num_rows != len(values):
            raise pa.ArrowInvalid(f"expected exactly one JSON object per message, found {raw.num_rows} in {len(values)}")
        if self.format is CdcFormat.DEBEZIUM_JSON:
            payload = raw.column("payload").combine_chunks() if wrapped else None
            has_payload = pc.is_valid(payload) if payload is not None else None

            def pick(name: str) -> pa.Array:
                bare = raw.column(name).combine_chunks()
                return pc.if_else(has_payload, pc.struct_field(payload, name), bare) if payload is not None else bare

            before, after = pick("before"), pick("after")
            op, ts = pick("op"), pick("ts_ms")
            if encodings is not None and has_payload is not None:  # a schema counts only beside a payload
                encodings = encodings.only(has_payload.to_numpy(zero_copy_only=False))
        else:
            before = after = raw.column("data").combine_chunks()
            op, ts = raw.column("op").combine_chunks(), raw.column("ts_ms").combine_chunks()
        if not wrapped:
            encodings = None  # no message of this part has a payload: the defaults
        before_rows, after_rows = self._convert(before, encodings, 0), self._convert(after, encodings, 1)
        return pa.table({"op": op, "before": before_rows, "after": after_rows, "ts_ms": ts})

    def _read_bisecting(
        self,
        values: pa.Array,
        start: int,
        parts: list[pa.Table],
        kept: list[int],
        dead: dict[int, str],
        lines: bytes | None = None,
        encodings: BatchEncodings | None = None,
    ) -> None:
        try:
            parts.append(self._read(values, lines, encodings))
            kept.extend(range(start, start + len(values)))
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            if len(values) == 1:
                dead[start] = f"malformed message: {exc}"
                return
            half, n = len(values) // 2, len(values)
            first, second = (None, None) if encodings is None else (encodings.slice(0, half), encodings.slice(half, n))
            self._read_bisecting(values.slice(0, half), start, parts, kept, dead, None, first)
            self._read_bisecting(values.slice(half), start + half, parts, kept, dead, None, second)

    # -- semantics ------------------------------------------------------------------------------
    def _actions(
        self, read: pa.Table
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int8], npt.NDArray[np.bool_], npt.NDArray[np.object_]]:
        """Per output row: source row, action code, use-after flag; plus a reason per input row ('' = ok)."""
        op = read.column("op").combine_chunks()
        has_before = pc.is_valid(read.column("before")).to_numpy(zero_copy_only=False)
        has_after = pc.is_valid(read.column("after")).to_numpy(zero_copy_only=False)
        if self.format is CdcFormat.DEBEZIUM_JSON:
            code = pc.index_in(op, value_set=pa.array(_DEBEZIUM_OPS)).to_numpy(zero_copy_only=False)
            code = np.where(np.isnan(code.astype(float)), -1, code).astype(np.int64)
            needs_after = code <= 2
            image_ok = np.where(code == 3, has_before, has_after) & (code >= 0)
        else:
            code = action_codes(op).astype(np.int64)
            needs_after = np.ones(len(code), np.bool_)
            image_ok = has_after & (code >= 0)
        key_ok = np.ones(len(code), np.bool_)
        for key in self.primary_key:
            after_key = pc.is_valid(pc.struct_field(read.column("after"), key)).to_numpy(zero_copy_only=False)
            before_key = pc.is_valid(pc.struct_field(read.column("before"), key)).to_numpy(zero_copy_only=False)
            key_ok &= np.where(needs_after, after_key, before_key)
        reasons = np.full(len(code), "", dtype=object)
        reasons[~key_ok] = f"null or missing primary key {list(self.primary_key)}"
        reasons[~image_ok] = _MISSING_IMAGE
        bad_op = code < 0
        if bad_op.any():  # the error path: one message per rejected op
            bad_ops = pc.take(op, pa.array(np.flatnonzero(bad_op))).to_pylist()
            reasons[bad_op] = [f"unknown op {o!r}" for o in bad_ops]
        ok = np.flatnonzero(reasons == "")
        if self.format is CdcFormat.DEBEZIUM_JSON:
            is_update = code[ok] == 2
            counts = 1 + is_update
            rows = np.repeat(ok, counts)
            starts = np.cumsum(counts) - counts
            second = np.zeros(len(rows), np.bool_)
            second[starts[is_update] + 1] = True
            op_rows = code[rows]
            # c, r -> +I (0); u -> -U (1) then +U (2); d -> -D (3)
            actions = np.select([op_rows <= 1, (op_rows == 2) & ~second, op_rows == 2], [0, 1, 2], 3).astype(np.int8)
            use_after = (op_rows <= 1) | ((op_rows == 2) & (second | ~has_before[rows]))
        else:
            rows = ok
            actions = code[ok].astype(np.int8)
            use_after = np.ones(len(rows), np.bool_)
        return rows.astype(np.int64), actions, use_after, reasons

    def parse(self, values: pa.Array, offsets: npt.NDArray[np.int64]) -> ParsedChanges:
        """Parse ``values`` (binary; nulls are tombstones) read at source ``offsets``."""
        values = pc.cast(values, pa.binary())
        if len(values) != len(offsets):
            raise ValueError(f"expected one offset per message ({len(values)}), found {len(offsets)}")
        present = pc.is_valid(values).to_numpy(zero_copy_only=False)
        tombstones = int(len(values) - present.sum())
        offsets = np.asarray(offsets, np.int64)
        if tombstones:
            live = np.flatnonzero(present)
            values, offsets = values.take(pa.array(live)), offsets[live]
        original = values  # dead letters keep the bytes the source holds
        data, starts, stops = _bytes_of(values)
        dead: dict[int, str] = {}
        utf8 = np.ones(len(values), np.bool_)
        for position in _not_utf8(values):
            utf8[position] = False
            dead[position] = _utf8_reason(values[position].as_py())
        blank, first = _screen(values, data, starts, stops, utf8)
        dead.update({int(i): "empty message" for i in np.flatnonzero(blank)})
        not_object = utf8 & ~blank & (first != 0x7B)  # "{"
        dead.update({int(i): _not_object_reason(int(first[i])) for i in np.flatnonzero(not_object)})
        readable = np.flatnonzero(utf8 & ~blank & ~not_object)
        if len(readable) < len(values):
            values = values.take(pa.array(readable))
            data, starts, stops = _bytes_of(values)
        # Two passes: faster than one with `|` (claim newline_check of
        # bench/results/design_choices-2026-12-06-e9ea149.json, `nice -n 5 .venv/bin/python -m bench.design_choices`).
        if (data == 0x0A).any() or (data == 0x0D).any():
            # No message may span lines. Outside strings raw newlines are JSON whitespace, and so
            # is a tab; inside strings all three are invalid, so the reader still rejects them.
            values = pc.replace_substring(pc.replace_substring(values, b"\n", b"\t"), b"\r", b"\t")
        parts: list[pa.Table] = []
        kept: list[int] = []
        if len(readable):
            lines = join_lines(values).to_pybytes()
            encodings = None
            if self.format is CdcFormat.DEBEZIUM_JSON and _PAYLOAD in lines:
                encodings = batch_encodings(values, self.schema)
                refused = encodings.rejected()
                if refused:  # a schema the table cannot take: dead letters before the read
                    dead.update({int(readable[i]): reason for i, reason in refused.items()})
                    keep = np.setdiff1d(np.arange(len(values)), np.fromiter(refused, np.int64))
                    values, readable, encodings = values.take(pa.array(keep)), readable[keep], encodings.take(keep)
                    lines = join_lines(values).to_pybytes()
            dead_local: dict[int, str] = {}
            if len(readable):
                self._read_bisecting(values, 0, parts, kept, dead_local, lines, encodings)
            dead.update({int(readable[i]): reason for i, reason in dead_local.items()})
        kept_rows = readable[np.asarray(kept, np.int64)] if kept else np.zeros(0, np.int64)
        read = pa.concat_tables(parts) if parts else None
        columns: dict[str, pa.Array] = {}
        if read is not None and read.num_rows:
            rows, actions, use_after, reasons = self._actions(read)
            rejected = np.flatnonzero(reasons != "")
            dead.update(zip(kept_rows[rejected].tolist(), reasons[rejected].tolist(), strict=True))
            index = pa.array(rows)
            before = read.column("before").combine_chunks().take(index)
            after = read.column("after").combine_chunks().take(index)
            mask = pa.array(use_after)
            for position, field in enumerate(self.schema):
                columns[field.name] = pc.if_else(mask, pc.struct_field(after, [position]), pc.struct_field(before, [position]))
            columns[ACTION_COLUMN] = action_names(actions)
            source = kept_rows[rows]
            event = pc.fill_null(read.column("ts_ms").combine_chunks(), -1).to_numpy(zero_copy_only=False)[rows]
        else:
            source = np.zeros(0, np.int64)
            event = np.zeros(0, np.int64)
            columns = {f.name: pa.array([], f.type) for f in self.schema}
            columns[ACTION_COLUMN] = pa.array([], pa.string())
        order = np.array(sorted(dead), np.int64)
        letters = DeadLetters(
            offsets[order] if len(order) else np.zeros(0, np.int64),
            original.take(pa.array(order, pa.int64())),
            pa.array([dead[int(i)] for i in order], pa.string()),
        )
        fields = [*(pa.field(f.name, f.type) for f in self.schema), pa.field(ACTION_COLUMN, pa.string())]
        changes = pa.Table.from_arrays([columns[f.name] for f in fields], schema=pa.schema(fields))
        return ParsedChanges(changes, offsets[source].astype(np.int64), np.asarray(event, np.int64), letters, tombstones)

"""Dead-letter records, as Kafka Connect's dead-letter queues write them.

A record's value is the rejected message's bytes exactly as the source topic holds them
(nothing is re-encoded, so a message that is not UTF-8, or holds raw newlines, comes back
byte for byte); why and where from travel in the record's headers, each value UTF-8 text:

==================================== =========================================
``mixed-iceberg.dead-letter.reason``    why the message is no change (``malformed message: ...``)
``mixed-iceberg.dead-letter.topic``     the source topic
``mixed-iceberg.dead-letter.partition`` the source partition (decimal)
``mixed-iceberg.dead-letter.offset``    the message's source offset (decimal)
==================================== =========================================

>>> letter = DeadLetterContext.from_headers(headers)  # doctest: +SKIP
>>> letter.reason, letter.offset                       # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mixed_iceberg.ingest.cdc import DeadLetters
from mixed_iceberg.logstore.base import Headers

__all__ = [
    "OFFSET_HEADER",
    "PARTITION_HEADER",
    "REASON_HEADER",
    "TOPIC_HEADER",
    "DeadLetterContext",
    "dead_letter_headers",
]

_PREFIX = "mixed-iceberg.dead-letter."
REASON_HEADER = f"{_PREFIX}reason"
TOPIC_HEADER = f"{_PREFIX}topic"
PARTITION_HEADER = f"{_PREFIX}partition"
OFFSET_HEADER = f"{_PREFIX}offset"


@dataclass(frozen=True, slots=True)
class DeadLetterContext:
    """Why and where from one dead letter came, read back from its headers."""

    reason: str
    topic: str
    partition: int
    offset: int

    @classmethod
    def from_headers(cls, headers: Sequence[tuple[str, bytes]]) -> DeadLetterContext:
        """The context of a record written by :func:`dead_letter_headers`.

        Raises:
            ValueError: a header is missing.
        """
        found = {name: value for name, value in headers if name.startswith(_PREFIX)}
        missing = [h for h in (REASON_HEADER, TOPIC_HEADER, PARTITION_HEADER, OFFSET_HEADER) if h not in found]
        if missing:
            raise ValueError(f"expected dead-letter headers {missing}, found {sorted(found)}")
        return cls(
            reason=found[REASON_HEADER].decode(),
            topic=found[TOPIC_HEADER].decode(),
            partition=int(found[PARTITION_HEADER]),
            offset=int(found[OFFSET_HEADER]),
        )


def dead_letter_headers(dead: DeadLetters, topic: str, partition: int) -> list[Headers]:
    """The headers of each dead letter of ``dead`` (read from ``topic`` / ``partition``).

    The error path (a handful of messages): a Python tuple per letter."""
    topic_value, partition_value = topic.encode(), str(partition).encode()
    return [
        (
            (REASON_HEADER, reason.encode()),
            (TOPIC_HEADER, topic_value),
            (PARTITION_HEADER, partition_value),
            (OFFSET_HEADER, str(offset).encode()),
        )
        for reason, offset in zip(dead.reasons.to_pylist(), dead.offsets.tolist(), strict=True)
    ]

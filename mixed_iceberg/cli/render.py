"""What the CLI prints: a :class:`Result` holds both the data ``--json`` prints and the text people
read; the text is built with :func:`table` (aligned columns) and :func:`fields` (a key: value block).

Plain text, no colours and no box characters, so that it reads the same in a terminal, a log file
and a CI page; a few dozen lines, so no table library is needed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mixed_iceberg.cli.exits import ExitCode

__all__ = ["Result", "ago", "duration", "fields", "size", "table", "to_json"]


@dataclass(frozen=True, slots=True)
class Result:
    """What a verb produced: ``data`` for ``--json``, ``text`` for people, and the exit code.

    ``warnings`` go to stderr in both modes (a group nobody serves, a table that failed).
    """

    data: Any
    text: str
    code: ExitCode = ExitCode.OK
    warnings: tuple[str, ...] = field(default_factory=tuple)


def to_json(data: Any) -> str:
    """``data`` as indented JSON (enums by value, other objects by their text)."""
    return json.dumps(data, indent=2, default=lambda v: getattr(v, "value", str(v)))


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(getattr(value, "value", value))


def table(rows: Iterable[Mapping[str, object]], columns: Sequence[str], *, empty: str = "(none)") -> str:
    """``rows`` as aligned columns under a header of ``columns`` (the rows' keys); numbers right-aligned."""
    cells = [[_cell(row.get(column)) for column in columns] for row in rows]
    if not cells:
        return empty
    numeric = [all(_is_number(row[i]) for row in cells) for i in range(len(columns))]
    widths = [max(len(column), *(len(row[i]) for row in cells)) for i, column in enumerate(columns)]

    def line(values: Sequence[str]) -> str:
        padded = [v.rjust(w) if n else v.ljust(w) for v, w, n in zip(values, widths, numeric, strict=True)]
        return "  ".join(padded).rstrip()

    header = [c.upper().replace("_", " ") for c in columns]
    return "\n".join([line(header), *(line(row) for row in cells)])


def _is_number(text: str) -> bool:
    return text == "-" or text.replace(".", "", 1).replace("-", "", 1).isdigit()


def fields(pairs: Iterable[tuple[str, object]]) -> str:
    """``key  value`` lines, the keys padded to one width."""
    items = [(key, _cell(value)) for key, value in pairs]
    width = max((len(key) for key, _ in items), default=0)
    return "\n".join(f"{key.ljust(width)}  {value}" for key, value in items)


def size(count: int | None) -> str:
    """A byte count for people (``12.3 MiB``)."""
    if count is None:
        return "-"
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def ago(epoch_ms: int | None, now_ms: int | None = None) -> str:
    """How long ago ``epoch_ms`` was (``42s ago``), or how far ahead (``in 5min``); ``never`` for None or 0."""
    if not epoch_ms:
        return "never"
    seconds = ((now_ms if now_ms is not None else int(time.time() * 1000)) - epoch_ms) // 1000
    return f"{duration(seconds)} ago" if seconds >= 0 else f"in {duration(-seconds)}"


def duration(seconds: float) -> str:
    """A duration for people, in its largest whole unit (``42s``, ``17min``, ``3h``, ``2d``)."""
    whole = int(seconds)
    for unit, length in (("d", 86_400), ("h", 3_600), ("min", 60)):
        if whole >= length:
            return f"{whole // length}{unit}"
    return f"{max(0, whole)}s"

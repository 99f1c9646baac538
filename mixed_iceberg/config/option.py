"""What an option is and how its raw text becomes a value: the :class:`Option` declaration, the
parsers (durations, enums, codecs) and the value checks that :mod:`~mixed_iceberg.config.registry`
and the optimizer's group options declare their keys with."""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Generic, TypeVar

from mixed_iceberg.exceptions import PropertyError

__all__ = [
    "Option",
    "is_non_negative",
    "is_positive",
    "is_positive_duration",
    "parse_bool",
    "parse_duration",
    "parse_enum",
    "parse_float",
    "parse_int",
    "parse_text",
    "parse_timedelta",
]

T = TypeVar("T")


def _bool(raw: str) -> bool:
    lowered = raw.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise ValueError("expected true or false")


def _int(raw: str) -> int:
    try:
        return int(raw.strip())
    except ValueError:
        raise ValueError("expected an integer") from None


def _float(raw: str) -> float:
    try:
        return float(raw.strip())
    except ValueError:
        raise ValueError("expected a number") from None


def _str(raw: str) -> str:
    return raw


_CODECS = ("zstd", "gzip", "snappy", "lz4", "brotli", "uncompressed")


def _codec(raw: str) -> str:
    # pyarrow takes codec names in any case; pyiceberg maps only a lower-case "uncompressed".
    if raw.lower() not in _CODECS or (raw.lower() == "uncompressed" and raw != "uncompressed"):
        raise ValueError(f"expected one of {', '.join(_CODECS)}")
    return raw


E = TypeVar("E", bound=enum.Enum)


class _NotOneOfError(ValueError):
    """A value that is none of a kind's members."""


def parse_enum(kind: type[E]) -> Callable[[str], E]:
    """A parser of ``kind``'s values (case and surrounding blanks ignored)."""
    values = [member.value for member in kind]

    def parse(raw: str) -> E:
        lowered = raw.strip().lower()
        for member in kind:
            if str(member.value).lower() == lowered:
                return member
        raise _NotOneOfError(f"expected {', '.join(values[:-1])} or {values[-1]}")

    return parse


def _format(raw: str) -> str:
    if raw.strip().lower() != "parquet":
        raise ValueError("expected parquet (the only file format written)")
    return "parquet"


_DURATION = re.compile(r"^\s*(\d+)\s*([a-zA-Zµ]*)\s*$")
_UNITS: dict[str, timedelta] = {}
for _names, _unit in (
    (("", "ms", "milli", "millis", "millisecond", "milliseconds"), timedelta(milliseconds=1)),
    (("s", "sec", "secs", "second", "seconds"), timedelta(seconds=1)),
    (("m", "min", "mins", "minute", "minutes"), timedelta(minutes=1)),
    (("h", "hour", "hours"), timedelta(hours=1)),
    (("d", "day", "days"), timedelta(days=1)),
):
    _UNITS.update(dict.fromkeys(_names, _unit))
_EXPECTED = "a duration such as 720min, 12h, 7d, 30s or 500ms"


def parse_duration(raw: str, key: str = "", table: str = "") -> timedelta:
    """Parse an Amoro/Flink duration (``720min``, ``12h``, ``7d``; a bare number is ms).

    Args:
        raw: the property value.
        key: the property key, named in the error.
        table: the table name, named in the error.

    Returns:
        The duration.

    Raises:
        PropertyError: the value is not an integer followed by a known unit.

    Example:
        >>> parse_duration("720min")
        datetime.timedelta(seconds=43200)
    """
    match = _DURATION.match(raw)
    unit = _UNITS.get(match.group(2).lower()) if match else None
    if match is None or unit is None:
        where = f"table {table}: " if table else ""
        what = f"property {key!r}: " if key else ""
        raise PropertyError(f"{where}{what}expected {_EXPECTED}, found {raw!r}")
    return int(match.group(1)) * unit


def _duration(raw: str) -> timedelta:
    """An Amoro/Flink duration (``720min``; a bare number is milliseconds)."""
    try:
        return parse_duration(raw)
    except PropertyError as exc:
        raise ValueError(f"expected {_EXPECTED}") from exc


def _millis(raw: str) -> timedelta:
    """A duration Amoro spells as whole milliseconds (``3600000``)."""
    return timedelta(milliseconds=_int(raw))


def _millis_or_off(raw: str) -> timedelta | None:
    """:func:`_millis`, where a negative count (Amoro's ``-1``) is off: None."""
    millis = _int(raw)
    return None if millis < 0 else timedelta(milliseconds=millis)


def _minutes(raw: str) -> timedelta:
    """A duration Amoro spells as whole minutes (``change.data.ttl.minutes``)."""
    return timedelta(minutes=_int(raw))


def _non_negative_duration(value: timedelta) -> bool:
    return value >= timedelta(0)


def _positive_duration(value: timedelta) -> bool:
    return value > timedelta(0)


@dataclass(frozen=True, slots=True, kw_only=True)
class Option(Generic[T]):
    """One property: its key, parser, typed default and meaning.

    Attributes:
        key: the property key, as users (and Amoro) spell it.
        parse: text to the typed value; raises ``ValueError("expected ...")``.
        default: the typed value when the key is absent (None: off, or unset).
        doc: the meaning, for ``docs/options.md``.
        check: a rule the parsed value must keep, described by ``expectation``.
        spelled: the default as users write it, where that is not the typed value's text
            (``-1`` for None, ``3600000`` for one hour).
        read_elsewhere: who reads the key when no config object of ours does (Iceberg's
            writer or commit, reading the store's own properties), or why nobody needs to (the
            one value mixed-iceberg supports, declared so that any other is refused when set).
            Empty for every other key: a config field reads it (a test checks this).
    """

    key: str
    parse: Callable[[str], T]
    default: T
    doc: str
    check: Callable[[T], bool] | None = None
    expectation: str = ""
    spelled: str | None = None
    read_elsewhere: str = ""

    @property
    def default_text(self) -> str:
        """The default as a user writes it."""
        if self.spelled is not None:
            return self.spelled
        if isinstance(self.default, bool):
            return str(self.default).lower()
        if isinstance(self.default, enum.Enum):
            return str(self.default.value)
        return str(self.default)

    def read(self, properties: Mapping[str, str], table: str = "", *, owner: str = "") -> T:
        """The typed value of this option in ``properties`` (the default when absent).

        ``owner`` names what the properties belong to in errors when they are not a table's
        (``"optimizer group 'default'"``); otherwise ``table`` does.

        Raises:
            PropertyError: the value does not parse or breaks the option's rule.
        """
        raw = properties.get(self.key)
        if raw is None:
            return self.default
        where = f"{owner}: " if owner else _where(table)
        try:
            value = self.parse(raw)
        except _NotOneOfError as exc:  # a kind: read as a rule broken ("expected a or b, found c")
            raise PropertyError(
                f"{where}property {self.key!r}: {exc}, found {raw!r}", key=self.key, value=raw, expected=_expectation(exc)
            ) from exc
        except ValueError as exc:
            raise PropertyError(
                f"{where}property {self.key!r}: {exc}; found {raw!r}", key=self.key, value=raw, expected=_expectation(exc)
            ) from exc
        if self.check is not None and not self.check(value):
            raise PropertyError(
                f"{where}property {self.key!r}: expected {self.expectation}, found {raw!r}",
                key=self.key,
                value=raw,
                expected=self.expectation,
            )
        return value


def _expectation(exc: ValueError) -> str:
    return str(exc).removeprefix("expected ")


def _where(table: str) -> str:
    return f"table {table}: " if table else ""


def _power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def _positive(value: float) -> bool:
    return value > 0


def _non_negative(value: float) -> bool:
    return value >= 0


#: The parsers and checks, for registries other than the table's (the optimizer's group options).
parse_bool, parse_int, parse_float, parse_text, parse_timedelta = _bool, _int, _float, _str, _duration
is_positive, is_non_negative, is_positive_duration = _positive, _non_negative, _positive_duration

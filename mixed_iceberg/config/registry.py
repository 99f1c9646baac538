"""The option registry: every table property key declared once, parsed once, at the edge.

Keys and defaults follow Amoro's ``TableProperties`` (see ``shared/research/amoro.md``).
Inner code never reads a property string: it gets the frozen configs of
:mod:`mixed_iceberg.config` (:class:`~mixed_iceberg.config.table.TableConfig` and its parts).
``python -m mixed_iceberg.config`` prints the Markdown table of every option.

Unknown keys in our namespaces (``self-optimizing.``, ``log-store.``, ``base.``, ...) are
rejected with the closest known key; keys in Iceberg's own namespaces pass through, except the
Iceberg keys mixed-iceberg (or pyiceberg under it) parses on every commit or write: those are
declared here with Iceberg's defaults, so that a bad value is refused when it is set rather
than breaking every later commit.
"""

from __future__ import annotations

import difflib
import enum
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Generic, TypeVar

from mixed_iceberg.exceptions import PropertyError

__all__ = [
    "OPTIONS",
    "Option",
    "check_key",
    "is_non_negative",
    "is_positive",
    "options_markdown",
    "parse_bool",
    "parse_duration",
    "parse_duration_text",
    "parse_enum",
    "parse_float",
    "parse_int",
    "parse_text",
    "validate_properties",
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


def _duration(raw: str) -> str:
    """Validate an Amoro duration at the edge and keep the text (maintenance converts it)."""
    try:
        parse_duration(raw)
    except PropertyError as exc:
        raise ValueError(f"expected {_EXPECTED}") from exc
    return raw


@dataclass(frozen=True, slots=True)
class Option(Generic[T]):
    """One table property: its key, parser, default and meaning."""

    key: str
    parse: Callable[[str], T]
    default: T
    doc: str
    check: Callable[[T], bool] | None = None
    expectation: str = ""

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
            raise PropertyError(f"{where}property {self.key!r}: {exc}, found {raw!r}") from exc
        except ValueError as exc:
            raise PropertyError(f"{where}property {self.key!r}: {exc}; found {raw!r}") from exc
        if self.check is not None and not self.check(value):
            raise PropertyError(f"{where}property {self.key!r}: expected {self.expectation}, found {raw!r}")
        return value


def _where(table: str) -> str:
    return f"table {table}: " if table else ""


def _power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def _positive(value: float) -> bool:
    return value > 0


def _non_negative(value: float) -> bool:
    return value >= 0


OPTIONS: dict[str, Option[Any]] = {}


#: The parsers and checks, for registries other than the table's (the optimizer's group options).
parse_bool, parse_int, parse_float, parse_text, parse_duration_text = _bool, _int, _float, _str, _duration
is_positive, is_non_negative = _positive, _non_negative


def _declare(option: Option[T]) -> Option[T]:
    OPTIONS[option.key] = option
    return option


# -- Iceberg's common table properties ----------------------------------------------------------
COMMENT = _declare(Option("comment", _str, "", "A description of the table (Iceberg's common property; Spark's COMMENT)."))
OWNER = _declare(Option("owner", _str, "", "Who owns the table (Iceberg's common property)."))

# -- layout and writing ------------------------------------------------------------------------
BASE_HASH_BUCKET = _declare(
    Option("base.file-index.hash-bucket", _int, 4, "Tree-node buckets of BaseStore files.", _power_of_two, "a power of two")
)
CHANGE_HASH_BUCKET = _declare(
    Option("change.file-index.hash-bucket", _int, 4, "Tree-node buckets of ChangeStore files.", _power_of_two, "a power of two")
)
TARGET_FILE_SIZE = _declare(
    Option(
        "write.target-file-size-bytes", _int, 134217728, "Target size of written data files.", _positive, "a positive byte count"
    )
)
UPSERT_ENABLED = _declare(
    Option("write.upsert.enabled", _bool, False, "Write every +I as a delete then an insert of its key (upsert).")
)
BASE_WRITE_FORMAT = _declare(Option("base.write.format", _format, "parquet", "File format of BaseStore files."))
CHANGE_WRITE_FORMAT = _declare(Option("change.write.format", _format, "parquet", "File format of ChangeStore files."))
WRITE_FORMAT = _declare(Option("write.format.default", _format, "parquet", "Default file format."))
BASE_REFRESH_INTERVAL = _declare(
    Option("base.refresh-interval", _int, -1, "Minor-optimize partitions with change data at least this often (ms); -1 is off.")
)
# -- Iceberg keys parsed on every commit or write (Iceberg's defaults) ----------------------------
MANIFEST_MERGE_ENABLED = _declare(
    Option(
        "commit.manifest-merge.enabled",
        _bool,
        True,
        "Iceberg: appends merge small manifests (Iceberg Java's default; pyiceberg's own is false).",
    )
)
MANIFEST_MIN_COUNT_TO_MERGE = _declare(
    Option(
        "commit.manifest.min-count-to-merge",
        _int,
        100,
        "Iceberg: manifests of a snapshot before an append merges them (and maintenance rewrites them).",
        _positive,
        "a positive count",
    )
)
MANIFEST_TARGET_SIZE = _declare(
    Option(
        "commit.manifest.target-size-bytes",
        _int,
        8388608,
        "Iceberg: target size of a merged manifest.",
        _positive,
        "a positive byte count",
    )
)
PARQUET_ROW_GROUP_LIMIT = _declare(
    Option("write.parquet.row-group-limit", _int, 1048576, "Iceberg: rows of a Parquet row group.", _positive, "a positive count")
)
PARQUET_PAGE_SIZE = _declare(
    Option("write.parquet.page-size-bytes", _int, 1048576, "Iceberg: Parquet data page size.", _positive, "a positive byte count")
)
PARQUET_PAGE_ROW_LIMIT = _declare(
    Option("write.parquet.page-row-limit", _int, 20000, "Iceberg: rows of a Parquet data page.", _positive, "a positive count")
)
PARQUET_DICT_SIZE = _declare(
    Option(
        "write.parquet.dict-size-bytes",
        _int,
        2097152,
        "Iceberg: Parquet dictionary page size limit.",
        _positive,
        "a positive byte count",
    )
)
PARQUET_COMPRESSION = _declare(Option("write.parquet.compression-codec", _codec, "zstd", "Iceberg: Parquet compression codec."))
PARQUET_COMPRESSION_LEVEL = _declare(
    Option("write.parquet.compression-level", _int, None, "Iceberg: Parquet compression level (the codec's default when unset).")
)
METADATA_DELETE_AFTER_COMMIT = _declare(
    Option(
        "write.metadata.delete-after-commit.enabled",
        _bool,
        False,
        "Iceberg: delete metadata files that fall off the metadata log (mixed-iceberg, like Amoro, sets true at create).",
    )
)
METADATA_PREVIOUS_VERSIONS_MAX = _declare(
    Option(
        "write.metadata.previous-versions-max",
        _int,
        100,
        "Iceberg: metadata files kept in the metadata log.",
        _positive,
        "a positive count",
    )
)
# -- LogStore -----------------------------------------------------------------------------------
LOG_STORE_ENABLED = _declare(Option("log-store.enabled", _bool, False, "Double-write every change to the LogStore."))
LOG_STORE_TYPE = _declare(Option("log-store.type", _str, "kafka", "LogStore backend.", lambda v: v == "kafka", "kafka"))
LOG_STORE_ADDRESS = _declare(Option("log-store.address", _str, "", "LogStore bootstrap servers."))
LOG_STORE_TOPIC = _declare(Option("log-store.topic", _str, "", "LogStore topic (Amoro's key)."))
LOG_STORE_MESSAGE_TOPIC = _declare(Option("log-store.message.topic", _str, "", "LogStore topic (alias used by the ingest job)."))
LOG_STORE_DATA_FORMAT = _declare(
    Option("log-store.data-format", _str, "json", "LogStore row encoding.", lambda v: v == "json", "json")
)
LOG_STORE_DATA_VERSION = _declare(
    Option("log-store.data-version", _str, "v1", "LogStore message format version.", lambda v: v == "v1", "v1")
)
# -- self-optimizing ----------------------------------------------------------------------------
OPT_ENABLED = _declare(Option("self-optimizing.enabled", _bool, True, "Whether the table is optimized at all."))
OPT_GROUP = _declare(Option("self-optimizing.group", _str, "default", "Optimizer group that serves the table."))
OPT_QUOTA = _declare(
    Option(
        "self-optimizing.quota",
        _float,
        0.5,
        "Share of the group's threads (<=1) or thread count (>1).",
        _positive,
        "a positive number",
    )
)
OPT_RETRIES = _declare(
    Option("self-optimizing.execute.num-retries", _int, 5, "Retries of a failed task.", _non_negative, "a count >= 0")
)
OPT_PARTIAL = _declare(
    Option("self-optimizing.allow-partial-commit", _bool, False, "Commit the tasks that succeeded when others fail.")
)
OPT_TARGET_SIZE = _declare(
    Option("self-optimizing.target-size", _int, 134217728, "Target size of optimized files.", _positive, "a positive byte count")
)
OPT_MAX_TASK_SIZE = _declare(
    Option("self-optimizing.max-task-size-bytes", _int, 134217728, "Input bytes of one task.", _positive, "a positive byte count")
)
OPT_MAX_FILE_COUNT = _declare(
    Option("self-optimizing.max-file-count", _int, 10000, "Change files taken by one process.", _positive, "a positive count")
)
OPT_FRAGMENT_RATIO = _declare(
    Option(
        "self-optimizing.fragment-ratio",
        _int,
        8,
        "target-size / fragment-ratio is the fragment size limit.",
        _positive,
        "a positive integer",
    )
)
OPT_MIN_TARGET_RATIO = _declare(
    Option(
        "self-optimizing.min-target-size-ratio",
        _float,
        0.75,
        "Files below target-size x ratio are undersized segments.",
        lambda v: 0 < v <= 1,
        "a number in (0, 1]",
    )
)
OPT_MINOR_FILES = _declare(
    Option(
        "self-optimizing.minor.trigger.file-count",
        _int,
        12,
        "Small files that trigger minor optimizing.",
        _positive,
        "a positive count",
    )
)
OPT_MERGE_WIDTH = _declare(
    Option(
        "self-optimizing.minor.merge-width",
        _int,
        8,
        "mixed-iceberg: minor merges a tree node's fragments of one size tier (sizes within a factor of this width) "
        "only once this many exist, and combines a segment's position-delete files only once it has this many, "
        "so a row is rewritten about log_width(fragment size / commit size) times, not once per run; "
        "1 rewrites every fragment on every run, as Amoro does.",
        _positive,
        "a positive count",
    )
)
OPT_MINOR_INTERVAL = _declare(
    Option(
        "self-optimizing.minor.trigger.interval",
        _int,
        3600000,
        "Minor optimizing at least this often when change data exists (ms).",
        _non_negative,
        "milliseconds >= 0",
    )
)
OPT_MAJOR_RATIO = _declare(
    Option(
        "self-optimizing.major.trigger.duplicate-ratio",
        _float,
        0.1,
        "Position-deleted share of a segment that triggers major optimizing.",
        _non_negative,
        "a ratio >= 0",
    )
)
OPT_FULL_INTERVAL = _declare(
    Option("self-optimizing.full.trigger.interval", _int, -1, "Full optimizing interval (ms); -1 is off.")
)
OPT_FULL_REWRITE_ALL = _declare(
    Option("self-optimizing.full.rewrite-all-files", _bool, True, "Full optimizing rewrites every file.")
)
OPT_MIN_PLAN_INTERVAL = _declare(
    Option(
        "self-optimizing.min-plan-interval",
        _int,
        60000,
        "Minimum time between two plans of a table (ms).",
        _non_negative,
        "milliseconds >= 0",
    )
)
OPT_FILTER = _declare(Option("self-optimizing.filter", _str, "", "SQL-like predicate limiting optimizing to some partitions."))
OPT_KEY_INDEX = _declare(
    Option(
        "self-optimizing.key-index.enabled",
        _bool,
        True,
        "Find the segment rows a change retires through per-file key indexes (key-index/ beside the BaseStore's "
        "data, cached by the optimizer), not by reading every segment's keys: work follows the change, not the table. "
        "mixed-iceberg's own; an index is a cache, never a source of truth.",
    )
)
# -- merge engines (Paimon's names; checked against the schema by reader/engines.py) -----------------
MERGE_ENGINE = _declare(
    Option(
        "merge-engine",
        _str,
        "deduplicate",
        "What a key's rows make of it: deduplicate (latest row), partial-update (non-null fields of later rows "
        "update the row), aggregation (fields.<col>.aggregate-function per column), first-row (first row kept). "
        "Fixed at create.",
        lambda v: v.strip().lower() in ("deduplicate", "partial-update", "aggregation", "first-row"),
        "deduplicate, partial-update, aggregation or first-row",
    )
)
SEQUENCE_FIELD = _declare(
    Option(
        "sequence.field",
        _str,
        "",
        "A column that orders a key's changes before their arrival (an updated_at), for sources that deliver "
        "out of order. Fixed at create.",
    )
)
IGNORE_DELETE = _declare(
    Option("ignore-delete", _bool, False, "Drop -D and -U rows (and aggregation's retractions). Fixed at create.")
)
# -- maintenance --------------------------------------------------------------------------------
EXPIRE_ENABLED = _declare(Option("table-expire.enabled", _bool, True, "Expire old snapshots."))
SNAPSHOT_KEEP_DURATION = _declare(
    Option("snapshot.keep.duration", _duration, "720min", "Keep snapshots at least this long (e.g. 720min).")
)
SNAPSHOT_KEEP_MIN = _declare(Option("snapshot.keep.min-count", _int, 1, "Snapshots always kept.", _positive, "a positive count"))
CHANGE_TTL = _declare(
    Option(
        "change.data.ttl.minutes",
        _int,
        10080,
        "Merged change files older than this are deleted (minutes).",
        _non_negative,
        "minutes >= 0",
    )
)
ORPHAN_ENABLED = _declare(Option("clean-orphan-file.enabled", _bool, False, "Delete unreferenced files."))
ORPHAN_MIN_AGE = _declare(
    Option(
        "clean-orphan-file.min-existing-time-minutes",
        _int,
        2880,
        "Safety window of orphan cleaning (minutes).",
        _non_negative,
        "minutes >= 0",
    )
)
DANGLING_ENABLED = _declare(
    Option("clean-dangling-delete-files.enabled", _bool, True, "Delete delete files that no longer apply.")
)

#: Namespaces whose keys must be declared above; a typo there is an error, not a silent no-op.
OWNED_PREFIXES = (
    "self-optimizing.",
    "log-store.",
    "base.",
    "change.",
    "table-expire.",
    "snapshot.keep.",
    "clean-orphan-file.",
    "clean-dangling-delete-files.",
    "mixed-format.",
)
#: Namespaces owned by Iceberg or engines; passed through untouched.
PASSTHROUGH_PREFIXES = (
    "fields.",  # fields.<column>.aggregate-function and friends: checked against the schema at create
    "write.",
    "read.",
    "commit.",
    "history.",
    "format-version",
    "metadata.",
    "flink.",
    "properties.",
    "table.",
    "schema.",
    "gc.",
    "data-expire.",
    "tag.",
)
#: Keys mixed-iceberg itself writes at creation (Amoro's format markers); users may not set them.
RESERVED_KEYS = (
    "table-format",
    "mixed-format.primary-key-fields",
    "mixed-format.table-store",
    "mixed-format.change.identifier",
)


def check_key(key: str, table: str = "") -> None:
    """Reject a key users may not set: a reserved one, or an unknown one in an owned namespace.

    Raises:
        PropertyError: with the offending key and the closest known key.
    """
    if key in OPTIONS:
        return
    if key in RESERVED_KEYS:
        raise PropertyError(f"{_where(table)}property {key!r} is written by mixed-iceberg itself and cannot be set")
    if key.startswith(OWNED_PREFIXES) or not key.startswith(PASSTHROUGH_PREFIXES):
        close = difflib.get_close_matches(key, list(OPTIONS), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise PropertyError(f"{_where(table)}unknown property {key!r}{hint}")


def validate_properties(properties: Mapping[str, str], table: str = "") -> None:
    """Reject unknown keys in owned namespaces and values that do not parse.

    Raises:
        PropertyError: with the offending key, the closest known key and the value found.
    """
    for key, value in properties.items():
        if not isinstance(value, str):
            raise PropertyError(f"{_where(table)}property {key!r}: expected a string value, found {type(value).__name__}")
        check_key(key, table)
        if key in OPTIONS:
            OPTIONS[key].read(properties, table)


def options_markdown() -> str:
    """The Markdown table of every declared option (the docs are generated from this)."""
    lines = ["| key | default | meaning |", "| --- | --- | --- |"]
    for option in sorted(OPTIONS.values(), key=lambda o: o.key):
        default = str(option.default).lower() if isinstance(option.default, bool) else str(option.default)
        lines.append(f"| `{option.key}` | `{default}` | {option.doc} |")
    return "\n".join(lines) + "\n"

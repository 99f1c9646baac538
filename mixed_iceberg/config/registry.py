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
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from mixed_iceberg.config.kinds import MergeEngine
from mixed_iceberg.config.option import (
    Option,
    T,
    _bool,
    _codec,
    _duration,
    _float,
    _format,
    _int,
    _millis,
    _millis_or_off,
    _minutes,
    _non_negative,
    _non_negative_duration,
    _positive,
    _power_of_two,
    _str,
    _where,
    parse_enum,
)
from mixed_iceberg.exceptions import PropertyError

__all__ = [
    "OPTIONS",
    "Option",
    "check_key",
    "declare",
    "options_markdown",
    "validate_properties",
]

OPTIONS: dict[str, Option[Any]] = {}


def _declare(option: Option[T]) -> Option[T]:
    OPTIONS[option.key] = option
    return option


#: For the modules that declare a namespace of their own (``config/health.py``).
declare = _declare


# -- Iceberg's common table properties ----------------------------------------------------------
COMMENT = _declare(
    Option(
        key="comment",
        parse=_str,
        default="",
        doc="A description of the table (Iceberg's common property; Spark's COMMENT).",
        read_elsewhere="stored for engines and catalogs; Iceberg's common property",
    )
)
OWNER = _declare(
    Option(
        key="owner",
        parse=_str,
        default="",
        doc="Who owns the table (Iceberg's common property).",
        read_elsewhere="stored for engines and catalogs; Iceberg's common property",
    )
)

# -- layout and writing ------------------------------------------------------------------------
BASE_HASH_BUCKET = _declare(
    Option(
        key="base.file-index.hash-bucket",
        parse=_int,
        default=4,
        doc="Tree-node buckets of BaseStore files.",
        check=_power_of_two,
        expectation="a power of two",
    )
)
CHANGE_HASH_BUCKET = _declare(
    Option(
        key="change.file-index.hash-bucket",
        parse=_int,
        default=4,
        doc="Tree-node buckets of ChangeStore files.",
        check=_power_of_two,
        expectation="a power of two",
    )
)
TARGET_FILE_SIZE = _declare(
    Option(
        key="write.target-file-size-bytes",
        parse=_int,
        default=134217728,
        doc="Target size of written data files.",
        check=_positive,
        expectation="a positive byte count",
    )
)
UPSERT_ENABLED = _declare(
    Option(
        key="write.upsert.enabled",
        parse=_bool,
        default=False,
        doc="Write every +I as a delete then an insert of its key (upsert).",
    )
)
BASE_WRITE_FORMAT = _declare(
    Option(
        key="base.write.format",
        parse=_format,
        default="parquet",
        doc="File format of BaseStore files.",
        read_elsewhere="checked only: parquet is the one format mixed-iceberg writes",
    )
)
CHANGE_WRITE_FORMAT = _declare(
    Option(
        key="change.write.format",
        parse=_format,
        default="parquet",
        doc="File format of ChangeStore files.",
        read_elsewhere="checked only: parquet is the one format mixed-iceberg writes",
    )
)
WRITE_FORMAT = _declare(
    Option(
        key="write.format.default",
        parse=_format,
        default="parquet",
        doc="Default file format.",
        read_elsewhere="checked only: parquet is the one format mixed-iceberg writes",
    )
)
BASE_REFRESH_INTERVAL = _declare(
    Option(
        key="base.refresh-interval",
        parse=_millis_or_off,
        default=None,
        spelled="-1",
        doc="Minor-optimize partitions with change data at least this often (ms); -1 is off.",
    )
)
# -- Iceberg keys parsed on every commit or write (Iceberg's defaults) ----------------------------
MANIFEST_MERGE_ENABLED = _declare(
    Option(
        key="commit.manifest-merge.enabled",
        parse=_bool,
        default=True,
        doc="Iceberg: appends merge small manifests (Iceberg Java's default; pyiceberg's own is false).",
        read_elsewhere="every commit, from each store's own properties (store/commit.py)",
    )
)
MANIFEST_MIN_COUNT_TO_MERGE = _declare(
    Option(
        key="commit.manifest.min-count-to-merge",
        parse=_int,
        default=100,
        doc="Iceberg: manifests of a snapshot before an append merges them (and maintenance rewrites them).",
        check=_positive,
        expectation="a positive count",
    )
)
MANIFEST_TARGET_SIZE = _declare(
    Option(
        key="commit.manifest.target-size-bytes",
        parse=_int,
        default=8388608,
        doc="Iceberg: target size of a merged manifest.",
        check=_positive,
        expectation="a positive byte count",
    )
)
PARQUET_ROW_GROUP_LIMIT = _declare(
    Option(
        key="write.parquet.row-group-limit",
        parse=_int,
        default=1048576,
        doc="Iceberg: rows of a Parquet row group.",
        check=_positive,
        expectation="a positive count",
        read_elsewhere="the data-file writer and pyiceberg, from each store's own properties",
    )
)
PARQUET_PAGE_SIZE = _declare(
    Option(
        key="write.parquet.page-size-bytes",
        parse=_int,
        default=1048576,
        doc="Iceberg: Parquet data page size.",
        check=_positive,
        expectation="a positive byte count",
        read_elsewhere="the data-file writer and pyiceberg, from each store's own properties",
    )
)
PARQUET_PAGE_ROW_LIMIT = _declare(
    Option(
        key="write.parquet.page-row-limit",
        parse=_int,
        default=20000,
        doc="Iceberg: rows of a Parquet data page.",
        check=_positive,
        expectation="a positive count",
        read_elsewhere="the data-file writer and pyiceberg, from each store's own properties",
    )
)
PARQUET_DICT_SIZE = _declare(
    Option(
        key="write.parquet.dict-size-bytes",
        parse=_int,
        default=2097152,
        doc="Iceberg: Parquet dictionary page size limit.",
        check=_positive,
        expectation="a positive byte count",
        read_elsewhere="the data-file writer and pyiceberg, from each store's own properties",
    )
)
PARQUET_COMPRESSION = _declare(
    Option(
        key="write.parquet.compression-codec",
        parse=_codec,
        default="zstd",
        doc="Iceberg: Parquet compression codec.",
        read_elsewhere="the data-file writer and pyiceberg, from each store's own properties",
    )
)
PARQUET_COMPRESSION_LEVEL = _declare(
    Option(
        key="write.parquet.compression-level",
        parse=_int,
        default=None,
        doc="Iceberg: Parquet compression level (the codec's default when unset).",
        read_elsewhere="the data-file writer and pyiceberg, from each store's own properties",
    )
)
METADATA_DELETE_AFTER_COMMIT = _declare(
    Option(
        key="write.metadata.delete-after-commit.enabled",
        parse=_bool,
        default=False,
        doc="Iceberg: delete metadata files that fall off the metadata log (mixed-iceberg, like Amoro, sets true at create).",
        read_elsewhere="pyiceberg's commit, from each store's own properties",
    )
)
METADATA_PREVIOUS_VERSIONS_MAX = _declare(
    Option(
        key="write.metadata.previous-versions-max",
        parse=_int,
        default=100,
        doc="Iceberg: metadata files kept in the metadata log.",
        check=_positive,
        expectation="a positive count",
        read_elsewhere="pyiceberg's commit, from each store's own properties",
    )
)
# -- LogStore -----------------------------------------------------------------------------------
LOG_STORE_ENABLED = _declare(
    Option(key="log-store.enabled", parse=_bool, default=False, doc="Double-write every change to the LogStore.")
)
LOG_STORE_TYPE = _declare(
    Option(
        key="log-store.type",
        parse=_str,
        default="kafka",
        doc="LogStore backend.",
        check=lambda v: v == "kafka",
        expectation="kafka",
        read_elsewhere="checked only: the one value mixed-iceberg supports",
    )
)
LOG_STORE_ADDRESS = _declare(Option(key="log-store.address", parse=_str, default="", doc="LogStore bootstrap servers."))
LOG_STORE_TOPIC = _declare(Option(key="log-store.topic", parse=_str, default="", doc="LogStore topic (Amoro's key)."))
LOG_STORE_MESSAGE_TOPIC = _declare(
    Option(key="log-store.message.topic", parse=_str, default="", doc="LogStore topic (alias used by the ingest job).")
)
LOG_STORE_DATA_FORMAT = _declare(
    Option(
        key="log-store.data-format",
        parse=_str,
        default="json",
        doc="LogStore row encoding.",
        check=lambda v: v == "json",
        expectation="json",
        read_elsewhere="checked only: the one value mixed-iceberg supports",
    )
)
LOG_STORE_DATA_VERSION = _declare(
    Option(
        key="log-store.data-version",
        parse=_str,
        default="v1",
        doc="LogStore message format version.",
        check=lambda v: v == "v1",
        expectation="v1",
        read_elsewhere="checked only: the one value mixed-iceberg supports",
    )
)
# -- self-optimizing ----------------------------------------------------------------------------
OPT_ENABLED = _declare(
    Option(key="self-optimizing.enabled", parse=_bool, default=True, doc="Whether the table is optimized at all.")
)
OPT_GROUP = _declare(
    Option(key="self-optimizing.group", parse=_str, default="default", doc="Optimizer group that serves the table.")
)
OPT_QUOTA = _declare(
    Option(
        key="self-optimizing.quota",
        parse=_float,
        default=0.5,
        doc="Share of the group's threads (<=1) or thread count (>1).",
        check=_positive,
        expectation="a positive number",
    )
)
OPT_RETRIES = _declare(
    Option(
        key="self-optimizing.execute.num-retries",
        parse=_int,
        default=5,
        doc="Retries of a failed task.",
        check=_non_negative,
        expectation="a count >= 0",
    )
)
OPT_PARTIAL = _declare(
    Option(
        key="self-optimizing.allow-partial-commit",
        parse=_bool,
        default=False,
        doc="When tasks fail for good (in the optimizer service after execute.num-retries runs, in table.optimizing.run() "
        "at once), commit the ones that succeeded instead of failing the process, as Amoro does; a partition whose change "
        "a failed task held is left out, so no change is hidden unmerged.",
    )
)
OPT_TARGET_SIZE = _declare(
    Option(
        key="self-optimizing.target-size",
        parse=_int,
        default=134217728,
        doc="Target size of optimized files.",
        check=_positive,
        expectation="a positive byte count",
    )
)
OPT_MAX_TASK_SIZE = _declare(
    Option(
        key="self-optimizing.max-task-size-bytes",
        parse=_int,
        default=134217728,
        doc="Input bytes of one task.",
        check=_positive,
        expectation="a positive byte count",
    )
)
OPT_MAX_FILE_COUNT = _declare(
    Option(
        key="self-optimizing.max-file-count",
        parse=_int,
        default=10000,
        doc="Change files taken by one process.",
        check=_positive,
        expectation="a positive count",
    )
)
OPT_FRAGMENT_RATIO = _declare(
    Option(
        key="self-optimizing.fragment-ratio",
        parse=_int,
        default=8,
        doc="target-size / fragment-ratio is the fragment size limit.",
        check=_positive,
        expectation="a positive integer",
    )
)
OPT_MIN_TARGET_RATIO = _declare(
    Option(
        key="self-optimizing.min-target-size-ratio",
        parse=_float,
        default=0.75,
        doc="Files below target-size x ratio are undersized segments.",
        check=lambda v: 0 < v <= 1,
        expectation="a number in (0, 1]",
    )
)
OPT_MINOR_FILES = _declare(
    Option(
        key="self-optimizing.minor.trigger.file-count",
        parse=_int,
        default=12,
        doc="Small files that trigger minor optimizing.",
        check=_positive,
        expectation="a positive count",
    )
)
OPT_MERGE_WIDTH = _declare(
    Option(
        key="self-optimizing.minor.merge-width",
        parse=_int,
        default=8,
        doc="mixed-iceberg: minor merges a tree node's fragments of one size tier (sizes within a factor of this width) "
        "only once this many exist, and combines a segment's position-delete files only once it has this many, "
        "so a row is rewritten about log_width(fragment size / commit size) times, not once per run; "
        "1 rewrites every fragment on every run, as Amoro does.",
        check=_positive,
        expectation="a positive count",
    )
)
OPT_MINOR_INTERVAL = _declare(
    Option(
        key="self-optimizing.minor.trigger.interval",
        parse=_millis,
        default=timedelta(hours=1),
        spelled="3600000",
        doc="Minor optimizing at least this often when change data exists (ms).",
        check=_non_negative_duration,
        expectation="milliseconds >= 0",
    )
)
OPT_MAJOR_RATIO = _declare(
    Option(
        key="self-optimizing.major.trigger.duplicate-ratio",
        parse=_float,
        default=0.1,
        doc="Position-deleted share of a segment that triggers major optimizing.",
        check=_non_negative,
        expectation="a ratio >= 0",
    )
)
OPT_FULL_INTERVAL = _declare(
    Option(
        key="self-optimizing.full.trigger.interval",
        parse=_millis_or_off,
        default=None,
        spelled="-1",
        doc="Full optimizing interval (ms); -1 is off.",
    )
)
OPT_FULL_REWRITE_ALL = _declare(
    Option(key="self-optimizing.full.rewrite-all-files", parse=_bool, default=True, doc="Full optimizing rewrites every file.")
)
OPT_MIN_PLAN_INTERVAL = _declare(
    Option(
        key="self-optimizing.min-plan-interval",
        parse=_millis,
        default=timedelta(minutes=1),
        spelled="60000",
        doc="Minimum time between two plans of a table (ms).",
        check=_non_negative_duration,
        expectation="milliseconds >= 0",
    )
)
OPT_FILTER = _declare(
    Option(key="self-optimizing.filter", parse=_str, default="", doc="SQL-like predicate limiting optimizing to some partitions.")
)
OPT_KEY_INDEX = _declare(
    Option(
        key="self-optimizing.key-index.enabled",
        parse=_bool,
        default=True,
        doc="Find the segment rows a change retires through per-file key indexes (key-index/ beside the BaseStore's "
        "data, cached by the optimizer), not by reading every segment's keys: work follows the change, not the table. "
        "mixed-iceberg's own; an index is a cache, never a source of truth.",
    )
)
# -- merge engines (Paimon's names; checked against the schema by reader/engines.py) -----------------
MERGE_ENGINE = _declare(
    Option(
        key="merge-engine",
        parse=parse_enum(MergeEngine),
        default=MergeEngine.DEDUPLICATE,
        doc="What a key's rows make of it: deduplicate (latest row), partial-update (non-null fields of later rows "
        "update the row), aggregation (fields.<col>.aggregate-function per column), first-row (first row kept). "
        "Fixed at create.",
    )
)
SEQUENCE_FIELD = _declare(
    Option(
        key="sequence.field",
        parse=_str,
        default="",
        doc="A column that orders a key's changes before their arrival (an updated_at), for sources that deliver "
        "out of order. Fixed at create.",
    )
)
IGNORE_DELETE = _declare(
    Option(
        key="ignore-delete",
        parse=_bool,
        default=False,
        doc="Drop -D and -U rows (and aggregation's retractions). Fixed at create.",
    )
)
# -- maintenance --------------------------------------------------------------------------------
EXPIRE_ENABLED = _declare(Option(key="table-expire.enabled", parse=_bool, default=True, doc="Expire old snapshots."))
SNAPSHOT_KEEP_DURATION = _declare(
    Option(
        key="snapshot.keep.duration",
        parse=_duration,
        default=timedelta(minutes=720),
        spelled="720min",
        doc="Keep snapshots at least this long (e.g. 720min).",
    )
)
SNAPSHOT_KEEP_MIN = _declare(
    Option(
        key="snapshot.keep.min-count",
        parse=_int,
        default=1,
        doc="Snapshots always kept.",
        check=_positive,
        expectation="a positive count",
    )
)
CHANGE_TTL = _declare(
    Option(
        key="change.data.ttl.minutes",
        parse=_minutes,
        default=timedelta(minutes=10080),
        spelled="10080",
        doc="Merged change files older than this are deleted (minutes).",
        check=_non_negative_duration,
        expectation="minutes >= 0",
    )
)
ORPHAN_ENABLED = _declare(Option(key="clean-orphan-file.enabled", parse=_bool, default=False, doc="Delete unreferenced files."))
ORPHAN_MIN_AGE = _declare(
    Option(
        key="clean-orphan-file.min-existing-time-minutes",
        parse=_minutes,
        default=timedelta(minutes=2880),
        spelled="2880",
        doc="Safety window of orphan cleaning (minutes).",
        check=_non_negative_duration,
        expectation="minutes >= 0",
    )
)
DANGLING_ENABLED = _declare(
    Option(
        key="clean-dangling-delete-files.enabled",
        parse=_bool,
        default=True,
        doc="Remove delete files that apply to no live data file any more: maintenance removes them from every store "
        "(Amoro's dangling delete cleaning, which Amoro skips on Mixed-Iceberg tables), and optimizing drops the equality "
        "deletes it made dangling. false keeps them; reads are the same either way.",
    )
)

#: Namespaces whose keys must be declared above; a typo there is an error, not a silent no-op.
OWNED_PREFIXES = (
    "self-optimizing.",
    "health.",
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
        lines.append(f"| `{option.key}` | `{option.default_text}` | {option.doc} |")
    return "\n".join(lines) + "\n"

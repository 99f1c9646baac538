"""Every error mixed-iceberg raises, under one root.

::

    MixedIcebergError
    ├── ConfigError                 catalogs.yaml / optimizer.yaml / ingest.yaml / keyword overrides are wrong
    │   ├── UnsupportedColumnTypeError  a column type Iceberg v2 (or the ingest job's CDC format) cannot hold exactly
    │   └── JdkNotFoundError        a jar this project builds from java/ (javac) is needed and no JDK is installed
    ├── PropertyError               a table property is unknown or has a bad value
    ├── InvalidSchemaError          create_table: a reserved column name, a key type that cannot be hashed
    ├── InvalidFilterError          a row filter does not parse or names a column the table lacks
    ├── SchemaEvolutionError        update_schema: a change a keyed table cannot take (a key column, a reserved name)
    ├── InvalidIdentifierError      a table identifier that is not 'namespace.table'
    ├── TableExistsError            create_table on an existing identifier
    ├── NoSuchTableError            load/drop of a missing identifier
    ├── NoSuchNamespaceError        drop or list of a namespace the catalog does not have
    ├── NamespaceExistsError        create_namespace of an existing namespace
    ├── NamespaceNotEmptyError      drop_namespace of a namespace that still holds tables
    ├── NoSuchSnapshotError         time travel (or changes()) to a snapshot id the store does not have
    │   └── SnapshotExpiredError        time travel to a state that snapshot expiry or change TTL removed
    ├── InvalidScanError            a scan asks for columns the table lacks, or for contradicting snapshots
    ├── QueryError                  a SQL query is not one read-only SELECT over known tables, fails, or times out
    ├── NotKeyedTableError          a keyed-table operation on an unkeyed or plain Iceberg table
    ├── InvalidChangeError          a change batch is malformed
    │   ├── InvalidChangeActionError    ``_change_action`` holds something other than +I -U +U -D
    │   ├── MissingKeyError             a primary-key column is absent or null
    │   ├── RepeatedKeyError            a streamed bulk load repeats a key its merge engine would combine
    │   └── SchemaMismatchError         columns or types differ from the table schema
    ├── CorruptTableError           table metadata breaks a Mixed-Iceberg rule, or a file of it is damaged
    │   ├── OptimizedSequenceMismatchError  the BaseStore's optimized sequence is lost or its two records disagree
    │   └── CorruptFileError        a metadata file, manifest list, manifest, data or delete file does not parse
    │       └── MissingFileError    a file the table's metadata references is gone (also a FileNotFoundError)
    ├── CommitError                 a commit did not land; the table is as it was
    │   └── CommitConflictError     retryable: another commit got there first
    ├── CommitStateUnknownError     a commit may or may not have landed; its files are kept
    ├── TransactionClosedError      a write to a transaction already committed or aborted
    ├── WriterFailedError           an ingest writer's commit failed; it must be restarted
    ├── TableBusyError              the optimizer's system database holds a process in flight for the table
    ├── LogStoreError               a LogStore (Kafka) operation failed: a missing topic, an undelivered message
    ├── RequestRefusedError         the REST service refuses a request: malformed, outside the warehouse, a keyed store's rule
    └── SystemDatabaseError         a row of the optimizer's system database this version cannot read (a task format, a status)

Messages name the table and say what was expected and what was found.
"""

from __future__ import annotations

__all__ = [
    "CommitConflictError",
    "CommitError",
    "CommitStateUnknownError",
    "ConfigError",
    "CorruptFileError",
    "CorruptTableError",
    "InvalidChangeActionError",
    "InvalidChangeError",
    "InvalidFilterError",
    "InvalidIdentifierError",
    "InvalidScanError",
    "InvalidSchemaError",
    "JdkNotFoundError",
    "LogStoreError",
    "MissingFileError",
    "MissingKeyError",
    "MixedIcebergError",
    "NamespaceExistsError",
    "NamespaceNotEmptyError",
    "NoSuchNamespaceError",
    "NoSuchSnapshotError",
    "NoSuchTableError",
    "NotKeyedTableError",
    "OptimizedSequenceMismatchError",
    "PropertyError",
    "QueryError",
    "RepeatedKeyError",
    "RequestRefusedError",
    "SchemaEvolutionError",
    "SchemaMismatchError",
    "SnapshotExpiredError",
    "SystemDatabaseError",
    "TableBusyError",
    "TableExistsError",
    "TransactionClosedError",
    "UnsupportedColumnTypeError",
    "WriterFailedError",
]


class MixedIcebergError(Exception):
    """Root of every error raised by mixed-iceberg."""


class ConfigError(MixedIcebergError):
    """Configuration (``catalogs.yaml``, ``optimizer.yaml``, ``ingest.yaml``, the environment,
    keyword overrides) is missing or invalid.

    Attributes:
        file: the file the error is in (None: not from a file).
        key: the key whose value does not fit (None: the error is not about one value).
        value: the value found.
        expected: what the key takes.
    """

    def __init__(
        self, message: str, *, file: str | None = None, key: str | None = None, value: object = None, expected: str | None = None
    ) -> None:
        super().__init__(message)
        self.file, self.key, self.value, self.expected = file, key, value, expected


class UnsupportedColumnTypeError(ConfigError):
    """A column has a type that cannot be held exactly, named with the type to use instead:
    at ``create_table``, an Arrow type Iceberg v2 lacks (uint64, timestamp[ns], a zone other
    than UTC: :mod:`mixed_iceberg.arrow_types`); for the ingest job, a type its source format
    cannot carry (for Debezium JSON, one no Debezium encoding maps to, such as decimal256 or a
    map). Raised before anything is created."""


class JdkNotFoundError(ConfigError):
    """A jar this project builds from its Java sources on first use (``java/``, such as the Flink
    changelog format of :mod:`mixed_iceberg.flink`) is needed, and no ``javac`` is on ``PATH`` or
    under ``JAVA_HOME``: install a JDK 17 (``apt-get install openjdk-17-jdk-headless``)."""


class PropertyError(MixedIcebergError):
    """A table property is unknown or its value does not parse.

    Attributes:
        key: the property (None when the error is about several).
        value: the value found.
        expected: what the property takes.
    """

    def __init__(self, message: str, *, key: str | None = None, value: object = None, expected: str | None = None) -> None:
        super().__init__(message)
        self.key, self.value, self.expected = key, value, expected


class InvalidSchemaError(MixedIcebergError):
    """A schema given to ``create_table`` breaks a Mixed-Iceberg rule: a column takes a name
    mixed-iceberg reserves for its own columns, or a primary-key column has a type whose rows
    cannot be hashed into tree nodes or compared by key. Nothing was created."""


class InvalidFilterError(MixedIcebergError):
    """A row filter does not parse, or names a column the table does not have."""


class SchemaEvolutionError(MixedIcebergError):
    """A schema change that ``MixedTable.update_schema()`` refuses: dropping, renaming, retyping
    or making optional a primary-key column (Amoro keys rows by the names in
    ``mixed-format.primary-key-fields`` and hashes them by type), taking a reserved column name,
    dropping a partition source column, breaking ``self-optimizing.filter``, or a change pyiceberg
    itself rejects. Neither store changed."""


class InvalidIdentifierError(MixedIcebergError):
    """A table identifier is not ``namespace.table`` (a namespace may have several levels)."""


class TableExistsError(MixedIcebergError):
    """A table with that identifier already exists."""


class NoSuchTableError(MixedIcebergError):
    """No table with that identifier exists."""


class NoSuchSnapshotError(MixedIcebergError):
    """A time-travel read (or ``changes()``) names a snapshot id that the store it reads does
    not have (never had, or expired)."""


class QueryError(MixedIcebergError):
    """A SQL query (``mixed-iceberg sql``) is not a single read-only SELECT over known tables,
    fails in DuckDB, or runs past its timeout."""


class InvalidScanError(MixedIcebergError):
    """A scan names columns the table lacks, or time-travel arguments that contradict each other."""


class SnapshotExpiredError(NoSuchSnapshotError):
    """A time-travel read needs a snapshot (or the files of one) that maintenance removed:
    answering from what is left would be a wrong answer, so none is given."""


class NotKeyedTableError(MixedIcebergError):
    """The operation needs a keyed Mixed-Iceberg table (one with a primary key)."""


class InvalidChangeError(MixedIcebergError):
    """A batch of change rows cannot be written; nothing of it was written."""


class InvalidChangeActionError(InvalidChangeError):
    """``_change_action`` holds a value other than +I, -U, +U, -D."""


class MissingKeyError(InvalidChangeError):
    """A primary-key column is missing from the batch or holds nulls."""


class RepeatedKeyError(InvalidChangeError):
    """A streamed bulk load repeats a key of a table whose merge engine combines a key's rows
    (partial-update, aggregation, first-row): the rows cannot be combined without holding them."""


class SchemaMismatchError(InvalidChangeError):
    """The batch's columns or types do not match the table schema."""


class CorruptTableError(MixedIcebergError):
    """Stored metadata breaks a Mixed-Iceberg rule (for example a ChangeStore that is missing),
    or a file of the table is damaged (:class:`CorruptFileError`). Damage is contained to its
    table: the optimizer service marks the table FAILED with this error and serves the others."""


class OptimizedSequenceMismatchError(CorruptTableError):
    """The BaseStore's optimized sequence cannot be trusted, so the table is neither read nor
    optimized: the snapshot flagged ``optimized-sequence.exist`` has no ``optimized-sequence``
    Puffin blob and no copy in its summary (another engine replaced the statistics file of a
    snapshot Amoro wrote), or the Puffin blob and the summary copy disagree. Reading on would
    bring back change rows already merged into the BaseStore (old versions, duplicates)."""


class CorruptFileError(CorruptTableError):
    """A file the table's metadata references does not parse: a metadata JSON file, a manifest
    list, a manifest, a data or a delete file (garbage, truncated, emptied). The message names
    the table and the file; :attr:`path` is the file's location. A damaged file stays damaged
    however often it is read, unlike a transient I/O error (a connection refused, a timeout),
    which keeps its own type. ``MixedCatalog.drop_table`` and ``purge_table`` still remove the
    table."""

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class MissingFileError(CorruptFileError, FileNotFoundError):
    """A file the table's metadata references is gone. Also a :class:`FileNotFoundError`, so
    code that tells a missing file apart (a time-travel read of files that maintenance
    removed is a :class:`SnapshotExpiredError`) keeps doing so."""


class CommitError(MixedIcebergError):
    """A commit did not land; the table is as it was before."""


class CommitConflictError(CommitError):
    """Another commit changed the table first; retrying may succeed."""


class CommitStateUnknownError(MixedIcebergError):
    """A commit's outcome is unknown (the catalog or the storage failed mid-commit): it may have
    landed. The files it wrote are kept, since a live snapshot may reference them (orphan
    cleaning removes them if not). Refresh the table and check before retrying; as Iceberg
    Java's ``CommitStateUnknownException``, this is deliberately not a :class:`CommitError`."""


class TransactionClosedError(MixedIcebergError):
    """A write to (or commit of) a transaction that was already committed or aborted."""


class WriterFailedError(MixedIcebergError):
    """A streaming writer's commit failed: it takes no more records and must be restarted
    (it then resumes from what the table holds). The cause is chained."""


class LogStoreError(MixedIcebergError):
    """A LogStore operation failed: a missing topic, an undelivered message, a Kafka error."""


class RequestRefusedError(MixedIcebergError):
    """The REST service (``mixed-iceberg serve``) refuses a request and wrote nothing: ``kind``
    says why, as the REST spec's error types do: ``bad-request`` (malformed, a path-like name, a
    location outside the catalog's warehouse), ``forbidden`` (a plain client's write to a keyed
    table's store), ``unauthorized`` (no valid token), ``unsupported`` (a feature not served),
    ``invalid`` (well-formed but contradictory, as a key both set and removed)."""

    def __init__(self, message: str, kind: str = "bad-request") -> None:
        super().__init__(message)
        self.kind = kind


class NoSuchNamespaceError(MixedIcebergError):
    """A catalog operation on a namespace the catalog does not have."""


class NamespaceExistsError(MixedIcebergError):
    """``create_namespace`` of a namespace that already exists."""


class NamespaceNotEmptyError(MixedIcebergError):
    """``drop_namespace`` of a namespace that still holds tables: drop them first."""


class TableBusyError(MixedIcebergError):
    """The optimizer's system database refused a second process for a table that has one in flight."""


class SystemDatabaseError(MixedIcebergError):
    """A row of the optimizer's system database this version cannot read: a task input or output
    of an unknown format version or malformed, a status it does not know. The message names
    what was expected and what was found."""

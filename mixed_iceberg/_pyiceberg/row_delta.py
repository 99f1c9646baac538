"""Row-delta snapshots (data and delete files added and removed in one snapshot) on pyiceberg 0.12.

pyiceberg 0.12 reads position deletes but cannot commit them: its manifest writers hard-code
``content=data`` and its snapshot producers only add and drop *data* files. The BaseStore needs
both (optimizing turns ChangeStore deletes into position deletes on base files, and drops them
once the data files they point at are rewritten). What this module touches of pyiceberg's
private API (listed in ``docs/pyiceberg.md``):

* ``pyiceberg.table.update.snapshot._SnapshotProducer`` is subclassed. It writes the manifest
  list, builds the summary (with totals) and the snapshot/ref updates, and is what
  ``Transaction.commit_transaction`` re-runs on a retry (``_refresh_for_retry``,
  ``_validate_concurrency``, ``_commit``), so a staged rewrite survives a lost race.
* ``pyiceberg.manifest.ManifestWriterV2`` is subclassed (its ``_meta``) to write *delete* manifests.
* ``Transaction._table`` gives the FileIO and, on a retry, the refreshed catalog metadata;
  ``Transaction._snapshot_producers`` is cleaned when staging fails.
* ``DataFile._spec_id``: ``DataFile.from_args`` drops the spec id (:func:`spec_id_of`).
* :func:`add_snapshot_properties` adds summary entries to a snapshot already staged: it sets
  the producer's ``snapshot_properties`` (what a retry rebuilds the snapshot from) and swaps
  the staged ``AddSnapshotUpdate`` in ``Transaction._updates`` for one with the entries. Needed
  because the optimized sequence's summary copy is only known where its Puffin file is
  staged, after the snapshot (basestore.optimized_sequence); pyiceberg has no public way to
  amend a staged snapshot (a summary-properties hook would remove the need).

Example:
    >>> with tbl.transaction() as txn:  # doctest: +SKIP
    ...     stage_rewrite(txn, add_deletes=[deletes])
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence

from pyiceberg.exceptions import ValidationException
from pyiceberg.expressions import AlwaysFalse, AlwaysTrue, And, BooleanExpression, EqualTo, IsNull, Or, Reference
from pyiceberg.expressions.visitors import manifest_evaluator
from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    ManifestWriter,
    ManifestWriterV2,
)
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.table import Table, Transaction
from pyiceberg.table.snapshots import CHANGED_PARTITION_COUNT_PROP, Operation, Summary, ancestors_between_ids
from pyiceberg.table.update import AddSnapshotUpdate
from pyiceberg.table.update.snapshot import _SnapshotProducer
from pyiceberg.typedef import EMPTY_DICT, Record

from mixed_iceberg._pyiceberg.access import ManifestAccess, ManifestMerge

__all__ = ["DeleteManifestWriter", "add_snapshot_properties", "spec_id_of", "stage_rewrite"]


def stage_rewrite(
    txn: Transaction,
    *,
    access: ManifestAccess,
    merge: ManifestMerge,
    add_data: Sequence[DataFile] = (),
    remove_data: Sequence[DataFile] = (),
    add_deletes: Sequence[DataFile] = (),
    remove_deletes: Sequence[DataFile] = (),
    snapshot_properties: Mapping[str, str] = EMPTY_DICT,
    operation: Operation | None = None,
) -> int:
    """Stage on ``txn`` one snapshot that adds and removes data files and delete files.

    No files at all stages an empty ``append`` that only carries ``snapshot_properties``.
    Removed files must be live in the branch head; their manifest entries are kept as DELETED
    (with their sequence numbers), every other live entry is carried over. Added files get the
    new snapshot's sequence number, so equality deletes added here apply to older data only.
    ``access`` reads the parent's manifests, ``merge`` says when small manifests are merged
    (callers pass this package's: :func:`mixed_iceberg.store.rewrite.stage_rewrite`).
    The operation is inferred unless given: ``append`` (data added only), ``delete`` (no data
    added, but data files removed or delete files added), ``overwrite`` otherwise. Pass
    ``Operation.REPLACE`` for a rewrite that keeps the table's rows (compaction, dropping
    dangling deletes), so incremental readers skip it.

    If the commit is retried after a concurrent commit, the snapshot is rebuilt on the new head.
    It fails with ``ValidationException`` when a removed file is gone, when delete files were
    added meanwhile in a partition whose data files this removes (they would not apply to the
    rewritten rows), or when data files were removed meanwhile in a partition this adds position
    deletes to (the rows may have moved).

    Returns:
        The id of the staged snapshot.

    Raises:
        ValueError: a file is in the wrong list, listed twice, or the table cannot hold deletes.
        ValidationException: a removed file is not live in the branch head.
    """
    _check_content("add_data", add_data, data=True)
    _check_content("remove_data", remove_data, data=True)
    _check_content("add_deletes", add_deletes, data=False)
    _check_content("remove_deletes", remove_deletes, data=False)
    added, removed = [*add_data, *add_deletes], [*remove_data, *remove_deletes]
    paths = Counter(f.file_path for f in (*added, *removed))
    if repeated := sorted(path for path, count in paths.items() if count > 1):
        raise ValueError(f"expected each file once across the add and remove lists, found repeated: {repeated}")
    if (add_deletes or remove_deletes) and txn.table_metadata.format_version != 2:
        raise ValueError(f"delete files need table format version 2, found {txn.table_metadata.format_version}")
    if operation is None:
        operation = _infer_operation(bool(add_data), bool(remove_data), bool(add_deletes), bool(remove_deletes))
    elif (operation == Operation.APPEND and (removed or add_deletes)) or (operation == Operation.DELETE and add_data):
        raise ValueError(f"operation {operation.value} cannot add {len(added)} and remove {len(removed)} files like this")
    producer = _RewriteFiles(txn, operation, added, removed, dict(snapshot_properties), access, merge)
    try:
        producer.commit()  # registers the producer for retries, then stages its updates
    except BaseException:
        # Nothing was staged: drop what was written and make sure a later retry of the
        # transaction does not resurrect this producer.
        producer._clean_all_uncommitted()
        if producer in txn._snapshot_producers:
            txn._snapshot_producers.remove(producer)
        raise
    return producer.snapshot_id


def add_snapshot_properties(txn: Transaction, snapshot_id: int, properties: Mapping[str, str]) -> None:
    """Add ``properties`` to the summary of snapshot ``snapshot_id``, staged on ``txn``.

    The entries survive a retry of the commit: the snapshot is rebuilt with them.

    Raises:
        ValueError: ``txn`` stages no snapshot with that id.
    """
    producers = [p for p in txn._snapshot_producers if p.snapshot_id == snapshot_id]
    staged = [u for u in txn._updates if isinstance(u, AddSnapshotUpdate) and u.snapshot.snapshot_id == snapshot_id]
    if not producers or not staged:
        raise ValueError(f"expected snapshot {snapshot_id} staged on the transaction, found none")
    for producer in producers:
        producer.snapshot_properties = {**producer.snapshot_properties, **properties}
    updates = []
    for update in txn._updates:
        if update is staged[0]:
            summary = update.snapshot.summary
            if summary is None:
                raise ValueError(f"expected a summary on staged snapshot {snapshot_id}, found none")
            merged = Summary(summary.operation, **{**summary.additional_properties, **properties})
            update = AddSnapshotUpdate(snapshot=update.snapshot.model_copy(update={"summary": merged}))
        updates.append(update)
    txn._updates = tuple(updates)


def _check_content(name: str, files: Iterable[DataFile], *, data: bool) -> None:
    for f in files:
        if (f.content == DataFileContent.DATA) != data:
            raise ValueError(f"{name}: expected {'data' if data else 'delete'} files, found {f.content.name} {f.file_path}")


def _infer_operation(add_data: bool, remove_data: bool, add_deletes: bool, remove_deletes: bool) -> Operation:
    if not (remove_data or add_deletes or remove_deletes):
        return Operation.APPEND  # data added, or nothing: an empty commit that carries its summary
    if add_data:
        return Operation.OVERWRITE
    if remove_data or add_deletes:
        return Operation.DELETE
    # Only delete files removed: rows may come back. REPLACE, if the caller knows they were dangling.
    return Operation.OVERWRITE


def _manifest_content(data_file: DataFile) -> ManifestContent:
    return ManifestContent.DATA if data_file.content == DataFileContent.DATA else ManifestContent.DELETES


def spec_id_of(data_file: DataFile, default: int) -> int:
    """The partition spec id of ``data_file``; ``default`` for a file written but not yet read
    from a manifest (``DataFile.from_args`` drops ``spec_id``: it is not a manifest column)."""
    spec_id: int = getattr(data_file, "_spec_id", default)
    return spec_id


def _partition_filter(spec: PartitionSpec, partitions: Iterable[Record]) -> BooleanExpression:
    """A predicate on partition fields matching any of ``partitions`` (null-safe)."""
    names = [field.name for field in spec.fields]
    result: BooleanExpression = AlwaysFalse()
    for partition in partitions:
        match: BooleanExpression = AlwaysTrue()
        for i, name in enumerate(names):
            value = partition[i]
            term = Reference(name)
            match = And(match, IsNull(term=term) if value is None else EqualTo(term=term, value=value))
        result = Or(result, match)
    return result


def _existing(writer: ManifestWriter, entry: ManifestEntry) -> ManifestEntry:
    """``writer.existing(entry)``, returning the entry it wrote."""
    written = ManifestEntry.from_args(
        status=ManifestEntryStatus.EXISTING,
        snapshot_id=entry.snapshot_id,
        sequence_number=entry.sequence_number,
        file_sequence_number=entry.file_sequence_number,
        data_file=entry.data_file,
    )
    writer.add_entry(written)
    return written


class DeleteManifestWriter(ManifestWriterV2):
    """A v2 delete manifest: pyiceberg's writers hard-code ``content=data`` in both places."""

    def content(self) -> ManifestContent:
        return ManifestContent.DELETES

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}


class _RewriteFiles(_SnapshotProducer["_RewriteFiles"]):
    """Adds and removes data and delete files in one snapshot.

    The base class reads ``_added_data_files`` and ``_deleted_data_files`` (any content) to build
    the summary totals; ``_manifests`` is replaced so that added files go to manifests of their
    own content and spec, and only manifests holding a removed file are rewritten.
    """

    def __init__(
        self,
        txn: Transaction,
        operation: Operation,
        added: list[DataFile],
        removed: list[DataFile],
        snapshot_properties: dict[str, str],
        access: ManifestAccess,
        merge: ManifestMerge,
    ) -> None:
        super().__init__(operation, txn, txn._table.io, snapshot_properties=snapshot_properties)
        self._access = access
        self._added_data_files = added
        self._to_remove = {f.file_path: f for f in removed}
        self._removed_entries: list[ManifestEntry] = []
        #: The live entries of each manifest this attempt wrote, to seed the entry cache with
        #: once the snapshot lands (:meth:`remember_committed`).
        self._written_entries: dict[str, list[ManifestEntry]] = {}
        self._merge_enabled = merge.enabled
        self._merge_min_count = merge.min_count
        self._merge_target = merge.target_size

    def _manifests(self) -> list[ManifestFile]:
        # Plan before writing, so a missing file leaves no orphan manifest behind.
        self._written_entries = {}
        plan = self._plan_carry_over()
        found = {entry.data_file.file_path for entry in self._removed_entries}
        if missing := sorted(self._to_remove.keys() - found):
            raise ValidationException(
                f"expected the files to remove to be live in snapshot {self._parent_snapshot_id}, found {len(missing)} not: {missing}"
            )
        # The summary counts what the manifests say was removed, not the caller's copies.
        self._deleted_data_files = {entry.data_file for entry in self._removed_entries}
        merging = self._groups_to_merge(plan)
        written = self._write_added(skip=merging)
        written += [self._write_merged(key, plan) for key in merging]
        return written + [self._rewrite(m, entries) for m, entries in plan if self._mergeable(m) not in merging]

    def _mergeable(self, manifest: ManifestFile) -> tuple[ManifestContent, int] | None:
        """The (content, spec) group a manifest may be merged in; ``None`` when it is big enough."""
        if manifest.manifest_length >= self._merge_target:
            return None
        return (manifest.content, manifest.partition_spec_id)

    def _groups_to_merge(self, plan: list[tuple[ManifestFile, list[ManifestEntry] | None]]) -> set[tuple[ManifestContent, int]]:
        """Groups that would list ``commit.manifest.min-count-to-merge`` manifests or more.

        As Iceberg's merging snapshot producer: manifests below the target size are merged
        with this snapshot's additions once there are enough of them, so the manifest list
        (read by every commit and scan) stays short without a maintenance run.
        """
        if not self._merge_enabled:
            return set()
        counts: Counter[tuple[ManifestContent, int]] = Counter()
        default_spec_id = self._transaction.table_metadata.default_spec_id
        counts.update({(_manifest_content(f), spec_id_of(f, default_spec_id)) for f in self._added_data_files})
        counts.update(group for manifest, _ in plan if (group := self._mergeable(manifest)) is not None)
        return {key for key, count in counts.items() if count >= self._merge_min_count}

    def _write_merged(
        self, key: tuple[ManifestContent, int], plan: list[tuple[ManifestFile, list[ManifestEntry] | None]]
    ) -> ManifestFile:
        content, spec_id = key
        default_spec_id = self._transaction.table_metadata.default_spec_id
        live: list[ManifestEntry] = []
        with self._writer(content, spec_id) as writer:
            for f in self._added_data_files:
                if (_manifest_content(f), spec_id_of(f, default_spec_id)) == key:
                    live.append(self._added(writer, f))
            for manifest, entries in plan:
                if self._mergeable(manifest) != key:
                    continue
                for entry in entries if entries is not None else self._access.live_entries(self._io, manifest):
                    if entry.data_file.file_path in self._to_remove:
                        writer.delete(entry)
                    else:
                        live.append(_existing(writer, entry))
        return self._written(writer, live)

    def _plan_carry_over(self) -> list[tuple[ManifestFile, list[ManifestEntry] | None]]:
        """Live manifests of the parent, with their entries when they list a file to remove."""
        self._removed_entries = []
        metadata = self._transaction.table_metadata
        parent = metadata.snapshot_by_id(self._parent_snapshot_id) if self._parent_snapshot_id is not None else None
        if parent is None:
            return []
        partitions: dict[tuple[ManifestContent, int], set[Record]] = defaultdict(set)
        for f in self._to_remove.values():
            partitions[(_manifest_content(f), spec_id_of(f, metadata.default_spec_id))].add(f.partition)
        may_hold: dict[tuple[ManifestContent, int], Callable[[ManifestFile], bool]] = {
            key: self._may_hold(key[1], parts) for key, parts in partitions.items()
        }
        plan: list[tuple[ManifestFile, list[ManifestEntry] | None]] = []
        with self._access.manifest_list(self._io, parent.manifest_list):
            manifests = parent.manifests(self._io)
        for manifest in manifests:
            if not (manifest.has_added_files() or manifest.has_existing_files()):
                continue  # only DELETED entries of an older snapshot: nothing live to carry
            check = may_hold.get((manifest.content, manifest.partition_spec_id))
            entries = list(self._access.live_entries(self._io, manifest)) if check and check(manifest) else None
            removed = [e for e in entries or () if e.data_file.file_path in self._to_remove]
            self._removed_entries.extend(removed)
            plan.append((manifest, entries if removed else None))
        return plan

    def _may_hold(self, spec_id: int, partitions: set[Record]) -> Callable[[ManifestFile], bool]:
        spec = self.spec(spec_id)
        if spec.is_unpartitioned():
            return lambda _: True
        return manifest_evaluator(spec, self.schema(), _partition_filter(spec, partitions))

    def _writer(self, content: ManifestContent, spec_id: int) -> ManifestWriter:
        spec = self.spec(spec_id)
        if content == ManifestContent.DATA:
            return self.new_manifest_writer(spec)
        return DeleteManifestWriter(spec, self.schema(), self.new_manifest_output(), self._snapshot_id, self._compression)

    def _write_added(self, skip: set[tuple[ManifestContent, int]]) -> list[ManifestFile]:
        groups: dict[tuple[ManifestContent, int], list[DataFile]] = defaultdict(list)
        default_spec_id = self._transaction.table_metadata.default_spec_id
        for f in self._added_data_files:
            groups[(_manifest_content(f), spec_id_of(f, default_spec_id))].append(f)
        manifests = []
        for (content, spec_id), files in groups.items():
            if (content, spec_id) in skip:
                continue  # written into the group's merged manifest
            with self._writer(content, spec_id) as writer:
                live = [self._added(writer, f) for f in files]
            manifests.append(self._written(writer, live))
        return manifests

    def _added(self, writer: ManifestWriter, data_file: DataFile) -> ManifestEntry:
        # No sequence number: the manifest list assigns this snapshot's to the entry.
        entry = ManifestEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=self._snapshot_id, data_file=data_file)
        writer.add_entry(entry)
        return entry

    def _written(self, writer: ManifestWriter, live: list[ManifestEntry]) -> ManifestFile:
        manifest = writer.to_manifest_file()
        self._written_entries[manifest.manifest_path] = live
        return manifest

    def remember_committed(self, table: Table) -> None:
        """Seed the manifest entry cache with the manifests this producer wrote, once its
        snapshot is in ``table``'s (refreshed) metadata: the next scan or commit of this
        process reads its own manifests from memory (the optimizer's planning opened every
        manifest its previous commit had just written; profiled with
        ``.venv/bin/python -m bench.peers.profile_mixed``, no run stored)."""
        snapshot = table.metadata.snapshot_by_id(self._snapshot_id)
        if snapshot is None:
            return
        for manifest in snapshot.manifests(self._io):
            live = self._written_entries.get(manifest.manifest_path)
            if live is not None:
                self._access.remember(manifest, live)
        self._written_entries = {}

    def _rewrite(self, manifest: ManifestFile, entries: list[ManifestEntry] | None) -> ManifestFile:
        if entries is None:
            return manifest
        live: list[ManifestEntry] = []
        with self._writer(manifest.content, manifest.partition_spec_id) as writer:
            for entry in entries:
                # delete() and _existing keep the entry's data and file sequence numbers.
                if entry.data_file.file_path in self._to_remove:
                    writer.delete(entry)
                else:
                    live.append(_existing(writer, entry))
        return self._written(writer, live)

    def _existing_manifests(self) -> list[ManifestFile]:
        # Abstract in the base class, whose _manifests (the only caller) is replaced above.
        raise NotImplementedError

    def _deleted_entries(self) -> list[ManifestEntry]:
        return self._removed_entries

    def _summary(self, snapshot_properties: dict[str, str] = EMPTY_DICT) -> Summary:
        operation = self._operation
        # pyiceberg computes totals for append/overwrite/delete only; replace has the same.
        self._operation = Operation.OVERWRITE if operation == Operation.REPLACE else operation
        try:
            summary = super()._summary(snapshot_properties)
        finally:
            self._operation = operation
        properties = dict(summary.additional_properties)
        # Iceberg Java counts the unpartitioned partition too (pyiceberg only partitioned ones):
        # every snapshot of Java's RewriteFiles that changes a file says changed-partition-count.
        changed = {(spec_id_of(f, 0), f.partition) for f in (*self._added_data_files, *self._deleted_data_files)}
        if changed and CHANGED_PARTITION_COUNT_PROP not in properties:
            properties[CHANGED_PARTITION_COUNT_PROP] = str(len(changed))
        return Summary(operation, **properties)

    def _validate_concurrency(self) -> None:
        """On a retry, refuse when commits since the start changed what this rewrite assumed.

        pyiceberg's default checks do not fit: under serializable isolation any concurrent data
        file conflicts, and its new-deletes check compares against the head's sequence number.
        Removed files that are gone are caught by ``_manifests``. Checks are per partition.
        """
        window = self._commit_window
        if window is None or window.head is None or window.is_empty():
            return
        metadata = self._transaction._table.metadata
        default_spec_id = metadata.default_spec_id
        rewritten = {
            (spec_id_of(f, default_spec_id), f.partition) for f in self._to_remove.values() if f.content == DataFileContent.DATA
        }
        deleting = {
            (spec_id_of(f, default_spec_id), f.partition)
            for f in self._added_data_files
            if f.content == DataFileContent.POSITION_DELETES
        }
        if not rewritten and not deleting:
            return
        specs = metadata.specs()
        base_id = window.base.snapshot_id if window.base is not None else None
        for snapshot in ancestors_between_ids(base_id, window.head.snapshot_id, metadata):
            with self._access.manifest_list(self._io, snapshot.manifest_list):
                manifests = snapshot.manifests(self._io)
            for manifest in manifests:
                if manifest.added_snapshot_id != snapshot.snapshot_id:
                    continue
                watch, status = (
                    (rewritten, ManifestEntryStatus.ADDED)
                    if manifest.content == ManifestContent.DELETES
                    else (deleting, ManifestEntryStatus.DELETED)
                )
                if not watch:
                    continue
                with self._access.manifest(self._io, manifest.manifest_path):
                    entries = manifest.fetch_manifest_entry(self._io, discard_deleted=False)
                for entry in entries:
                    f = entry.data_file
                    is_global = f.content == DataFileContent.EQUALITY_DELETES and specs[f.spec_id].is_unpartitioned()
                    ours = entry.status == status and entry.snapshot_id == snapshot.snapshot_id
                    if ours and ((f.spec_id, f.partition) in watch or is_global):
                        raise ValidationException(
                            f"expected no concurrent change to partition {f.partition} of spec {f.spec_id}, "
                            f"found snapshot {snapshot.snapshot_id} {entry.status.name.lower()} {f.file_path}"
                        )

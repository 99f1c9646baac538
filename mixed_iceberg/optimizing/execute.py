"""Run one rewrite task: read inputs, apply the same merge kernel readers use, write outputs.

Rewritten base files and merged change rows become new ``B`` files at the target size; the
rows the merge retires in segments become one position-delete file per tree node (a combined
segment's earlier position deletes folded in). Nothing is committed here: the output lists
what to add and what to remove, and :mod:`mixed_iceberg.optimizing.commit` commits all tasks
at once.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.dataset as ds
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.io import FileIO
from pyiceberg.manifest import DataFile, DataFileContent
from pyiceberg.schema import Schema
from pyiceberg.table import FileScanTask, Table

from mixed_iceberg.exceptions import CorruptTableError
from mixed_iceberg.format import DataTreeNode, WriterIdentity, parse_change
from mixed_iceberg.merge.group import Settled, Tail, delete_columns, merge_group, needs_whole_rows
from mixed_iceberg.merge.latest import LSN
from mixed_iceberg.optimizing.collect import CollectedTable
from mixed_iceberg.optimizing.key_index import IndexedFile, probe_hashes
from mixed_iceberg.optimizing.key_index_store import remember_index, segment_index
from mixed_iceberg.optimizing.model import BaseFile, ChangeFile, OptimizingType, RewriteTask
from mixed_iceberg.reader.file_reads import deleted_positions, positions_by_file, read_unmasked, remember_positions
from mixed_iceberg.reader.plan import ChangeFileRef
from mixed_iceberg.reader.read import base_lsn, filesystem_for, read_base_rows, read_change_rows
from mixed_iceberg.schema import top_level_names
from mixed_iceberg.store.equality_deletes import read_with_deletes
from mixed_iceberg.store.write.data_file import data_location
from mixed_iceberg.store.write.layout import partition_path, split_sized
from mixed_iceberg.store.write.parallel import write_groups, writer_pool
from mixed_iceberg.store.write.position_deletes import referenced_data_file, write_positions_by_file
from mixed_iceberg.typedef import DataFileType

if TYPE_CHECKING:
    from mixed_iceberg.handle import TableHandle

__all__ = ["TaskOutput", "execute_task", "execute_unit"]


@dataclass(slots=True)
class TaskOutput:
    """Files a task wrote and files it makes obsolete, with its counts."""

    task: RewriteTask
    added_data: list[DataFile] = field(default_factory=list)
    added_deletes: list[DataFile] = field(default_factory=list)
    removed_data: list[DataFile] = field(default_factory=list)
    removed_deletes: list[DataFile] = field(default_factory=list)
    rows_in: int = 0
    rows_out: int = 0
    duration_s: float = 0.0

    @property
    def bytes_out(self) -> int:
        return sum(f.file_size_in_bytes for f in [*self.added_data, *self.added_deletes])


def _scan_task(collected: CollectedTable, file: BaseFile) -> FileScanTask:
    deletes = {collected.delete_files[p].data_file for p in (*file.pos_delete_files, *file.eq_delete_files)}
    return FileScanTask(collected.data_files[file.path].data_file, delete_files=deletes)


def _change_refs(changes: Sequence[ChangeFile]) -> list[ChangeFileRef]:
    refs = []
    for change in changes:
        meta = parse_change(change.path, change.sequence_number)
        refs.append(ChangeFileRef(change.path, meta.file_type, meta.transaction_id, change.sequence_number, 0, change.records))
    return refs


def _position_delete_targets(base: Table, collected: CollectedTable, paths: set[str]) -> dict[DataFile, set[str]]:
    """The data files each position-delete file of ``paths`` holds rows of (equality deletes left
    out: they are retired only through ``drop_delete_files``, when their whole scope is
    rewritten). A file naming one data file in its bounds is not opened; a shared one is read
    through the process cache."""
    deletes = [collected.delete_files[p].data_file for p in sorted(paths)]
    deletes = [d for d in deletes if d.content == DataFileContent.POSITION_DELETES]
    named = {d.file_path: target for d in deletes if (target := referenced_data_file(d)) is not None}
    shared = positions_by_file(base, [d for d in deletes if d.file_path not in named])
    return {d: {named[d.file_path]} if d.file_path in named else set(shared[d.file_path]) for d in deletes}


_SERIAL_WRITES = 8


def _dead_masks(
    segments: Sequence[BaseFile], earlier_by_path: Mapping[str, npt.NDArray[np.int64]]
) -> dict[str, npt.NDArray[np.bool_]]:
    """Per segment with earlier position deletes, which of its rows they removed: built once per
    task for the probe of the change's keys and for the new delete files, which both ask (a
    mask lookup per row asked about, not a sort of the earlier positions per segment)."""
    masks: dict[str, npt.NDArray[np.bool_]] = {}
    for segment in segments:
        dead = earlier_by_path.get(segment.path)
        if dead is not None and len(dead):
            mask = np.zeros(segment.records, dtype=bool)
            mask[dead[(dead >= 0) & (dead < segment.records)]] = True
            masks[segment.path] = mask
    return masks


def _write_node_deletes(
    base: Table,
    collected: CollectedTable,
    segments: Sequence[BaseFile],
    kills: Sequence[npt.NDArray[np.int64]],
    earlier_by_path: Mapping[str, npt.NDArray[np.int64]],
    dead_masks: Mapping[str, npt.NDArray[np.bool_]],
    combine: set[str],
    writer: WriterIdentity,
    transaction_id: int,
) -> list[DataFile]:
    """One position-delete file per tree node (and partition) of ``segments``, holding the
    positions ``kills`` retires in each: for a segment in ``combine``, together with its earlier
    positions (the file replaces its earlier ones), else only positions no earlier file holds
    (a hot key is deleted again and again). One file per node, not per segment: a minor's cost
    and its files follow the change, not the number of segments it touches (Amoro writes per
    node too). Not one per partition: a file shared across nodes would keep the partition's
    next task from being split by key space (:mod:`mixed_iceberg.optimizing.split`)."""
    groups: dict[tuple[int, str, DataTreeNode], dict[str, npt.NDArray[np.int64]]] = defaultdict(dict)
    targets: dict[tuple[int, str, DataTreeNode], DataFile] = {}
    for segment, positions in zip(segments, kills, strict=True):
        if segment.path in combine:
            written = np.unique(np.concatenate([positions, earlier_by_path.get(segment.path, np.empty(0, np.int64))]))
        elif (dead := dead_masks.get(segment.path)) is not None:
            written = positions[~dead[positions]]  # never a row an earlier file already deletes
        else:
            written = positions
        if len(written) == 0:
            continue
        # A segment's own partition: in a cross-partition run it may not be the task's.
        target = collected.data_files[segment.path].data_file
        key = (target.spec_id, partition_path(base, target), segment.node)
        groups[key][segment.path] = written
        targets[key] = target

    def write(key: tuple[int, str, DataTreeNode]) -> DataFile:
        by_target = groups[key]
        name = writer.file_name(key[2], DataFileType.POS_DELETE_FILE, transaction_id)
        location = data_location(base.location(), key[1], name)
        written = write_positions_by_file(
            base.io,
            location,
            by_target,
            spec_id=targets[key].spec_id,
            partition=targets[key].partition,
            properties=base.properties,
        )
        remember_positions(location, by_target)
        return written

    # One file per node: a handful are written in turn, as the writer threads were no faster for
    # them (within noise: claim delete_writes of bench/results/design_choices-2026-12-06-e9ea149.json,
    # `nice -n 5 .venv/bin/python -m bench.design_choices`); many partitions' worth go to a few
    # threads, as pyarrow releases the GIL while writing (not measured).
    if len(groups) <= _SERIAL_WRITES:
        return [write(key) for key in groups]
    return list(writer_pool().map(write, list(groups)))


def _segment_keys(base: Table, segments: Sequence[BaseFile], keys: list[str]) -> pa.Table:
    """The key columns of every row of ``segments`` (position-deleted ones too), in file order.

    Raises:
        CorruptTableError: the segments hold another number of rows than their manifests say.
    """
    filesystem, _ = filesystem_for(base.io, segments[0].path)
    local = [filesystem_for(base.io, s.path)[1] for s in segments]
    rows = ds.dataset(local, format="parquet", filesystem=filesystem).to_table(columns=keys)
    expected = sum(s.records for s in segments)
    if rows.num_rows != expected:
        raise CorruptTableError(f"segments hold {rows.num_rows} rows; their manifests say {expected}")
    return rows


def _alive_rows(
    base: Table, segments: Sequence[BaseFile], keys: list[str], dead_masks: Mapping[str, npt.NDArray[np.bool_]]
) -> tuple[pa.Table, npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """``keys`` of the rows of ``segments`` no position delete removed (with their LSN), their
    positions across all segments (file order), and each segment's row count."""
    return _alive(_segment_keys(base, segments, keys), segments, dead_masks)


def _alive_whole_rows(
    base: Table,
    collected: CollectedTable,
    segments: Sequence[BaseFile],
    schema: Schema,
    dead_masks: Mapping[str, npt.NDArray[np.bool_]],
) -> tuple[pa.Table, npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """:func:`_alive_rows` of every column of ``schema``, read by field id as every read path
    reads them: a nested column in its table type (a raw Parquet read gives ``list`` and
    ``string`` where the table has ``large_list`` and ``large_string``), a renamed one by id."""
    tasks = [FileScanTask(collected.data_files[s.path].data_file) for s in segments]
    rows, _ = read_unmasked(base, tasks, schema)  # deleted rows too: the dead masks are the task's own
    return _alive(rows, segments, dead_masks)


def _alive(
    found: pa.Table, segments: Sequence[BaseFile], dead_masks: Mapping[str, npt.NDArray[np.bool_]]
) -> tuple[pa.Table, npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The rows of ``found`` (every row of ``segments``, in file order) that are alive, with their LSN."""
    counts = np.fromiter((s.records for s in segments), dtype=np.int64, count=len(segments))
    is_alive = np.concatenate([~dead_masks[s.path] if s.path in dead_masks else np.ones(s.records, bool) for s in segments])
    alive = np.flatnonzero(is_alive)
    lsn = np.repeat(base_lsn([s.transaction_id for s in segments]), counts)[alive]
    return found.take(pa.array(alive)).append_column(LSN, pa.array(lsn)), alive, counts


def _indexed_rows(
    base: Table,
    segments: Sequence[BaseFile],
    keys: list[str],
    dead_masks: Mapping[str, npt.NDArray[np.bool_]],
    tails: Sequence[Tail],
) -> tuple[pa.Table, npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """:func:`_alive_rows` of ``keys``, narrowed to the rows whose key hash one of ``tails`` holds,
    found through each segment's key index: the work follows the tail, not the segments. The
    rows left out hold no tail key, so the merge would keep them anyway."""
    probe = np.unique(
        np.concatenate(
            [probe_hashes([t.column(k) for k in keys]) for tail in tails for t in (tail.inserts, tail.deletes) if t.num_rows]
            or [np.empty(0, np.int32)]
        )
    )
    # A file of tree node (mask, index) holds only keys whose hash & mask == index: it is probed
    # for those alone (a quarter of the change with four buckets).
    by_node: dict[tuple[int, int], npt.NDArray[np.int32]] = {}
    counts = np.fromiter((s.records for s in segments), dtype=np.int64, count=len(segments))
    found, positions = [], []
    for segment, start in zip(segments, np.cumsum(counts) - counts, strict=True):
        node = (segment.node.mask, segment.node.index)
        if node not in by_node:
            by_node[node] = probe[(probe & np.int32(node[0])) == node[1]] if node[0] else probe
        index = segment_index(base, IndexedFile(segment.path, segment.size, segment.records), keys)
        at, rows = index.find(by_node[node], dead_masks.get(segment.path))
        found.append(rows)
        positions.append(at + start)
    # Each row's LSN is its segment's: one repeat for all segments, not a column per segment.
    lengths = np.fromiter((len(p) for p in positions), dtype=np.int64, count=len(positions))
    lsn = np.repeat(base_lsn([s.transaction_id for s in segments]), lengths)
    return pa.concat_tables(found).append_column(LSN, pa.array(lsn)), np.concatenate(positions), counts


def _markers(io: FileIO, schema: Schema, refs: Sequence[ChangeFileRef], keys: list[str]) -> Tail:
    """Keys and LSNs of the rows of ``refs`` (data rows of ``I`` files, deletes of ``ED`` files)."""
    return Tail(
        *(
            read_change_rows(io, schema, [r for r in refs if r.is_delete != is_data], keys, AlwaysTrue())
            for is_data in (True, False)
        )
    )


def _per_segment(positions: npt.NDArray[np.int64], counts: npt.NDArray[np.int64]) -> list[npt.NDArray[np.int64]]:
    """Row positions across all segments (sorted) split into positions within each segment."""
    ends = np.cumsum(counts)
    return [
        p - (end - count)
        for p, end, count in zip(np.split(positions, np.searchsorted(positions, ends[:-1])), ends, counts, strict=True)
    ]


def _grouped_by_node(files: Sequence[BaseFile]) -> list[BaseFile]:
    """``files`` with the files of each tree node together (in their order otherwise), when all
    are of one depth. Files of different nodes of one depth share no key, so the merge is the
    same in any order of them; read grouped, the rows reach the layout grouped by node, and it
    slices them instead of copying them all through a sort by node (a take of a major's rows of
    segments of several nodes)."""
    if len({f.node.mask for f in files}) != 1:
        return list(files)
    return sorted(files, key=lambda f: f.node.index)


def _disk_bytes_per_row(task: RewriteTask) -> float | None:
    """Bytes a row takes in the task's input files: base files when any, else change inserts."""
    sized = [(f.size, f.records) for f in task.rewrite] or [(c.size, c.records) for c in task.change if not c.is_delete]
    size, records = sum(s for s, _ in sized), sum(r for _, r in sized)
    return size / records if records else None


def execute_task(
    table: TableHandle,
    collected: CollectedTable,
    task: RewriteTask,
    writer: WriterIdentity,
    competitors: Sequence[ChangeFile] = (),
) -> TaskOutput:
    """Rewrite one partition as ``task`` says; returns the files to add and remove.

    ``competitors``: change files the task does not merge whose rows still compete for their
    keys (see :func:`execute_unit`)."""
    started = time.monotonic()
    base = table.base_store
    schema = table.schema()
    keys = list(table.primary_key)
    output = TaskOutput(task)
    refs = _change_refs(task.change)
    segments = list(task.segments)
    earlier_files = {collected.delete_files[p].data_file for s in segments for p in s.pos_delete_files}
    earlier_by_path = deleted_positions(base, earlier_files)
    dead_masks = _dead_masks(segments, earlier_by_path)
    kills = [np.empty(0, np.int64)] * len(segments)
    if keys:
        rewrite = _grouped_by_node(task.rewrite)
        scans = [_scan_task(collected, f) for f in rewrite]
        data = read_base_rows(base, scans, [f.transaction_id for f in rewrite], schema, AlwaysTrue())
        config = table.merge_config
        if table.change_store is not None and refs:
            io = table.change_store.io
            history = table.change_store.metadata.schemas
            columns = top_level_names(schema)
            inserts = read_change_rows(io, schema, [r for r in refs if not r.is_delete], columns, AlwaysTrue(), schemas=history)
            wanted = delete_columns(config, keys, columns)
            deletes = read_change_rows(io, schema, [r for r in refs if r.is_delete], wanted, AlwaysTrue(), schemas=history)
            output.rows_in = data.num_rows + inserts.num_rows + deletes.num_rows
            tail = Tail(inserts, deletes)
            competing = _markers(io, schema, _change_refs(competitors), keys) if competitors else None
            settled = [Settled(data.drop_columns([LSN]), data.column(LSN).to_numpy())]
            alive = np.empty(0, np.int64)
            counts = np.zeros(0, np.int64)
            if segments:
                # Segment rows of the tail's keys compete too: a newer change row retires them;
                # under a merge engine every one of a tail key is folded into its new row.
                if needs_whole_rows(config):
                    found, alive, counts = _alive_whole_rows(base, collected, segments, schema, dead_masks)
                elif table.config.optimizing.key_index:
                    probed = [tail, *([competing] if competing is not None else [])]
                    found, alive, counts = _indexed_rows(base, segments, keys, dead_masks, probed)
                else:
                    found, alive, counts = _alive_rows(base, segments, keys, dead_masks)
                settled.append(Settled(found.drop_columns([LSN]), found.column(LSN).to_numpy(), emit=False))
            merged = merge_group(config, keys, settled, tail, competing=competing)
            if segments:
                kills = _per_segment(alive[~merged.settled[1]], counts)
            # Kept apart: the layout groups each by node (a rewritten segment is one node's rows,
            # sliced, not copied) and joins them per node, as if concatenated.
            survivors = [part.select(columns) for part in merged.rows]
        else:
            output.rows_in = data.num_rows
            survivors = [data.drop_columns([LSN])]
    else:
        # Unkeyed and plain Iceberg tables: Iceberg's delete rules, equality deletes included.
        attached = {p for f in task.rewrite for p in (*f.pos_delete_files, *f.eq_delete_files)}
        survivors = [
            read_with_deletes(
                base,
                [collected.data_files[f.path] for f in task.rewrite],
                [collected.delete_files[p] for p in sorted(attached)],
                schema,
                schema,
            )
        ]
        output.rows_in = survivors[0].num_rows
    output.rows_out = sum(part.num_rows for part in survivors)
    transaction_id = max([*(f.transaction_id for f in task.rewrite), *(r.transaction_id for r in refs), 0])
    # Cut output by the on-disk size of the input rows: cut by Arrow memory, a merge of two
    # 4 MB files came out as two files again (Parquet is about half the size in memory), so
    # undersized segments were re-merged on every run (`make bench-peers`; that run was not stored).
    pieces = split_sized(
        base, survivors, keys, table.config.layout.base_buckets, table.config.optimizing.target_size, _disk_bytes_per_row(task)
    )
    output.added_data = write_groups(
        base, pieces, base.schema(), lambda g: writer.file_name(g.node, DataFileType.BASE_FILE, transaction_id)
    )
    if keys and table.config.optimizing.key_index:  # the next minor probes them: index them now
        for piece, written in zip(pieces, output.added_data, strict=True):
            file = IndexedFile(written.file_path, written.file_size_in_bytes, written.record_count)
            remember_index(base, file, piece.rows.select(keys))
    output.removed_data = [collected.data_files[f.path].data_file for f in task.rewrite]
    covered = {f.path for f in task.rewrite}
    if segments:
        combine = set(task.combine_deletes)
        covered |= combine  # their earlier files are replaced by the ones written here
        output.added_deletes += _write_node_deletes(
            base, collected, segments, kills, earlier_by_path, dead_masks, combine, writer, transaction_id
        )
    attached = {p for f in (*task.rewrite, *task.segments) for p in (*f.pos_delete_files, *f.eq_delete_files)}
    for delete, targets in _position_delete_targets(base, collected, attached).items():
        # A file goes once every live data file it holds rows of is rewritten or combined.
        if {t for t in targets if t in collected.data_files} <= covered:
            output.removed_deletes.append(delete)
    output.removed_deletes += [collected.delete_files[p].data_file for p in task.drop_delete_files]
    output.duration_s = time.monotonic() - started
    return output


def execute_unit(
    table: TableHandle,
    collected: CollectedTable,
    tasks: Sequence[RewriteTask],
    writer: WriterIdentity,
    competitors: Sequence[ChangeFile] = (),
) -> list[TaskOutput]:
    """Run ``tasks`` of a cross-partition keyed table as one merge: a key's rows may sit in
    several partitions, so every base file not rewritten is probed for the change's keys, and
    winners are chosen across partitions, against the rows of ``competitors`` too (change left
    visible below the run's cut). The first output carries every file; the others only their
    task (for the optimized sequence of their partition)."""
    if not tasks:
        return []
    kind = max((t.type for t in tasks), key=lambda t: t.rank)
    rewrite = [f for t in tasks for f in t.rewrite]
    if kind is OptimizingType.FULL and any(t.change for t in tasks):
        # The merge may retire rows in any partition: full leaves no position delete behind,
        # so every base file is rewritten (a partition's own plan skips a lone clean file).
        planned = {f.path for f in rewrite}
        rewrite += [f for part in collected.partitions for f in part.base if f.path not in planned]
    rewritten = {f.path for f in rewrite}
    if any(t.change for t in tasks):
        segments = tuple(f for part in collected.partitions for f in part.base if f.path not in rewritten)
    else:
        segments = tuple({f.path: f for t in tasks for f in t.segments}.values())
    unit = RewriteTask(
        partition=tasks[0].partition,
        type=kind,
        rewrite=tuple(rewrite),
        segments=segments,
        change=tuple(c for t in tasks for c in t.change),
        from_sequence=0,
        to_sequence=max(t.to_sequence for t in tasks),
        drop_delete_files=tuple(sorted({p for t in tasks for p in t.drop_delete_files})),
        combine_deletes=tuple(sorted({p for t in tasks for p in t.combine_deletes})),
    )
    output = execute_task(table, collected, unit, writer, competitors)
    output.task = tasks[0]
    return [output, *(TaskOutput(t) for t in tasks[1:])]

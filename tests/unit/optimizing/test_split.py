"""A large partition's task splits by key space (keyed) or by file (unkeyed), never across a shared delete."""

from __future__ import annotations

from mixed_iceberg.format import DataTreeNode, format_file_name
from mixed_iceberg.optimizing.execute import _grouped_by_node
from mixed_iceberg.optimizing.model import BaseFile, ChangeFile, OptimizingType, RewriteTask
from mixed_iceberg.optimizing.split import split_task
from mixed_iceberg.typedef import DataFileType

MB = 1 << 20


def base(name: str, node: DataTreeNode, size: int = 10 * MB, pos: tuple[str, ...] = (), eq: tuple[str, ...] = ()) -> BaseFile:
    return BaseFile(name, size, 1000, 1, node, pos, 0, eq)


def change(node: DataTreeNode, seq: int, size: int = 5 * MB) -> ChangeFile:
    name = format_file_name(
        node=node, file_type=DataFileType.INSERT_FILE, transaction_id=seq, partition_id=0, task_id=0, operation_id="op", count=seq
    )
    return ChangeFile(f"data/{name}", size, 100, seq, seq, False)


def task(
    rewrite: tuple[BaseFile, ...] = (), segments: tuple[BaseFile, ...] = (), changes: tuple[ChangeFile, ...] = ()
) -> RewriteTask:
    return RewriteTask(
        partition="",
        type=OptimizingType.MINOR,
        rewrite=rewrite,
        segments=segments,
        change=changes,
        from_sequence=0,
        to_sequence=9,
    )


NODES = [DataTreeNode(3, i) for i in range(4)]


def test_a_task_within_the_limit_stays_whole() -> None:
    whole = task(segments=tuple(base(f"b{i}", n) for i, n in enumerate(NODES)), changes=(change(NODES[0], 1),))
    assert split_task(whole, 1 << 40, keyed=True) == [whole]


def test_keyed_tasks_split_by_node_each_with_its_own_keys_files() -> None:
    segments = tuple(base(f"b{i}", n) for i, n in enumerate(NODES))
    changes = tuple(change(n, 1 + i) for i, n in enumerate(NODES))
    parts = split_task(task(segments=segments, changes=changes), 1, keyed=True)
    assert len(parts) == 4
    for part in parts:
        (segment,) = part.segments
        assert {c.path for c in part.change} == {changes[NODES.index(segment.node)].path}
        assert (part.from_sequence, part.to_sequence, part.partition) == (0, 9, "")


def test_files_of_a_finer_mask_group_under_their_ancestor() -> None:
    coarse = [DataTreeNode(1, 0), DataTreeNode(1, 1)]  # change buckets 2, base buckets 4
    segments = tuple(base(f"b{i}", n) for i, n in enumerate(NODES))
    parts = split_task(task(segments=segments, changes=(change(coarse[0], 1), change(coarse[1], 2))), 1, keyed=True)
    assert sorted(sorted(s.node.index for s in p.segments) for p in parts) == [[0, 2], [1, 3]]


def test_groups_are_packed_up_to_the_limit() -> None:
    segments = tuple(base(f"b{i}", n) for i, n in enumerate(NODES))
    changes = tuple(change(n, 1 + i, size=10 * MB) for i, n in enumerate(NODES))
    parts = split_task(task(segments=segments, changes=changes), 25 * MB, keyed=True)
    assert len(parts) == 2
    assert all(p.input_bytes <= 25 * MB for p in parts)


def test_a_root_file_a_shared_delete_or_an_equality_delete_forbids_a_split() -> None:
    segments = tuple(base(f"b{i}", n) for i, n in enumerate(NODES))
    changes = tuple(change(n, 1 + i) for i, n in enumerate(NODES))
    with_root = task(segments=(*segments, base("other-engine", DataTreeNode.root())), changes=changes)
    assert len(split_task(with_root, 1, keyed=True)) == 1
    shared = tuple(base(f"s{i}", n, pos=("partition-pd",)) for i, n in enumerate(NODES))
    assert len(split_task(task(rewrite=shared, changes=changes), 1, keyed=True)) == 1
    equality = tuple(base(f"e{i}", n, eq=("eq-1",)) for i, n in enumerate(NODES))
    assert len(split_task(task(rewrite=equality, changes=changes), 1, keyed=True)) == 1


def test_a_position_delete_shared_within_one_node_allows_a_split() -> None:
    # The optimizer writes one position-delete file per node: files of one node share it.
    segments = tuple(base(f"b{i}-{j}", n, pos=(f"pd-{i}",)) for i, n in enumerate(NODES) for j in range(2))
    changes = tuple(change(n, 1 + i) for i, n in enumerate(NODES))
    parts = split_task(task(segments=segments, changes=changes), 1, keyed=True)
    assert len(parts) == 4
    assert all(len({p for f in part.segments for p in f.pos_delete_files}) == 1 for part in parts)


def test_unkeyed_tasks_pack_their_files() -> None:
    files = tuple(base(f"u{i}", DataTreeNode.root(), size=(i + 1) * MB) for i in range(6))
    parts = split_task(task(rewrite=files), 7 * MB, keyed=False)
    assert sorted(f.path for p in parts for f in p.rewrite) == sorted(f.path for f in files)
    assert all(p.input_bytes <= 7 * MB for p in parts)
    assert len(parts) == 3


def test_rewritten_files_are_read_grouped_by_node_only_when_their_keys_cannot_meet() -> None:
    # Files of different nodes of one depth share no key, so reading them grouped by node (the
    # layout then slices each node's rows, no sort) cannot change the merge.
    a0, b1, c0, d2, e1 = (base(n, DataTreeNode(3, i)) for n, i in (("a", 0), ("b", 1), ("c", 0), ("d", 2), ("e", 1)))
    assert [f.path for f in _grouped_by_node([a0, b1, c0, d2, e1])] == ["a", "c", "b", "e", "d"]
    # A root file shares keys with every node: the order (and so ties between equal rows) is kept.
    root = base("r", DataTreeNode(0, 0))
    assert [f.path for f in _grouped_by_node([b1, root, a0])] == ["b", "r", "a"]

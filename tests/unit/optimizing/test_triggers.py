"""Amoro's trigger rules, one per test, on metadata only (no files), with an explicit clock."""

from __future__ import annotations

import pyarrow as pa
import pytest

from mixed_iceberg.config.optimizing import OptimizingConfig
from mixed_iceberg.format import DataTreeNode
from mixed_iceberg.optimizing.evaluate import evaluate_partition
from mixed_iceberg.optimizing.execute import _disk_bytes_per_row
from mixed_iceberg.optimizing.model import BaseFile, ChangeFile, FileClass, OptimizingType, PartitionFiles, RewriteTask
from mixed_iceberg.optimizing.plan import change_prefix, plan_partition
from mixed_iceberg.optimizing.tiers import size_tier
from mixed_iceberg.store.write.layout import chunk_rows

MB = 1024 * 1024
HOUR = 3_600_000


def config(**props: str) -> OptimizingConfig:
    return OptimizingConfig.from_properties(props)


def base(name: str, size: int, *, records: int = 1000, deleted: int = 0, pos_files: int = 0, tx: int = 0) -> BaseFile:
    return BaseFile(name, size, records, tx, DataTreeNode.root(), tuple(f"{name}-pd{i}" for i in range(pos_files)), deleted)


def change(seq: int, *, delete: bool = False, tx: int | None = None, name: str = "") -> ChangeFile:
    return ChangeFile(name or f"c{seq}{'d' if delete else 'i'}", 1000, 10, seq, seq if tx is None else tx, delete)


def part(base_files: tuple[BaseFile, ...] = (), change_files: tuple[ChangeFile, ...] = (), last: int = 0) -> PartitionFiles:
    return PartitionFiles("", base_files, change_files, 0, last)


def kind(
    p: PartitionFiles, cfg: OptimizingConfig, *, keyed: bool = True, now: int = 1, last_full: int = 0
) -> OptimizingType | None:
    return evaluate_partition(p, cfg, keyed=keyed, now_ms=now, last_full_ms=last_full).type


def test_file_classes_follow_fragment_and_min_target_ratios() -> None:
    cfg = config()
    assert (cfg.fragment_size, cfg.min_target_size) == (16 * MB, 96 * MB)
    assert [cfg.classify(s) for s in (16 * MB, 16 * MB + 1, 96 * MB, 96 * MB + 1)] == [
        FileClass.FRAGMENT,
        FileClass.UNDERSIZED,
        FileClass.UNDERSIZED,
        FileClass.SEGMENT,
    ]


def test_keyed_minor_needs_twelve_small_files_before_the_interval() -> None:
    eleven = part(change_files=tuple(change(s) for s in range(1, 12)))
    twelve = part(change_files=tuple(change(s) for s in range(1, 13)))
    assert kind(eleven, config()) is None
    assert kind(twelve, config()) is OptimizingType.MINOR


def test_keyed_minor_threshold_is_at_least_buckets_plus_one() -> None:
    files = part(change_files=tuple(change(s) for s in range(1, 14)))
    cfg = config(**{"self-optimizing.minor.trigger.file-count": "2", "base.file-index.hash-bucket": "16"})
    assert kind(files, cfg) is None  # 13 < max(16 + 1, 2)


def test_minor_interval_merges_any_change_data() -> None:
    one = part(change_files=(change(1),), last=0)
    assert kind(one, config(), now=HOUR) is None
    assert kind(one, config(), now=HOUR + 1) is OptimizingType.MINOR
    assert kind(part(base_files=(base("b", 200 * MB),)), config(), now=10 * HOUR) is None


def test_major_on_duplicate_ratio_of_a_segment() -> None:
    assert kind(part((base("s", 200 * MB, records=1000, deleted=100, pos_files=1),)), config()) is None
    assert kind(part((base("s", 200 * MB, records=1000, deleted=101, pos_files=1),)), config()) is OptimizingType.MAJOR


def test_major_on_enough_undersized_content() -> None:
    cfg = config(**{"self-optimizing.target-size": str(100 * MB)})  # fragments <= 12.5 MB, undersized <= 75 MB
    assert kind(part((base("a", 60 * MB), base("b", 30 * MB))), cfg) is None
    assert kind(part((base("a", 60 * MB), base("b", 40 * MB))), cfg) is OptimizingType.MAJOR


def test_full_only_when_its_interval_is_set_and_reached() -> None:
    dirty = part((base("s", 200 * MB, deleted=1, pos_files=1),), (change(1),))
    assert kind(dirty, config(), now=10 * HOUR) is not OptimizingType.FULL
    cfg = config(**{"self-optimizing.full.trigger.interval": str(HOUR)})
    assert kind(dirty, cfg, now=HOUR, last_full=0) is not OptimizingType.FULL
    assert kind(dirty, cfg, now=HOUR + 1, last_full=0) is OptimizingType.FULL


def test_disabled_table_is_never_pending() -> None:
    from mixed_iceberg.optimizing.evaluate import evaluate_table

    files = [part(change_files=tuple(change(s) for s in range(1, 40)))]
    assert (
        evaluate_table(
            "t", files, config(**{"self-optimizing.enabled": "false"}), keyed=True, now_ms=10 * HOUR, last_full_ms=0
        ).type
        is None
    )


def test_plain_table_minor_counts_fragments() -> None:
    tiny = tuple(base(f"f{i}", 1000) for i in range(12))
    assert kind(part(tiny[:11]), config(), keyed=False) is None
    assert kind(part(tiny), config(), keyed=False) is OptimizingType.MINOR


@pytest.mark.parametrize(("limit", "taken"), [(1, [1]), (2, [1]), (3, [1, 2]), (10, [1, 2, 3])])
def test_change_prefix_keeps_whole_sequences(limit: int, taken: list[int]) -> None:
    files = [change(1, name="a"), change(2, name="b"), change(2, delete=True, name="c"), change(3, name="d")]
    assert sorted({f.sequence_number for f in change_prefix(files, limit)}) == taken


def test_change_prefix_backs_off_to_keep_transaction_order() -> None:
    files = [change(1, tx=5, name="a"), change(2, tx=3, name="b"), change(3, tx=9, name="c")]
    assert change_prefix(files, 1) == []  # tx 5 taken while tx 3 is left: not allowed
    assert [f.name if hasattr(f, "name") else f.path for f in change_prefix(files, 2)] == ["a", "b"]


def test_plan_never_rewrites_base_files_newer_than_the_merged_range() -> None:
    newer = base("bulk", 1000, tx=9)
    p = PartitionFiles("", (base("old", 1000, tx=1), newer), (change(2), change(3, delete=True)), 1, 0)
    # merge-width 1: every fragment is due, as in Amoro; only the transaction rule holds one back
    task = plan_partition(p, OptimizingType.MINOR, config(**{"self-optimizing.minor.merge-width": "1"}), keyed=True)
    assert task is not None
    assert [f.path for f in task.rewrite] == ["old"]
    assert newer in task.segments
    assert (task.from_sequence, task.to_sequence) == (1, 3)


def test_enough_content_is_judged_per_tree_node() -> None:
    """One undersized file per node can never merge: no endless 1:1 major (found by the soak)."""
    cfg = config(**{"self-optimizing.target-size": str(100 * MB)})
    spread = tuple(BaseFile(f"n{i}", 60 * MB, 1000, 0, DataTreeNode(3, i), (), 0) for i in range(4))
    assert kind(part(spread), cfg) is None
    same = tuple(BaseFile(f"s{i}", 60 * MB if i else 40 * MB, 1000, 0, DataTreeNode(3, 0), (), 0) for i in range(2))
    assert kind(part(same), cfg) is OptimizingType.MAJOR


def test_evaluator_and_planner_agree_on_which_undersized_segments_merge() -> None:
    """Two undersized 60 MB + 70 MB files (target 128 MB) would only become one 130 MB file: the
    evaluator calls for nothing, and a major that another segment triggers leaves them too (the
    planner used to merge them on any major)."""
    cfg = config(**{"self-optimizing.target-size": str(128 * MB)})
    pair = (base("a", 60 * MB), base("b", 70 * MB))
    assert kind(part(pair), cfg) is None
    heavy = base("s", 200 * MB, records=1000, deleted=500, pos_files=1)
    task = plan_partition(part((*pair, heavy)), OptimizingType.MAJOR, cfg, keyed=True)
    assert task is not None
    assert [f.path for f in task.rewrite] == ["s"]
    mergeable = (base("a", 60 * MB), base("b", 68 * MB))  # the two fit in one target file
    assert kind(part(mergeable), cfg) is OptimizingType.MAJOR
    task = plan_partition(part(mergeable), OptimizingType.MAJOR, cfg, keyed=True)
    assert task is not None
    assert sorted(f.path for f in task.rewrite) == ["a", "b"]


# --- size tiers: fragments and position-delete files are rewritten in batches, not every run ---


def test_size_tiers_count_down_from_the_fragment_limit() -> None:
    assert [size_tier(s, 1024, 4) for s in (1024, 257, 256, 65, 64, 1)] == [0, 0, 1, 1, 2, 5]


def test_minor_leaves_a_tier_alone_until_it_holds_merge_width_files() -> None:
    cfg = config(**{"self-optimizing.target-size": str(8 * MB), "self-optimizing.minor.merge-width": "4"})  # fragments <= 1 MB
    small = [base(f"s{i}", 40_000, tx=1) for i in range(3)]
    big = base("big", 900_000, tx=1)
    p = PartitionFiles("", (*small, big), (change(2),), 1, 0)
    task = plan_partition(p, OptimizingType.MINOR, cfg, keyed=True)
    assert task is not None
    assert task.rewrite == ()  # the change rows become a new fragment; nothing is rewritten
    fourth = base("s3", 50_000, tx=1)
    task = plan_partition(PartitionFiles("", (*small, fourth, big), (change(2),), 1, 0), OptimizingType.MINOR, cfg, keyed=True)
    assert task is not None
    assert sorted(f.path for f in task.rewrite) == ["s0", "s1", "s2", "s3"]  # the full tier, not the big one


def test_settled_tiers_do_not_trigger_minor_runs() -> None:
    cfg = config(
        **{
            "self-optimizing.target-size": str(8 * MB),
            "self-optimizing.minor.trigger.file-count": "3",
            "self-optimizing.minor.merge-width": "4",
        }
    )
    settled = [base(f"s{i}", 40_000 * 4**i, tx=1) for i in range(4)]  # one file per tier
    evaluation = evaluate_partition(PartitionFiles("", tuple(settled), (), 1, 0), cfg, keyed=False, now_ms=0, last_full_ms=0)
    assert evaluation.type is None
    crowded = [base(f"c{i}", 40_000, tx=1) for i in range(4)]
    evaluation = evaluate_partition(PartitionFiles("", tuple(crowded), (), 1, 0), cfg, keyed=False, now_ms=0, last_full_ms=0)
    assert evaluation.type is OptimizingType.MINOR


def test_position_delete_files_are_appended_then_combined_at_merge_width() -> None:
    cfg = config(**{"self-optimizing.target-size": str(MB), "self-optimizing.minor.merge-width": "4"})
    two = base("seg2", 2 * MB, pos_files=2, tx=1)
    three = base("seg3", 2 * MB, pos_files=3, tx=1)
    task = plan_partition(
        PartitionFiles("", (two, three), (change(2, delete=True),), 1, 0), OptimizingType.MINOR, cfg, keyed=True
    )
    assert task is not None
    assert {f.path for f in task.segments} == {"seg2", "seg3"}
    assert task.combine_deletes == ("seg3",)  # its next file would be the 4th: combined now
    # change inserts too: a newer insert of a key retires the segment's row of it
    task = plan_partition(PartitionFiles("", (two, three), (change(2),), 1, 0), OptimizingType.MINOR, cfg, keyed=True)
    assert task is not None
    assert {f.path for f in task.segments} == {"seg2", "seg3"}
    assert task.combine_deletes == ("seg3",)


def test_a_combined_segment_takes_along_every_segment_it_shares_a_position_delete_file_with() -> None:
    cfg = config(**{"self-optimizing.target-size": str(MB), "self-optimizing.minor.merge-width": "4"})

    def seg(name: str, *files: str) -> BaseFile:
        return BaseFile(name, 2 * MB, 1000, 1, DataTreeNode.root(), files, 10 * len(files))

    # One file per tree node and run: "a" reaches the threshold, "b" shares n3 with it and
    # "c" shares n1 with "b"; "d" shares nothing. Combining "a" alone would leave n3 behind
    # (it holds rows of "b"), so "a" would carry it and be combined again on every run.
    a, b, c, d = seg("a", "n1", "n2", "n3"), seg("b", "n1", "n3"), seg("c", "n1"), seg("d", "x1")
    task = plan_partition(PartitionFiles("", (a, b, c, d), (change(2),), 1, 0), OptimizingType.MINOR, cfg, keyed=True)
    assert task is not None
    assert task.combine_deletes == ("a", "b", "c")
    # Without change only the combined segments are touched.
    four = seg("a", "n1", "n2", "n3", "n4")
    task = plan_partition(PartitionFiles("", (four, b, c, d), (), 1, 0), OptimizingType.MAJOR, cfg, keyed=True)
    assert task is not None
    assert [f.path for f in task.segments] == ["a", "b", "c"]
    assert task.combine_deletes == ("a", "b", "c")


def test_output_files_are_cut_by_the_on_disk_size_of_their_input() -> None:
    """Cut by Arrow memory, merging two undersized files gave two files again, re-merged forever."""
    rows = pa.table({"id": pa.array(range(1000), pa.int64()), "s": pa.array(["x" * 40] * 1000)})
    assert len(chunk_rows(rows, target_bytes=10_000)) > 4  # Arrow memory: ~50 bytes a row
    assert len(chunk_rows(rows, target_bytes=10_000, bytes_per_row=10.0)) == 1  # on disk: 10 bytes a row
    task = RewriteTask("", OptimizingType.MAJOR, (base("a", 4000, records=400), base("b", 6000, records=600)), (), (), 0, 0)
    assert _disk_bytes_per_row(task) == 10.0

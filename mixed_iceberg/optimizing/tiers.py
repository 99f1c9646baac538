"""Which fragments, undersized segments and position-delete files are worth rewriting now. Pure.

Amoro's minor rewrites every fragment of a partition on every run, so a fragment that grows
by one commit's rows per run is rewritten whole each time: write amplification grows with
the number of runs it takes to fill a fragment (the ``amoro-defaults`` table of
``.venv/bin/python -m bench.optimizing_soak``, where the whole table is fragments; no run stored). Here
fragments are grouped per tree node into size tiers a
factor of ``self-optimizing.minor.merge-width`` apart, counted down from the fragment size
limit, and a tier is merged only once it holds ``width`` files: a row is then rewritten about
once per tier, log_width(fragment size / commit size) times. Position-delete files of a
segment are likewise appended and combined only once a segment has ``width`` of them.
A width of 1 is Amoro's behaviour.

Undersized segments (between the fragment limit and the target size) of one tree node are merged
when together they hold a target file of content and the two smallest fit in one target file
(Amoro's ``enoughContent``); the evaluator and the planner both ask :func:`undersized_to_merge`.
"""

from __future__ import annotations

from collections.abc import Sequence

from mixed_iceberg.config.optimizing import OptimizingConfig
from mixed_iceberg.optimizing.model import BaseFile

__all__ = ["by_node", "combine_threshold", "fragments_to_merge", "size_tier", "undersized_to_merge"]

_MAX_TIER = 64


def size_tier(size: int, fragment_size: int, width: int) -> int:
    """0 for sizes in (limit / width, limit], 1 for (limit / width^2, limit / width], and so on."""
    tier = 0
    bound = fragment_size
    while tier < _MAX_TIER and bound > 0 and size * width <= bound:
        bound //= width
        tier += 1
    return tier


def by_node(files: Sequence[BaseFile]) -> dict[int, list[BaseFile]]:
    """``files`` grouped by tree node (files of different nodes never merge), order kept."""
    groups: dict[int, list[BaseFile]] = {}
    for f in files:
        groups.setdefault(f.node.id, []).append(f)
    return groups


def undersized_to_merge(undersized: Sequence[BaseFile], config: OptimizingConfig) -> list[BaseFile]:
    """The undersized segments a major run should merge: per tree node, all of them when there
    are at least two, they hold a target file of content and the two smallest fit in one
    (two 60 MB + 70 MB files at 128 MB would only be rewritten into one 130 MB file, again and
    again). Judged per node: a partition-wide sum would call for a major that rewrites each
    file 1:1, forever."""
    chosen: list[BaseFile] = []
    for group in by_node(undersized).values():
        sizes = sorted(f.size for f in group)
        if len(sizes) >= 2 and sum(sizes) >= config.target_size and sizes[0] + sizes[1] <= config.target_size:
            chosen.extend(group)
    return chosen


def fragments_to_merge(fragments: Sequence[BaseFile], config: OptimizingConfig) -> list[BaseFile]:
    """The fragments a run should rewrite: every full tier of every tree node."""
    width = config.merge_width
    if width <= 1:
        return list(fragments)
    tiers: dict[tuple[int, int], list[BaseFile]] = {}
    for f in fragments:
        tiers.setdefault((f.node.id, size_tier(f.size, config.fragment_size, width)), []).append(f)
    return [f for group in tiers.values() if len(group) >= width for f in group]


def combine_threshold(config: OptimizingConfig) -> int:
    """Position-delete files a segment may carry before they are combined into one (at least 2)."""
    return max(2, config.merge_width)

"""Which fragments and position-delete files are worth rewriting now. Pure.

Amoro's minor rewrites every fragment of a partition on every run, so a fragment that grows
by one commit's rows per run is rewritten whole each time: write amplification grows with
the number of runs it takes to fill a fragment (142x in our soak at Amoro's defaults, where a
25 MB table is all fragments). Here fragments are grouped per tree node into size tiers a
factor of ``self-optimizing.minor.merge-width`` apart, counted down from the fragment size
limit, and a tier is merged only once it holds ``width`` files: a row is then rewritten about
once per tier, log_width(fragment size / commit size) times. Position-delete files of a
segment are likewise appended and combined only once a segment has ``width`` of them.
A width of 1 is Amoro's behaviour.
"""

from __future__ import annotations

from collections.abc import Sequence

from mixed_iceberg.optimizing.model import BaseFile, OptimizingConfig

__all__ = ["combine_threshold", "fragments_to_merge", "size_tier"]

_MAX_TIER = 64


def size_tier(size: int, fragment_size: int, width: int) -> int:
    """0 for sizes in (limit / width, limit], 1 for (limit / width^2, limit / width], and so on."""
    tier = 0
    bound = fragment_size
    while tier < _MAX_TIER and bound > 0 and size * width <= bound:
        bound //= width
        tier += 1
    return tier


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

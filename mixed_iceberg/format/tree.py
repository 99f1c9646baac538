"""Tree nodes: the buckets of a keyed Mixed-Iceberg table (Amoro ``DataTreeNode.java``).

A node is ``(mask, index)`` with ``mask = 2**h - 1`` for a tree of height ``h`` and
``index = key_hash & mask``. Nodes are numbered breadth-first from 1 (``id = mask + 1 + index``),
and that id is what file names carry. A node's children split its keys by one more hash bit,
so a file of node ``(1, 1)`` may hold the same keys as files of ``(3, 1)`` and ``(3, 3)``:
readers must pair files whose nodes are related, not only equal ones.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DataTreeNode", "check_mask"]


def check_mask(mask: int) -> int:
    """Validate a tree mask, which must be ``2**h - 1`` for some height ``h >= 0``.

    Args:
        mask: The candidate mask, e.g. ``bucket_count - 1``.

    Returns:
        The mask, unchanged.

    Raises:
        ValueError: If the mask is negative or not one less than a power of two.
    """
    if mask < 0 or mask & (mask + 1):
        raise ValueError(f"tree mask must be 2**h - 1 (0, 1, 3, 7, ...), found {mask}")
    return mask


@dataclass(frozen=True, slots=True)
class DataTreeNode:
    """One node of the bucket tree.

    Attributes:
        mask: ``2**h - 1`` where ``h`` is the node's depth (ROOT has mask 0).
        index: The node's position at its depth, ``0 <= index <= mask``.

    Example:
        >>> node = DataTreeNode(3, 1)
        >>> node.id, DataTreeNode.of_id(5) == node
        (5, True)
        >>> node.is_son_of(DataTreeNode(1, 1)), node.is_related(DataTreeNode(1, 0))
        (True, False)
    """

    mask: int
    index: int

    def __post_init__(self) -> None:
        check_mask(self.mask)
        if not 0 <= self.index <= self.mask:
            raise ValueError(f"tree node index must be in 0..{self.mask}, found {self.index}")

    @classmethod
    def root(cls) -> DataTreeNode:
        """The node ``(0, 0)`` with id 1: the only node of an unbucketed table."""
        return cls(0, 0)

    @classmethod
    def of_id(cls, node_id: int) -> DataTreeNode:
        """The node with a given id, as read from a file name.

        Raises:
            ValueError: If ``node_id < 1`` (Amoro's ``ofId`` would loop forever on 0).
        """
        if node_id < 1:
            raise ValueError(f"tree node id must be >= 1, found {node_id}")
        mask = (1 << (node_id.bit_length() - 1)) - 1
        return cls(mask, node_id - mask - 1)

    @property
    def id(self) -> int:
        """Breadth-first number of the node: ``mask + 1 + index`` (ROOT is 1)."""
        return self.mask + 1 + self.index

    def left(self) -> DataTreeNode:
        """The child holding keys whose next hash bit is 0."""
        return DataTreeNode(2 * self.mask + 1, self.index)

    def right(self) -> DataTreeNode:
        """The child holding keys whose next hash bit is 1."""
        return DataTreeNode(2 * self.mask + 1, self.index + self.mask + 1)

    def parent(self) -> DataTreeNode:
        """The node one level up.

        Raises:
            ValueError: If this is the root.
        """
        if self.mask == 0:
            raise ValueError("the root tree node has no parent")
        parent_mask = self.mask >> 1
        return DataTreeNode(parent_mask, self.index & parent_mask)

    def is_son_of(self, other: DataTreeNode) -> bool:
        """Whether this node equals ``other`` or lies below it (Amoro ``isSonOf``).

        Every key of this node then also belongs to ``other``.
        """
        if self == other:
            return True
        return self.mask > other.mask and (self.index & other.mask) == other.index

    def is_related(self, other: DataTreeNode) -> bool:
        """Whether the nodes can share keys: one is an ancestor of, or equal to, the other."""
        return self.is_son_of(other) or other.is_son_of(self)

    def __str__(self) -> str:
        return f"TreeNode({self.mask},{self.index})"

"""DataTreeNode against Amoro's DataTreeNode.java rules (amoro.md section 1.5)."""

from __future__ import annotations

import dataclasses

import pytest

from mixed_iceberg.format import DataTreeNode, check_mask


@pytest.mark.parametrize(
    ("mask", "index", "node_id"),
    [(0, 0, 1), (1, 0, 2), (1, 1, 3), (3, 0, 4), (3, 1, 5), (3, 2, 6), (3, 3, 7), (7, 7, 15), (255, 0, 256)],
)
def test_ids_number_nodes_breadth_first_from_one(mask: int, index: int, node_id: int) -> None:
    node = DataTreeNode(mask, index)
    assert node.id == node_id
    assert DataTreeNode.of_id(node_id) == node


def test_root_is_node_one() -> None:
    assert DataTreeNode.root() == DataTreeNode(0, 0) == DataTreeNode.of_id(1)
    assert str(DataTreeNode.root()) == "TreeNode(0,0)"


def test_ids_round_trip_for_the_first_thousand_nodes() -> None:
    assert [DataTreeNode.of_id(i).id for i in range(1, 1025)] == list(range(1, 1025))


@pytest.mark.parametrize(("mask", "index"), [(2, 0), (5, 1), (-1, 0), (3, 4), (3, -1), (0, 1)])
def test_invalid_nodes_are_refused(mask: int, index: int) -> None:
    with pytest.raises(ValueError, match="tree"):
        DataTreeNode(mask, index)


@pytest.mark.parametrize("node_id", [0, -3])
def test_ids_below_one_are_refused(node_id: int) -> None:
    with pytest.raises(ValueError, match="must be >= 1"):
        DataTreeNode.of_id(node_id)


def test_check_mask_accepts_powers_of_two_minus_one() -> None:
    assert [check_mask(m) for m in (0, 1, 3, 7, 2**31 - 1)] == [0, 1, 3, 7, 2**31 - 1]


def test_children_split_a_node_by_the_next_hash_bit() -> None:
    node = DataTreeNode(1, 1)
    assert node.left() == DataTreeNode(3, 1)
    assert node.right() == DataTreeNode(3, 3)
    assert DataTreeNode.root().left() == DataTreeNode(1, 0)
    assert DataTreeNode.root().right() == DataTreeNode(1, 1)
    # A key lands in a child exactly when it landed in the parent.
    for key_hash in range(64):
        child = DataTreeNode(3, key_hash & 3)
        assert child.parent() == DataTreeNode(1, key_hash & 1)
        assert child in (DataTreeNode(1, key_hash & 1).left(), DataTreeNode(1, key_hash & 1).right())


def test_parent_undoes_left_and_right_and_root_has_none() -> None:
    for node_id in range(1, 64):
        node = DataTreeNode.of_id(node_id)
        assert node.left().parent() == node
        assert node.right().parent() == node
    with pytest.raises(ValueError, match="root"):
        DataTreeNode.root().parent()


@pytest.mark.parametrize(
    ("son", "ancestor", "expected"),
    [
        ((3, 1), (1, 1), True),
        ((3, 3), (1, 1), True),
        ((3, 2), (1, 1), False),
        ((3, 2), (0, 0), True),
        ((1, 1), (1, 1), True),
        ((1, 1), (3, 1), False),  # a parent is not a son of its child
        ((7, 5), (3, 1), True),
        ((7, 5), (3, 3), False),
    ],
)
def test_is_son_of_follows_amoro(son: tuple[int, int], ancestor: tuple[int, int], expected: bool) -> None:
    assert DataTreeNode(*son).is_son_of(DataTreeNode(*ancestor)) is expected


def test_is_related_is_symmetric_and_matches_shared_keys() -> None:
    nodes = [DataTreeNode.of_id(i) for i in range(1, 32)]
    for a in nodes:
        for b in nodes:
            # Brute force: two nodes are related iff some hash value falls in both.
            shares_a_key = any((h & a.mask) == a.index and (h & b.mask) == b.index for h in range(32))
            assert a.is_related(b) is b.is_related(a) is shares_a_key


def test_nodes_are_frozen_values() -> None:
    node = DataTreeNode(3, 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        node.mask = 1  # type: ignore[misc]
    assert {node, DataTreeNode.of_id(6)} == {node}

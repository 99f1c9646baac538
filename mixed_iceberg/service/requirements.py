"""A commit's requirements checked against the table's current metadata, in Iceberg Java's words.

pyiceberg's own ``validate`` words its failures differently ("Table UUID does not match"),
and clients and Iceberg's REST compatibility kit read the message: a failed requirement is a
``CommitFailedException`` whose message starts with ``Requirement failed:`` followed by
``UpdateRequirement.java``'s text (``table already exists``, ``UUID does not match: expected
<current> != <required>``, ``branch main has changed: expected id 1 != 2``, ...).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyiceberg.exceptions import CommitFailedException
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.refs import SnapshotRefType
from pyiceberg.table.update import (
    AssertCreate,
    AssertCurrentSchemaId,
    AssertDefaultSortOrderId,
    AssertDefaultSpecId,
    AssertLastAssignedFieldId,
    AssertLastAssignedPartitionId,
    AssertRefSnapshotId,
    AssertTableUUID,
    TableRequirement,
)

__all__ = ["validate_requirements"]


def _failed(message: str) -> CommitFailedException:
    return CommitFailedException(f"Requirement failed: {message}")


def _check(requirement: TableRequirement, base: TableMetadata) -> None:
    if isinstance(requirement, AssertCreate):
        raise _failed("table already exists")
    if isinstance(requirement, AssertTableUUID):
        if str(requirement.uuid).lower() != str(base.table_uuid).lower():
            raise _failed(f"UUID does not match: expected {base.table_uuid} != {requirement.uuid}")
    elif isinstance(requirement, AssertRefSnapshotId):
        ref = base.refs.get(requirement.ref)
        if ref is not None:
            kind = "branch" if ref.snapshot_ref_type == SnapshotRefType.BRANCH else "tag"
            if requirement.snapshot_id is None:
                raise _failed(f"{kind} {requirement.ref} was created concurrently")
            if requirement.snapshot_id != ref.snapshot_id:
                raise _failed(f"{kind} {requirement.ref} has changed: expected id {requirement.snapshot_id} != {ref.snapshot_id}")
        elif requirement.snapshot_id is not None:
            raise _failed(f"branch or tag {requirement.ref} is missing, expected {requirement.snapshot_id}")
    elif isinstance(requirement, AssertLastAssignedFieldId):
        if base.last_column_id != requirement.last_assigned_field_id:
            raise _failed(
                f"last assigned field id changed: expected id {requirement.last_assigned_field_id} != {base.last_column_id}"
            )
    elif isinstance(requirement, AssertCurrentSchemaId):
        if base.current_schema_id != requirement.current_schema_id:
            raise _failed(f"current schema changed: expected id {requirement.current_schema_id} != {base.current_schema_id}")
    elif isinstance(requirement, AssertLastAssignedPartitionId):
        if base.last_partition_id != requirement.last_assigned_partition_id:
            raise _failed(
                f"last assigned partition id changed: expected id {requirement.last_assigned_partition_id} "
                f"!= {base.last_partition_id}"
            )
    elif isinstance(requirement, AssertDefaultSpecId):
        if base.default_spec_id != requirement.default_spec_id:
            raise _failed(f"default partition spec changed: expected id {requirement.default_spec_id} != {base.default_spec_id}")
    elif isinstance(requirement, AssertDefaultSortOrderId) and base.default_sort_order_id != requirement.default_sort_order_id:
        raise _failed(
            f"default sort order changed: expected id {requirement.default_sort_order_id} != {base.default_sort_order_id}"
        )


def validate_requirements(requirements: Sequence[TableRequirement], base: TableMetadata | None) -> None:
    """Raise ``CommitFailedException`` (a 409) for the first requirement ``base`` does not meet;
    ``base`` None: the table does not exist, which only ``assert-create`` allows."""
    for requirement in requirements:
        if base is None:
            continue  # the caller answers a missing table (404) unless the commit asserts creation
        _check(requirement, base)

"""Schema version 1: groups, optimizers, table runtime, processes and tasks.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "optimizer_groups",
        sa.Column("name", sa.String(128), primary_key=True),
        sa.Column("container", sa.String(16), nullable=False),
        sa.Column("properties", sa.Text, nullable=False),
        sa.Column("updated_ms", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "optimizers",
        sa.Column("optimizer_id", sa.String(64), primary_key=True),
        sa.Column("group_name", sa.String(128), nullable=False),
        sa.Column("container", sa.String(16), nullable=False),
        sa.Column("threads", sa.Integer, nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("pid", sa.Integer, nullable=False),
        sa.Column("started_ms", sa.BigInteger, nullable=False),
        sa.Column("heartbeat_ms", sa.BigInteger, nullable=False),
        sa.Column("stopped_ms", sa.BigInteger, nullable=True),
    )
    op.create_index("ix_optimizers_group", "optimizers", ["group_name"])
    op.create_table(
        "table_runtime",
        sa.Column("table_id", sa.String(512), primary_key=True),
        sa.Column("catalog", sa.String(128), nullable=False),
        sa.Column("table_name", sa.String(384), nullable=False),
        sa.Column("group_name", sa.String(128), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("quota", sa.Float, nullable=False),
        sa.Column("owner", sa.String(64), nullable=True),
        sa.Column("lease_ms", sa.BigInteger, nullable=True),
        sa.Column("pending_type", sa.String(8), nullable=True),
        sa.Column("pending_reason", sa.Text, nullable=True),
        sa.Column("process_id", sa.Integer, nullable=True),
        sa.Column("last_minor_ms", sa.BigInteger, nullable=True),
        sa.Column("last_major_ms", sa.BigInteger, nullable=True),
        sa.Column("last_full_ms", sa.BigInteger, nullable=True),
        sa.Column("last_error", sa.Text, nullable=True),
        sa.Column("last_error_ms", sa.BigInteger, nullable=True),
        sa.Column("failures", sa.Integer, nullable=False),
        sa.Column("next_plan_ms", sa.BigInteger, nullable=False),
        sa.Column("updated_ms", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_table_runtime_group", "table_runtime", ["group_name"])
    op.create_table(
        "optimizing_processes",
        sa.Column("process_id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("table_id", sa.String(512), nullable=False),
        sa.Column("group_name", sa.String(128), nullable=False),
        sa.Column("type", sa.String(8), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("planned_by", sa.String(64), nullable=False),
        sa.Column("planned_ms", sa.BigInteger, nullable=False),
        sa.Column("finished_ms", sa.BigInteger, nullable=True),
        sa.Column("base_metadata", sa.Text, nullable=False),
        sa.Column("change_metadata", sa.Text, nullable=True),
        sa.Column("unit", sa.Boolean, nullable=False),
        sa.Column("task_count", sa.Integer, nullable=False),
        sa.Column("snapshot_id", sa.BigInteger, nullable=True),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("bytes_in", sa.BigInteger, nullable=False),
        sa.Column("bytes_out", sa.BigInteger, nullable=False),
        sa.Column("rows_in", sa.BigInteger, nullable=False),
        sa.Column("rows_out", sa.BigInteger, nullable=False),
        sa.Column("files_in", sa.BigInteger, nullable=False),
        sa.Column("files_out", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_optimizing_processes_table", "optimizing_processes", ["table_id", "planned_ms"])
    op.create_table(
        "optimizing_tasks",
        sa.Column("process_id", sa.Integer, primary_key=True),
        sa.Column("task_id", sa.Integer, primary_key=True),
        sa.Column("table_id", sa.String(512), nullable=False),
        sa.Column("group_name", sa.String(128), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("input", sa.Text, nullable=False),
        sa.Column("input_bytes", sa.BigInteger, nullable=False),
        sa.Column("output", sa.Text, nullable=True),
        sa.Column("runs", sa.Integer, nullable=False),
        sa.Column("retries", sa.Integer, nullable=False),
        sa.Column("owner", sa.String(64), nullable=True),
        sa.Column("thread", sa.Integer, nullable=True),
        sa.Column("lease_ms", sa.BigInteger, nullable=True),
        sa.Column("scheduled_ms", sa.BigInteger, nullable=True),
        sa.Column("started_ms", sa.BigInteger, nullable=True),
        sa.Column("finished_ms", sa.BigInteger, nullable=True),
        sa.Column("duration_ms", sa.BigInteger, nullable=False),
        sa.Column("rows_in", sa.BigInteger, nullable=False),
        sa.Column("rows_out", sa.BigInteger, nullable=False),
        sa.Column("bytes_out", sa.BigInteger, nullable=False),
        sa.Column("error", sa.Text, nullable=True),
        sa.ForeignKeyConstraint(["process_id"], ["optimizing_processes.process_id"], name="fk_tasks_process"),
    )
    op.create_index("ix_optimizing_tasks_queue", "optimizing_tasks", ["group_name", "status"])
    op.create_index("ix_optimizing_tasks_table", "optimizing_tasks", ["table_id", "finished_ms"])


def downgrade() -> None:
    op.drop_table("optimizing_tasks")
    op.drop_table("optimizing_processes")
    op.drop_table("table_runtime")
    op.drop_table("optimizers")
    op.drop_table("optimizer_groups")

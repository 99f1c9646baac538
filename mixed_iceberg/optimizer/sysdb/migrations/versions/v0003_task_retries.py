"""Schema version 3: each task keeps its table's ``execute.num-retries`` as planned.

A task whose lease runs out is a failed run counted against its own table's retries, not the
default. Tasks planned before keep NULL and count against the default.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("optimizing_tasks") as batch:
        batch.add_column(sa.Column("max_retries", sa.Integer, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("optimizing_tasks") as batch:
        batch.drop_column("max_retries")

"""Schema version 2: when each table's maintenance last ran, and its last error.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("table_runtime") as batch:
        batch.add_column(sa.Column("last_maintenance_ms", sa.BigInteger, nullable=True))
        batch.add_column(sa.Column("maintenance_error", sa.Text, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("table_runtime") as batch:
        batch.drop_column("maintenance_error")
        batch.drop_column("last_maintenance_ms")

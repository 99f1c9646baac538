"""Alembic's environment: runs on the connection the system database hands it (no alembic.ini)."""

from __future__ import annotations

from alembic import context

from mixed_iceberg.optimizer.sysdb.schema import METADATA

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=METADATA, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()

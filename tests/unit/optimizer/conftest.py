"""Fixtures of the optimizer tests: an empty system database on each backend, a local catalog,
and the services a test started (stopped after it)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from mixed_iceberg import MixedCatalog
from mixed_iceberg.optimizer.service import OptimizerService
from tests.support.tables import local_catalog


@pytest.fixture
def postgres_db_url(postgres_url: str) -> Iterator[str]:
    """An empty database of its own on the suite's PostgreSQL server, dropped afterwards."""
    server = make_url(postgres_url)
    name = f"sysdb_{uuid.uuid4().hex[:10]}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield server.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as c:
            c.execute(text(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'"))
            c.execute(text(f'DROP DATABASE "{name}"'))
        admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.integration)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database of each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/system.db"
    return str(request.getfixturevalue("postgres_db_url"))


@pytest.fixture
def catalog(tmp_path: Path) -> MixedCatalog:
    return local_catalog(tmp_path / "catalog")


@pytest.fixture
def services() -> Iterator[list[OptimizerService]]:
    """Services a test started; each is stopped after the test."""
    started: list[OptimizerService] = []
    yield started
    for service in started:
        service.stop()

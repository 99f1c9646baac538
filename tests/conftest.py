"""Session-wide fixtures: real PostgreSQL, S3 (SeaweedFS) and Kafka started by the suite itself.

Tests that use them are marked ``@pytest.mark.integration``. Each service is started once per
session through ``scripts/services/*.sh`` and stopped at the end unless it was already running
(see ``tests/support/services.py``). While a fixture is active its address is also exported as
``MIXED_ICEBERG_POSTGRES_URL`` / ``MIXED_ICEBERG_S3_ENDPOINT`` / ``MIXED_ICEBERG_KAFKA_BOOTSTRAP``,
the variables ``conf/catalogs.yaml`` and ``conf/ingest.yaml`` read, so the ``postgres`` and ``s3`` catalogs point at these services
even when a script had to pick a non-default port.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.support.browser import chromium
from tests.support.iceberg_rest_reference import ReferenceServer, reference_server
from tests.support.rest_server import rest_server
from tests.support.services import KAFKA, POSTGRES, SEAWEEDFS, S3Endpoint, exported, s3_endpoint_from
from tests.support.spark import shutdown, spark_base

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["chromium", "rest_server"]  # session-wide: one serve process, one browser, for every module that asks

#: Each test once across scripts/test.sh's two venvs (--record-passed, --skip-passed).
pytest_plugins = ["tests.support.run_once"]


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """SQLAlchemy URL of the private cluster's ``mixed_iceberg`` database (psycopg2 driver)."""
    with POSTGRES.leased() as url, exported("MIXED_ICEBERG_POSTGRES_URL", url):
        yield url


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[S3Endpoint]:
    """The SeaweedFS S3 endpoint with its credentials; the bucket already exists."""
    with SEAWEEDFS.leased() as url, exported("MIXED_ICEBERG_S3_ENDPOINT", url):
        yield s3_endpoint_from(url)


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    """``host:port`` of the single-node KRaft broker (``scripts/services/kafka.sh``)."""
    with KAFKA.leased() as bootstrap, exported("MIXED_ICEBERG_KAFKA_BOOTSTRAP", bootstrap):
        yield bootstrap


@pytest.fixture(scope="session")
def iceberg_rest_reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceServer]:
    """Iceberg's reference REST catalog server (Jetty over a SQLite JDBC catalog, on loopback),
    one JVM for the session: the independent server the REST tests check our client and kit
    harness against (``tests/support/iceberg_rest_reference.py``). The kit drops its own
    namespaces (``ns``, ``newdb``) before each of its tests; other tests use names of their own."""
    with reference_server(tmp_path_factory.mktemp("iceberg-rest-reference")) as server:
        yield server


@pytest.fixture(scope="session")
def spark_jvm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    """One local Spark JVM (Iceberg's runtime) for the whole session, with no catalog of its own:
    every Spark module adds its catalogs with ``tests.support.spark.catalog_session``, so the
    suite pays for Spark's start once."""
    spark = spark_base(tmp_path_factory.mktemp("spark"))
    try:
        yield spark
    finally:
        shutdown(spark)

"""A local Spark (PySpark + Iceberg's Spark runtime) over our SQLite SQL catalog or our REST server.

Iceberg's JDBC catalog reads the table pyiceberg's SQL catalog writes (``iceberg_tables``, with
the ``iceberg_type`` column of schema version V1) when both use the same catalog name. The
jars come from Maven Central through ``scripts/jars/spark.sh`` (cached in ``.jars/spark``).
pyspark is imported only here and in the Spark tests: it is a ``dev`` extra.

The suite starts one JVM per test session (:func:`spark_base`, the ``spark_jvm`` fixture of
tests/conftest.py); a module names its catalogs (:func:`jdbc_catalog`, :func:`rest_catalog`) and
takes a fresh session of that JVM with them (:func:`catalog_session`: same SparkContext, new
catalog instances) for every step that must see commits made outside Spark since the last one. Iceberg
1.10's ``JdbcCatalog.initialize`` leaves the ``ResultSet`` of its ``getTables``/``getColumns``
probes open (apache/iceberg#15462, fixed by #15463, in no 1.10.x release); on a SQLite catalog in
WAL mode (ours, catalog/sql.py) that unfinished statement pins a read transaction, so that
catalog instance sees the database as it was when it was initialized, forever.
"""

from __future__ import annotations

import gc
import subprocess
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from tests.support.services import ROOT

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "ICEBERG_CATALOG",
    "ICEBERG_EXTENSIONS",
    "catalog_session",
    "jdbc_catalog",
    "rest_catalog",
    "shutdown",
    "spark_base",
    "spark_jars",
]

#: The Spark catalog class and SQL extensions of Iceberg's runtime.
ICEBERG_CATALOG = "org.apache.iceberg.spark.SparkCatalog"
ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"


def spark_jars() -> list[Path]:
    """Iceberg's Spark runtime and the SQLite JDBC driver, fetched on first use."""
    script = ROOT / "scripts" / "jars" / "spark.sh"
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=600, check=False, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"{script.name}: expected exit status 0, found {proc.returncode}\n{proc.stderr}")
    jars = sorted(Path(proc.stdout.strip().splitlines()[-1]).glob("*.jar"))
    if len(jars) < 2:
        raise RuntimeError(f"{script.name}: expected the runtime and the driver jars, found {jars}")
    return jars


def spark_base(scratch: Path) -> SparkSession:
    """A ``local[1]`` session with Iceberg's runtime and SQL extensions, and no catalog yet.

    The suite starts one per session (the ``spark_jvm`` fixture of tests/conftest.py); each module
    adds its catalogs with :func:`catalog_session`. ``scratch`` takes Spark's own files (local
    dir, SQL warehouse), so nothing lands in the working directory.
    """
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master("local[1]")
        .appName("mixed-iceberg-interop")
        .config("spark.jars", ",".join(str(j) for j in spark_jars()))
        .config("spark.sql.extensions", ICEBERG_EXTENSIONS)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.default.parallelism", "1")
        .config("spark.driver.memory", "768m")
        .config("spark.local.dir", str(scratch / "local"))
        .config("spark.sql.warehouse.dir", str(scratch / "spark-warehouse"))
    )
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def catalog_session(base: SparkSession, catalogs: Mapping[str, Mapping[str, str]]) -> SparkSession:
    """A new session of ``base``'s JVM whose catalogs are ``catalogs`` (name -> properties).

    Catalogs are instantiated lazily per session, so a fresh session also sees every commit made
    outside Spark since the last one (the module docstring says why that matters).
    """
    session = base.newSession()
    for name, properties in catalogs.items():
        prefix = f"spark.sql.catalog.{name}"
        session.conf.set(prefix, ICEBERG_CATALOG)
        for key, value in properties.items():
            session.conf.set(f"{prefix}.{key}", value)
    # Iceberg's DataFrame source (``spark.read.format("iceberg").load(name)``, streaming too)
    # resolves names in ``SparkSession.active()``, not in the session it is called on.
    spark_session_class = session._jvm.org.apache.spark.sql.SparkSession  # type: ignore[union-attr]
    spark_session_class.setActiveSession(session._jsparkSession)
    spark_session_class.setDefaultSession(session._jsparkSession)
    return session


def jdbc_catalog(sqlite_db: Path, warehouse: Path) -> dict[str, str]:
    """Properties of an Iceberg catalog over our SQLite SQL catalog (same catalog name as ours)."""
    return {
        "type": "jdbc",
        "uri": f"jdbc:sqlite:{sqlite_db}",
        "jdbc.schema-version": "V1",
        "warehouse": str(warehouse),
        # Iceberg caches loaded tables by default; our commits land behind Spark's back.
        "cache-enabled": "false",
    }


def rest_catalog(uri: str, warehouse: str, *, token: str | None = None, credential: str | None = None) -> dict[str, str]:
    """Properties of an Iceberg REST catalog (``mixed-iceberg serve``; docs/rest.md shows them).

    Args:
        uri: the server's address, e.g. ``http://127.0.0.1:8181``.
        warehouse: the served catalog's name.
        token: a bearer token, where the server requires one.
        credential: ``client-id:secret`` for the OAuth2 client-credentials exchange instead.
    """
    properties = {"type": "rest", "uri": uri, "warehouse": warehouse, "cache-enabled": "false"}
    if token is not None:
        properties["token"] = token
    if credential is not None:
        properties["credential"] = credential
        properties["oauth2-server-uri"] = f"{uri}/v1/oauth/tokens"
    return properties


def shutdown(session: SparkSession) -> None:
    """Stop ``session`` and its JVM, closing py4j's sockets (unclosed, they warn when collected)."""
    from pyspark import SparkContext

    session.stop()
    gateway = SparkContext._gateway
    if gateway is not None:
        gateway.shutdown()
        SparkContext._gateway = None
        SparkContext._jvm = None
        proc: subprocess.Popen[bytes] | None = getattr(gateway, "proc", None)  # set by pyspark's launch_gateway
        if proc is not None:
            if proc.stdin is not None:
                proc.stdin.close()  # the JVM exits when its stdin closes
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()

"""A local Spark session (PySpark + Iceberg's Spark runtime) that reads our SQLite SQL catalog.

Iceberg's JDBC catalog reads the table pyiceberg's SQL catalog writes (``iceberg_tables``, with
the ``iceberg_type`` column of schema version V1) when both use the same catalog name. The
jars come from Maven Central through ``scripts/jars/spark.sh`` (cached in ``.jars/spark``).
pyspark is imported only here and in the Spark tests: it is a ``dev`` extra.

Take a fresh session (``session.newSession()``: same JVM and SparkContext, new catalog
instances) for every step that must see commits made outside Spark since the last one. Iceberg
1.10's ``JdbcCatalog.initialize`` leaves the ``ResultSet`` of its ``getTables``/``getColumns``
probes open (apache/iceberg#15462, fixed by #15463, in no 1.10.x release); on a SQLite catalog in
WAL mode (ours, catalog/sql.py) that unfinished statement pins a read transaction, so that
catalog instance sees the database as it was when it was initialized, forever.
"""

from __future__ import annotations

import gc
import subprocess
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from tests.support.services import ROOT

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["shutdown", "spark_jars", "spark_session"]


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


def spark_session(catalog: str, sqlite_db: Path, warehouse: Path, scratch: Path) -> SparkSession:
    """A ``local[1]`` session whose catalog ``catalog`` is the SQLite catalog at ``sqlite_db``.

    ``scratch`` takes Spark's own files (local dir, SQL warehouse), so nothing lands in the
    working directory.
    """
    from pyspark.sql import SparkSession

    prefix = f"spark.sql.catalog.{catalog}"
    builder = (
        SparkSession.builder.master("local[1]")
        .appName("mixed-iceberg-interop")
        .config("spark.jars", ",".join(str(j) for j in spark_jars()))
        .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config(prefix, "org.apache.iceberg.spark.SparkCatalog")
        .config(f"{prefix}.type", "jdbc")
        .config(f"{prefix}.uri", f"jdbc:sqlite:{sqlite_db}")
        .config(f"{prefix}.jdbc.schema-version", "V1")
        .config(f"{prefix}.warehouse", str(warehouse))
        # Iceberg caches loaded tables by default; our commits land behind Spark's back.
        .config(f"{prefix}.cache-enabled", "false")
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

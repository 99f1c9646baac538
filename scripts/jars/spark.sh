#!/usr/bin/env bash
# Fetch the jars a local PySpark session needs to read our catalogs: Iceberg's Spark runtime and
# the SQLite JDBC driver (scripts/jars/spark-pom.xml), from Maven Central into .jars/spark
# (git-ignored), as scripts/services/kafka.sh does for the Kafka jars. Idempotent; prints the
# directory. Used by tests/support/spark.py.
#
#   scripts/jars/spark.sh
#
# Environment:
#   MIXED_ICEBERG_JARS_DIR   jar cache (default <repo>/.jars)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
JARS="${MIXED_ICEBERG_JARS_DIR:-$ROOT/.jars}/spark"

log() { echo "spark.sh: $*" >&2; }

if ! compgen -G "$JARS/iceberg-spark-runtime-*.jar" >/dev/null || ! compgen -G "$JARS/sqlite-jdbc-*.jar" >/dev/null; then
    command -v mvn >/dev/null || {
        log "mvn not found; install Maven (apt-get install maven) to fetch the Spark jars"
        exit 1
    }
    log "fetching Iceberg's Spark runtime and the SQLite JDBC driver from Maven Central into $JARS"
    # Both are self-contained (the runtime is shaded; Spark brings slf4j for the driver).
    mvn -q -B -f "$ROOT/scripts/jars/spark-pom.xml" dependency:copy-dependencies \
        -DoutputDirectory="$JARS" -DincludeScope=runtime -DexcludeTransitive=true >&2 || {
        log "fetching the Spark jars failed"
        exit 1
    }
fi
echo "$JARS"

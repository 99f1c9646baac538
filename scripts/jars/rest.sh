#!/usr/bin/env bash
# Fetch the jars that run Iceberg's REST Compatibility Kit and Iceberg's reference REST catalog
# server (scripts/jars/rest-pom.xml: the kit's test jar, the server's test fixtures, Iceberg core
# and api with their test jars, Jetty, Hadoop's client, SQLite JDBC, AssertJ, JUnit's console
# launcher) from Maven Central into .jars/rest (git-ignored), as scripts/jars/spark.sh does for
# Spark, and compile the loopback launcher of the reference server (java/rest-reference) into
# .jars/rest-launcher. Idempotent: each part is redone only when missing or when its inputs (the
# pom, the launcher's source) changed. Prints the jar directory; the launcher jar is
# <that dir>-launcher/mixed-iceberg-rest-reference.jar.
#
#   scripts/jars/rest.sh
#
# Used by tests/support/rck.py and tests/support/iceberg_rest_reference.py.
#
# Environment:
#   MIXED_ICEBERG_JARS_DIR   jar cache (default <repo>/.jars)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CACHE="${MIXED_ICEBERG_JARS_DIR:-$ROOT/.jars}"
JARS="$CACHE/rest"
LAUNCHER="$CACHE/rest-launcher"
POM="$ROOT/scripts/jars/rest-pom.xml"
SRC="$ROOT/java/rest-reference/src/main/java"

log() { echo "rest.sh: $*" >&2; }

mkdir -p "$JARS" "$LAUNCHER"
# One fetch at a time (a test session and the benchmark may both ask); the second finds it done.
exec 9>"$JARS/.lock"
flock 9

pom_hash="$(sha256sum "$POM" | cut -d' ' -f1)"
if [[ ! -f "$JARS/.pom.sha256" || "$(<"$JARS/.pom.sha256")" != "$pom_hash" ]]; then
    command -v mvn >/dev/null || {
        log "mvn not found; install Maven (apt-get install maven) to fetch the REST kit's jars"
        exit 1
    }
    log "fetching Iceberg's REST Compatibility Kit and reference server jars from Maven Central into $JARS"
    rm -f "$JARS"/*.jar
    mvn -q -B -f "$POM" dependency:copy-dependencies -DoutputDirectory="$JARS" -DincludeScope=runtime >&2 || {
        log "fetching the REST kit's jars failed"
        exit 1
    }
    echo "$pom_hash" >"$JARS/.pom.sha256"
fi

JAR="$LAUNCHER/mixed-iceberg-rest-reference.jar"
src_hash="$( (cd "$SRC" && find . -name '*.java' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum; echo "$pom_hash") | sha256sum | cut -d' ' -f1)"
if [[ ! -f "$JAR" || ! -f "$JAR.sha256" || "$(<"$JAR.sha256")" != "$src_hash" ]]; then
    command -v javac >/dev/null || {
        log "javac not found; install a JDK 17 to build the reference server's launcher"
        exit 1
    }
    build="$(mktemp -d "$LAUNCHER/build.XXXXXX")"
    trap 'rm -rf "$build"' EXIT
    javac --release 17 -nowarn -cp "$JARS/*" -d "$build" $(find "$SRC" -name '*.java') >&2 || {
        log "compiling java/rest-reference failed"
        exit 1
    }
    jar --create --file "$build/launcher.jar" -C "$build" mixediceberg
    mv -f "$build/launcher.jar" "$JAR"
    echo "$src_hash" >"$JAR.sha256"
    log "built $JAR"
fi
echo "$JARS"

#!/usr/bin/env bash
# Build the loopback agent (java/loopback-agent: a java agent, Byte Buddy shaded in, that makes
# flink-python's Beam Fn API gRPC servers listen on 127.0.0.1) into .jars/agent (git-ignored), with
# mvn from Maven Central. Idempotent and cached: it rebuilds only when the agent's sources (pom.xml,
# src/) changed since the jar was built, which a stamp beside the jar records. Prints the jar's path.
#
#   scripts/jars/loopback-agent.sh
#
# kafka.sh jars (so kafka.sh start) and flink.sh start run it: the ingest job's local JVM and the
# session cluster's TaskManager load the jar (docs/ingest.md, "Network exposure").
#
# Environment:
#   MIXED_ICEBERG_JARS_DIR   jar cache (default <repo>/.jars)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SRC="$ROOT/java/loopback-agent"
OUT="${MIXED_ICEBERG_JARS_DIR:-$ROOT/.jars}/agent"
JAR="$OUT/mixed-iceberg-loopback-agent.jar"

log() { echo "loopback-agent.sh: $*" >&2; }

sources_hash() {
    (cd "$SRC" && find pom.xml src -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -d' ' -f1
}

mkdir -p "$OUT"
want="$(sources_hash)"
up_to_date() { [[ -f "$JAR" && -f "$JAR.sha256" && "$(<"$JAR.sha256")" == "$want" ]]; }
if ! up_to_date; then
    # One build at a time (a test session and a demo may both ask); the second finds it built.
    exec 9>"$OUT/.lock"
    flock 9
    if ! up_to_date; then
        command -v mvn >/dev/null || {
            log "mvn not found; install Maven (apt-get install maven) to build the loopback agent"
            exit 1
        }
        log "building the loopback agent (java/loopback-agent) into $OUT"
        build="$(mktemp -d "$OUT/build.XXXXXX")"
        trap 'rm -rf "$build"' EXIT
        t0=$SECONDS
        mvn -q -B -f "$SRC/pom.xml" package -Dagent.build.directory="$build" >&2 || {
            log "building the loopback agent failed"
            exit 1
        }
        mv -f "$build/mixed-iceberg-loopback-agent.jar" "$JAR"
        echo "$want" >"$JAR.sha256"
        log "built $JAR in $((SECONDS - t0)) s"
    fi
fi
echo "$JAR"

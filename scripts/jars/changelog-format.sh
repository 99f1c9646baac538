#!/usr/bin/env bash
# Build the mixed-iceberg-changelog-json Flink format (java/changelog-format: the serializer the
# PyFlink sink writes its staging topic with, docs/flink.md) into .jars/flink-format (git-ignored),
# with javac against the Flink jars of the venv's PyFlink: no download, and always the Flink the job
# runs on. Idempotent and cached (a stamp of the sources' and PyFlink's hash beside the jar). Prints
# the jar's path.
#
#   scripts/jars/changelog-format.sh
#
# Environment:
#   MIXED_ICEBERG_JARS_DIR   jar cache (default <repo>/.jars)
#   PYTHON                   the venv's python (default <repo>/.venv/bin/python)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SRC="$ROOT/java/changelog-format"
OUT="${MIXED_ICEBERG_JARS_DIR:-$ROOT/.jars}/flink-format"
JAR="$OUT/mixed-iceberg-changelog-format.jar"
PY="${PYTHON:-$ROOT/.venv/bin/python}"

log() { echo "changelog-format.sh: $*" >&2; }

FLINK="$("$PY" -c 'import os, pyflink; print(os.path.dirname(pyflink.__file__))')"
want="$( (cd "$SRC" && find src -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum; ls "$FLINK/lib") | sha256sum | cut -d' ' -f1)"
mkdir -p "$OUT"
up_to_date() { [[ -f "$JAR" && -f "$JAR.sha256" && "$(<"$JAR.sha256")" == "$want" ]]; }
if ! up_to_date; then
    exec 9>"$OUT/.lock"
    flock 9
    if ! up_to_date; then
        command -v javac >/dev/null || {
            log "javac not found; install a JDK 17 to build the changelog format"
            exit 1
        }
        build="$(mktemp -d "$OUT/build.XXXXXX")"
        trap 'rm -rf "$build"' EXIT
        mkdir -p "$build/classes"
        javac -nowarn --release 17 -d "$build/classes" -cp "$FLINK/lib/*:$FLINK/opt/*" \
            $(find "$SRC/src/main/java" -name '*.java' | LC_ALL=C sort) >&2
        cp -r "$SRC/src/main/resources/." "$build/classes/"
        (cd "$build/classes" && jar cf "$build/format.jar" .)
        mv -f "$build/format.jar" "$JAR"
        echo "$want" >"$JAR.sha256"
        log "built $JAR"
    fi
fi
echo "$JAR"

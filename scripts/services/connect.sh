#!/usr/bin/env bash
# A private Kafka Connect worker (distributed mode, one worker) with Debezium's PostgreSQL
# connector, writing to the broker of scripts/services/kafka.sh.
#
#   scripts/services/connect.sh start|stop|status|url|clean|jars
#
# The jars come from Maven Central (scripts/jars/connect-pom.xml -> .jars/connect, git-ignored):
# Kafka Connect 4.3.0 and debezium-connector-postgres 3.6.1.Final on one classpath (no plugin
# isolation: the worker runs this one connector). `jars` fetches them without starting anything.
# Distributed mode, so connectors are created, restarted and deleted through the REST API that
# `url` prints (POST /connectors, POST /connectors/<name>/restart, DELETE /connectors/<name>);
# the worker keeps connector configs, source offsets and statuses in compacted topics of the
# broker, named after the REST port. Keys and values are written by the JsonConverter with
# schemas (Debezium's default {"schema": ..., "payload": ...} JSON).
#
# `start` starts Kafka first when it is not running (kafka.sh start), is idempotent, and returns
# once the REST API answers and lists the PostgreSQL connector plugin; `stop` sends SIGTERM to
# the recorded PID (SIGKILL after 30 s); `clean` stops and deletes the state. A worker started
# for another broker address than the current one is restarted.
#
# Environment:
#   MIXED_ICEBERG_CONNECT_PORT     REST port (default 18083; when unset and taken, a free one is
#                                  picked and `url` reports it)
#   MIXED_ICEBERG_CONNECT_HEAP     JVM heap (default 512m)
#   MIXED_ICEBERG_KAFKA_BOOTSTRAP  the broker (default: what `kafka.sh bootstrap` prints)
#   MIXED_ICEBERG_JARS_DIR         jar cache (default <repo>/.jars)
#   MIXED_ICEBERG_PYTHON           python for the readiness probe (default <repo>/.venv/bin/python)
#   MIXED_ICEBERG_SERVICES_DIR     state root (default <repo>/.services)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SERVICES="${MIXED_ICEBERG_SERVICES_DIR:-$ROOT/.services}"
STATE="$SERVICES/connect"
PIDFILE="$STATE/connect.pid"
LOG="$STATE/connect.log"
JARS="${MIXED_ICEBERG_JARS_DIR:-$ROOT/.jars}"
PY="${MIXED_ICEBERG_PYTHON:-$ROOT/.venv/bin/python}"
PORT="${MIXED_ICEBERG_CONNECT_PORT:-18083}"
HEAP="${MIXED_ICEBERG_CONNECT_HEAP:-512m}"
PLUGIN="io.debezium.connector.postgresql.PostgresConnector"
START_TIMEOUT=120

SERVICE=connect.sh
# shellcheck source=scripts/services/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

fetch_jars() {
    command -v mvn >/dev/null || die "mvn not found; install Maven (apt-get install maven) to fetch the Kafka Connect jars"
    if ! compgen -G "$JARS/connect/debezium-connector-postgres-*.jar" >/dev/null ||
        ! compgen -G "$JARS/connect/connect-runtime-*.jar" >/dev/null; then
        log "fetching Kafka Connect and Debezium's PostgreSQL connector from Maven Central into $JARS/connect"
        mvn -q -B -f "$ROOT/scripts/jars/connect-pom.xml" dependency:copy-dependencies \
            -DoutputDirectory="$JARS/connect" -DincludeScope=runtime >&2 || die "fetching the Kafka Connect jars failed"
    fi
}

url() {
    if running_pid >/dev/null && [[ -f "$STATE/url" ]]; then
        cat "$STATE/url"
    else
        echo "http://127.0.0.1:$PORT"
    fi
}

# A PID that is alive and is a java process running our worker.
running_pid() {
    recorded_pid "$PIDFILE" java ConnectDistributed
}

choose_port() {
    port_in_use "$PORT" || return 0
    [[ -z "${MIXED_ICEBERG_CONNECT_PORT:-}" ]] || die "127.0.0.1:$PORT (MIXED_ICEBERG_CONNECT_PORT) is in use"
    local i candidate
    for ((i = 0; i < 50; i++)); do
        candidate=$((36000 + RANDOM % 4000))
        if ! port_in_use "$candidate"; then
            log "127.0.0.1:$PORT is in use; using $candidate"
            PORT=$candidate
            return 0
        fi
    done
    die "the default port is in use and no free port was found"
}

kafka_bootstrap() {
    if [[ -n "${MIXED_ICEBERG_KAFKA_BOOTSTRAP:-}" ]]; then
        echo "$MIXED_ICEBERG_KAFKA_BOOTSTRAP"
        return 0
    fi
    if ! bash "$ROOT/scripts/services/kafka.sh" status >/dev/null 2>&1; then
        log "Kafka is not running; starting it"
        bash "$ROOT/scripts/services/kafka.sh" start >/dev/null
    fi
    bash "$ROOT/scripts/services/kafka.sh" bootstrap
}

write_config() {
    local bootstrap="$1"
    # Internal topics are named after the REST port, so workers of two checkouts that share a
    # broker do not join one Connect cluster by accident.
    cat >"$STATE/worker.properties" <<EOF
# mixed-iceberg test worker (scripts/services/connect.sh)
bootstrap.servers=$bootstrap
group.id=mixed-iceberg-connect-$PORT
config.storage.topic=mixed-iceberg-connect-$PORT-configs
offset.storage.topic=mixed-iceberg-connect-$PORT-offsets
status.storage.topic=mixed-iceberg-connect-$PORT-status
config.storage.replication.factor=1
offset.storage.replication.factor=1
offset.storage.partitions=1
status.storage.replication.factor=1
status.storage.partitions=1
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=true
value.converter.schemas.enable=true
# Source offsets (the LSN Debezium resumes from after a restart) are flushed every second.
offset.flush.interval.ms=1000
listeners=http://127.0.0.1:$PORT
rest.advertised.host.name=127.0.0.1
rest.advertised.port=$PORT
# The connector is on the classpath; no plugin.path to scan.
plugin.discovery=only_scan
# One worker: no need to wait for others before taking the connectors back after a restart.
scheduled.rebalance.max.delay.ms=0
EOF
    cat >"$STATE/log4j2.properties" <<EOF
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = $STATE/worker.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.file.ref = file
logger.connect.name = org.apache.kafka.connect
logger.connect.level = INFO
logger.debezium.name = io.debezium
logger.debezium.level = INFO
logger.reflections.name = org.reflections
logger.reflections.level = ERROR
EOF
}

wait_ready() {
    local pid="$1"
    MI_PID="$pid" MI_URL="$(url)" MI_TIMEOUT="$START_TIMEOUT" MI_PLUGIN="$PLUGIN" "$PY" - <<'EOF'
import json
import os
import sys
import time
import urllib.request

pid = int(os.environ["MI_PID"])
base = os.environ["MI_URL"]
deadline = time.monotonic() + float(os.environ["MI_TIMEOUT"])
last: object = None
while time.monotonic() < deadline:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        sys.exit(f"kafka connect (pid {pid}) exited during start-up")
    try:
        with urllib.request.urlopen(f"{base}/connector-plugins", timeout=5) as response:
            plugins = [p["class"] for p in json.load(response)]
        with urllib.request.urlopen(f"{base}/connectors", timeout=5) as response:
            json.load(response)  # answers once the worker has joined its group
        if os.environ["MI_PLUGIN"] in plugins:
            sys.exit(0)
        last = f"expected {os.environ['MI_PLUGIN']} among the plugins, found {plugins}"
    except Exception as exc:  # not listening yet
        last = exc
    time.sleep(0.5)
sys.exit(f"kafka connect did not become ready: {last}")
EOF
}

start() {
    command -v java >/dev/null || die "java not found; Java 17 is required"
    mkdir -p "$STATE"
    local pid bootstrap
    bootstrap="$(kafka_bootstrap | tail -n 1)"
    if pid="$(running_pid)"; then
        if [[ "$(cat "$STATE/bootstrap" 2>/dev/null)" == "$bootstrap" ]]; then
            wait_ready "$pid" || die "kafka connect (pid $pid) is running but not answering; see $LOG"
            log "already running (pid $pid) on $(url)"
            url
            return 0
        fi
        log "running for broker $(cat "$STATE/bootstrap" 2>/dev/null), not $bootstrap; restarting"
        stop
    fi
    fetch_jars
    choose_port
    write_config "$bootstrap"
    local t0=$SECONDS
    # setsid keeps a terminal's Ctrl-C away from the worker (and execs, so $! is the JVM's PID).
    setsid java -Xms128m -Xmx"$HEAP" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true \
        -Dlog4j2.configurationFile="$STATE/log4j2.properties" -cp "$JARS/connect/*" \
        org.apache.kafka.connect.cli.ConnectDistributed "$STATE/worker.properties" >>"$LOG" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$PIDFILE"
    echo "http://127.0.0.1:$PORT" >"$STATE/url"
    echo "$bootstrap" >"$STATE/bootstrap"
    if ! wait_ready "$pid"; then
        tail -n 30 "$LOG" "$STATE/worker.log" >&2 || true
        stop
        die "start failed; see $LOG and $STATE/worker.log"
    fi
    log "started (pid $pid) on http://127.0.0.1:$PORT for broker $bootstrap in $((SECONDS - t0)) s"
    url
}

stop() {
    local pid
    if ! pid="$(running_pid)"; then
        log "not running"
        rm -f "$PIDFILE" "$STATE/url"
        return 0
    fi
    terminate "$pid" 30
    rm -f "$PIDFILE" "$STATE/url"
    log "stopped (pid $pid)"
}

status() {
    local pid
    if pid="$(running_pid)"; then
        echo "running pid $pid $(url)"
    else
        echo "stopped"
        return 3
    fi
}

clean() {
    stop
    rm -rf "$STATE"
    log "removed $STATE"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status) status ;;
url) url ;;
jars) fetch_jars ;;
clean) clean ;;
*)
    echo "usage: $0 start|stop|status|url|clean|jars" >&2
    exit 2
    ;;
esac

#!/usr/bin/env bash
# A private single-node Apache Kafka broker (KRaft: broker + controller in one JVM).
#
#   scripts/services/kafka.sh start|stop|status|bootstrap|clean|jars
#
# The jars come from Maven Central (scripts/jars/kafka-pom.xml -> .jars/kafka, git-ignored) and
# are fetched on first use; `jars` fetches them (and what the ingest job's JVM needs: Flink's Kafka
# connector into .jars/flink, the loopback agent built into .jars/agent by
# scripts/jars/loopback-agent.sh) without starting anything; `start` makes sure of them too, also
# when the broker runs already. Data lives under .services/kafka; both listeners bind 127.0.0.1.
# `start` is idempotent and returns once the broker answers metadata requests; `stop` sends
# SIGTERM to the recorded PID (SIGKILL after 30 s); `clean` stops and deletes the data.
# Settings are for tests: replication factor 1 everywhere (transactions included), no
# initial rebalance delay, small heap.
#
# Environment:
#   MIXED_ICEBERG_KAFKA_PORT            client port (default 19092; when unset and taken, a free
#                                       pair is picked and `bootstrap` reports it)
#   MIXED_ICEBERG_KAFKA_CONTROLLER_PORT KRaft controller port (default client port + 1)
#   MIXED_ICEBERG_KAFKA_HEAP            JVM heap (default 768m)
#   MIXED_ICEBERG_JARS_DIR              jar cache (default <repo>/.jars)
#   MIXED_ICEBERG_LOOPBACK_AGENT        when set (a jar, or off), the loopback agent is not built
#   MIXED_ICEBERG_PYTHON                python with confluent-kafka for the readiness probe
#   MIXED_ICEBERG_SERVICES_DIR          state root (default <repo>/.services)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SERVICES="${MIXED_ICEBERG_SERVICES_DIR:-$ROOT/.services}"
STATE="$SERVICES/kafka"
PIDFILE="$STATE/kafka.pid"
LOG="$STATE/kafka.log"
JARS="${MIXED_ICEBERG_JARS_DIR:-$ROOT/.jars}"
PY="${MIXED_ICEBERG_PYTHON:-$ROOT/.venv/bin/python}"
PORT="${MIXED_ICEBERG_KAFKA_PORT:-19092}"
CONTROLLER_PORT="${MIXED_ICEBERG_KAFKA_CONTROLLER_PORT:-$((PORT + 1))}"
HEAP="${MIXED_ICEBERG_KAFKA_HEAP:-768m}"
FLINK_CONNECTOR="org.apache.flink:flink-sql-connector-kafka:5.0.0-2.2"
START_TIMEOUT=90

SERVICE=kafka.sh
# shellcheck source=scripts/services/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

need_mvn() {
    command -v mvn >/dev/null || die "mvn not found; install Maven (apt-get install maven) to fetch the Kafka jars"
}

fetch_jars() {
    if ! compgen -G "$JARS/kafka/kafka_2.13-*.jar" >/dev/null; then
        need_mvn
        log "fetching the Kafka broker jars from Maven Central into $JARS/kafka"
        mvn -q -B -f "$ROOT/scripts/jars/kafka-pom.xml" dependency:copy-dependencies \
            -DoutputDirectory="$JARS/kafka" -DincludeScope=runtime >&2 || die "fetching the Kafka jars failed"
    fi
    if ! compgen -G "$JARS/flink/flink-sql-connector-kafka-*.jar" >/dev/null; then
        need_mvn
        log "fetching $FLINK_CONNECTOR into $JARS/flink"
        mvn -q -B dependency:copy -Dartifact="$FLINK_CONNECTOR" -DoutputDirectory="$JARS/flink" >&2 ||
            die "fetching the Flink Kafka connector failed"
    fi
    # Cached: a few milliseconds once built, until java/loopback-agent changes. Not where
    # MIXED_ICEBERG_LOOPBACK_AGENT names another jar, or is off.
    if [[ -z "${MIXED_ICEBERG_LOOPBACK_AGENT:-}" ]]; then
        bash "$ROOT/scripts/jars/loopback-agent.sh" >/dev/null || die "building the loopback agent failed"
    fi
}

bootstrap() {
    if running_pid >/dev/null && [[ -f "$STATE/bootstrap" ]]; then
        cat "$STATE/bootstrap"
    else
        echo "127.0.0.1:$PORT"
    fi
}

# A PID that is alive and is a java process started from our state directory.
running_pid() {
    recorded_pid "$PIDFILE" java kafka.Kafka
}

choose_ports() {
    if ! port_in_use "$PORT" && ! port_in_use "$CONTROLLER_PORT"; then
        return 0
    fi
    [[ -z "${MIXED_ICEBERG_KAFKA_PORT:-}" ]] || die "127.0.0.1:$PORT or :$CONTROLLER_PORT (MIXED_ICEBERG_KAFKA_PORT) is in use"
    local i base
    for ((i = 0; i < 50; i++)); do
        base=$((30000 + (RANDOM % 5000) * 2))
        if ! port_in_use "$base" && ! port_in_use "$((base + 1))"; then
            log "127.0.0.1:$PORT is in use; using $base (controller $((base + 1)))"
            PORT=$base CONTROLLER_PORT=$((base + 1))
            return 0
        fi
    done
    die "the default ports are in use and no free pair was found"
}

write_config() {
    cat >"$STATE/server.properties" <<EOF
# mixed-iceberg test broker (scripts/services/kafka.sh)
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$PORT
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$STATE/data
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
transaction.max.timeout.ms=900000
log.retention.hours=24
log.segment.bytes=268435456
# The controller's no-op record every 500 ms kept the raft-io thread busy on an idle broker.
metadata.max.idle.interval.ms=5000
EOF
    cat >"$STATE/log4j2.properties" <<EOF
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = $STATE/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = WARN
logger.server.name = org.apache.kafka
logger.server.level = WARN
EOF
}

java_args() {
    JAVA_ARGS=(-Xms256m -Xmx"$HEAP" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true
        -Dlog4j2.configurationFile="$STATE/log4j2.properties" -cp "$JARS/kafka/*")
}

java_cmd() {
    java_args
    java "${JAVA_ARGS[@]}" "$@"
}

wait_ready() {
    local pid="$1"
    MI_PID="$pid" MI_BOOTSTRAP="$(bootstrap)" MI_TIMEOUT="$START_TIMEOUT" "$PY" - <<'EOF'
import os
import sys
import time

from confluent_kafka.admin import AdminClient

pid = int(os.environ["MI_PID"])
deadline = time.monotonic() + float(os.environ["MI_TIMEOUT"])
admin = AdminClient({"bootstrap.servers": os.environ["MI_BOOTSTRAP"], "log_level": 0})
last = None
while time.monotonic() < deadline:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        sys.exit(f"kafka (pid {pid}) exited during start-up")
    try:
        metadata = admin.list_topics(timeout=2)
        if metadata.brokers:
            sys.exit(0)
    except Exception as exc:  # not listening yet
        last = exc
    time.sleep(0.3)
sys.exit(f"kafka did not become ready: {last}")
EOF
}

start() {
    command -v java >/dev/null || die "java not found; Java 17 is required"
    mkdir -p "$STATE"
    local pid
    # Also when the broker runs already: a client of it (the demo, a test session) runs the ingest job.
    fetch_jars
    if pid="$(running_pid)"; then
        wait_ready "$pid" || die "kafka (pid $pid) is running but not answering; see $LOG"
        log "already running (pid $pid) on $(bootstrap)"
        bootstrap
        return 0
    fi
    choose_ports
    write_config
    local t0=$SECONDS
    if [[ ! -f "$STATE/data/meta.properties" ]]; then
        local cluster_id
        cluster_id="$(java_cmd kafka.tools.StorageTool random-uuid 2>>"$LOG" | tail -n 1)"
        java_cmd kafka.tools.StorageTool format -t "$cluster_id" -c "$STATE/server.properties" \
            >>"$LOG" 2>&1 || die "formatting the KRaft storage failed; see $LOG"
    fi
    # setsid keeps a terminal's Ctrl-C away from the broker (and execs, so $! is the JVM's PID).
    java_args
    setsid java "${JAVA_ARGS[@]}" kafka.Kafka "$STATE/server.properties" >>"$LOG" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$PIDFILE"
    echo "127.0.0.1:$PORT" >"$STATE/bootstrap"
    if ! wait_ready "$pid"; then
        tail -n 30 "$LOG" "$STATE/server.log" >&2 || true
        stop
        die "start failed; see $LOG and $STATE/server.log"
    fi
    log "started (pid $pid) on 127.0.0.1:$PORT in $((SECONDS - t0)) s"
    bootstrap
}

stop() {
    local pid
    if ! pid="$(running_pid)"; then
        log "not running"
        rm -f "$PIDFILE" "$STATE/bootstrap"
        return 0
    fi
    terminate "$pid" 30
    rm -f "$PIDFILE" "$STATE/bootstrap"
    log "stopped (pid $pid)"
}

status() {
    local pid
    if pid="$(running_pid)"; then
        echo "running pid $pid $(bootstrap)"
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
bootstrap) bootstrap ;;
jars) fetch_jars ;;
clean) clean ;;
*)
    echo "usage: $0 start|stop|status|bootstrap|clean|jars" >&2
    exit 2
    ;;
esac

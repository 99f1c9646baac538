# Functions the service scripts share; each sets SERVICE (its name, for messages) and sources this.
#
#   SERVICE=kafka.sh; source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

log() { echo "$SERVICE: $*" >&2; }
die() {
    log "$*"
    exit 1
}

port_in_use() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# recorded_pid PIDFILE EXE [CMDLINE]: the PID in PIDFILE if it is alive, not a zombie, runs a
# binary whose path ends in /EXE and (when given) has CMDLINE in its command line.
recorded_pid() {
    local pidfile="$1" exe="$2" cmdline="${3:-}" pid state
    [[ -f "$pidfile" ]] || return 1
    pid="$(<"$pidfile")"
    [[ -n "$pid" && -r "/proc/$pid/stat" ]] || return 1
    state="$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" || return 1
    [[ "$state" != Z ]] || return 1
    [[ "$(readlink "/proc/$pid/exe" 2>/dev/null)" == */"$exe" ]] || return 1
    [[ -z "$cmdline" ]] || grep -q "$cmdline" "/proc/$pid/cmdline" 2>/dev/null || return 1
    echo "$pid"
}

# terminate PID SECONDS: SIGTERM, then SIGKILL once the script's running_pid still finds it
# after SECONDS.
terminate() {
    local pid="$1" seconds="$2" i
    kill -TERM "$pid"
    for ((i = 0; i < seconds * 5; i++)); do
        running_pid >/dev/null || return 0
        sleep 0.2
    done
    if running_pid >/dev/null; then
        log "pid $pid ignored SIGTERM for $seconds s; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
}

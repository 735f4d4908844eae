# Helpers the load scripts share (sourced, not run): messages, free ports,
# waiting for a URL, and a work directory whose processes are stopped and
# which is removed on exit (kept with KEEP=1).

SCRIPT=$(basename "$0")
say() { printf '== %s\n' "$*" >&2; }
die() { printf '%s: %s\n' "$SCRIPT" "$*" >&2; exit 1; }

# A free TCP port on 127.0.0.1.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits until URL ($1) answers 200, at most $2 seconds.
wait_for() {
    local i
    for ((i = 0; i < $2 * 10; i++)); do
        [[ $(curl -s -o /dev/null -w '%{http_code}' "$1" || true) == 200 ]] && return 0
        sleep 0.1
    done
    die "$1 did not answer 200 within $2s"
}

# Makes WORK, a fresh directory named after $1, and PIDS, the processes to
# stop: on exit both are cleaned up (WORK kept when KEEP is 1).
start_work() {
    WORK=$(mktemp -d "/tmp/openapi-proxy-$1.XXXXXX")
    PIDS=()
    trap cleanup EXIT
}

cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    if [[ ${KEEP:-0} == 1 ]]; then say "kept $WORK"; else rm -rf "$WORK"; fi
}

# Starts nginx in $WORK/nginx (PREFIX) with $1 worker processes, its http
# block's contents read from standard input; stopped on exit.
start_nginx() {
    PREFIX=$WORK/nginx
    mkdir -p "$PREFIX/logs"
    {
        printf 'user root;\nworker_processes %s;\npid %s/nginx.pid;\n' "$1" "$PREFIX"
        printf 'error_log %s/logs/error.log warn;\nevents { worker_connections 4096; }\nhttp {\n' "$PREFIX"
        cat
        printf '}\n'
    } >"$PREFIX/nginx.conf"
    nginx -t -q -e "$PREFIX/logs/error.log" -c "$PREFIX/nginx.conf" -p "$PREFIX" \
        || die "nginx -t failed, see $PREFIX/logs/error.log"
    nginx -e "$PREFIX/logs/error.log" -c "$PREFIX/nginx.conf" -p "$PREFIX" -g 'daemon off;' &
    PIDS+=($!)
}

#!/usr/bin/env bash
# Load benchmark: openapi-proxy serving the Kubernetes 1.27 OpenAPI v3
# documents it converts, side by side with nginx serving the very same bytes
# as static files (gzip_static for the compressed case). See BENCHMARKS.md,
# "Serving: the proxy vs nginx".
#
# Everything runs on 127.0.0.1 and every load run is bounded by wrk's -d.
#
#   benches/load/run.sh                 # build, start, measure, clean up
#   DURATION=30s CONNECTIONS=100 benches/load/run.sh
#
# Environment (all optional):
#   DURATION     wrk -d per run                        [10s]
#   CONNECTIONS  wrk -c per run                        [50]
#   THREADS      wrk -t per run                        [2]
#   REPEAT       runs per case and server; with more than one, the order
#                alternates (nginx, proxy, proxy, nginx, …) and the table
#                gives medians                          [1]
#   SMALL_KEY    the small document's key              [apis/node.k8s.io/v1]
#   CASES        space-separated subset of the cases   [all six JSON ones]
#                (also: pb-large-plain, pb-large-gzip: the large document
#                in protobuf, the proxy's rendition made by the first
#                request; nginx serves the same bytes)
#   SWAGGER      the Swagger 2.0 document to serve     [the test data's 1.27 swagger.json]
#   NGINX_EXTRA  more directives for nginx's http block, e.g.
#                'open_file_cache max=16;'              []
#   KEEP         1: keep the work directory            [0]
#   RESULTS      also append the table to this file    []
#   BIN          the proxy binary to measure, e.g. an older build for a
#                side-by-side run  [built from this tree]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-50}
THREADS=${THREADS:-2}
REPEAT=${REPEAT:-1}
SMALL_KEY=${SMALL_KEY:-apis/node.k8s.io/v1}
LARGE_KEY=api/v1
CASES=${CASES:-large-plain large-gzip small-plain small-gzip 304-plain 304-gzip}
SWAGGER=${SWAGGER:-$("$ROOT/scripts/testdata.sh" --print-dir)/kube-openapi/pkg/schemaconv/testdata/swagger.json}
NGINX_EXTRA=${NGINX_EXTRA:-}
KEEP=${KEEP:-0}
RESULTS=${RESULTS:-}

# shellcheck source=benches/load/lib.sh
. "$ROOT/benches/load/lib.sh"

# 1. Tools. Nothing is installed here.
missing=()
for tool in wrk nginx python3 curl; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if ((${#missing[@]})); then
    pkgs=()
    for tool in "${missing[@]}"; do
        case $tool in
            python3) pkgs+=(python3) ;;
            *) pkgs+=("$tool") ;;
        esac
    done
    die "missing: ${missing[*]}; install with: apt-get install -y ${pkgs[*]}"
fi
[[ -r $SWAGGER ]] || die "cannot read $SWAGGER (set SWAGGER=FILE)"

# 2. Build.
if [[ -z ${BIN:-} ]]; then
    say "cargo build --release"
    (cd "$ROOT" && cargo build --release --quiet)
    BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/openapi-proxy
fi
[[ -x $BIN ]] || die "no binary at $BIN"

start_work load

# 3. A downstream that publishes only Swagger 2.0.
DOWN_PORT=$(free_port)
mkdir -p "$WORK/downstream/openapi"
cp "$SWAGGER" "$WORK/downstream/openapi/v2"
say "downstream: python3 -m http.server on 127.0.0.1:$DOWN_PORT (openapi/v2 only)"
(cd "$WORK/downstream" && exec python3 -m http.server --bind 127.0.0.1 "$DOWN_PORT") \
    >"$WORK/downstream.log" 2>&1 &
PIDS+=($!)
wait_for "http://127.0.0.1:$DOWN_PORT/openapi/v2" 10

# 4. The proxy.
PROXY_PORT=$(free_port)
PROXY=http://127.0.0.1:$PROXY_PORT
say "proxy: $BIN serve on 127.0.0.1:$PROXY_PORT"
"$BIN" serve --listen "127.0.0.1:$PROXY_PORT" \
    --downstream "k8s=http://127.0.0.1:$DOWN_PORT" --poll-interval 1h \
    >"$WORK/proxy.log" 2>&1 &
PROXY_PID=$!
PIDS+=("$PROXY_PID")
wait_for "$PROXY/readyz" 120
# Ready means every downstream was polled once, not that it succeeded.
grep -E ' (WARN|ERROR) ' "$WORK/proxy.log" | cut -c1-300 | sed 's/^/proxy log: /' >&2 || true

curl -sf "$PROXY/openapi/v3" -o "$WORK/root.json"
url_of() {
    python3 - "$WORK/root.json" "$1" <<'EOF'
import json, sys
paths = json.load(open(sys.argv[1]))["paths"]
entry = paths.get(sys.argv[2])
if entry is None:
    sys.exit(f"key {sys.argv[2]!r} not in the root ({len(paths)} keys)")
print(entry["serverRelativeURL"])
EOF
}
DOCS=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["paths"]))' "$WORK/root.json")
LARGE_URL=$(url_of "$LARGE_KEY")
SMALL_URL=$(url_of "$SMALL_KEY")
say "proxy serves $DOCS documents; large: $LARGE_URL"
say "small: $SMALL_URL"

# The proxy's exact bytes become nginx's static files.
WWW=$WORK/nginx/www
mkdir -p "$WWW"
PROTOBUF=application/com.github.proto-openapi.spec.v3.v1.0+protobuf
fetch() { # URL FILE [gzip] [Accept]
    local hdr=()
    [[ ${3:-} == gzip ]] && hdr=(-H 'Accept-Encoding: gzip')
    [[ -n ${4:-} ]] && hdr+=(-H "Accept: $4")
    curl -sf "${hdr[@]}" -D "$2.headers" -o "$2" "$PROXY$1"
}
fetch "$LARGE_URL" "$WWW/api_v1.json"
fetch "$LARGE_URL" "$WWW/api_v1.json.gz" gzip
fetch "$SMALL_URL" "$WWW/small.json"
fetch "$SMALL_URL" "$WWW/small.json.gz" gzip
fetch "$LARGE_URL" "$WWW/api_v1.pb" plain "$PROTOBUF"
fetch "$LARGE_URL" "$WWW/api_v1.pb.gz" gzip "$PROTOBUF"
touch -r "$WWW/api_v1.pb" "$WWW/api_v1.pb.gz"
for f in api_v1.json small.json api_v1.pb; do
    grep -qi '^content-encoding: *gzip' "$WWW/$f.gz.headers" \
        || die "the proxy did not gzip $f for Accept-Encoding: gzip"
    python3 -c 'import gzip,sys; sys.exit(gzip.open(sys.argv[1]).read() != open(sys.argv[2],"rb").read())' \
        "$WWW/$f.gz" "$WWW/$f" || die "$f.gz does not inflate to $f"
done
# Same modification time for the plain and gzip files, as gzip_static wants.
touch -r "$WWW/api_v1.json" "$WWW/api_v1.json.gz"
touch -r "$WWW/small.json" "$WWW/small.json.gz"
rm -f "$WWW"/*.headers
size() { stat -c %s "$1"; }
say "sizes: api_v1.json $(size "$WWW/api_v1.json") B, .gz $(size "$WWW/api_v1.json.gz") B;" \
    "small.json $(size "$WWW/small.json") B, .gz $(size "$WWW/small.json.gz") B"

NGINX_PORT=$(free_port)
NGINX=http://127.0.0.1:$NGINX_PORT
start_nginx 2 <<EOF
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    default_type application/json;
    etag on;
    gzip off;
    gzip_static on;
    gzip_vary on;
    $NGINX_EXTRA
    server {
        listen 127.0.0.1:$NGINX_PORT;
        root $WWW;
        location = /api_v1.json { }
        location = /small.json { }
        location = /api_v1.pb { default_type $PROTOBUF; }
    }
EOF
say "nginx on 127.0.0.1:$NGINX_PORT (prefix $PREFIX)"
wait_for "$NGINX/api_v1.json" 10

etag_of() { # URL [gzip]
    local hdr=()
    [[ ${2:-} == gzip ]] && hdr=(-H 'Accept-Encoding: gzip')
    curl -sf "${hdr[@]}" -o /dev/null -D - "$1" | tr -d '\r' \
        | awk 'tolower($1) == "etag:" { sub(/^[^:]*: */, ""); print }'
}
PROXY_ETAG=$(etag_of "$PROXY$LARGE_URL")
PROXY_ETAG_GZ=$(etag_of "$PROXY$LARGE_URL" gzip)
NGINX_ETAG=$(etag_of "$NGINX/api_v1.json")
NGINX_ETAG_GZ=$(etag_of "$NGINX/api_v1.json" gzip)
[[ -n $PROXY_ETAG && -n $NGINX_ETAG && -n $NGINX_ETAG_GZ ]] || die "missing ETag"
say "ETags: proxy ${PROXY_ETAG:0:12}…\" (gzip ${PROXY_ETAG_GZ:0:12}…\"), nginx $NGINX_ETAG (gzip $NGINX_ETAG_GZ)"

# What each case requests: URL path, headers, expected status, encoding.
# Sets TARGET_URL, HEADERS (array), WANT_STATUS, WANT_GZIP, WANT_FILE.
target() { # server case
    local server=$1 case=$2 base large small etag etag_gz
    if [[ $server == nginx ]]; then
        base=$NGINX large=/api_v1.json small=/small.json etag=$NGINX_ETAG etag_gz=$NGINX_ETAG_GZ
    else
        base=$PROXY large=$LARGE_URL small=$SMALL_URL etag=$PROXY_ETAG etag_gz=$PROXY_ETAG_GZ
    fi
    HEADERS=()
    WANT_STATUS=200 WANT_GZIP=0
    case $case in
        pb-large-*)
            HEADERS+=(-H "Accept: $PROTOBUF")
            WANT_FILE=$WWW/api_v1.pb TARGET_URL=$base$large
            [[ $server == nginx ]] && TARGET_URL=$base/api_v1.pb
            ;;
        large-*) TARGET_URL=$base$large WANT_FILE=$WWW/api_v1.json ;;
        small-*) TARGET_URL=$base$small WANT_FILE=$WWW/small.json ;;
        304-*) TARGET_URL=$base$large WANT_FILE='' WANT_STATUS=304 ;;
        *) die "unknown case $case" ;;
    esac
    case $case in
        304-plain) HEADERS+=(-H "If-None-Match: $etag") ;;
        304-gzip) HEADERS+=(-H "If-None-Match: $etag_gz") ;;
    esac
    if [[ $case == *-gzip ]]; then
        HEADERS+=(-H 'Accept-Encoding: gzip')
        [[ $WANT_STATUS == 200 ]] && WANT_GZIP=1 WANT_FILE=$WANT_FILE.gz
    fi
    return 0
}

# Checks with curl that the response is the one the case is about.
check() { # server case
    target "$1" "$2"
    local out=$WORK/check.body status
    rm -f "$out"
    status=$(curl -s "${HEADERS[@]}" -D "$WORK/check.headers" -o "$out" -w '%{http_code}' "$TARGET_URL")
    [[ $status == "$WANT_STATUS" ]] || die "$1 $2: status $status, want $WANT_STATUS ($TARGET_URL)"
    if ((WANT_GZIP)); then
        grep -qi '^content-encoding: *gzip' "$WORK/check.headers" || die "$1 $2: not gzip"
    else
        ! grep -qi '^content-encoding:' "$WORK/check.headers" || die "$1 $2: unexpected Content-Encoding"
    fi
    if [[ -n $WANT_FILE ]]; then
        cmp -s "$out" "$WANT_FILE" || die "$1 $2: body differs from $WANT_FILE"
    else
        # curl creates no file for an empty body.
        [[ ! -s $out ]] || die "$1 $2: a 304 with a body"
    fi
}

# wrk's latency with unit → milliseconds.
to_ms() {
    awk -v v="$1" 'BEGIN {
        n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
        if (u == "us") n /= 1000; else if (u == "s") n *= 1000; else if (u == "m") n *= 60000
        printf "%.2f", n }'
}

# CPU time (user + system, clock ticks) used so far by the server: the
# proxy's process, or nginx's workers.
CLK_TCK=$(getconf CLK_TCK)
cpu_ticks() { # server
    local pids
    if [[ $1 == nginx ]]; then
        pids=$(ps -o pid= --ppid "$(cat "$PREFIX/nginx.pid")")
    else
        pids=$PROXY_PID
    fi
    # Fields 14 and 15 of /proc/PID/stat; the name in parentheses may hold spaces.
    for pid in $pids; do sed 's/^.*) //' "/proc/$pid/stat"; done | awk '{ s += $12 + $13 } END { print s }'
}

# Checks the response, then runs wrk; sets RPS, P99 (ms), MBPS, CPU_US
# (server CPU per request, µs).
load() { # server case run
    check "$1" "$2"
    local log=$WORK/wrk.$1.$2.$3.txt t0 t1 n
    t0=$(cpu_ticks "$1")
    wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency "${HEADERS[@]}" "$TARGET_URL" >"$log" 2>&1
    t1=$(cpu_ticks "$1")
    n=$(awk '/ requests in / { print $1 }' "$log")
    CPU_US=$(awk -v d=$((t1 - t0)) -v hz="$CLK_TCK" -v n="$n" 'BEGIN { printf "%.1f", d / hz * 1e6 / n }')
    RPS=$(awk '/^Requests\/sec:/ { printf "%.0f", $2 }' "$log")
    P99=$(to_ms "$(awk '$1 == "99%" { print $2 }' "$log")")
    MBPS=$(awk '/^Transfer\/sec:/ { print $2 }' "$log")
    EXTRA=$(grep -E 'Socket errors|Non-2xx' "$log" | tr -s ' ' | tr '\n' ';' || true)
    [[ -n $RPS ]] || die "could not parse $log"
    [[ -z $EXTRA ]] || say "$1 $2: $EXTRA"
}

median() { # FORMAT VALUES...
    local format=$1
    shift
    printf '%s\n' "$@" | sort -g | awk -v f="$format" '{ v[NR] = $1 }
        END { printf f, (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

say "load: wrk -t$THREADS -c$CONNECTIONS -d$DURATION --latency, $REPEAT run(s) per case and server, nginx first"
RSS_BEFORE=$(ps -o rss= -p "$PROXY_PID" | tr -d ' ')
table=$WORK/table.md
{
    echo "| Case | nginx req/s | nginx p99 [ms] | nginx CPU/req [µs] | proxy req/s | proxy p99 [ms] | proxy CPU/req [µs] | proxy / nginx req/s | load avg |"
    echo "|:---|---:|---:|---:|---:|---:|---:|---:|---:|"
} >"$table"
for case in $CASES; do
    declare -A rps=() p99=() cpu=()
    for ((r = 1; r <= REPEAT; r++)); do
        order="nginx proxy"
        ((r % 2)) || order="proxy nginx"
        for server in $order; do
            load "$server" "$case" "$r"
            rps[$server]+="$RPS " p99[$server]+="$P99 " cpu[$server]+="$CPU_US "
            say "$case run $r $server: $RPS req/s, p99 $P99 ms, $MBPS/s, CPU $CPU_US µs/req"
            sleep 1
        done
    done
    # shellcheck disable=SC2086 # word splitting of the lists is wanted
    {
        n_rps=$(median %.0f ${rps[nginx]}) n_p99=$(median %.1f ${p99[nginx]}) n_cpu=$(median %.1f ${cpu[nginx]})
        p_rps=$(median %.0f ${rps[proxy]}) p_p99=$(median %.1f ${p99[proxy]}) p_cpu=$(median %.1f ${cpu[proxy]})
    }
    ratio=$(awk -v a="$p_rps" -v b="$n_rps" 'BEGIN { printf "%.2f", a / b }')
    row="| $case | $n_rps | $n_p99 | $n_cpu | $p_rps | $p_p99 | $p_cpu | $ratio | $(cut -d' ' -f1 /proc/loadavg) |"
    echo "$row" >>"$table"
    say "$row"
    unset rps p99 cpu
done
RSS_AFTER=$(ps -o rss= -p "$PROXY_PID" | tr -d ' ')
NGINX_RSS=$(ps -o rss= --ppid "$(cat "$PREFIX/nginx.pid")" | awk '{ s += $1 } END { print s }')

{
    echo
    echo "Setup: $(nproc) cores, $(uname -r); $(nginx -v 2>&1); $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2);"
    echo "wrk -t$THREADS -c$CONNECTIONS -d$DURATION --latency, $REPEAT run(s) per case and server" \
        "(medians); $DOCS documents served by the proxy."
    echo "Large: $LARGE_KEY, $(size "$WWW/api_v1.json") B ($(size "$WWW/api_v1.json.gz") B gzip);" \
        "small: $SMALL_KEY, $(size "$WWW/small.json") B ($(size "$WWW/small.json.gz") B gzip)."
    echo "Proxy RSS: ${RSS_BEFORE} KiB after start-up, ${RSS_AFTER} KiB after the load;" \
        "nginx workers together: ${NGINX_RSS} KiB."
} >>"$table"
cat "$table"
[[ -z $RESULTS ]] || cat "$table" >>"$RESULTS"

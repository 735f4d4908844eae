#!/usr/bin/env bash
# Load under faults: wrk on the proxy's hot paths while one downstream
# flaps, and a consistency checker that fails on any torn snapshot.
# See BENCHMARKS.md, "Load under faults".
#
#   benches/load/faults.sh
#   DURATION=20s FLAP_MS=500 benches/load/faults.sh
#
# What runs (all on 127.0.0.1, every step bounded in time):
#   - examples/flapping: a steady downstream (the Kubernetes 1.27 Swagger
#     2.0 document, converted by the proxy, and synthetic discovery) and a
#     flapping one (content A → 503 → content B → garbage → A …, one phase
#     every FLAP_MS);
#   - the proxy (release build), polling both every POLL;
#   - wrk, one run per hot path: the root index, the largest document by
#     its ?hash= URL, /apis with the aggregated-discovery Accept; a Lua
#     script counts statuses, and any 5xx fails the script;
#   - examples/consistency for the whole time, checking every
#     serverRelativeURL of every root it fetches (see its doc comment for
#     what counts as a torn snapshot); any violation fails the script.
#
# Environment (all optional):
#   DURATION     wrk -d per path                       [10s]
#   CONNECTIONS  wrk -c                                 [50]
#   THREADS      wrk -t                                 [2]
#   FLAP_MS      time per phase of the flapping server  [700]
#   POLL         proxy poll interval                    [200ms]
#   SWAGGER      the steady downstream's document       [the test data's 1.27 swagger.json]
#   KEEP         1: keep the work directory             [0]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-50}
THREADS=${THREADS:-2}
FLAP_MS=${FLAP_MS:-700}
POLL=${POLL:-200ms}
SWAGGER=${SWAGGER:-$("$ROOT/scripts/testdata.sh" --print-dir)/kube-openapi/pkg/schemaconv/testdata/swagger.json}
KEEP=${KEEP:-0}
LARGE_KEY=api/v1
DISCOVERY_ACCEPT='application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json'

# shellcheck source=benches/load/lib.sh
. "$ROOT/benches/load/lib.sh"

for tool in wrk python3 curl; do
    command -v "$tool" >/dev/null 2>&1 || die "missing $tool; install with: apt-get install -y $tool"
done
[[ -r $SWAGGER ]] || die "cannot read $SWAGGER (set SWAGGER=FILE)"
seconds=${DURATION%s}
[[ $seconds =~ ^[0-9]+$ ]] || die "DURATION must be whole seconds, like 10s"

say "cargo build --release (binary, examples flapping and consistency)"
(cd "$ROOT" && cargo build --release --quiet --bin openapi-proxy --example flapping --example consistency)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}/release
BIN=$TARGET/openapi-proxy

start_work faults

# 1. Downstreams.
"$TARGET/examples/flapping" "$SWAGGER" "$FLAP_MS" >"$WORK/flapping.out" 2>"$WORK/flapping.log" &
PIDS+=($!)
for ((i = 0; i < 100; i++)); do
    grep -q '^ready$' "$WORK/flapping.out" 2>/dev/null && break
    sleep 0.1
done
grep -q '^ready$' "$WORK/flapping.out" || die "the fake downstreams did not start: $(cat "$WORK/flapping.log")"
STEADY=$(sed -n 1p "$WORK/flapping.out")
FLAPPING=$(sed -n 2p "$WORK/flapping.out")
say "downstreams: steady $STEADY, flapping $FLAPPING (phase every ${FLAP_MS} ms)"

# 2. The proxy.
PORT=$(free_port)
PROXY=http://127.0.0.1:$PORT
"$BIN" serve --listen "127.0.0.1:$PORT" --poll-interval "$POLL" \
    --downstream "steady=$STEADY" --downstream "flapping=$FLAPPING" \
    >"$WORK/proxy.log" 2>&1 &
PROXY_PID=$!
PIDS+=("$PROXY_PID")
wait_for "$PROXY/readyz" 120
LARGE_URL=$(curl -sf "$PROXY/openapi/v3" | python3 -c '
import json, sys
print(json.load(sys.stdin)["paths"][sys.argv[1]]["serverRelativeURL"])' "$LARGE_KEY") \
    || die "$LARGE_KEY is not in the root index"
say "proxy $PROXY; large document $LARGE_URL"

# 3. The checker, for the whole load phase (three wrk runs and a margin).
CHECK_SECONDS=$((3 * seconds + 2))
"$TARGET/examples/consistency" "$PROXY" "$CHECK_SECONDS" >"$WORK/consistency.out" 2>&1 &
CHECKER_PID=$!

# 4. Load: one wrk run per hot path.
cat >"$WORK/statuses.lua" <<'EOF'
-- Counts responses per status in every thread; done() sums them.
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) statuses = {} end
function response(status, headers, body)
    statuses[status] = (statuses[status] or 0) + 1
end
function done(summary, latency, requests)
    local total = {}
    for _, t in ipairs(threads) do
        for s, n in pairs(t:get("statuses")) do total[s] = (total[s] or 0) + n end
    end
    local five = 0
    local parts = {}
    for s, n in pairs(total) do
        table.insert(parts, s .. "=" .. n)
        if s >= 500 then five = five + n end
    end
    table.sort(parts)
    io.write(string.format("RESULT rps=%.0f p50_ms=%.2f p99_ms=%.2f requests=%d 5xx=%d socket_errors=%d statuses=%s\n",
        summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000,
        latency:percentile(99) / 1000, summary.requests, five,
        summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
        table.concat(parts, ",")))
end
EOF

run_wrk() { # NAME PATH [HEADER]
    local name=$1 path=$2 header=${3:-}
    local args=(-t "$THREADS" -c "$CONNECTIONS" -d "$DURATION" --latency -s "$WORK/statuses.lua")
    [[ -n $header ]] && args+=(-H "$header")
    wrk "${args[@]}" "$PROXY$path" >"$WORK/wrk-$name.out" 2>&1 || die "wrk failed: $(cat "$WORK/wrk-$name.out")"
    local result
    result=$(grep '^RESULT' "$WORK/wrk-$name.out") || die "no RESULT from wrk: $(cat "$WORK/wrk-$name.out")"
    printf '%-10s %s\n' "$name" "${result#RESULT }"
}

say "wrk -t$THREADS -c$CONNECTIONS -d$DURATION per path, checker for ${CHECK_SECONDS}s"
{
    run_wrk root /openapi/v3
    run_wrk large "$LARGE_URL"
    run_wrk apis /apis "Accept: $DISCOVERY_ACCEPT"
} | tee "$WORK/results.txt"

wait "$CHECKER_PID" && checker_ok=1 || checker_ok=0
echo "checker    $(head -1 "$WORK/consistency.out")"
grep '^violation' "$WORK/consistency.out" | head -20 >&2 || true

# 5. What the proxy went through.
metric() { curl -sf "$PROXY/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
echo "proxy      generation=$(metric openapi_proxy_snapshot_generation)" \
    "flapping_errors=$(curl -sf "$PROXY/metrics" | awk '/^openapi_proxy_downstream_errors_total\{downstream="flapping"/ { s += $2 } END { print s + 0 }')" \
    "rss_kib=$(awk '/VmRSS/ { print $2 }' "/proc/$PROXY_PID/status")"
grep -E '"level":"ERROR"| ERROR ' "$WORK/proxy.log" | head -5 >&2 || true
kill -0 "$PROXY_PID" 2>/dev/null || die "the proxy died; see $WORK/proxy.log"

fivexx=$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^5xx=/) { split($i, a, "="); s += a[2] } } END { print s + 0 }' "$WORK/results.txt")
((fivexx == 0)) || die "$fivexx responses with a 5xx status"
((checker_ok == 1)) || die "the consistency checker found violations (above)"
say "ok: zero 5xx, no torn snapshot"

#!/usr/bin/env bash
# Discovery at scale (issue: aggregated discovery): the proxy in front of a
# fleet of 50 synthetic downstreams publishing 3,000 CRD-like
# group-versions in all, one of which changes every few seconds.
# Measures: /apis aggregated size (plain, gzip), requests/s and p99 latency
# of /apis under wrk (50 connections), rebuild durations from /metrics,
# and the proxy's RSS. Loopback only; every step is bounded in time.
#
#   bash benches/load/discovery.sh            # 50 downstreams x 30 groups x 2 versions
#   DURATION=20s CONNECTIONS=50 bash benches/load/discovery.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

N_DOWNSTREAMS=${N_DOWNSTREAMS:-50}
N_GROUPS=${N_GROUPS:-30}
N_VERSIONS=${N_VERSIONS:-2}
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-50}
# Seconds between changes of downstream 0 while the fleet warms up (0: none).
CHURN=${CHURN:-0}
# Poll interval of the proxy. The fleet is 50 HTTP servers on this same
# machine; polling them every second would measure the fleet, not the proxy.
POLL=${POLL:-30s}
PORT=${PORT:-18180}
AGG='application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json'

for tool in wrk curl python3; do
  command -v "$tool" >/dev/null || { echo "missing $tool: apt-get install -y $tool" >&2; exit 1; }
done

cargo build --release --quiet --bin openapi-proxy --example fleet
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

churn=()
[ "$CHURN" != 0 ] && churn=(--churn "$CHURN")
timeout 600 target/release/examples/fleet "$N_DOWNSTREAMS" "$N_GROUPS" "$N_VERSIONS" "${churn[@]}" >"$work/fleet.out" &
pids+=($!)
for _ in $(seq 100); do grep -q ready "$work/fleet.out" 2>/dev/null && break; sleep 0.1; done
flags=()
i=0
while read -r url; do
  [ "$url" = ready ] && break
  flags+=(--downstream "d$(printf %03d $i)=$url")
  i=$((i + 1))
done <"$work/fleet.out"

RUST_LOG=warn timeout 600 target/release/openapi-proxy serve --listen "127.0.0.1:$PORT" --poll-interval "$POLL" "${flags[@]}" \
  2>"$work/proxy.log" &
pids+=($!)
proxy=""
for _ in $(seq 50); do proxy=$(pgrep -P "${pids[-1]}" -n openapi-proxy || true); [ -n "$proxy" ] && break; sleep 0.1; done
base="http://127.0.0.1:$PORT"
expected=$((N_DOWNSTREAMS * N_GROUPS * N_VERSIONS))
for _ in $(seq 300); do
  n=$(curl -s -H "Accept: $AGG" "$base/apis" | python3 -c 'import json,sys; print(sum(len(g["versions"]) for g in json.load(sys.stdin)["items"]))' 2>/dev/null || echo 0)
  [ "$n" -ge "$expected" ] && break
  sleep 0.2
done
echo "group-versions served: $n (expected at least $expected)"
[ "$n" -ge "$expected" ] || { echo "the proxy never served them all" >&2; exit 1; }

plain=$(curl -s -H "Accept: $AGG" "$base/apis" | wc -c)
gz=$(curl -s -H "Accept: $AGG" -H 'Accept-Encoding: gzip' "$base/apis" | wc -c)
echo "/apis aggregated: $plain bytes, $gz gzipped"
curl -s -o /dev/null -w '%{http_code} %{content_type}\n' -H "Accept: $AGG" "$base/apis"

run() {
  local name=$1; shift
  local out
  out=$(wrk -t2 -c"$CONNECTIONS" -d"$DURATION" --latency "$@")
  local rps p99
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
  local errors
  errors=$(awk '/Non-2xx|Socket errors/ {print}' <<<"$out")
  printf '| %-28s | %10s | %8s | %s\n' "$name" "$rps" "$p99" "${errors:-}"
}
echo "| case                         |      req/s |      p99 | errors"
run "/apis aggregated, plain" -H "Accept: $AGG" "$base/apis"
run "/apis aggregated, gzip" -H "Accept: $AGG" -H 'Accept-Encoding: gzip' "$base/apis"
etag=$(curl -s -D - -o /dev/null -H "Accept: $AGG" "$base/apis" | awk -F': ' 'tolower($1)=="etag" {print $2}' | tr -d '\r')
run "/apis aggregated, 304" -H "Accept: $AGG" -H "If-None-Match: $etag" "$base/apis"

echo "proxy RSS after load: $(( $(ps -o rss= -p "$proxy") / 1024 )) MiB"
curl -s "$base/metrics" | grep -E '^openapi_proxy_rebuild_duration_seconds_(sum|count)|^openapi_proxy_rebuild_duration_seconds_bucket\{le="0\.(05|1)"\}|^aggregator_discovery_aggregation_count_total'
curl -s "$base/metrics" | python3 -c '
import sys
m = {}
for line in sys.stdin:
    if line.startswith("openapi_proxy_rebuild_duration_seconds_"):
        k, v = line.rsplit(" ", 1); m[k] = float(v)
s = m.get("openapi_proxy_rebuild_duration_seconds_sum", 0); c = m.get("openapi_proxy_rebuild_duration_seconds_count", 1)
print(f"rebuilds: {int(c)}, mean {1000*s/max(c,1):.1f} ms")'

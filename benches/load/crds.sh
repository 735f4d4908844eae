#!/usr/bin/env bash
# Issue 16: 5,000 CRDs in 1,000 group-versions plus the Kubernetes 1.27
# built-ins, one downstream (examples/crd_fleet.rs), in front of the release
# build of the proxy. Measures, REPEAT times each (report the median):
#   - cold start: proxy process start → /readyz 200 with every document
#     listed in /openapi/v3;
#   - RSS (VmRSS, VmHWM from /proc/PID/status) after start and after load;
#   - wrk -t1 -c32 with Accept-Encoding: gzip: p99 and req/s for the root
#     /openapi/v3, one CRD document by its ?hash= URL, /apis aggregated;
#   - in the first round, after the load: total bytes of the documents
#     served, plain and gzip (every document read once without gzip, so
#     inflated on demand: RSS after that pass is printed too);
#   - with CHURN=1: the proxy's own rebuild metric while one CRD
#     group-version changes every 5 s (a second phase, polling every 1 s).
# Loopback only; every step is bounded in time. Needs ../shared/testdata
# (or scripts/testdata.sh) for the built-ins.
#
#   bash benches/load/crds.sh
#   KINDS=5000 GVS=1000 KIND_BYTES=40000 REPEAT=3 DURATION=10s CHURN=1 bash benches/load/crds.sh
#
# With BUILTINS=1 (the default) the same rounds run first against the
# Kubernetes 1.27 built-ins alone (KINDS=0), the issue's side-by-side
# baseline; the document of the wrk case is then apis/apps/v1.
# The proxy runs with its default memory budget unless BUDGET is set. With
# LIMIT (bytes, e.g. LIMIT=536870912) it runs in a memory cgroup of that
# limit (v1 or v2; needs root and a writable /sys/fs/cgroup), so the default
# budget is the one a container of that limit gets.
# With WITH_135=1 a second downstream serves Kubernetes 1.35's Swagger 2.0
# (converted by the proxy) beside the fleet; every round then checks both
# are whole.
# PROXY names another build of the proxy to run (default: the release
# build this script makes).
# With V2=1 the first round then asks for the merged /openapi/v2 as
# kubectl 1.27 does (protobuf, gzip) and as JSON, then each without gzip,
# and prints the status, bytes, time and RSS after each. With KUBECTL (a
# kubectl binary, e.g. 1.27) the first of those is that kubectl's
# `explain` of a CRD kind, with an empty cache (client-go gives up on
# /openapi/v2 after 32 s).
# The churn phase also times three one-document changes from the fleet's
# root changing to the proxy's root changing (polling every POLL, 2s).
set -euo pipefail
cd "$(dirname "$0")/../.."

KINDS=${KINDS:-5000}
GVS=${GVS:-1000}
KIND_BYTES=${KIND_BYTES:-40000}
REPEAT=${REPEAT:-3}
DURATION=${DURATION:-10s}
CHURN=${CHURN:-1}
BUILTINS=${BUILTINS:-1}
BUDGET=${BUDGET:-}
LIMIT=${LIMIT:-}
WITH_135=${WITH_135:-0}
POLL=${POLL:-2s}
PORT=${PORT:-18190}
AGG='application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList'

for tool in wrk curl python3; do
  command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 1; }
done

cargo build --release --quiet --bin openapi-proxy --example crd_fleet
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

second=
if [ "$WITH_135" = 1 ]; then
  mkdir -p "$work/k135/openapi"
  cp "$(scripts/testdata.sh --print-dir)/kubernetes-1.35/swagger.json" "$work/k135/openapi/v2"
  port135=$((PORT + 1))
  # Not in pids: each round kills those, and this one serves every round.
  (cd "$work/k135" && exec python3 -m http.server "$port135" --bind 127.0.0.1) >/dev/null 2>&1 &
  pid135=$!
  trap 'kill "$pid135" 2>/dev/null || true; cleanup' EXIT
  second="--downstream kube135=http://127.0.0.1:$port135"
fi

cgroup=
if [ -n "$LIMIT" ]; then
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    cgroup=/sys/fs/cgroup/openapi-proxy-bench-$$
    mkdir "$cgroup" && echo "$LIMIT" >"$cgroup/memory.max"
  else
    cgroup=/sys/fs/cgroup/memory/openapi-proxy-bench-$$
    mkdir "$cgroup" && echo "$LIMIT" >"$cgroup/memory.limit_in_bytes"
  fi || { echo "cannot make a memory cgroup of $LIMIT bytes (root and a writable /sys/fs/cgroup needed)" >&2; exit 1; }
  trap 'kill "${pid135:-}" 2>/dev/null || true; cleanup; sleep 0.2; rmdir "$cgroup" 2>/dev/null || true' EXIT
fi

start_fleet() { # $1 kinds, $2 group-versions, then extra arguments
  local kinds=$1 gvs=$2; shift 2
  timeout 1200 target/release/examples/crd_fleet "$kinds" "$gvs" "$KIND_BYTES" 16 "$@" >"$work/fleet.out" 2>"$work/fleet.err" &
  pids+=($!)
  for _ in $(seq 1200); do grep -q ready "$work/fleet.out" 2>/dev/null && break; sleep 0.1; done
  grep -q ready "$work/fleet.out" || { echo "fleet did not start" >&2; cat "$work/fleet.err" >&2; exit 1; }
  fleet_url=$(head -1 "$work/fleet.out")
  fleet_docs=$(curl -s "$fleet_url/openapi/v3" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["paths"]))')
}

status() { # $1: pid; prints VmRSS VmHWM in MiB
  awk '/^VmRSS|^VmHWM/ {printf "%s %.0f MiB  ", $1, $2/1024}' "/proc/$1/status"
}

start_proxy() { # $1: poll interval
  local t0
  t0=$(date +%s.%N)
  # In the cgroup when LIMIT is set: the shell joins it, then becomes the proxy.
  RUST_LOG=info sh -c '[ -z "$1" ] || echo $$ >"$1/cgroup.procs"; shift; exec "$@"' sh "$cgroup" \
    "${PROXY:-target/release/openapi-proxy}" serve --listen "127.0.0.1:$PORT" --poll-interval "$1" \
    ${BUDGET:+--memory-budget-bytes "$BUDGET"} --downstream "crds=$fleet_url" $second 2>>"$work/proxy.log" &
  proxy=$!
  pids+=($proxy)
  base="http://127.0.0.1:$PORT"
  for _ in $(seq 1200); do
    # Another process on the port would answer for a proxy that failed.
    kill -0 "$proxy" 2>/dev/null || { echo "the proxy exited" >&2; tail "$work/proxy.log" >&2; exit 1; }
    if [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/readyz")" = 200 ]; then
      n=$(curl -s "$base/openapi/v3" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["paths"]))' 2>/dev/null || echo 0)
      [ "$n" -ge "$fleet_docs" ] && break
    fi
    sleep 0.05
  done
  cold=$(python3 -c "import time; print(f'{time.time() - $t0:.2f}')")
  [ "$n" -ge "$fleet_docs" ] || { echo "proxy never served all $fleet_docs documents" >&2; tail "$work/proxy.log" >&2; exit 1; }
}

wrk_case() { # $1 name, $2.. wrk arguments
  local name=$1; shift
  local out rps p99
  out=$(wrk -t1 -c32 -d"$DURATION" --latency -H 'Accept-Encoding: gzip' "$@")
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
  errors=$(awk '/Non-2xx|Socket errors/ {print}' <<<"$out")
  printf '  %-22s %10s req/s  p99 %8s  %s\n' "$name" "$rps" "$p99" "${errors:-}"
}

rounds() { # $1 label, $2 kinds, $3 group-versions
  kill "${pids[@]}" 2>/dev/null || true
  start_fleet "$2" "$3"
  echo "== $1: $(cat "$work/fleet.err") at $fleet_url"
  for round in $(seq "$REPEAT"); do
    start_proxy 1h
    echo "round $round: cold start to ready ${cold} s; after start: $(status "$proxy")"
    echo "  $(grep -o 'memory budget.*' "$work/proxy.log" | tail -1)"
    echo "  $(curl -s "$base/readyz?verbose" | tr '\n' ' ')"
    curl -s "$base/metrics" | grep -E '^openapi_proxy_(downstream_memory_bytes|downstream_documents)' | sed 's/^/  /'
    echo "  groups in /apis: $(curl -s -H "Accept: $AGG" "$base/apis" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))') (downstream: $(curl -s "$fleet_url/apis" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))'))"
    doc_url=$(curl -s "$base/openapi/v3" | python3 -c 'import json,sys; p=json.load(sys.stdin)["paths"]; crd=[k for k in sorted(p) if ".crd" in k]; print(p[(crd or ["apis/apps/v1"])[0]]["serverRelativeURL"])')
    wrk_case "root /openapi/v3" "$base/openapi/v3"
    wrk_case "document ?hash=" "$base$doc_url"
    wrk_case "/apis aggregated" -H "Accept: $AGG" "$base/apis"
    echo "  after load: $(status "$proxy")"
    if [ "$round" = 1 ]; then
      python3 - "$base" <<'EOF'
import json, sys, urllib.request
base = sys.argv[1]
root = json.load(urllib.request.urlopen(base + "/openapi/v3"))
plain = gz = 0
for entry in root["paths"].values():
    url = base + entry["serverRelativeURL"]
    plain += len(urllib.request.urlopen(url).read())
    req = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
    gz += len(urllib.request.urlopen(req).read())
print(f"  documents: {len(root['paths'])}, {plain} bytes plain ({plain/2**20:.1f} MiB), {gz} gzip ({gz/2**20:.1f} MiB)")
EOF
      echo "  after reading every document without gzip: $(status "$proxy")"
      if [ "${V2:-0}" = 1 ]; then
        pb=application/com.github.proto-openapi.spec.v2@v1.0+protobuf
        if [ -n "${KUBECTL:-}" ]; then
          gv=$(curl -s "$base/openapi/v3" | python3 -c 'import json,sys; print([k for k in sorted(json.load(sys.stdin)["paths"]) if ".crd" in k][0][5:])')
          resource=$(curl -s "$base/apis/$gv" | python3 -c 'import json,sys; print(json.load(sys.stdin)["resources"][0]["name"])')
          t0=$(date +%s.%N)
          out=$(KUBECONFIG=/dev/null "$KUBECTL" --server "$base" --cache-dir "$work/kube-cache" explain "$resource.spec" --api-version="$gv" 2>&1) && rc=0 || rc=$?
          echo "  $("$KUBECTL" version --client 2>/dev/null | head -1) explain $resource.spec: exit $rc in $(python3 -c "import time; print(f'{time.time() - $t0:.1f}')") s: $(head -c 160 <<<"$out" | tr '\n' ' '); then $(status "$proxy")"
        fi
        for ask in "protobuf, gzip|Accept: $pb|Accept-Encoding: gzip" "JSON, gzip|Accept: application/json|Accept-Encoding: gzip" \
          "protobuf|Accept: $pb|X-None: 1" "JSON|Accept: application/json|X-None: 1"; do
          IFS='|' read -r label h1 h2 <<<"$ask"
          r=$(curl -s -o /dev/null -m 600 -H "$h1" -H "$h2" -w '%{http_code} %{size_download} bytes in %{time_total} s' "$base/openapi/v2")
          echo "  /openapi/v2 $label: $r; then $(status "$proxy")"
        done
        grep -E 'openapi/v2|protobuf' "$work/proxy.log" | tail -3 | sed 's/^/  log: /'
      fi
    fi
    kill "$proxy"; wait "$proxy" 2>/dev/null || true
  done
}

if [ "$BUILTINS" = 1 ]; then rounds "Kubernetes 1.27 built-ins alone" 0 0; fi
rounds "$KINDS CRD kinds in $GVS group-versions + built-ins" "$KINDS" "$GVS"

if [ "$CHURN" = 1 ]; then
  kill "${pids[@]}" 2>/dev/null || true
  start_fleet "$KINDS" "$GVS" --churn 7
  start_proxy "$POLL"
  metric() { curl -s "$base/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
  s0=$(metric openapi_proxy_rebuild_duration_seconds_sum); c0=$(metric openapi_proxy_rebuild_duration_seconds_count)
  # Three changes: from the fleet's root changing to the proxy's.
  python3 - "$fleet_url" "$base" "$POLL" <<'EOF'
import hashlib, sys, time, urllib.request
fleet, proxy, poll = sys.argv[1], sys.argv[2], sys.argv[3]
def root(base):
    return hashlib.sha256(urllib.request.urlopen(base + "/openapi/v3").read()).hexdigest()
seen = []
while len(seen) < 3:
    # In step first: the fleet may have changed during the proxy's first
    # round, and it flips between two revisions.
    t = time.time()
    while root(proxy) != root(fleet) and time.time() - t < 120:
        time.sleep(0.02)
    f0, p0 = root(fleet), root(proxy)
    while root(fleet) == f0:
        time.sleep(0.02)
    t = time.time()
    while root(proxy) == p0 and time.time() - t < 120:
        time.sleep(0.02)
    seen.append(time.time() - t)
print("one-document changes visible after (s): " + ", ".join(f"{s:.2f}" for s in seen) + f" (poll interval {poll})")
EOF
  sleep 10
  s1=$(metric openapi_proxy_rebuild_duration_seconds_sum); c1=$(metric openapi_proxy_rebuild_duration_seconds_count)
  python3 -c "n=$c1-$c0; print(f'one-change rebuilds (proxy metric): {int(n)}, mean {1000*($s1-$s0)/max(n,1):.2f} ms')"
  curl -s "$base/metrics" | grep -E '^openapi_proxy_rebuild_duration_seconds_bucket' | head -6
  echo "  after churn: $(status "$proxy")"
fi

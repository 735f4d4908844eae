#!/usr/bin/env bash
# Front door benchmark (issue 17): the same requests to a downstream
# directly, through openapi-proxy's front door, and through nginx as a
# reverse proxy (proxy_pass, unbuffered) and through socat (a byte relay
# that knows no HTTP, with 256 KiB buffers): references for what any
# proxy costs on the machine, side by side in one run. The downstream is nginx
# serving static files with legacy discovery for the core group: a small
# object (a pod) and a large list (LIST_MB of pods), the list at full
# speed (sendfile) and at the rates of LIST_RATES (nginx limit_rate, for a
# downstream that encodes as it sends, as kube-apiserver does). See
# BENCHMARKS.md, "Front door".
#
#   benches/load/front_door.sh
#   REPEAT=5 LIST_MB=100 benches/load/front_door.sh
#
# Environment (all optional):
#   DURATION     wrk -d of each latency run                [10s]
#   CONNECTIONS  wrk -c of the throughput run of small GETs  [32]
#   REPEAT       rounds; each round measures direct, then the proxy,
#                then the proxy, then direct (alternating); medians
#                are reported                              [3]
#   LIST_MB      size of the large list, MiB               [64]
#   LIST_RATES   downstream rates for the list, nginx units; 0 is
#                unlimited                                 [0 1000m 400m 100m]
#   KEEP         1: keep the work directory                [0]
#   BIN          the openapi-proxy binary to measure (another commit's
#                build, side by side); unset: this tree's, built  [unset]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-32}
REPEAT=${REPEAT:-3}
LIST_MB=${LIST_MB:-64}
LIST_RATES=${LIST_RATES:-0 1000m 400m 100m}
KEEP=${KEEP:-0}

# shellcheck source=benches/load/lib.sh
. "$ROOT/benches/load/lib.sh"

for tool in wrk nginx python3 curl socat; do
    command -v "$tool" >/dev/null 2>&1 || die "missing $tool (apt-get install -y $tool)"
done

if [ -z "${BIN:-}" ]; then
    say "cargo build --release"
    (cd "$ROOT" && cargo build --release --quiet)
    BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/openapi-proxy
fi

start_work front-door

# 1. The downstream's files: legacy discovery, one pod, a list of pods.
WWW=$WORK/www
mkdir -p "$WWW/api/v1/namespaces/default/pods"
python3 - "$WWW" "$LIST_MB" <<'EOF'
import json, sys, os
www, mib = sys.argv[1], int(sys.argv[2])
def put(path, obj):
    with open(os.path.join(www, path), "w") as f:
        json.dump(obj, f, separators=(",", ":"))
put("api/index.json", {"kind": "APIVersions", "versions": ["v1"],
    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}]})
put("apis.json", {"kind": "APIGroupList", "apiVersion": "v1", "groups": []})
put("api/v1/index.json", {"kind": "APIResourceList", "groupVersion": "v1", "resources": [
    {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod",
     "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]}]})
def pod(i):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"pod-{i:07d}", "namespace": "default", "uid": f"{i:032x}",
                         "resourceVersion": str(1000 + i), "labels": {"app": "bench", "n": str(i % 97)}},
            "spec": {"containers": [{"name": "main", "image": "registry.example/app:1.2.3",
                                     "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
                     "nodeName": f"node-{i % 50}"},
            "status": {"phase": "Running", "podIP": f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}"}}
put("api/v1/namespaces/default/pods/small.json", pod(0))
one = len(json.dumps(pod(0), separators=(",", ":")))
n = mib * 1024 * 1024 // (one + 1)
with open(os.path.join(www, "api/v1/namespaces/default/pods/index.json"), "w") as f:
    f.write('{"apiVersion":"v1","kind":"PodList","metadata":{"resourceVersion":"1"},"items":[')
    for i in range(n):
        if i:
            f.write(",")
        f.write(json.dumps(pod(i), separators=(",", ":")))
    f.write("]}")
EOF
LIST_BYTES=$(stat -c %s "$WWW/api/v1/namespaces/default/pods/index.json")
say "list: $LIST_BYTES bytes; pod: $(stat -c %s "$WWW/api/v1/namespaces/default/pods/small.json") bytes"

NGINX_PORT=$(free_port)
DIRECT=http://127.0.0.1:$NGINX_PORT
REF_PORT=$(free_port)
REFERENCE=http://127.0.0.1:$REF_PORT
start_nginx 1 <<EOF
    access_log off;
    sendfile on;
    keepalive_requests 1000000;
    default_type application/json;
    upstream downstream { server 127.0.0.1:$NGINX_PORT; keepalive 64; }
    server {
        listen 127.0.0.1:$REF_PORT;
        location / {
            proxy_pass http://downstream;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
        }
    }
    server {
        listen 127.0.0.1:$NGINX_PORT;
        root $WWW;
        # ?rate=400m: this answer at 400 MB/s (a downstream that encodes as
        # it sends); absent, at sendfile speed.
        if (\$arg_rate) { set \$limit_rate \$arg_rate; }
        location = /api { try_files /api/index.json =404; }
        location = /apis { try_files /apis.json =404; }
        location = /api/v1 { try_files /api/v1/index.json =404; }
        location = /api/v1/namespaces/default/pods { try_files /api/v1/namespaces/default/pods/index.json =404; }
        location = /api/v1/namespaces/default/pods/small { try_files /api/v1/namespaces/default/pods/small.json =404; }
        location / { return 404; }
    }
EOF
wait_for "$DIRECT/api" 10
RELAY_PORT=$(free_port)
RELAY=http://127.0.0.1:$RELAY_PORT
socat -b 262144 "TCP-LISTEN:$RELAY_PORT,fork,reuseaddr,bind=127.0.0.1" "TCP:127.0.0.1:$NGINX_PORT" &
PIDS+=($!)
wait_for "$RELAY/api" 10

PROXY_PORT=$(free_port)
PROXY=http://127.0.0.1:$PROXY_PORT
"$BIN" serve --listen "127.0.0.1:$PROXY_PORT" --front-door true \
    --downstream "kube=$DIRECT" --poll-interval 1h >"$WORK/proxy.log" 2>&1 &
PROXY_PID=$!
PIDS+=("$PROXY_PID")
wait_for "$PROXY/readyz" 60
wait_for "$PROXY/api/v1/namespaces/default/pods/small" 10
grep -E ' (WARN|ERROR) ' "$WORK/proxy.log" | cut -c1-300 | sed 's/^/proxy log: /' >&2 || true

SMALL=/api/v1/namespaces/default/pods/small
LIST=/api/v1/namespaces/default/pods

# wrk's 50% latency (ms) of one connection, and requests/s of $CONNECTIONS.
p50_ms() { # URL
    wrk -t1 -c1 -d"$DURATION" --latency "$1" | awk '$1 == "50%" {
        v = $2; if (v ~ /us$/) { sub(/us/, "", v); v /= 1000 } else if (v ~ /ms$/) { sub(/ms/, "", v) } else if (v ~ /s$/) { sub(/s/, "", v); v *= 1000 }
        printf "%.4f\n", v }'
}
rps() { # URL
    wrk -t2 -c"$CONNECTIONS" -d"$DURATION" "$1" | awk '/^Requests\/sec/ { printf "%.0f\n", $2 }'
}
# MB/s of downloading the list once, best of three.
list_mbps() { # URL
    local best=0 t i
    for i in 1 2 3; do
        t=$(curl -s -o /dev/null -w '%{time_total}' "$1")
        best=$(python3 -c "print(max($best, $LIST_BYTES / 1e6 / $t))")
    done
    printf '%.0f\n' "$best"
}

declare -A R
order() { # round → the three, alternating
    if (( $1 % 2 == 0 )); then echo "direct proxy reference relay"; else echo "relay reference proxy direct"; fi
}
url_of() { # who path
    case $1 in
        direct) echo "$DIRECT$2" ;; proxy) echo "$PROXY$2" ;;
        reference) echo "$REFERENCE$2" ;; relay) echo "$RELAY$2" ;;
    esac
}
for ((r = 0; r < REPEAT; r++)); do
    for who in $(order "$r"); do
        R[p50,$who]+="$(p50_ms "$(url_of "$who" "$SMALL")") "
        R[rps,$who]+="$(rps "$(url_of "$who" "$SMALL")") "
        for rate in $LIST_RATES; do
            q=""; [[ $rate != 0 ]] && q="?rate=$rate"
            R[mbps$rate,$who]+="$(list_mbps "$(url_of "$who" "$LIST$q")") "
        done
        # The same bytes asked as a watch: a long-running pass, which the
        # front door reads off the downstream itself, a few KiB at a time.
        R[watch,$who]+="$(list_mbps "$(url_of "$who" "$LIST?watch=1")") "
    done
    say "round $((r + 1)) of $REPEAT done"
done
RSS=$(awk '/VmHWM/ { print $2 }' "/proc/$PROXY_PID/status")

median() { python3 -c "import statistics, sys; print(statistics.median(float(x) for x in sys.argv[1:]))" $1; }
pct() { python3 -c "print(round(100 * $1 / $2))"; }
printf '\n| figure | direct (nginx) | front door | nginx proxy_pass | socat relay | front door / direct |\n|---|---:|---:|---:|---:|---:|\n'
d=$(median "${R[p50,direct]}"); p=$(median "${R[p50,proxy]}"); n=$(median "${R[p50,reference]}"); x=$(median "${R[p50,relay]}")
printf '| small GET, p50 latency, one connection (ms) | %s | %s | %s | %s | +%.3f ms |\n' "$d" "$p" "$n" "$x" "$(python3 -c "print($p - $d)")"
d=$(median "${R[rps,direct]}"); p=$(median "${R[rps,proxy]}"); n=$(median "${R[rps,reference]}"); x=$(median "${R[rps,relay]}")
printf '| small GET, requests/s, %s connections | %.0f | %.0f | %.0f | %.0f | %s %% |\n' "$CONNECTIONS" "$d" "$p" "$n" "$x" "$(pct "$p" "$d")"
for rate in $LIST_RATES; do
    d=$(median "${R[mbps$rate,direct]}"); p=$(median "${R[mbps$rate,proxy]}"); n=$(median "${R[mbps$rate,reference]}"); x=$(median "${R[mbps$rate,relay]}")
    label="downstream at full speed"; [[ $rate != 0 ]] && label="downstream limited to ${rate%m} MiB/s"
    printf '| %s MB list, MB/s, %s | %.0f | %.0f | %.0f | %.0f | %s %% |\n' "$((LIST_BYTES / 1000000))" "$label" "$d" "$p" "$n" "$x" "$(pct "$p" "$d")"
done
d=$(median "${R[watch,direct]}"); p=$(median "${R[watch,proxy]}"); n=$(median "${R[watch,reference]}"); x=$(median "${R[watch,relay]}")
printf '| the same as a watch (long-running), MB/s, downstream at full speed | %.0f | %.0f | %.0f | %.0f | %s %% |\n' "$d" "$p" "$n" "$x" "$(pct "$p" "$d")"
printf '\nproxy peak RSS: %s KiB; rounds: %s (medians); load average: %s\n' "$RSS" "$REPEAT" "$(cut -d' ' -f1-3 /proc/loadavg)"

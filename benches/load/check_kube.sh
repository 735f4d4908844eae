#!/usr/bin/env bash
# How long `openapi-proxy check` takes against Kubernetes 1.35 through the
# proxy (issue 28 asks for at most 2 s): the fake 1.35 of
# examples/kube_1_35.rs as the one downstream of the release build of the
# proxy, then hyperfine runs the release build of `check` against the
# proxy, under the kube-apiserver profile (every rule applies but A-1).
# Loopback only. Needs hyperfine, curl and ../shared/testdata.
#
#   bash benches/load/check_kube.sh [extra hyperfine flags]
set -euo pipefail
cd "$(dirname "$0")/../.."
source benches/load/lib.sh

for tool in hyperfine curl; do
    command -v "$tool" >/dev/null || die "missing $tool"
done
cargo build --release --quiet --bin openapi-proxy --example kube_1_35
start_work check-kube
target/release/examples/kube_1_35 >"$WORK/kube.out" &
PIDS+=($!)
for _ in $(seq 100); do grep -q ready "$WORK/kube.out" 2>/dev/null && break; sleep 0.1; done
KUBE=$(head -1 "$WORK/kube.out")
PORT=$(free_port)
target/release/openapi-proxy serve --listen "127.0.0.1:$PORT" --downstream "kube=$KUBE" \
    2>"$WORK/proxy.log" &
PIDS+=($!)
wait_for "http://127.0.0.1:$PORT/readyz" 60
say "proxy on 127.0.0.1:$PORT in front of $KUBE"
target/release/openapi-proxy check "http://127.0.0.1:$PORT" --profile kube-apiserver \
    | tail -1
hyperfine --warmup 2 "$@" \
    "target/release/openapi-proxy check http://127.0.0.1:$PORT --profile kube-apiserver"

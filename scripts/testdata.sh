#!/usr/bin/env bash
# Gets the real Kubernetes documents the tests and benches read.
#
# They come from other repositories (kube-openapi, kubernetes, oas-kit) under
# their own licenses, so they are never committed here. Tests look for them
#   1. in $OPENAPI_PROXY_TESTDATA, if set;
#   2. in ../shared/testdata beside the repository (the team's machines);
#   3. in target/testdata, where this script downloads them.
# The tests run this script themselves the first time a file is missing
# (src/testkit/testdata.rs); running it by hand first is optional.
#
# scripts/testdata.manifest pins each file: its SHA-256, its path, and the
# raw URL at a fixed commit (GitHub's raw.githubusercontent.com).
#
# Usage: scripts/testdata.sh [--check] [--print-dir] [--dir DIR]
#   --check      only verify the files that are present; download nothing
#   --print-dir  print the folder the tests use and stop (for other scripts)
#   --dir     where to put or look for the files (default: the folder the
#             tests would use, see above; target/testdata when none exists)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
manifest="$root/scripts/testdata.manifest"
check_only=false
print_dir=false
dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --check) check_only=true ;;
    --print-dir) print_dir=true ;;
    --dir) dir="${2:?--dir needs a folder}"; shift ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "testdata.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if [ -z "$dir" ]; then
  if [ -n "${OPENAPI_PROXY_TESTDATA:-}" ]; then
    dir="$OPENAPI_PROXY_TESTDATA"
  elif [ -d "$root/../shared/testdata" ]; then
    dir="$root/../shared/testdata"
    check_only=true
  else
    dir="$root/target/testdata"
  fi
fi
if $print_dir; then
  echo "$dir"
  exit 0
fi
echo "test data folder: $dir"

python3 - "$manifest" "$dir" "$check_only" <<'PY'
import hashlib, os, sys, urllib.error, urllib.parse, urllib.request

manifest, folder, check_only = sys.argv[1], sys.argv[2], sys.argv[3] == "true"
ok = fetched = 0
bad, missing, unreachable = [], [], []
for line in open(manifest):
    if line.startswith("#") or not line.strip():
        continue
    digest, quoted, url = line.split()
    rel = urllib.parse.unquote(quoted)
    path = os.path.join(folder, rel)
    if os.path.exists(path):
        if hashlib.sha256(open(path, "rb").read()).hexdigest() == digest:
            ok += 1
        else:
            bad.append(rel)
        continue
    if check_only:
        missing.append(rel)
        continue
    if unreachable:  # one timeout is enough to know; don't wait for each file
        unreachable.append((rel, url, "not tried"))
        continue
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            body = response.read()
    except urllib.error.HTTPError as error:  # the server answered: a wrong pin
        missing.append(f"{rel} ({url}: {error})")
        continue
    except Exception as error:  # no answer: the network, a proxy, DNS
        unreachable.append((rel, url, error))
        continue
    if hashlib.sha256(body).hexdigest() != digest:
        bad.append(f"{rel} (downloaded from {url})")
        continue
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".part", "wb") as out:
        out.write(body)
    os.replace(path + ".part", path)
    fetched += 1

print(f"{ok} present and verified, {fetched} downloaded")
for rel in bad:
    print(f"checksum mismatch: {rel}")
for rel in missing:
    print(f"missing: {rel}")
if unreachable:
    rel, url, error = unreachable[0]
    host = urllib.parse.urlsplit(url).netloc
    print(f"could not download {len(unreachable)} files: {host} did not answer "
          f"(no network, or a proxy or firewall in the way): {url}: {error}")
    print("run scripts/testdata.sh again where it can reach that host, or run it "
          "elsewhere with --dir DIR and set OPENAPI_PROXY_TESTDATA=DIR")
sys.exit(1 if bad or missing or unreachable else 0)
PY

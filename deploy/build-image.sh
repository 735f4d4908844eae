#!/usr/bin/env bash
# Builds the openapi-proxy OCI image from a release binary with Buildah,
# pulling nothing: `FROM scratch`, the binary, the shared libraries `ldd`
# says it loads (glibc's), the host's CA bundle, the default
# configuration (deploy/container.yaml). Then runs `--version` in it.
#
#   deploy/build-image.sh [TAG]        # default openapi-proxy:<Cargo.toml version>
#
# Needs buildah (Debian: apt-get install buildah), run as root. Builds target/release/openapi-proxy first if it is missing
# (BINARY=path to use another build). Leaves the image in Buildah's local
# storage under TAG, and an OCI archive at target/image/openapi-proxy.oci.tar
# for a registry (`skopeo copy oci-archive:... docker://...`) or a node
# (`ctr -n k8s.io images import`, `kind load image-archive`).
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
tag=${1:-openapi-proxy:$version}
binary=${BINARY:-target/release/openapi-proxy}
ca_bundle=/etc/ssl/certs/ca-certificates.crt
archive=target/image/openapi-proxy.oci.tar

for tool in buildah ldd; do
  command -v "$tool" >/dev/null || { echo "build-image.sh: $tool not found (apt-get install buildah)" >&2; exit 1; }
done
if [ ! -x "$binary" ]; then
  cargo build --release --locked --bin openapi-proxy
fi
[ -f "$ca_bundle" ] || { echo "build-image.sh: no $ca_bundle (apt-get install ca-certificates)" >&2; exit 1; }

ctr=$(buildah from --pull=never scratch)
cleanup() { buildah rm "$ctr" >/dev/null 2>&1 || true; }
trap cleanup EXIT

buildah copy --quiet "$ctr" "$binary" /openapi-proxy
# The dynamic loader and the libraries it loads, each at the path the
# binary looks for it (symbolic links resolved to their files).
# `ldd` lines: "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)",
# "/lib64/ld-linux-x86-64.so.2 (0x...)", "linux-vdso.so.1 (0x...)".
libs=$(ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u)
for lib in $libs; do
  buildah copy --quiet "$ctr" "$(readlink -f "$lib")" "$lib"
done
# Roots for downstreams that name no caFile (rustls-native-certs reads
# this path).
buildah copy --quiet "$ctr" "$ca_bundle" "$ca_bundle"
buildah copy --quiet "$ctr" deploy/container.yaml /etc/openapi-proxy/config.yaml

# As deploy/Dockerfile: a numeric non-root user (runAsNonRoot can check
# it), the binary as entrypoint, `serve` with the default configuration
# as the command that arguments replace.
buildah config \
  --user 65532:65532 \
  --port 8080 \
  --entrypoint '["/openapi-proxy"]' \
  --cmd '["serve", "--config", "/etc/openapi-proxy/config.yaml"]' \
  --label org.opencontainers.image.title=openapi-proxy \
  --label "org.opencontainers.image.version=$version" \
  --label org.opencontainers.image.licenses=Apache-2.0 \
  "$ctr"
buildah commit --quiet --rm "$ctr" "$tag" >/dev/null
trap - EXIT
echo "built $tag"

# The image runs: a container from it prints the version. Chroot
# isolation needs no OCI runtime or cgroup setup (crun refuses hybrid
# cgroups, as inside many CI containers) and still sees only the image's
# files, so a missing library fails here. ISOLATION=oci to use crun/runc.
run=$(buildah from --pull=never "$tag")
trap 'buildah rm "$run" >/dev/null 2>&1 || true' EXIT
printed=$(buildah run --isolation "${ISOLATION:-chroot}" "$run" -- /openapi-proxy --version)
echo "in the image: $printed"
[ "$printed" = "openapi-proxy $version" ] || { echo "build-image.sh: expected \"openapi-proxy $version\"" >&2; exit 1; }

mkdir -p "$(dirname "$archive")"
rm -f "$archive"
buildah push --quiet "$tag" "oci-archive:$archive:$tag"
echo "wrote $archive"

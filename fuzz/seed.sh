#!/bin/sh
# Seeds the corpora with small real inputs (the corpus folder is
# git-ignored; run this before `cargo fuzz run TARGET`):
# - convert_split: the project's own test documents and the Kubernetes CRD
#   Swagger 2.0 documents from kube-openapi;
# - discovery: the project's discovery fixtures and the real Kubernetes
#   discovery documents of the test data (see scripts/testdata.sh);
# - bundle: small documents split across files, written here (a JSON array:
#   the document, then the files f0.json, f1.json, … it refers to);
# - negotiate: the Accept and If-None-Match headers real clients send
#   (kubectl 1.26-1.32, client-go, curl, browsers), one per file, the
#   header then an ETag on the next line.
# Usage: ./seed.sh [DIR]  seeds DIR/<target> (default: fuzz/corpus/<target>,
# where fuzzing also keeps what it finds; a new DIR gives the fresh corpus a
# clean clone, and so CI, starts from).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
base=${1:-$here/corpus}
repo=$(dirname "$here")
corpus="$base/convert_split"
data=$("$repo/scripts/testdata.sh" --print-dir)
crds="$data/kube-openapi/pkg/schemaconv/testdata/crds/openapiv2"
mkdir -p "$corpus"
# File names are flattened (a/b/c.json -> a_b_c.json) so same-named files in
# different folders do not overwrite each other.
copy() {
    name=$(printf '%s' "$2" | tr '/' '_')
    cp "$1" "$corpus/$name"
}
if [ -d "$repo/testdata" ]; then
    (cd "$repo" && find testdata -name '*.json' -type f | sort) | while IFS= read -r f; do
        copy "$repo/$f" "$f"
    done
fi
if [ -d "$crds" ]; then
    for f in "$crds"/*.json; do
        [ -e "$f" ] || continue
        copy "$f" "crd_$(basename "$f")"
    done
else
    echo "seed.sh: $crds not found (scripts/testdata.sh gets it); seeding without the CRD documents" >&2
fi
echo "seed.sh: $(ls "$corpus" | wc -l) files in $corpus"

corpus="$base/discovery"
mkdir -p "$corpus"
if [ -d "$repo/testdata" ]; then
    (cd "$repo" && grep -rlE 'APIGroupDiscoveryList|APIResourceList' testdata | sort) | while IFS= read -r f; do
        copy "$repo/$f" "$f"
    done
fi
discovery="$data/discovery"
if [ -d "$discovery" ]; then
    (cd "$discovery" && grep -rlE 'APIGroupDiscoveryList|APIResourceList' . | sort) | while IFS= read -r f; do
        copy "$discovery/$f" "shared_${f#./}"
    done
else
    echo "seed.sh: $discovery not found (scripts/testdata.sh gets it); seeding discovery with the project's fixtures only" >&2
fi
echo "seed.sh: $(ls "$corpus" | wc -l) files in $corpus"

# one_per_line DIR PREFIX SUFFIX: each line of standard input becomes the
# file DIR/PREFIX<n>, the line followed by SUFFIX (printf escapes allowed).
one_per_line() {
    mkdir -p "$1"
    n=0
    while IFS= read -r line; do
        n=$((n + 1))
        printf "%s$3" "$line" >"$1/$2$n"
    done
    echo "seed.sh: $n files in $1"
}

one_per_line "$base/negotiate" header_ '\n"0A1B2C3D"' <<'HEADERS'
application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json
application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json
application/com.github.proto-openapi.spec.v2@v1.0+protobuf
application/com.github.proto-openapi.spec.v3@v1.0+protobuf
application/json, */*
application/json;q=0.9, application/vnd.kubernetes.protobuf;q=0.8
text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8
*/*
W/"0A1B2C3D", "other"
*
HEADERS

one_per_line "$base/bundle" case_ '' <<'CASES'
[{"swagger":"2.0","paths":{"/":{"get":{"responses":{"400":{"$ref":"f0.json#/responses/Bad"}}}}}},{"responses":{"Bad":{"description":"bad","schema":{"$ref":"#/definitions/E"}}},"definitions":{"E":{"type":"object"}}}]
[{"swagger":"2.0","paths":{"/a":{"$ref":"f0.json#/items/a","x-k":1}}},{"items":{"a":{"get":{"parameters":[{"$ref":"f1.json#/p"}],"responses":{"200":{"description":"ok"}}}}}},{"p":{"name":"p","in":"query","type":"string"}}]
[{"swagger":"2.0","definitions":{"E":{"type":"string"},"A":{"properties":{"e":{"$ref":"./f0.json#/definitions/E"},"s":{"$ref":"sub/../f0.json#/definitions/S"},"m":{"$ref":"main.json#/definitions/E"}}}}},{"definitions":{"E":{"type":"object"},"S":{"properties":{"n":{"$ref":"#/definitions/S"}}}}}]
[{"swagger":"2.0","paths":{"/l":{"$ref":"f0.json"}},"definitions":{"U":{"$ref":"https://example.com/x.json"},"M":{"$ref":"f9.json#/x"},"W":{"$ref":"f1.json"}}},{"$ref":"f0.json"},{"type":"array","items":{"$ref":"#definitions/x"}}]
CASES

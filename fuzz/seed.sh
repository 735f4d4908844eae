#!/bin/sh
# Seeds the convert_split corpus with small real inputs: the project's own
# test documents and the Kubernetes CRD Swagger 2.0 documents from
# kube-openapi. The corpus folder is git-ignored; run this before
# `cargo fuzz run convert_split`.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
corpus="$here/corpus/convert_split"
crds="$repo/../shared/testdata/kube-openapi/pkg/schemaconv/testdata/crds/openapiv2"
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
    echo "seed.sh: $crds not found; seeding without the CRD documents" >&2
fi
echo "seed.sh: $(ls "$corpus" | wc -l) files in $corpus"

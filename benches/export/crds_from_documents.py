"""Writes one CustomResourceDefinition YAML file per kind found in a folder
of OpenAPI v3 documents (what `openapi-proxy export --layout
kubectl-validate` writes), for measuring `export` from a folder of CRDs
(BENCHMARKS.md, "export").

Usage: crds_from_documents.py DOCUMENTS_DIR OUT_DIR [GROUP_SUFFIX]

With GROUP_SUFFIX, only kinds of groups ending in it (`.example.com`: the
5,000-CRD fleet's, not the built-in kinds served beside them).

Each kind schema with an x-kubernetes-group-version-kind (lists left out)
becomes a CRD of that group with that one version, its openAPIV3Schema the
kind's schema without apiVersion, kind and metadata, which kube-apiserver
adds when it publishes it. Needs PyYAML with libyaml.
"""

import json
import os
import sys

import yaml


def main():
    docs, out = sys.argv[1], sys.argv[2]
    suffix = sys.argv[3] if len(sys.argv) > 3 else ""
    os.makedirs(out, exist_ok=True)
    count = 0
    for root, _, files in sorted(os.walk(docs)):
        for name in sorted(files):
            with open(os.path.join(root, name), encoding="utf-8") as f:
                doc = json.load(f)
            for schema in doc.get("components", {}).get("schemas", {}).values():
                for gvk in schema.get("x-kubernetes-group-version-kind", []):
                    group, version, kind = gvk["group"], gvk["version"], gvk["kind"]
                    if not group.endswith(suffix) or not group or kind.endswith("List") or "spec" not in schema.get("properties", {}):
                        continue
                    body = {k: v for k, v in schema.items() if k != "x-kubernetes-group-version-kind"}
                    body["properties"] = {
                        k: v for k, v in body["properties"].items() if k not in ("apiVersion", "kind", "metadata")
                    }
                    plural = kind.lower() + "s"
                    crd = {
                        "apiVersion": "apiextensions.k8s.io/v1",
                        "kind": "CustomResourceDefinition",
                        "metadata": {"name": f"{plural}.{group}"},
                        "spec": {
                            "group": group,
                            "names": {"kind": kind, "plural": plural, "listKind": kind + "List"},
                            "scope": "Namespaced",
                            "versions": [
                                {"name": version, "served": True, "storage": True,
                                 "schema": {"openAPIV3Schema": body}}
                            ],
                        },
                    }
                    path = os.path.join(out, f"{group}_{plural}_{version}.yaml")
                    with open(path, "w", encoding="utf-8") as f:
                        yaml.dump(crd, f, Dumper=yaml.CDumper, sort_keys=False)
                    count += 1
    print(f"{count} CRDs written to {out}")


if __name__ == "__main__":
    main()

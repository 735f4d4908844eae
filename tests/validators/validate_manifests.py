"""Strictly validates Kubernetes manifests against the OpenAPI v3 documents
an openapi-proxy serves (tests/integration/repository/deploy.rs).

Usage: validate_manifests.py PROXY_BASE_URL FILE...

For each object: the group-version's document is found through the proxy's
/openapi/v3 root index, the schema whose x-kubernetes-group-version-kind
names the object's kind is chosen, and the object is validated with
openapi-schema-validator (OpenAPI 3.0). Strict like kubectl's
--validate=strict: every object schema that lists its properties (and does
not preserve unknown fields) gets additionalProperties: false, so an
unknown or misspelt field is an error. One JSON line per object:
{"file", "object", "errors": [...]}.
"""

import json
import sys
import urllib.request

import yaml
from openapi_schema_validator import OAS30Validator


def get(url):
    with urllib.request.urlopen(url, timeout=60) as response:
        return json.load(response)


def make_strict(node):
    if isinstance(node, dict):
        if (
            "properties" in node
            and "additionalProperties" not in node
            and not node.get("x-kubernetes-preserve-unknown-fields")
        ):
            node["additionalProperties"] = False
        for value in node.values():
            make_strict(value)
    elif isinstance(node, list):
        for value in node:
            make_strict(value)


def main():
    base, files = sys.argv[1], sys.argv[2:]
    root = get(base + "/openapi/v3")["paths"]
    documents = {}
    for path in files:
        with open(path, encoding="utf-8") as f:
            objects = [o for o in yaml.safe_load_all(f) if o]
        for obj in objects:
            api_version, kind = obj.get("apiVersion", ""), obj.get("kind", "")
            name = (obj.get("metadata") or {}).get("name", "?")
            group, _, version = api_version.rpartition("/")
            key = f"apis/{api_version}" if group else f"api/{api_version}"
            errors = []
            if key not in root:
                errors.append(f"the proxy publishes no OpenAPI v3 document {key}")
            else:
                if key not in documents:
                    documents[key] = get(base + root[key]["serverRelativeURL"])
                    make_strict(documents[key]["components"]["schemas"])
                schemas = documents[key]["components"]["schemas"]
                gvk = {"group": group, "version": version, "kind": kind}
                names = [
                    n
                    for n, s in schemas.items()
                    if gvk in s.get("x-kubernetes-group-version-kind", [])
                ]
                if len(names) != 1:
                    errors.append(f"{len(names)} schemas in {key} for kind {kind}")
                else:
                    schema = {
                        "$ref": f"#/components/schemas/{names[0]}",
                        "components": {"schemas": schemas},
                    }
                    for e in sorted(OAS30Validator(schema).iter_errors(obj), key=str):
                        where = "/".join(str(p) for p in e.absolute_path)
                        errors.append(f"/{where}: {e.message}")
            print(json.dumps({"file": path, "object": f"{kind}/{name}", "errors": errors}))


if __name__ == "__main__":
    main()

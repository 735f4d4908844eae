"""Validates Kubernetes manifests against JSON Schemas written by
`openapi-proxy export` (tests/integration/commands/export.rs), with the
`jsonschema` library: an implementation of JSON Schema that openapi-proxy
does not share code or authors with.

Usage: validate_jsonschema.py SCHEMA MANIFEST [SCHEMA MANIFEST]...

Each schema is first checked against the meta-schema of the draft its
`$schema` names (a schema the library cannot read must not look like one
that accepts everything). Each manifest is one YAML document. One JSON
line per pair:

    {"manifest": "...", "schema": "...", "draft": "Draft7Validator",
     "errors": [{"path": "/spec/replicas", "message": "..."}]}

`path` is the JSON pointer of the offending value in the manifest. Exit
status: 0 when every pair was checked (valid or not), 2 on bad usage or an
unreadable schema.
"""

import json
import sys

import jsonschema
import yaml


def pointer(parts):
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def main():
    args = sys.argv[1:]
    if not args or len(args) % 2:
        print(__doc__, file=sys.stderr)
        return 2
    schemas = {}
    for schema_path, manifest_path in zip(args[0::2], args[1::2]):
        if schema_path not in schemas:
            with open(schema_path, encoding="utf-8") as f:
                schema = json.load(f)
            cls = jsonschema.validators.validator_for(schema, default=None)
            if cls is None:
                print(f"{schema_path}: no known $schema", file=sys.stderr)
                return 2
            cls.check_schema(schema)
            schemas[schema_path] = cls(schema)
        validator = schemas[schema_path]
        with open(manifest_path, encoding="utf-8") as f:
            manifest = yaml.safe_load(f)
        errors = sorted(validator.iter_errors(manifest), key=lambda e: list(e.absolute_path))
        print(
            json.dumps(
                {
                    "manifest": manifest_path,
                    "schema": schema_path,
                    "draft": type(validator).__name__,
                    "errors": [
                        {"path": pointer(e.absolute_path), "message": e.message} for e in errors
                    ],
                }
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Validate OpenAPI 3.0 documents with openapi-spec-validator, reporting every error.

Usage:
    python validate.py [--tolerate-zero-defaults] PATH...

Each PATH is a JSON file or a directory (searched recursively for ``*.json``).
Every document is validated as OpenAPI 3.0 with ``OpenAPIV30SpecValidator``
(whatever its ``openapi`` field says: a wrong version is itself reported),
and one JSON line is printed per file:

    {"file": "...", "errors": [{"path": "/json/pointer", "schema_path": "/...",
      "check": "...", "message": "..."}], "tolerated": 0}

- ``path`` is the JSON pointer of the offending instance in the document.
- ``schema_path`` is the JSON pointer of the failing keyword: in the OpenAPI
  3.0 meta-schema for ``check == "openapi-schema"``, else relative to the
  schema the library checked the instance against (for ``default`` findings:
  the schema that holds the ``default``).
- ``check`` says which part of openapi-spec-validator produced the error:
  ``openapi-schema`` (the document against the OpenAPI 3.0 meta-schema) or
  the name of the library's keyword validator (``default``, ``schema``,
  ``parameters``, ``operation``, ...).

Exit status: 0 if every file is valid, 1 if some file has errors, 2 on bad
usage. Run by tests/integration/common/validators.rs with the pinned
versions from requirements.txt.

Why this is more than ``validate(spec)``: ``validate`` raises the first error
only. ``iter_errors()`` yields them all, but the errors that come from the
library's keyword validators (for example a ``default`` value that does not
fit its schema) carry no location: their ``path`` is relative to the value
that was checked (the ``default`` value itself), not to the document. So the
keyword validators are wrapped (``_located``) to attach the document location
of the node each of them was called on.
"""

import argparse
import json
import os
import sys
from collections.abc import Iterator
from typing import Any

from jsonschema.exceptions import ValidationError
from jsonschema_path import SchemaPath
from openapi_spec_validator import OpenAPIV30SpecValidator
from openapi_spec_validator.validation.exceptions import OpenAPIValidationError
from referencing.exceptions import Unresolvable

# Attributes this script sets on errors yielded by the wrapped keyword validators.
_LOCATION = "_harness_location"  # list of document keys, after following local $refs
_CHECK = "_harness_check"  # name of the keyword validator that yielded the error
_DEFAULT_VALUE = "_harness_default_value"  # for check == "default": the default value

# Kubernetes' own OpenAPI v3 documents are deep (JSONSchemaProps nests itself).
sys.setrecursionlimit(10_000)


def is_zero_value(value: Any) -> bool:
    """True for the zero value of a JSON type: {}, [], "", 0 (or 0.0), false.

    ``null`` is not included: openapi-spec-validator already accepts a null
    default on a nullable schema, and a null default elsewhere is a real
    mistake that should be reported.
    """
    if isinstance(value, bool):
        return value is False
    if isinstance(value, (int, float)):
        return value == 0
    if isinstance(value, (str, list, dict)):
        return len(value) == 0
    return False


def is_tolerated_zero_default(error: ValidationError) -> bool:
    """The rule behind ``--tolerate-zero-defaults``.

    An error is tolerated exactly when
      1. it was yielded by openapi-spec-validator's ``default`` keyword
         validator, i.e. it is the result of checking the value of a
         ``default`` (of a schema, or of a parameter) against the schema it
         belongs to, and
      2. that default value is a zero value (``is_zero_value``).
    Both facts are recorded by ``_located`` when the error is produced, so
    nothing is guessed from message text. A zero value has no members, so
    such an error is always about the default value as a whole (its relative
    path is empty).

    What openapi-spec-validator 0.9.0 reports on Kubernetes 1.24's own v3
    documents (kube-openapi testdata), without the tolerance:
      v3_api.v1.json                  155 findings at 92 defaults
      v3_apiextensions.k8s.io.v1.json  29 findings at 12 defaults
      v3_batch.v1.json                 74 findings at 47 defaults
      util/proto/testdata/openapi_v3_0_0/** (5 files): none -- there
        ``default`` sits beside a bare ``$ref``, whose siblings OpenAPI 3.0
        ignores.
    Every one comes from the ``default`` check, on one of three patterns
    (path, schema_path, message), e.g. in v3_api.v1.json:
      .../io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList/properties/resources/items/default
          /allOf/0/required  "'name' is a required property"            (126x)
        -- ``default: {}`` beside ``allOf: [{$ref: <object with required
           properties>}]``; Kubernetes' generator writes ``{}`` as the
           default of non-pointer struct fields; one finding per missing
           required property;
      .../io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta/properties/creationTimestamp/default
          /allOf/0/type  "{} is not of type 'string'"                    (22x)
        -- ``default: {}`` beside an ``allOf`` ``$ref`` to a string-typed
           schema: Time, MicroTime, Quantity, IntOrString;
      .../io.k8s.api.core.v1.NodeSelectorRequirement/properties/operator/default
          /enum  "'' is not one of ['DoesNotExist', 'Exists', ...]"      (7x)
        -- ``default: ""`` on an enum string field.
    No other finding is reported on those documents.
    """
    return getattr(error, _CHECK, None) == "default" and is_zero_value(
        getattr(error, _DEFAULT_VALUE, None)
    )


def canonical_location(document: Any, parts: tuple) -> list:
    """The document keys of the node that ``parts`` reaches, following local $refs.

    openapi-spec-validator walks the document through ``SchemaPath``s that
    resolve ``$ref`` transparently, so their ``parts`` are the logical route
    taken (for example through ``paths``). The error should point at where
    the node really is; so walk the same keys over the raw document and
    replace the location by the target of each local ``$ref`` met on the way
    (and at the end). A non-local ``$ref`` stops the rewriting: the logical
    route is returned from there on.
    """
    location: list = []
    node = document
    for index, part in enumerate(parts):
        node, location, ok = _follow_refs(document, node, location)
        if not ok:
            return location + list(parts[index:])
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return location + [part]
        location = location + [part]
    node, location, _ = _follow_refs(document, node, location)
    return location


def _follow_refs(document: Any, node: Any, location: list) -> tuple[Any, list, bool]:
    for _ in range(64):  # a $ref cycle without a schema in between: give up
        if not (isinstance(node, dict) and isinstance(node.get("$ref"), str)):
            return node, location, True
        ref = node["$ref"]
        if not ref.startswith("#"):
            return node, location, False
        target_location = [_unescape(p) for p in ref[1:].split("/")[1:]]
        target = document
        try:
            for key in target_location:
                target = target[int(key)] if isinstance(target, list) else target[key]
        except (KeyError, IndexError, TypeError, ValueError):
            return node, location, False
        node, location = target, target_location
    return node, location, False


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def to_pointer(parts: Any) -> str:
    return "".join(
        "/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts
    )


def _located(name: str, cls: type, document: Any) -> type:
    """A subclass of keyword validator ``cls`` whose errors carry a location.

    Keyword validators are called as ``validator(*args)`` where one argument
    is the ``SchemaPath`` of the node being checked (the schema, parameter,
    operation ...). Errors are tagged by the innermost wrapped call that saw
    them (validators call each other, and ``SchemaValidator`` recurses into
    itself through ``self(...)``, which dispatches to this override).

    Errors are converted to ``OpenAPIValidationError`` here so that the
    library's own ``wraps_errors`` passes them through unchanged instead of
    copying them (which would drop the tags).
    """

    def __call__(self: Any, *args: Any, **kwargs: Any) -> Iterator[ValidationError]:
        node = next((a for a in args if isinstance(a, SchemaPath)), None)
        for error in cls.__call__(self, *args, **kwargs):
            if hasattr(error, _CHECK):
                yield error
                continue
            if not isinstance(error, OpenAPIValidationError):
                error = OpenAPIValidationError.create_from(error)
            location = (
                canonical_location(document, node.parts) if node is not None else []
            )
            if name == "default":
                # Called as default_validator(<schema or parameter>, <default value>).
                location = location + ["default"]
                setattr(error, _DEFAULT_VALUE, args[1])
            # error.path is relative to the instance the keyword validator
            # checked (the default value, or the schema for meta-checks).
            setattr(error, _LOCATION, location + list(error.path))
            setattr(error, _CHECK, name)
            yield error

    return type(f"Located{cls.__name__}", (cls,), {"__call__": __call__})


def validator_for(document: Any) -> OpenAPIV30SpecValidator:
    keyword_validators = {
        name: _located(name, cls, document)
        for name, cls in OpenAPIV30SpecValidator.keyword_validators.items()
    }
    cls = type(
        "LocatedOpenAPIV30SpecValidator",
        (OpenAPIV30SpecValidator,),
        {"keyword_validators": keyword_validators},
    )
    return cls(document)


def report(error: ValidationError) -> dict:
    if hasattr(error, _CHECK):
        return {
            "path": to_pointer(getattr(error, _LOCATION)),
            "schema_path": to_pointer(error.schema_path),
            "check": getattr(error, _CHECK),
            "message": error.message,
        }
    # From the meta-schema pass: error.path is absolute in the document.
    return {
        "path": to_pointer(error.absolute_path),
        "schema_path": to_pointer(error.absolute_schema_path),
        "check": "openapi-schema",
        "message": error.message,
    }


def validate_file(path: str, tolerate_zero_defaults: bool) -> dict:
    try:
        with open(path, "rb") as f:
            document = json.load(f)
    except (OSError, ValueError) as e:
        message = f"cannot read as JSON: {e}"
        return {"file": path, "errors": [{"path": "", "schema_path": "", "check": "read", "message": message}], "tolerated": 0}

    errors: list[dict] = []
    seen: set[tuple[str, str]] = set()
    tolerated = 0
    validator = validator_for(document)
    iterator = iter(validator.iter_errors())
    while True:
        try:
            error = next(iterator)
        except StopIteration:
            break
        except Unresolvable as e:
            # A dangling $ref is raised, not yielded, by the library (from
            # referencing, while it walks the document). Report it at every
            # place that uses that reference.
            ref = getattr(e, "ref", None)
            uses = sorted(ref_uses(document, ref)) if isinstance(ref, str) else []
            for use in uses or [""]:
                errors.append(
                    {
                        "path": use,
                        "schema_path": "",
                        "check": "ref",
                        "message": f"{type(e).__name__}: cannot resolve {ref!r}; "
                        "openapi-spec-validator stopped here, later errors were not collected",
                    }
                )
            break
        except Exception as e:  # noqa: BLE001 -- the library crashed on this document
            # Some keyword validators assume a structurally valid document
            # (ParametersValidator reads parameter["in"] unchecked) and raise
            # instead of yielding; report that instead of dying, and say that
            # later errors were not collected.
            detail = str(e)
            if len(detail) > 300:
                detail = detail[:300] + "..."
            errors.append(
                {
                    "path": "",
                    "schema_path": "",
                    "check": "crash",
                    "message": f"openapi-spec-validator stopped early ({type(e).__name__}: {detail}); "
                    "later errors were not collected",
                }
            )
            break
        if tolerate_zero_defaults and is_tolerated_zero_default(error):
            tolerated += 1
            continue
        entry = report(error)
        # The meta-schema pass and the per-schema meta-check can report the
        # same problem twice; keep one.
        key = (entry["path"], entry["message"])
        if key in seen:
            continue
        seen.add(key)
        errors.append(entry)
    return {"file": path, "errors": errors, "tolerated": tolerated}


def ref_uses(node: Any, ref: str, location: str = "") -> Iterator[str]:
    """JSON pointers of every ``$ref`` member that refers to ``ref``.

    ``referencing`` reports the unresolvable part only: the fragment pointer
    for ``PointerToNowhere`` (``/components/schemas/X`` for ``#/components/schemas/X``).
    """
    if isinstance(node, dict):
        value = node.get("$ref")
        if isinstance(value, str) and (value == ref or value.endswith("#" + ref)):
            yield location + "/$ref"
        for key, value in node.items():
            yield from ref_uses(value, ref, location + to_pointer([key]))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from ref_uses(value, ref, f"{location}/{index}")


def expand(paths: list[str]) -> list[str]:
    files: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            found = []
            for root, dirs, names in os.walk(path):
                dirs.sort()
                found.extend(os.path.join(root, n) for n in names if n.endswith(".json"))
            files.extend(sorted(found))
        else:
            files.append(path)
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tolerate-zero-defaults",
        action="store_true",
        help="drop findings about a default whose zero value ({}, [], \"\", 0, false) does not fit its schema",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH")
    args = parser.parse_args()

    failed = False
    for path in expand(args.paths):
        result = validate_file(path, args.tolerate_zero_defaults)
        failed = failed or bool(result["errors"])
        print(json.dumps(result), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

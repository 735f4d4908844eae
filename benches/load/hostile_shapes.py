#!/usr/bin/env python3
"""Conversion time of Swagger documents shaped to make it quadratic.

Each document is small (0.7-3.7 MB) but makes one list or object as long
as its bytes allow: extension keys at the top, in a path item and in a
schema; one object key repeated; media types, examples, headers, form
fields and form media types of one operation; shared parameters, shared
bodies and security schemes; responses beside a document-wide list of
media types; an operation's own parameters beside its path item's. A converter that searches what it has built so far for each
new member takes seconds on these, and a downstream serving one would
have the proxy spend them on every poll. `convert --whole` of each,
timed (wall clock, best of REPEAT); one line each.

    python3 benches/load/hostile_shapes.py BIN [N] [REPEAT]

N (default 50,000) is the length of the long list.
"""

import json
import os
import subprocess
import sys
import tempfile
import time


def documents(n):
    """(name, document) for each shape."""
    base = {"swagger": "2.0", "info": {"title": "t", "version": "1"}}
    ok = {"responses": {"200": {"description": "OK"}}}
    path = "/apis/g/v1/x"

    def doc(**members):
        return dict(base, **members)

    def ext(prefix="x-"):
        return {f"{prefix}{i}": i for i in range(n)}

    half = n // 2
    yield "top-level extensions", dict(doc(paths={}), **ext())
    yield "path item extensions", doc(paths={path: dict({"get": ok}, **ext())})
    yield "schema extensions", doc(
        paths={path: {"get": {"responses": {"200": {"description": "OK",
                                                    "schema": {"$ref": "#/definitions/T"}}}}}},
        definitions={"T": dict({"type": "object"}, **ext())},
    )
    yield "media types", doc(
        produces=[f"application/x-{i}" for i in range(n)],
        paths={path: {"get": {"responses": {"200": {"description": "OK",
                                                    "schema": {"type": "string"}}}}}},
    )
    yield "examples", doc(
        paths={path: {"get": {"produces": ["application/json"],
                              "responses": {"200": {"description": "OK",
                                                    "schema": {"type": "string"},
                                                    "examples": ext("application/x-")}}}}},
    )
    yield "response headers", doc(
        paths={path: {"get": {"responses": {"200": {
            "description": "OK",
            "headers": {f"H{i}": {"type": "string"} for i in range(n)}}}}}},
    )
    yield "form fields", doc(
        paths={path: {"post": dict(ok, parameters=[
            {"name": f"f{i}", "in": "formData", "type": "string"} for i in range(n)])}},
    )
    yield "form media types", doc(
        consumes=[f"multipart/form-data; x={i}" for i in range(n)],
        paths={path: {"post": dict(ok, parameters=[
            {"name": "f", "in": "formData", "type": "string"}])}},
    )
    yield "shared parameters", doc(
        paths={path: {"get": ok}},
        parameters={f"p{i}": {"name": f"p{i}", "in": "query", "type": "string"}
                    for i in range(n)},
    )
    yield "shared bodies", doc(
        paths={path: {"get": ok}},
        parameters={f"b{i}": {"name": "b", "in": "body", "schema": {}} for i in range(n)},
    )
    yield "security schemes", doc(
        paths={path: {"get": ok}},
        securityDefinitions={f"s{i}": {"type": "basic"} for i in range(n)},
    )
    # Responses of their own beside a document-wide `produces`: a
    # converter keeping each response by its media types copies the list
    # for each.
    yield "responses and media types", doc(
        produces=[f"application/x-{i}" for i in range(half)],
        paths={f"/apis/g/v1/r{i}": {"get": {"responses": {"200": {"description": f"d{i}"}}}}
               for i in range(n // 25)},
    )
    yield "own and path parameters", doc(
        paths={path: {
            "parameters": [{"name": f"q{i}", "in": "query", "type": "string"}
                           for i in range(half)],
            "get": dict(ok, parameters=[{"name": f"z{i}", "in": "query", "type": "string"}
                                        for i in range(half)]),
        }},
    )


def repeated_key(n):
    """One object of n members whose first key comes again at its end."""
    members = ",".join(f'"k{i}":{i}' for i in range(n))
    return ('{"swagger":"2.0","info":{"title":"t","version":"1"},"paths":{},'
            f'"x-big":{{{members},"k0":1}}}}')


def run(binary, path, repeat):
    """Best wall time of `convert --whole` over `repeat` runs, or None and
    the last line of what the command said."""
    best = None
    for _ in range(repeat):
        out = path + ".out.json"
        start = time.perf_counter()
        done = subprocess.run([binary, "convert", path, "--whole", out],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=600)
        took = time.perf_counter() - start
        if done.returncode != 0:
            return None, done.stderr.decode(errors="replace").strip().splitlines()[-1:]
        best = took if best is None else min(best, took)
    return best, []


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 50_000
    repeat = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    with tempfile.TemporaryDirectory() as tmp:
        shapes = [(name, json.dumps(d)) for name, d in documents(n)]
        shapes.append(("one key repeated", repeated_key(n)))
        for name, text in shapes:
            path = os.path.join(tmp, "doc.json")
            with open(path, "w") as f:
                f.write(text)
            best, said = run(binary, path, repeat)
            if best is None:
                print(f"{name:24} {len(text):>9} B  failed: {said}")
            else:
                print(f"{name:24} {len(text):>9} B  {best * 1000:9.1f} ms")


if __name__ == "__main__":
    main()

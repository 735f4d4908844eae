#!/usr/bin/env python3
"""Peak memory of `openapi-proxy check` against a server listing many large
OpenAPI v3 documents (issue 13: 100 documents of 30 MB each once took `check`
to 6 GB).

A local HTTP server lists DOCUMENTS keys in its /openapi/v3 root, each
answering the same valid OpenAPI 3.0 document of about SIZE_MB megabytes
(token-dense: many small schemas), with the right ?hash=. The check command
runs against it; its VmHWM is sampled from /proc until it exits.

    cargo build --release
    benches/load/check_memory.py [--documents 100] [--size-mb 30] \
        [--binary target/release/openapi-proxy]
"""

import argparse
import hashlib
import http.server
import json
import subprocess
import threading
import time


def document(size):
    """A valid OpenAPI 3.0 document of about `size` bytes."""
    schemas = {}
    i = 0
    total = 0
    while total < size:
        schema = {
            "type": "object",
            "description": f"schema {i}",
            "properties": {
                f"p{j}": {"type": "string", "format": "int-or-string"} for j in range(8)
            },
            "required": ["p0"],
        }
        schemas[f"io.example.v1.S{i}"] = schema
        total += len(json.dumps(schema)) + 24
        i += 1
    doc = {
        "openapi": "3.0.0",
        "info": {"title": "memory", "version": "v1"},
        "paths": {},
        "components": {"schemas": schemas},
    }
    return json.dumps(doc, separators=(",", ":")).encode()


def peak_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=100)
    parser.add_argument("--size-mb", type=int, default=30)
    parser.add_argument("--binary", default="target/release/openapi-proxy")
    args = parser.parse_args()

    body = document(args.size_mb * 1024 * 1024)
    digest = hashlib.sha512(body).hexdigest().upper()
    keys = [f"apis/g{i}.example.com/v1" for i in range(args.documents)]
    root = json.dumps(
        {"paths": {k: {"serverRelativeURL": f"/openapi/v3/{k}?hash={digest}"} for k in keys}}
    ).encode()
    served = {"/openapi/v3": root, **{f"/openapi/v3/{k}": body for k in keys}}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            payload = served.get(self.path.split("?", 1)[0])
            if payload is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *_):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"

    started = time.monotonic()
    child = subprocess.Popen(
        [args.binary, "check", url, "--only", "openapi", "--output", "json", "--timeout", "120s"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    # The report is small (findings are cut per document); reading it as
    # it comes keeps the pipe from filling while memory is sampled.
    report = []
    reader = threading.Thread(target=lambda: report.append(child.stdout.read()), daemon=True)
    reader.start()
    peak = 0
    while child.poll() is None:
        peak = max(peak, peak_kib(child.pid) or 0)
        time.sleep(0.02)
    reader.join()
    elapsed = time.monotonic() - started
    server.shutdown()
    stderr = child.stderr.read().decode(errors="replace")
    print(
        f"{args.documents} documents x {len(body) / 1e6:.1f} MB "
        f"({args.documents * len(body) / 1e9:.2f} GB): exit {child.returncode}, "
        f"peak RSS {peak / 1024:.0f} MiB, {elapsed:.1f} s"
    )
    for rule in json.loads(report[0] or b"{}").get("rules", []):
        if rule.get("result") == "fail":
            print(f"fail {rule.get('id')}: {json.dumps(rule)[:300]}")
    if stderr.strip():
        print(stderr.strip()[-2000:])


if __name__ == "__main__":
    main()

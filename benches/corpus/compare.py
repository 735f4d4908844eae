#!/usr/bin/env python3
"""Converts every Swagger 2.0 document of a corpus with `openapi-proxy
convert` and with swagger2openapi, validates the inputs and both outputs with
@apidevtools/swagger-parser, and prints the comparison table of issue 14 (see
BENCHMARKS.md for the figures and the command).

A document counts as an input when it says `swagger: "2.0"` (or the number
2.0). For each one the script records:

- whether swagger-parser accepts the input;
- whether our conversion succeeded, failed with an error (exit 1), or crashed
  (any other exit status, or a signal) or timed out, and whether
  swagger-parser accepts its output;
- the same for swagger2openapi.

The lines "output that fails validation (input valid)" and "valid input
refused" are the two that must be 0. `--details` lists every input with its
outcome, the first line of each error, and what swagger-parser said.

Validators: swagger-parser is the one the integration tests pin and install
under target/validators/node (run `cargo test --test integration
validators` once); swagger2openapi 7.0.8 is installed with npm under
target/tools/swagger2openapi when missing.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SWAGGER2 = re.compile(rb"""["']?swagger["']?\s*:\s*["']?2\.0\b""")
TIMEOUT_S = 60


def inputs(corpora):
    """Every Swagger 2.0 document under the given files and folders, sorted."""
    found = []
    for root in corpora:
        root = Path(root)
        files = [root] if root.is_file() else sorted(root.rglob("*"))
        files = [f for f in files if not f.name.endswith((".ours.json", ".s2o.json"))]
        for f in files:
            if f.suffix not in (".json", ".yaml", ".yml") or not f.is_file():
                continue
            with open(f, "rb") as handle:
                head = handle.read(4096)
            if SWAGGER2.search(head):
                found.append(f.resolve())
    return sorted(set(found))


def swagger2openapi(tools):
    exe = tools / "node_modules" / ".bin" / "swagger2openapi"
    if not exe.exists():
        tools.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["npm", "install", "--silent", "--prefix", str(tools), "swagger2openapi@7.0.8"],
            check=True,
        )
    return exe


def run(argv):
    """(outcome, first error line, seconds): outcome is ok, error (a refusal:
    an exit status the tool chose) or crash (a panic's 101, a signal, a
    timeout)."""
    start = time.perf_counter()
    try:
        p = subprocess.run(argv, capture_output=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return "crash", f"timed out after {TIMEOUT_S} s", time.perf_counter() - start
    took = time.perf_counter() - start
    text = (p.stderr or p.stdout).decode("utf-8", "replace").strip().splitlines()
    first = next((line for line in text if line.strip()), "")
    if p.returncode == 0:
        return "ok", "", took
    if 0 < p.returncode < 100:
        return "error", first, took
    return "crash", f"exit {p.returncode}: {first}", took


def validate(node_modules, files):
    """{file: error or None} from swagger-parser, one Node process for all."""
    verdicts = {}
    if not files:
        return verdicts
    script = REPO / "tests" / "validators" / "validate.mjs"
    p = subprocess.run(
        ["node", str(script), "--node-modules", str(node_modules), *map(str, files)],
        capture_output=True,
        text=True,
    )
    if p.returncode == 2:
        sys.exit(f"validate.mjs could not run: {p.stderr.strip()}")
    for line in p.stdout.splitlines():
        record = json.loads(line)
        errors = record.get("errors") or []
        verdicts[str(Path(record["file"]).resolve())] = errors[0] if errors else None
    return verdicts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", nargs="+", help="files or folders of Swagger 2.0 documents")
    ap.add_argument("--proxy", default=str(REPO / "target" / "release" / "openapi-proxy"))
    ap.add_argument("--node-modules", default=str(REPO / "target" / "validators" / "node" / "node_modules"))
    ap.add_argument("--tools", default=str(REPO / "target" / "tools" / "swagger2openapi"))
    ap.add_argument("--scratch", default=str(REPO / "target" / "corpus-compare"))
    ap.add_argument("--details", action="store_true", help="one line per input")
    args = ap.parse_args()

    s2o = swagger2openapi(Path(args.tools))
    # The corpus is copied, and each output written beside its input: a
    # reference to another file (`include/health.yml`) then resolves from
    # the output as it does from the input.
    scratch = Path(args.scratch)
    if scratch.exists():
        shutil.rmtree(scratch)
    mirrors = []
    for k, root in enumerate(args.corpus):
        root = Path(root).resolve()
        mirror = scratch / f"{k}-{root.name}"
        if root.is_file():
            mirror.mkdir(parents=True)
            shutil.copy(root, mirror / root.name)
            mirrors.append(mirror / root.name)
        else:
            shutil.copytree(root, mirror)
            mirrors.append(mirror)
    docs = inputs(mirrors)
    if not docs:
        sys.exit("no Swagger 2.0 document found")

    results = []
    took = {"ours": 0.0, "s2o": 0.0}
    for doc in docs:
        ours_out = doc.with_name(doc.name + ".ours.json")
        s2o_out = doc.with_name(doc.name + ".s2o.json")
        # References to other files are followed anywhere in the corpus,
        # as swagger-parser follows them.
        ours = run([args.proxy, "convert", str(doc), "--whole", str(ours_out),
                    "--refs-root", str(scratch)])
        theirs = run([str(s2o), str(doc), "-o", str(s2o_out)])
        took["ours"] += ours[2]
        took["s2o"] += theirs[2]
        results.append((doc, ours, ours_out, theirs, s2o_out))

    verdict_in = validate(args.node_modules, docs)
    outputs = [r[2] for r in results if r[1][0] == "ok"] + [r[4] for r in results if r[3][0] == "ok"]
    verdict_out = validate(args.node_modules, outputs)

    def side_counts(pick_outcome, pick_out):
        counts = {"valid": 0, "invalid_from_valid": 0, "invalid_from_invalid": 0,
                  "refused_valid": 0, "refused_invalid": 0, "crash": 0}
        for r in results:
            outcome = pick_outcome(r)
            input_ok = verdict_in.get(str(r[0])) is None
            if outcome[0] == "crash":
                counts["crash"] += 1
            elif outcome[0] == "error":
                counts["refused_valid" if input_ok else "refused_invalid"] += 1
            elif verdict_out.get(str(pick_out(r).resolve())) is None:
                counts["valid"] += 1
            else:
                counts["invalid_from_valid" if input_ok else "invalid_from_invalid"] += 1
        return counts

    ours = side_counts(lambda r: r[1], lambda r: r[2])
    theirs = side_counts(lambda r: r[3], lambda r: r[4])
    valid_inputs = sum(1 for d in docs if verdict_in.get(str(d)) is None)
    print(f"{len(docs)} Swagger 2.0 documents, {valid_inputs} valid by swagger-parser\n")
    print("| | openapi-proxy | swagger2openapi |")
    print("|---|---:|---:|")
    rows = [
        ("valid output", "valid"),
        ("output that fails validation (input valid)", "invalid_from_valid"),
        ("output that fails validation (input invalid)", "invalid_from_invalid"),
        ("valid input refused", "refused_valid"),
        ("invalid input refused", "refused_invalid"),
        ("crashes, timeouts", "crash"),
    ]
    for label, key in rows:
        print(f"| {label} | {ours[key]} | {theirs[key]} |")
    print(f"| time, whole corpus (a process per file) | {took['ours']:.1f} s | {took['s2o']:.1f} s |")

    if args.details:
        print()
        for doc, o, o_out, t, t_out in results:
            def say(outcome, out):
                if outcome[0] != "ok":
                    return f"{outcome[0]}: {outcome[1][:160]}"
                problem = verdict_out.get(str(out.resolve()))
                return "valid" if problem is None else f"INVALID: {problem[:160]}"
            input_problem = verdict_in.get(str(doc))
            print(f"{doc.relative_to(scratch)}")
            print(f"    input: {'valid' if input_problem is None else 'invalid: ' + input_problem[:160]}")
            print(f"    ours:  {say(o, o_out)}")
            print(f"    s2o:   {say(t, t_out)}")
    bad = ours["invalid_from_valid"] + ours["refused_valid"] + ours["crash"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

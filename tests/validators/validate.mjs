// Validate OpenAPI 3.0 documents with @apidevtools/swagger-parser.
//
// Usage:
//   node validate.mjs [--node-modules DIR] PATH...
//
// Each PATH is a JSON file or a directory (searched recursively for *.json).
// Prints one JSON line per file: {"file": "...", "errors": ["message"]}.
//
// SwaggerParser.validate() parses the file, resolves and dereferences every
// $ref (a dangling one is an error) and validates the result against the
// OpenAPI 3.0 JSON Schema. It stops at the first failure, so "errors" holds
// at most one message (a schema failure lists every Ajv finding inside that
// one message). It dereferences in place: it is given the path, so it reads
// and mutates its own copy.
//
// The package is not installed next to this script but under
// target/validators/node (see tests/integration/common/validators.rs), so it
// is loaded with createRequire from --node-modules (default: the
// target/validators/node/node_modules of the repository this script is in).
//
// Exit status: 0 if every file is valid, 1 if some file has errors, 2 on bad
// usage or when the package cannot be loaded.

import { createRequire } from "node:module";
import { readdirSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
let nodeModules = path.join(here, "..", "..", "target", "validators", "node", "node_modules");
const inputs = [];
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === "--node-modules") {
    nodeModules = argv[++i];
  } else {
    inputs.push(argv[i]);
  }
}
if (inputs.length === 0 || nodeModules === undefined) {
  console.error("usage: node validate.mjs [--node-modules DIR] PATH...");
  process.exit(2);
}

let SwaggerParser;
try {
  // createRequire needs a file name; it need not exist.
  const require = createRequire(path.join(path.resolve(nodeModules), "..", "noop.js"));
  SwaggerParser = require("@apidevtools/swagger-parser");
} catch (err) {
  console.error(`cannot load @apidevtools/swagger-parser from ${nodeModules}: ${err.message}`);
  process.exit(2);
}

function expand(p) {
  if (!statSync(p, { throwIfNoEntry: false })?.isDirectory()) {
    return [p];
  }
  const files = [];
  for (const entry of readdirSync(p, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const child = path.join(p, entry.name);
    if (entry.isDirectory()) {
      files.push(...expand(child));
    } else if (entry.name.endsWith(".json")) {
      files.push(child);
    }
  }
  return files;
}

let failed = false;
for (const file of inputs.flatMap(expand)) {
  const errors = [];
  try {
    // Never fetch anything over the network: our documents are self-contained.
    await SwaggerParser.validate(path.resolve(file), { resolve: { http: false } });
  } catch (err) {
    errors.push(`${err.name ?? "Error"}: ${err.message}`);
  }
  failed ||= errors.length > 0;
  process.stdout.write(JSON.stringify({ file, errors }) + "\n");
}
process.exitCode = failed ? 1 : 0;

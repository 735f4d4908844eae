//! The command line: subcommands and what each one does at the edge (files,
//! exit codes, summaries), one file per subcommand. The work itself is in
//! the library.

mod check;
mod convert;
mod demo;
mod export;
pub mod logs;
mod ref_files;
mod serve;
mod server_access;

use clap::{Parser, Subcommand, ValueEnum};

pub use check::{CheckArea, CheckArgs, CheckOutput, CheckProfile, run_check};
pub use convert::{
    ConvertArgs, ConvertCommandError, ConvertSummary, EXIT_BAD_INPUT, EXIT_IO, run_convert,
    write_summary,
};
pub use demo::{DemoArgs, run_demo};
pub use export::{
    ExportArgs, ExportCommandError, ExportLayout, ExportSummary, run_export, write_export_summary,
};
pub use serve::{ServeArgs, ServingArgs, run_serve, serve_config};
pub use server_access::ServerAccess;

/// openapi-proxy publishes Kubernetes API metadata — OpenAPI v3 per
/// group-version and aggregated discovery — for one or several
/// Kubernetes-style API servers, converting Swagger 2.0 on the fly.
#[derive(Debug, Parser)]
#[command(name = "openapi-proxy", version, max_term_width = 100)]
pub struct Cli {
    /// Log format on stderr: text, or json in Kubernetes components' shape
    /// (ts, caller, msg, v, then the pairs).
    #[arg(long, value_enum, default_value_t = LogFormat::Text, global = true)]
    pub log_format: LogFormat,
    /// Log verbosity, as Kubernetes components take it: 0 (default) the
    /// proxy's information and warnings; 4 each poll's requests and
    /// results; 6 and more, debug from every library. RUST_LOG, when set,
    /// wins. Not convert's --verbose, which lists conversion notes.
    #[arg(short = 'v', long = "v", value_name = "N", default_value_t = 0, global = true)]
    pub verbosity: u8,
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Convert a Swagger 2.0 document to OpenAPI 3.0, split per group-version.
    ///
    /// Writes one self-contained OpenAPI 3.0 document per URL key Kubernetes
    /// publishes under /openapi/v3/ — DIR/api/v1.json,
    /// DIR/apis/apps/v1.json, DIR/version.json, … — each holding only the
    /// schemas it references. Lossy spots are summarised on stderr.
    ///
    /// References to other files (`$ref: ./responses.yaml#/responses/Bad`)
    /// are followed: what they point at is copied into the document, so
    /// the output stands alone. Files are read only under the input's
    /// directory (--refs-root widens it) and only .json, .yaml and .yml.
    ///
    /// --verbose and -v differ: --verbose lists each conversion note (what
    /// OpenAPI 3.0 could not carry exactly, with its JSON pointer); -v N
    /// sets the log level, as for every subcommand.
    ///
    /// Exit status: 0 converted; 3 the input is not a usable Swagger 2.0
    /// document (not JSON/YAML, not Swagger 2.0, a $ref to nothing); 4
    /// reading or writing a file failed; 2 bad command line.
    Convert(ConvertArgs),
    /// Serve OpenAPI v3 and discovery (/api, /apis) for a set of downstream servers.
    ///
    /// Polls each downstream (conditional requests), converts Swagger 2.0 for
    /// those without /openapi/v3, and serves the merged documents with
    /// hash-pinned URLs, aggregated discovery (v2, v2beta1) and legacy
    /// discovery merged across downstreams, and /openapi/v2 and /version from
    /// the highest-priority one. Documents stay served when a downstream
    /// fails; its discovery entries turn Stale.
    /// Downstreams come from --config and --downstream (flags after the file's);
    /// the first listed wins a key two of them publish, unless priorities say
    /// otherwise. Health: /healthz, /livez, /readyz; metrics: /metrics.
    // Boxed: its flags make it several times the size of the others.
    Serve(Box<ServeArgs>),
    /// Run the proxy with two built-in downstream servers and print URLs to try.
    ///
    /// One downstream publishes OpenAPI v3 (gadgets.example.com/v1), the other
    /// only Swagger 2.0 (widgets.example.com/v1beta1, converted with the
    /// IntOrString, Quantity and $ref heuristics). Needs nothing but this
    /// binary. Runs until Ctrl-C.
    Demo(DemoArgs),
    /// Check a server's discovery, /version and OpenAPI (v3 and v2) publishing against Kubernetes' behaviour.
    ///
    /// Read-only black-box checks (GET only, to URL only, no redirects
    /// followed, bounded by --timeout, --max-bytes and --deadline) of the
    /// rules in docs/upstream.md#b-11 and document-level rules; prints one line
    /// per rule, then "N passed, M failed, K not applicable". The profile
    /// (openapi-proxy, kube-apiserver, aggregated-apiserver) is picked from
    /// what the server shows unless --profile names one. Against a cluster:
    /// `kubectl proxy`, then `openapi-proxy check http://127.0.0.1:8001`.
    ///
    /// Exit status: 0 every rule passed or did not apply; 1 some rule
    /// failed; 2 bad command line, client setup failed, or the server is
    /// unreachable.
    Check(CheckArgs),
    /// Write a cluster's schemas for offline validation (kubeconform, kubectl-validate, …).
    ///
    /// Reads OpenAPI v3 from the sources — a server (its /openapi/v3; a
    /// base URL, or --kubeconfig's context), Swagger 2.0 or OpenAPI 3.0
    /// files, files or folders of CustomResourceDefinitions (published as
    /// kube-apiserver publishes them) — joins them (the first source wins
    /// a schema or path two define; each clash is a warning) and writes
    /// --out in one layout:
    ///
    ///   kubectl-validate  api/V.json, apis/G/V.json (--local-schemas)
    ///   kubeconform       KIND-PREFIX-V.json (PREFIX: G's first label; KIND-V.json
    ///                     for the core group), one standalone JSON Schema
    ///                     (draft-07) per kind: -schema-location
    ///                     'DIR/{{ .ResourceKind }}{{ .KindSuffix }}.json'
    ///   catalog           G/KIND_V.json (core/ for the core group; CRDs-catalog)
    ///   openapi-v2        swagger.json, one Swagger 2.0 document (kustomize)
    ///
    /// --out is written whole or not at all (a folder beside it, renamed;
    /// -o FILE.tar.gz writes an archive instead), and the same sources
    /// give the same bytes.
    ///
    /// Exit status: 0 exported; 3 a source cannot be used (not a schema
    /// document, a server error); 4 reading or writing a file failed, or
    /// --out exists without --force; 2 bad command line (a server's URL,
    /// credential flags or kubeconfig context among them).
    #[command(verbatim_doc_comment)]
    Export(ExportArgs),
}

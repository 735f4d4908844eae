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

use clap::{Args, Parser, Subcommand, ValueEnum};

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
    /// What every subcommand takes.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// The arguments every subcommand takes, before or after its name.
#[derive(Debug, Args)]
pub struct GlobalArgs {
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
}

/// The command line when its first argument is `convert`: [`Cli`] with
/// no other subcommand.
///
/// clap builds every subcommand's arguments before it parses any, and
/// `serve`'s, `export`'s and `check`'s are most of them: a third of the
/// 0.35 ms `Cli` took to parse `convert`'s arguments (`perf stat`, see
/// BENCHMARKS.md "Conversion"), on every run of a command that takes 10.
/// Parsed this way, `convert` gets the same arguments, help and errors.
#[derive(Debug, Parser)]
#[command(name = "openapi-proxy", version, max_term_width = 100)]
struct ConvertCli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: ConvertOnly,
}

/// [`Command`] with only its `convert`.
#[derive(Debug, Subcommand)]
enum ConvertOnly {
    // As `Command::Convert`: its help text is `ConvertArgs`'s.
    Convert(ConvertArgs),
}

impl Cli {
    /// This process's command line; on a bad one (or `--help`), exits as
    /// clap does.
    #[must_use]
    pub fn parse_args() -> Self {
        Self::try_parse_args_from(std::env::args_os()).unwrap_or_else(|e| e.exit())
    }

    /// Parses `argv` (program name first) as [`Cli::parse_args`] does:
    /// without building the other subcommands when the first argument is
    /// `convert`.
    ///
    /// # Errors
    /// clap's, for a command line it refuses (and for `--help`).
    pub fn try_parse_args_from<I, T>(argv: I) -> Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let argv: Vec<std::ffi::OsString> = argv.into_iter().map(Into::into).collect();
        if argv.get(1).is_some_and(|first| first == "convert") {
            let ConvertCli { global, command: ConvertOnly::Convert(args) } =
                ConvertCli::try_parse_from(argv)?;
            return Ok(Self { global, command: Command::Convert(args) });
        }
        Self::try_parse_from(argv)
    }
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
    // Its help text is `ConvertArgs`'s doc comment, which `ConvertCli`
    // shows too; a doc comment here would take its place.
    #[allow(missing_docs)]
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

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::{Cli, ConvertCli};

    /// `convert`'s own parser must not differ from the whole command
    /// line's in anything a person sees: values, help, errors, exit status.
    #[test]
    fn convert_parses_as_the_whole_command_line_does() {
        let lines = [
            "convert --help",
            "convert -h",
            "convert",
            "convert --bogus",
            "convert --ot d in.json",
            "convert in.json",
            "convert in.json --out",
            "convert --version",
            "convert in.json --out d --refs-root r --keep-file-refs",
            "convert in.json --out d --max-input-bytes 12x",
            "convert in.json --out d -v 99999",
            "convert in.json --out d --log-format yaml",
            "convert in.json other.json --out d",
            "convert in.json --out d --pretty --verbose -v 3 --log-format json --max-input-bytes 1Mi --memory-budget-bytes 2Mi",
            "convert in.json --whole - --v=2",
            "convert --out d -- in.json",
            "convert in.json --out=d --whole=w.json",
            "convert - --out d",
        ];
        for line in lines {
            let argv = std::iter::once("openapi-proxy").chain(line.split(' '));
            let fast = Cli::try_parse_args_from(argv.clone());
            let whole = Cli::try_parse_from(argv);
            match (fast, whole) {
                (Ok(fast), Ok(whole)) => {
                    assert_eq!(format!("{fast:?}"), format!("{whole:?}"), "{line}");
                }
                (Err(fast), Err(whole)) => {
                    assert_eq!(fast.kind(), whole.kind(), "{line}");
                    assert_eq!(fast.exit_code(), whole.exit_code(), "{line}");
                    assert_eq!(
                        fast.render().ansi().to_string(),
                        whole.render().ansi().to_string(),
                        "{line}"
                    );
                }
                (fast, whole) => panic!("{line}: {fast:?} against {whole:?}"),
            }
        }
    }

    /// The point of [`ConvertCli`]: nothing but `convert` (and clap's own
    /// `help`) is built.
    #[test]
    fn convert_alone_builds_one_subcommand() {
        let names: Vec<String> =
            ConvertCli::command().get_subcommands().map(|c| c.get_name().to_owned()).collect();
        assert_eq!(names, ["convert"]);
        assert!(Cli::command().get_subcommands().count() > 1);
    }

    /// Other subcommands, and global arguments before `convert`, go
    /// through the whole command line.
    #[test]
    fn other_command_lines_are_parsed_whole() {
        for line in ["-v 2 convert in.json --out d", "serve --help", "help convert", "conv in.json"]
        {
            let argv = std::iter::once("openapi-proxy").chain(line.split(' '));
            let fast = Cli::try_parse_args_from(argv.clone()).map_err(|e| e.render().to_string());
            let whole = Cli::try_parse_from(argv).map_err(|e| e.render().to_string());
            assert_eq!(format!("{fast:?}"), format!("{whole:?}"), "{line}");
        }
    }
}

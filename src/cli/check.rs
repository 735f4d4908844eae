//! `openapi-proxy check`: its flags, and the report on stdout.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use crate::config;

/// Arguments of `check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Base URL of the server, http:// or https://.
    pub url: String,
    /// File holding a bearer token to send.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// PEM CA bundle to verify the server with [default: the system's roots].
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
    /// Do not verify the server's certificate.
    #[arg(long)]
    pub insecure: bool,
    /// Check only one area.
    #[arg(long, value_enum)]
    pub only: Option<CheckArea>,
    /// Which documented choices to expect (docs/wire.md: Part A or Part B).
    #[arg(long, value_enum, default_value_t = CheckProfile::OpenapiProxy)]
    pub profile: CheckProfile,
    /// Output format.
    #[arg(long, value_enum, default_value_t = CheckOutput::Text)]
    pub output: CheckOutput,
    /// Timeout of one request, e.g. 10s.
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    pub timeout: String,
    /// Deadline of the whole run, e.g. 5m.
    #[arg(long, value_name = "DURATION", default_value = "5m")]
    pub deadline: String,
    /// Largest response body read: bytes, or 64MiB, 64Mi, 1G.
    #[arg(long, value_name = "BYTES", default_value = "64MiB", value_parser = crate::config::bytes::parse_bytes)]
    pub max_bytes: usize,
}

/// `check --only`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CheckArea {
    /// /openapi/v3 and its documents.
    Openapi,
    /// /api, /apis and below.
    Discovery,
}

/// `check --profile`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CheckProfile {
    /// docs/wire.md Part A: openapi-proxy's documented choices.
    OpenapiProxy,
    /// docs/wire.md Part B: a kube-apiserver as clients of a cluster see it.
    KubeApiserver,
}

/// `check --output`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CheckOutput {
    /// One line per rule and a summary.
    Text,
    /// One JSON object (shape in README).
    Json,
}

/// Runs `check` and prints its report on stdout; returns the exit status
/// (0 all passed, 1 some rule failed, 2 unusable arguments or unreachable).
pub async fn run_check(args: &CheckArgs) -> ExitCode {
    let options = match check_options(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let report = match crate::check::run(&options).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {}", crate::error_chain(&e));
            return ExitCode::from(2);
        }
    };
    let mut out = std::io::stdout().lock();
    let written = match args.output {
        CheckOutput::Text => report.write_text(&mut out),
        CheckOutput::Json => writeln!(out, "{:#}", report.to_json()),
    };
    if let Err(e) = written {
        eprintln!("error: writing the report: {e}");
        return ExitCode::from(2);
    }
    if report.counts().failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

fn check_options(args: &CheckArgs) -> Result<crate::check::CheckOptions, String> {
    let duration = |flag: &str, v: &str| {
        config::parse_duration(v).map_err(|problem| format!("{flag} {v:?}: {problem}"))
    };
    Ok(crate::check::CheckOptions {
        fetch: crate::check::FetchOptions {
            base: args.url.clone(),
            ca_file: args.ca_file.clone(),
            insecure: args.insecure,
            token_file: args.token_file.clone(),
            timeout: duration("--timeout", &args.timeout)?,
            deadline: duration("--deadline", &args.deadline)?,
            max_bytes: args.max_bytes,
        },
        profile: match args.profile {
            CheckProfile::OpenapiProxy => crate::check::Profile::OpenapiProxy,
            CheckProfile::KubeApiserver => crate::check::Profile::KubeApiserver,
        },
        only: args.only.map(|a| match a {
            CheckArea::Openapi => crate::check::Area::Openapi,
            CheckArea::Discovery => crate::check::Area::Discovery,
        }),
    })
}

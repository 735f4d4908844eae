//! `openapi-proxy check`: its flags, and the report on stdout.

use std::io::Write;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use crate::config;

/// Arguments of `check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Base URL of the server, http:// or https://.
    pub url: String,
    /// Credentials and TLS.
    #[command(flatten)]
    pub access: super::ServerAccess,
    /// Check only one area.
    #[arg(long, value_enum)]
    pub only: Option<CheckArea>,
    /// Which documented choices to expect (docs/wire.md, Part A, or docs/upstream.md, Part B)
    /// [default: picked from what the server shows, and said in the report].
    #[arg(long, value_enum)]
    pub profile: Option<CheckProfile>,
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
    /// docs/wire.md (Part A): openapi-proxy's documented choices.
    OpenapiProxy,
    /// docs/upstream.md (Part B): a kube-apiserver as clients of a cluster see it.
    KubeApiserver,
    /// An aggregated API server (a generic apiserver) pointed at directly.
    AggregatedApiserver,
}

/// `check --output`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CheckOutput {
    /// One line per rule and a summary.
    Text,
    /// One JSON object (shape in docs/commands.md).
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

/// A base URL ending in a path the rules request themselves
/// (`http://host/apis`) would have every request made below it
/// (`/apis/openapi/v3`) and every rule fail for a typo; a prefix a server
/// is served under (`/k8s/clusters/c-1`) is taken as given.
fn refuse_api_path(url: &str) -> Result<(), String> {
    let path = crate::check::fetch::base_path(url);
    let last = path.rsplit('/').next().unwrap_or_default();
    let api_like = ["/api", "/apis", "/openapi", "/version", "/healthz", "/readyz", "/livez"]
        .iter()
        .any(|p| path == *p || path.starts_with(&format!("{p}/")))
        || matches!(last, "api" | "apis" | "v2" | "v3") && path.contains("/openapi");
    if api_like {
        return Err(format!(
            "{url}: the base URL ends in {path}, a path the rules request themselves \
             (they would ask for {path}/openapi/v3); give the server's root URL, or the \
             prefix it is served under"
        ));
    }
    Ok(())
}

fn check_options(args: &CheckArgs) -> Result<crate::check::CheckOptions, String> {
    let duration = |flag: &str, v: &str| {
        config::parse_duration(v).map_err(|problem| format!("{flag} {v:?}: {problem}"))
    };
    refuse_api_path(&args.url)?;
    Ok(crate::check::CheckOptions {
        fetch: crate::check::FetchOptions {
            base: args.url.clone(),
            ca_file: args.access.ca_file.clone(),
            insecure: args.access.insecure,
            token_file: args.access.token_file.clone(),
            timeout: duration("--timeout", &args.timeout)?,
            deadline: duration("--deadline", &args.deadline)?,
            max_bytes: args.max_bytes,
        },
        profile: args.profile.map(|p| match p {
            CheckProfile::OpenapiProxy => crate::check::Profile::OpenapiProxy,
            CheckProfile::KubeApiserver => crate::check::Profile::KubeApiserver,
            CheckProfile::AggregatedApiserver => crate::check::Profile::AggregatedApiserver,
        }),
        only: args.only.map(|a| match a {
            CheckArea::Openapi => crate::check::Area::Openapi,
            CheckArea::Discovery => crate::check::Area::Discovery,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_url_ending_in_an_api_path_is_refused_naming_it() {
        for url in [
            "http://h:1/apis",
            "http://h:1/api/",
            "https://h/openapi/v3",
            "https://h/version",
            "https://h/k8s/clusters/c-1/openapi/v2",
        ] {
            let e = refuse_api_path(url).unwrap_err();
            assert!(e.contains("give the server's root URL"), "{url}: {e}");
        }
        for url in ["http://h:1", "http://h:1/", "https://rancher/k8s/clusters/c-1"] {
            assert_eq!(refuse_api_path(url), Ok(()), "{url}");
        }
    }
}

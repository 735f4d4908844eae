//! The command line: subcommands and what each one does at the edge (files,
//! exit codes, summaries). The work itself is in the library.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::config::{self, Config, ConfigError, RawConfig, RawDownstream};
use crate::convert::{self, ConvertedTree};
use crate::key::DocumentKey;
use crate::tree::{Node, Object};
use crate::{demo, document, proxy, split};

/// openapi-proxy publishes Kubernetes API metadata — OpenAPI v3 per
/// group-version and aggregated discovery — for one or several
/// Kubernetes-style API servers, converting Swagger 2.0 on the fly.
#[derive(Debug, Parser)]
#[command(name = "openapi-proxy", version, max_term_width = 100)]
pub struct Cli {
    /// Log format on stderr.
    #[arg(long, value_enum, default_value_t = LogFormat::Text, global = true)]
    pub log_format: LogFormat,
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
    Serve(ServeArgs),
    /// Run the proxy with two built-in downstream servers and print URLs to try.
    ///
    /// One downstream publishes OpenAPI v3 (gadgets.example.com/v1), the other
    /// only Swagger 2.0 (widgets.example.com/v1beta1, converted with the
    /// IntOrString, Quantity and $ref heuristics). Needs nothing but this
    /// binary. Runs until Ctrl-C.
    Demo(DemoArgs),
    /// Check a server's discovery and OpenAPI v3 publishing against Kubernetes' behaviour.
    ///
    /// Read-only black-box checks (GET only, to URL only, no redirects
    /// followed, bounded by --timeout, --max-bytes and --deadline) of the
    /// rules in BEHAVIOR.md B-11 and document-level rules; prints one line
    /// per rule, then "N passed, M failed, K not applicable". Against a
    /// cluster: `kubectl proxy`, then `openapi-proxy check
    /// http://127.0.0.1:8001 --profile kube-apiserver`.
    ///
    /// Exit status: 0 every rule passed or did not apply; 1 some rule
    /// failed; 2 bad command line, client setup failed, or the server is
    /// unreachable.
    Check(CheckArgs),
}

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
    /// Which documented choices to expect (BEHAVIOR.md Part A or Part B).
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
    /// Largest response body read, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 64 * 1024 * 1024)]
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
    /// BEHAVIOR.md Part A: openapi-proxy's documented choices.
    OpenapiProxy,
    /// BEHAVIOR.md Part B: a kube-apiserver as clients of a cluster see it.
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

/// Arguments of `serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// YAML configuration file (see README: configuration).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:8080, loopback only].
    #[arg(long, value_name = "HOST:PORT")]
    pub listen: Option<String>,
    /// A downstream server, NAME=URL; repeat for more, in priority order.
    #[arg(long = "downstream", value_name = "NAME=URL")]
    pub downstreams: Vec<String>,
    /// Time between polls of each downstream, e.g. 30s, 2m [default: 30s].
    #[arg(long, value_name = "DURATION")]
    pub poll_interval: Option<String>,
    /// Largest document accepted from a downstream, in bytes [default: 64 MiB].
    #[arg(long, value_name = "BYTES")]
    pub max_document_bytes: Option<usize>,
    /// Serve aggregated discovery apidiscovery.k8s.io/v2beta1 besides v2 [default: true].
    #[arg(long, value_name = "BOOL")]
    pub discovery_v2beta1: Option<bool>,
    /// Answer ordinary plain-HTTP/1.1 requests with the direct transport,
    /// which writes prepared bodies without copying them; false leaves
    /// every request to actix-http [default: true].
    #[arg(long, value_name = "BOOL")]
    pub direct_writes: Option<bool>,
    /// Serving TLS, limits and timeouts (README: Limits and timeouts).
    #[command(flatten)]
    pub serving: crate::serving::ServingArgs,
}

/// Arguments of `demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Address the proxy listens on.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Time between polls of the built-in downstreams.
    #[arg(long, value_name = "DURATION", default_value = "5s")]
    pub poll_interval: String,
}

/// The configuration `serve` runs with: the file (if any), then the flags
/// (flags win for single values; flag downstreams come after the file's).
///
/// # Errors
/// [`ConfigError`] naming the bad field or flag.
pub fn serve_config(args: &ServeArgs) -> Result<Config, ConfigError> {
    let mut raw = match &args.config {
        Some(path) => RawConfig::from_file(path)?,
        None => RawConfig::default(),
    };
    if let Some(listen) = &args.listen {
        raw.listen = Some(listen.clone());
    }
    if let Some(p) = &args.poll_interval {
        raw.poll_interval = Some(p.clone());
    }
    if let Some(m) = args.max_document_bytes {
        raw.max_document_bytes = Some(m);
    }
    if let Some(b) = args.discovery_v2beta1 {
        raw.discovery_v2beta1 = Some(b);
    }
    if let Some(b) = args.direct_writes {
        raw.direct_writes = Some(b);
    }
    args.serving.apply(&mut raw.tls, &mut raw.limits);
    for flag in &args.downstreams {
        let d = config::parse_downstream_flag(flag)
            .map_err(|problem| ConfigError::Invalid { field: "--downstream".into(), problem })?;
        raw.downstreams.push(d);
    }
    Config::from_raw(raw)
}

/// Runs `serve` until SIGINT or SIGTERM.
///
/// # Errors
/// When the proxy cannot start or the server fails.
pub async fn run_serve(config: Config) -> anyhow::Result<()> {
    if config.downstreams.is_empty() {
        tracing::warn!("no downstream servers configured: serving an empty document set");
    }
    let running = proxy::start(&config)?;
    running.done.await??;
    Ok(())
}

/// Runs `demo` until Ctrl-C.
///
/// # Errors
/// When the built-in servers or the proxy cannot start.
pub async fn run_demo(args: &DemoArgs) -> anyhow::Result<()> {
    let sites = demo::start_demo_sites()
        .map_err(|e| anyhow::anyhow!("starting the built-in downstreams: {e}"))?;
    let raw = RawConfig {
        listen: Some(args.listen.clone()),
        poll_interval: Some(args.poll_interval.clone()),
        max_document_bytes: None,
        discovery_v2beta1: None,
        direct_writes: None,
        downstreams: vec![
            RawDownstream {
                name: Some("gadgets".into()),
                url: Some(sites.gadgets.url()),
                ..RawDownstream::default()
            },
            RawDownstream {
                name: Some("widgets".into()),
                url: Some(sites.widgets.url()),
                ..RawDownstream::default()
            },
        ],
        ..RawConfig::default()
    };
    let config = Config::from_raw(raw)?;
    let running = proxy::start(&config).map_err(|e| {
        anyhow::Error::new(e).context("use --listen 127.0.0.1:0 to pick a free port")
    })?;
    // Wait for the first snapshot, to print working hash URLs.
    for _ in 0..100 {
        if running.state.store.load().ready {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    print_demo_banner(&running, &sites);
    running.done.await??;
    Ok(())
}

#[allow(clippy::print_stdout, reason = "the demo's banner is its output")]
fn print_demo_banner(running: &proxy::Running, sites: &demo::DemoSites) {
    let base = format!("http://{}", running.addr);
    let snap = running.state.store.load();
    let widgets = snap
        .openapi
        .get("apis/widgets.example.com/v1beta1")
        .map(|e| e.location.to_str().unwrap_or_default().to_owned());
    println!("openapi-proxy demo: the proxy serves {base}");
    println!("  downstream gadgets, publishes OpenAPI v3:          {}", sites.gadgets.url());
    println!("  downstream widgets, publishes Swagger 2.0 only:    {}", sites.widgets.url());
    println!("  {} documents served (generation {})", snap.openapi.len(), snap.generation);
    println!();
    println!("Try:");
    println!("  curl -s {base}/openapi/v3");
    if let Some(url) = widgets {
        println!("  curl -si '{base}{url}' | head -12");
        println!(
            "  curl -s '{base}{url}' | python3 -m json.tool | grep -B2 -A8 x-kubernetes-int-or-string"
        );
    }
    println!("  curl -si -H 'If-None-Match: {}' {base}/openapi/v3", snap.openapi_root.etag_str());
    println!("  curl -s {base}/metrics | grep '^openapi_proxy_downstream'");
    println!("  kubectl --server {base} api-resources");
    println!("  kubectl --server {base} explain widgets.spec");
    println!(
        "  curl -s -H 'Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' {base}/apis"
    );
    println!();
    println!("Ctrl-C stops.");
}

/// Arguments of `convert`.
#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// The Swagger 2.0 document, JSON or YAML; `-` reads standard input.
    pub input: PathBuf,
    /// Directory to write the per-key documents into (created if missing).
    #[arg(long, value_name = "DIR", required_unless_present = "whole")]
    pub out: Option<PathBuf>,
    /// Also write the whole converted document, unsplit, to FILE.
    #[arg(long, value_name = "FILE")]
    pub whole: Option<PathBuf>,
    /// Indent the JSON output (compact by default, as Kubernetes serves it).
    #[arg(long)]
    pub pretty: bool,
    /// List every note on stderr, not only the count per kind.
    #[arg(long, short)]
    pub verbose: bool,
}

/// Exit status for input that cannot be converted.
pub const EXIT_BAD_INPUT: u8 = 3;
/// Exit status for failed file reads or writes.
pub const EXIT_IO: u8 = 4;

/// Why `convert` failed, sorted by who has to act: the author of the
/// document, or whoever owns the files.
#[derive(Debug, thiserror::Error)]
pub enum ConvertCommandError {
    /// The input could not be read as JSON or YAML.
    #[error("reading {input} as JSON or YAML")]
    Parse {
        /// The input path.
        input: String,
        /// The parser's error.
        #[source]
        source: document::ParseError,
    },
    /// The input is not a convertible Swagger 2.0 document.
    #[error("converting {input}")]
    Convert {
        /// The input path.
        input: String,
        /// Why.
        #[source]
        source: convert::ConvertError,
    },
    /// The converted document could not be split.
    #[error("splitting the converted document")]
    Split(#[source] split::SplitError),
    /// A file could not be read or written.
    #[error("{action} {path}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl ConvertCommandError {
    /// The process exit status for this error.
    #[must_use]
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Self::Io { .. } => ExitCode::from(EXIT_IO),
            _ => ExitCode::from(EXIT_BAD_INPUT),
        }
    }
}

/// What `convert` produced, for the summary.
#[derive(Debug)]
pub struct ConvertSummary {
    /// Keys written, in order.
    pub keys: Vec<DocumentKey>,
    /// Schemas in the whole converted document.
    pub schemas: usize,
    /// The conversion notes.
    pub notes: Vec<convert::Note>,
    /// Paths that belong to no key.
    pub unplaced: Vec<String>,
}

/// Runs `convert`: read, convert, split, write.
///
/// # Errors
/// [`ConvertCommandError`], whose [`ConvertCommandError::exit_code`] tells
/// bad input from I/O failures.
pub fn run_convert(args: &ConvertArgs) -> Result<ConvertSummary, ConvertCommandError> {
    let input_name = args.input.display().to_string();
    let bytes = read_input(&args.input)?;
    // Trees borrowing from `bytes` all the way: no `Value` is built unless
    // `--whole` or `--pretty` asks for one.
    let v2 = document::parse_tree(&bytes)
        .map_err(|source| ConvertCommandError::Parse { input: input_name.clone(), source })?;
    let ConvertedTree { document, notes } = convert::convert_tree(&v2)
        .map_err(|source| ConvertCommandError::Convert { input: input_name.clone(), source })?;
    let schemas =
        document.pointer("/components/schemas").and_then(Node::as_object).map_or(0, Object::len);
    if let Some(whole) = &args.whole {
        if args.pretty {
            write_json(whole, &document.to_value(), true)?;
        } else {
            // Sized up front: a doubling buffer leaves its smaller copies
            // behind, pages the kernel has to zero for nothing.
            let mut out = Vec::with_capacity(bytes.len());
            document.render(&mut out);
            write_bytes(whole, &out)?;
        }
    }
    let mut keys = Vec::new();
    let mut unplaced = Vec::new();
    if let Some(dir) = &args.out {
        // Each document is written as soon as it is rendered; after the
        // first failure the rest are skipped and the failure is reported.
        let mut failed = None;
        let mut made_dirs = BTreeSet::new();
        unplaced = split::split_rendered_each(&document, bytes.len(), |key, rendered| {
            if failed.is_some() {
                return;
            }
            let path = dir.join(format!("{key}.json"));
            let written = if args.pretty {
                serde_json::from_slice::<serde_json::Value>(rendered)
                    .map_err(|e| io_error("re-reading", &path, std::io::Error::other(e)))
                    .and_then(|doc| write_json(&path, &doc, true))
            } else {
                make_parent(&path, &mut made_dirs).and_then(|()| replace_file(&path, rendered))
            };
            match written {
                Ok(()) => keys.push(key.clone()),
                Err(e) => failed = Some(e),
            }
        })
        .map_err(ConvertCommandError::Split)?;
        if let Some(e) = failed {
            return Err(e);
        }
    }
    // The process exits right after this. Freeing the parsed and the
    // converted trees (a million small nodes each for a whole cluster's
    // document) would cost a sixth of the run and give nothing back.
    std::mem::forget(document);
    std::mem::forget(v2);
    Ok(ConvertSummary { keys, schemas, notes, unplaced })
}

/// Writes the summary of a conversion to `w` (stderr in practice).
///
/// # Errors
/// When writing to `w` fails.
pub fn write_summary(
    w: &mut dyn Write,
    summary: &ConvertSummary,
    verbose: bool,
) -> std::io::Result<()> {
    let gv = summary.keys.iter().filter(|k| k.is_group_version()).count();
    writeln!(
        w,
        "converted: {} documents ({} group-versions, {} other), {} schemas, {} notes",
        summary.keys.len(),
        gv,
        summary.keys.len() - gv,
        summary.schemas,
        summary.notes.len()
    )?;
    if !summary.keys.is_empty() {
        let names: Vec<&str> = summary.keys.iter().map(DocumentKey::as_str).collect();
        writeln!(w, "keys: {}", names.join(" "))?;
    }
    let mut by_kind: BTreeMap<&str, usize> = BTreeMap::new();
    for n in &summary.notes {
        *by_kind.entry(n.kind.label()).or_default() += 1;
    }
    for (kind, count) in &by_kind {
        writeln!(w, "  note {kind}: {count}")?;
    }
    if verbose {
        for n in &summary.notes {
            writeln!(w, "  {n}")?;
        }
    } else if !summary.notes.is_empty() {
        writeln!(w, "  (--verbose lists each note with its JSON pointer)")?;
    }
    for p in &summary.unplaced {
        writeln!(w, "  path {p:?} belongs to no document key; not written")?;
    }
    Ok(())
}

fn read_input(input: &Path) -> Result<Vec<u8>, ConvertCommandError> {
    let io = |source| ConvertCommandError::Io {
        action: "reading",
        path: input.display().to_string(),
        source,
    };
    if input.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::stdin().read_to_end(&mut buf).map_err(io)?;
        Ok(buf)
    } else {
        std::fs::read(input).map_err(io)
    }
}

fn io_error(action: &'static str, path: &Path, source: std::io::Error) -> ConvertCommandError {
    ConvertCommandError::Io { action, path: path.display().to_string(), source }
}

fn write_json(
    path: &Path,
    value: &serde_json::Value,
    pretty: bool,
) -> Result<(), ConvertCommandError> {
    let bytes = if pretty { serde_json::to_vec_pretty(value) } else { serde_json::to_vec(value) }
        .map_err(|e| io_error("serializing", path, std::io::Error::other(e)))?;
    write_bytes(path, &bytes)
}

fn write_bytes(path: &Path, bytes: &[u8]) -> Result<(), ConvertCommandError> {
    make_parent(path, &mut BTreeSet::new())?;
    replace_file(path, bytes)
}

/// Creates the directory `path` goes in, unless `made` says it was already
/// (one `mkdir` per directory rather than per file).
fn make_parent(path: &Path, made: &mut BTreeSet<PathBuf>) -> Result<(), ConvertCommandError> {
    if let Some(parent) = path.parent()
        && !made.contains(parent)
    {
        std::fs::create_dir_all(parent)
            .map_err(|e| io_error("creating the directory of", path, e))?;
        made.insert(parent.to_path_buf());
    }
    Ok(())
}

/// Writes `bytes` to `path` over what is there, then cuts a regular file
/// to the new length, instead of truncating it first.
///
/// On ext4, truncating a file that has data to nothing and writing it
/// again makes the kernel flush it on close (`auto_da_alloc`, its guard for
/// programs that replace files without `fsync`), and so does renaming over
/// one: rerunning the command over its previous output took two to three
/// times as long as writing into a fresh directory, all of it waiting on
/// the disk. Overwriting in place reuses the file's blocks and flushes
/// nothing early. Measured on this machine with 48 files of 100 kB written
/// 25 times (Python, median): truncate and write 12–15 ms, unlink and
/// create 2.7–3.7 ms, overwrite and cut 0.6–0.95 ms.
///
/// Like truncating, this is not atomic for a reader of the file; links,
/// ownership and permissions stay, and a symbolic link or a device
/// (`/dev/null`) is written through as before.
fn replace_file(path: &Path, bytes: &[u8]) -> Result<(), ConvertCommandError> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| io_error("writing", path, e))?;
    file.write_all(bytes).map_err(|e| io_error("writing", path, e))?;
    let len = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    let meta = file.metadata().map_err(|e| io_error("writing", path, e))?;
    if meta.is_file() && meta.len() > len {
        file.set_len(len).map_err(|e| io_error("writing", path, e))?;
    }
    Ok(())
}

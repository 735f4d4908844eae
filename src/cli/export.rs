//! `openapi-proxy export`: read the sources (files, folders, a server),
//! lay their schemas out as an offline validator reads them, and write the
//! result whole or not at all. The work between reading and writing is
//! `export/`'s.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use flate2::write::GzEncoder;
use futures_util::StreamExt;

use super::convert::{EXIT_BAD_INPUT, EXIT_IO, read_sized};
use crate::body::rendered::Rendered;
use crate::config::{Config, ConfigError, RawConfig, RawDownstream};
use crate::export::layout::{self, Collision, Laying, Layout, LayoutError};
use crate::export::schema::{DRAFT, Options};
use crate::export::source::{self, Found, SourceError};
use crate::export::{Clash, CollectError, KeyDocument, within_budget};
use crate::openapi::v2::assemble;
use crate::outbound::client::{DownstreamClient, Fetched};
use crate::outbound::error::{ClientError, FetchError};
use crate::wire::key::DocumentKey;

/// Arguments of `export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Where the schemas come from, first wins: a server's base URL
    /// (http:// or https://; its /openapi/v3 documents), a Swagger 2.0 or
    /// OpenAPI 3.0 file, or a file or folder of CustomResourceDefinitions
    /// (YAML or JSON; folders are read recursively, .yaml, .yml and .json
    /// files only).
    #[arg(required_unless_present = "kubeconfig", value_name = "SOURCE")]
    pub sources: Vec<String>,
    /// How the files are laid out.
    #[arg(long, value_enum)]
    pub layout: ExportLayout,
    /// The folder to write, or a gzipped tar archive of it when the name
    /// ends in .tar.gz or .tgz. It must not exist, unless --force: then it
    /// is replaced, whole, once the new one is complete.
    #[arg(short = 'o', long, value_name = "DIR|FILE.tar.gz")]
    pub out: PathBuf,
    /// Replace --out if it exists.
    #[arg(long)]
    pub force: bool,
    /// JSON Schema layouts: every object that lists its properties refuses
    /// others (additionalProperties: false), at every depth, except where
    /// x-kubernetes-preserve-unknown-fields says otherwise.
    #[arg(long)]
    pub strict: bool,
    /// A kubeconfig whose context names a server and its credentials
    /// (token, client certificate, exec plugin): that server is the first
    /// source, before the SOURCE arguments. Its credentials go to it
    /// alone, never to a SOURCE URL.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The --kubeconfig context to use instead of its current-context.
    #[arg(long, value_name = "NAME", requires = "kubeconfig")]
    pub context: Option<String>,
    /// Server sources given by URL: credentials and TLS.
    #[command(flatten)]
    pub access: super::ServerAccess,
    /// Server sources: timeout of one request, e.g. 30s.
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub timeout: String,
    /// Server sources: deadline of all requests to one server together,
    /// e.g. 10m (its documents are fetched as they are laid out: the
    /// time laying them out counts).
    #[arg(long, value_name = "DURATION", default_value = "10m")]
    pub deadline: String,
    /// The largest file read, or document fetched: bytes, or 64MiB, 64Mi, 1G.
    #[arg(long, value_name = "BYTES", default_value = "64MiB", value_parser = crate::config::bytes::parse_bytes)]
    pub max_bytes: usize,
    /// The most one group-version's documents (of all sources together)
    /// may hold: they are laid out one group-version at a time, so what
    /// the sources hold together may be many times more. For --layout
    /// openapi-v2, which merges them all, they may hold a quarter of it
    /// together, as merging holds about four times as much. Past it the
    /// export stops and writes nothing [default: the budget `serve` takes
    /// on this machine: half of the container's memory limit less 64 MiB,
    /// or of a quarter of the physical memory without a limit].
    #[arg(long, value_name = "BYTES", value_parser = crate::config::bytes::parse_bytes)]
    pub memory_budget_bytes: Option<usize>,
}

/// `export --layout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportLayout {
    /// `api/<v>.json` and `apis/<g>/<v>.json`: the OpenAPI v3 documents
    /// (kubectl-validate --local-schemas).
    KubectlValidate,
    /// `<kind>-<group prefix>-<version>.json`, one standalone JSON Schema
    /// per kind (kubeconform -schema-location).
    Kubeconform,
    /// `<group>/<kind>_<version>.json`, one standalone JSON Schema per kind
    /// (datree CRDs-catalog, flux-schema).
    Catalog,
    /// swagger.json: one Swagger 2.0 document (kustomize's openapi: field).
    OpenapiV2,
}

impl ExportLayout {
    fn layout(self) -> Layout {
        match self {
            Self::KubectlValidate => Layout::KubectlValidate,
            Self::Kubeconform => Layout::Kubeconform,
            Self::Catalog => Layout::Catalog,
            Self::OpenapiV2 => Layout::OpenapiV2,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::KubectlValidate => "kubectl-validate",
            Self::Kubeconform => "kubeconform",
            Self::Catalog => "catalog",
            Self::OpenapiV2 => "openapi-v2",
        }
    }
}

/// Why `export` failed.
#[derive(Debug, thiserror::Error)]
pub enum ExportCommandError {
    /// --out exists and --force was not given.
    #[error("{0} exists; give --force to replace it")]
    OutExists(String),
    /// A flag's value is not usable.
    #[error("{flag} {value:?}: {problem}")]
    Flag {
        /// The flag.
        flag: &'static str,
        /// Its value.
        value: String,
        /// Why.
        problem: String,
    },
    /// A file could not be read or written.
    #[error("{action} {path}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file is larger than --max-bytes.
    #[error("{path} is larger than --max-bytes ({limit} bytes); refused")]
    TooLarge {
        /// The file.
        path: String,
        /// The limit.
        limit: usize,
    },
    /// A file's documents could not be used.
    #[error("{path}")]
    Source {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: SourceError,
    },
    /// A server source's URL, credentials or flags are not usable.
    #[error("server source {source_name}: {problem}")]
    ServerSetup {
        /// The source as given (a password in it hidden).
        source_name: String,
        /// What is wrong, naming the flag.
        problem: String,
    },
    /// The server's client could not be built (TLS material).
    #[error("server source {source_name}")]
    ServerClient {
        /// The source (a password in it hidden).
        source_name: String,
        /// Why (boxed: TLS errors are large, and every result of the
        /// command carries this type).
        #[source]
        source: Box<ClientError>,
    },
    /// A request to the server failed.
    #[error("server source {url}")]
    Server {
        /// The server (a password in it hidden).
        url: String,
        /// Why.
        #[source]
        source: FetchError,
    },
    /// The server answered without the document asked for.
    #[error("server source {url}: {problem}")]
    ServerAnswer {
        /// The server (a password in it hidden).
        url: String,
        /// What it answered.
        problem: String,
    },
    /// Documents of one key could not be joined.
    #[error(transparent)]
    Collect(#[from] CollectError),
    /// The layout could not be made.
    #[error("laying out")]
    Layout(#[source] LayoutError),
    /// No source gave a document.
    #[error("the sources hold no OpenAPI document and no CustomResourceDefinition")]
    Nothing,
}

impl ExportCommandError {
    /// The process exit status: 4 for files and folders, 2 for flags
    /// (a server source's URL, credentials or kubeconfig context among
    /// them), 3 for sources that cannot be used.
    #[must_use]
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Self::Io { .. } | Self::OutExists(_) => ExitCode::from(EXIT_IO),
            Self::Flag { .. } | Self::ServerSetup { .. } => ExitCode::from(2),
            _ => ExitCode::from(EXIT_BAD_INPUT),
        }
    }
}

/// What `export` did, for the summary.
#[derive(Debug, Default)]
pub struct ExportSummary {
    /// The layout's name.
    pub layout: &'static str,
    /// Where it was written.
    pub out: String,
    /// Files written.
    pub files: usize,
    /// Documents laid out.
    pub documents: usize,
    /// Each source and what it held.
    pub sources: Vec<(String, Found)>,
    /// Members two sources define differently.
    pub clashes: Vec<Clash>,
    /// Kinds left out for a file name taken.
    pub collisions: Vec<Collision>,
    /// Kinds left out for a name no file can carry.
    pub bad_kinds: Vec<String>,
    /// Whether the schemas are strict.
    pub strict: bool,
}

/// Runs `export`: first what each source holds, by key (a server's
/// `/openapi/v3` root; each file read once, its documents spooled), then
/// key after key in key order, its documents fetched or read back,
/// joined, laid out and written. What is held at once is one key's
/// documents and the next few being fetched, whatever the sources hold
/// together.
///
/// # Errors
/// [`ExportCommandError`], whose [`ExportCommandError::exit_code`] tells
/// unusable sources from file trouble.
pub async fn run_export(args: &ExportArgs) -> Result<ExportSummary, ExportCommandError> {
    let out_name = args.out.display().to_string();
    if args.out.symlink_metadata().is_ok() && !args.force {
        return Err(ExportCommandError::OutExists(out_name));
    }
    let mut summary = ExportSummary {
        layout: args.layout.name(),
        out: out_name,
        strict: args.strict,
        ..ExportSummary::default()
    };
    let budget = args.memory_budget_bytes.unwrap_or_else(|| {
        crate::config::memory::default_budget(&crate::config::memory::MachineMemory::detect()).0
    });
    let mut plan = Plan::new(budget);
    let kubeconfig = args.kubeconfig.as_ref().map(|_| None);
    let urls = args.sources.iter().map(|s| Some(s.as_str()));
    for source in kubeconfig.into_iter().chain(urls) {
        let server = match source {
            None => true,
            Some(s) => s.starts_with("http://") || s.starts_with("https://"),
        };
        if server {
            summary.sources.push(plan.server(source, args).await?);
        } else if let Some(source) = source {
            for file in files_of(Path::new(source))? {
                summary.sources.push(plan.file(&file, args)?);
            }
        }
    }
    if plan.keys.is_empty() {
        return Err(ExportCommandError::Nothing);
    }
    summary.documents = plan.keys.len();
    let mut sink = Sink::stage(&args.out)?;
    let (report, clashes) = match lay_out_plan(plan, args, budget, &mut sink).await {
        Ok(done) => done,
        Err(e) => {
            sink.remove();
            return Err(e);
        }
    };
    sink.commit(&args.out)?;
    summary.clashes = clashes;
    summary.files = report.files;
    summary.collisions = report.collisions;
    summary.bad_kinds = report.bad_kinds;
    Ok(summary)
}

/// Where one source's document of a key is when the key's turn comes.
enum Piece {
    /// In the spool, `len` bytes at `at`.
    Spooled { at: u64, len: usize },
    /// At `path` of server `server` (its index in [`Plan::servers`]).
    Server { server: usize, path: String },
}

/// One source's document of a key.
struct Planned {
    /// Its place in the order the sources give documents: clashes are
    /// told in it.
    seq: usize,
    /// Its source, an index in [`Plan::origins`].
    origin: usize,
    piece: Piece,
}

/// What the sources hold, by key, in source order, before any key is laid
/// out.
struct Plan {
    keys: BTreeMap<DocumentKey, Vec<Planned>>,
    /// The sources' names as the summary and errors show them.
    origins: Vec<String>,
    servers: Vec<Server>,
    /// Made with the first file source's first document.
    spool: Option<Spool>,
    /// What one key's documents may hold together.
    budget: usize,
    /// The documents planned so far.
    seq: usize,
}

/// A server source: its client, and when its requests must be done by.
struct Server {
    client: DownstreamClient,
    shown: String,
    deadline: tokio::time::Instant,
    deadline_text: String,
}

impl Server {
    /// The body of `GET path`, before the server's --deadline.
    async fn get(&self, path: &str) -> Result<Vec<u8>, ExportCommandError> {
        tokio::time::timeout_at(self.deadline, get(&self.client, &self.shown, path, IN_FLIGHT))
            .await
            .unwrap_or_else(|_| Err(past_deadline(&self.shown, &self.deadline_text)))
    }
}

fn past_deadline(shown: &str, deadline: &str) -> ExportCommandError {
    ExportCommandError::ServerAnswer {
        url: shown.to_owned(),
        problem: format!("not done within --deadline {deadline}"),
    }
}

impl Plan {
    fn new(budget: usize) -> Self {
        Self {
            keys: BTreeMap::new(),
            origins: Vec::new(),
            servers: Vec::new(),
            spool: None,
            budget,
            seq: 0,
        }
    }

    /// A server source (see [`server_client`]): the group-version
    /// documents its `/openapi/v3` root names, each to be asked for at its
    /// turn (with the root's `?hash=`), within --deadline of now.
    async fn server(
        &mut self,
        url: Option<&str>,
        args: &ExportArgs,
    ) -> Result<(String, Found), ExportCommandError> {
        let deadline_text = args.deadline.clone();
        let deadline = crate::config::parse_duration(&args.deadline).map_err(|problem| {
            ExportCommandError::Flag { flag: "--deadline", value: deadline_text.clone(), problem }
        })?;
        let (client, shown) = server_client(url, args)?;
        let server = Server {
            client,
            shown: shown.clone(),
            deadline: tokio::time::Instant::now() + deadline,
            deadline_text,
        };
        let root = server.get("/openapi/v3").await?;
        let root: serde_json::Value =
            serde_json::from_slice(&root).map_err(|e| ExportCommandError::ServerAnswer {
                url: shown.clone(),
                problem: format!("/openapi/v3 is not JSON: {e}"),
            })?;
        let index = self.servers.len();
        let origin = self.origins.len();
        self.origins.push(shown.clone());
        let mut found = Found::default();
        for (key, entry) in root.get("paths").and_then(|p| p.as_object()).into_iter().flatten() {
            let Some(key) = DocumentKey::parse(key) else {
                tracing::warn!(
                    server = shown,
                    key,
                    "document key not usable as a file name; skipped"
                );
                continue;
            };
            if !key.is_group_version() {
                continue;
            }
            // The URL the root gives (with its ?hash=), if it is one of the
            // server's documents; nothing else is asked for.
            let path = entry
                .get("serverRelativeURL")
                .and_then(|u| u.as_str())
                .filter(|u| u.starts_with(&format!("/openapi/v3/{key}")))
                .map_or_else(|| format!("/openapi/v3/{key}"), str::to_owned);
            let piece = Piece::Server { server: index, path };
            self.keys.entry(key).or_default().push(Planned { seq: self.seq, origin, piece });
            self.seq += 1;
            found.openapi += 1;
        }
        self.servers.push(server);
        Ok((shown, found))
    }

    /// A file source: its documents, made now and spooled. A key whose
    /// spooled documents together pass the budget stops the export here,
    /// before anything is laid out.
    fn file(
        &mut self,
        file: &Path,
        args: &ExportArgs,
    ) -> Result<(String, Found), ExportCommandError> {
        let name = file.display().to_string();
        let bytes = read_file(file, args.max_bytes)?;
        let origin = self.origins.len();
        self.origins.push(name.clone());
        let mut failed = Ok(());
        let found = source::documents_of(&bytes, args.max_bytes.saturating_mul(8), |key, doc| {
            if failed.is_ok() {
                failed = self.spool_document(&args.out, key, &doc, origin);
            }
        })
        .map_err(|source| ExportCommandError::Source { path: name.clone(), source })?;
        failed?;
        Ok((name, found))
    }

    fn spool_document(
        &mut self,
        out: &Path,
        key: DocumentKey,
        doc: &[u8],
        origin: usize,
    ) -> Result<(), ExportCommandError> {
        let spool = match &mut self.spool {
            Some(spool) => spool,
            None => self.spool.insert(Spool::create(out)?),
        };
        let pieces = self.keys.entry(key.clone()).or_default();
        let held = pieces
            .iter()
            .map(|p| match p.piece {
                Piece::Spooled { len, .. } => len,
                Piece::Server { .. } => 0,
            })
            .sum::<usize>()
            .saturating_add(doc.len());
        within_budget(&key, &self.origins[origin], held, self.budget)?;
        let at = spool.put(doc)?;
        let piece = Piece::Spooled { at, len: doc.len() };
        pieces.push(Planned { seq: self.seq, origin, piece });
        self.seq += 1;
        Ok(())
    }
}

/// The documents of the file sources, written down as they are made and
/// read back at their key's turn: a file may bring documents of many keys
/// and a key documents of many files, so a file's documents cannot be laid
/// out as it is read, and holding them all was most of the export's peak
/// (BENCHMARKS.md, "`export` at 5,000 CRDs"). A file beside --out, gone
/// with the export (on Unix from the start: it is unlinked once open).
struct Spool {
    path: PathBuf,
    file: std::io::BufWriter<std::fs::File>,
    len: u64,
}

impl Spool {
    fn create(out: &Path) -> Result<Self, ExportCommandError> {
        let path = beside(out, "spool");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| io("creating", &path, e))?;
        #[cfg(unix)]
        let _ = std::fs::remove_file(&path);
        Ok(Self { path, file: std::io::BufWriter::with_capacity(1 << 20, file), len: 0 })
    }

    /// Writes `bytes` at the end; where they start.
    fn put(&mut self, bytes: &[u8]) -> Result<u64, ExportCommandError> {
        self.file.write_all(bytes).map_err(|e| io("writing", &self.path, e))?;
        let at = self.len;
        self.len += bytes.len() as u64;
        Ok(at)
    }

    /// The `len` bytes at `at`.
    fn get(&mut self, at: u64, len: usize) -> Result<Vec<u8>, ExportCommandError> {
        use std::io::{Read, Seek, SeekFrom};
        let err = |e| io("reading back", &self.path, e);
        self.file.flush().map_err(err)?;
        let file = self.file.get_mut();
        file.seek(SeekFrom::Start(at)).map_err(err)?;
        let mut bytes = vec![0; len];
        file.read_exact(&mut bytes).map_err(err)?;
        // Back to the end, where the next document goes.
        file.seek(SeekFrom::End(0)).map_err(err)?;
        Ok(bytes)
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        // Unlinked already on Unix.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// `.<name of out>.<what>-<pid>` in the folder of `out`.
fn beside(out: &Path, what: &str) -> PathBuf {
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    let name =
        out.file_name().map_or_else(|| "export".into(), |n| n.to_string_lossy().into_owned());
    parent.join(format!(".{name}.{what}-{}", std::process::id()))
}

/// Lays out every key of `plan`, in key order, into `sink`: the key's
/// documents, fetched (IN_FLIGHT at a time, ahead of their turn) or read
/// back from the spool, joined, laid out, dropped. For --layout
/// openapi-v2 the joined documents are kept, compressed as `serve` keeps
/// them, to be merged at the end one at a time as `serve` merges its
/// `/openapi/v2`; what that holds at its peak, estimated as `serve`
/// estimates it, may be half the budget. The clashes come in the order
/// the sources gave the documents.
async fn lay_out_plan(
    plan: Plan,
    args: &ExportArgs,
    budget: usize,
    sink: &mut Sink,
) -> Result<(layout::Report, Vec<Clash>), ExportCommandError> {
    let Plan { keys, origins, servers, mut spool, .. } = plan;
    let servers = &servers;
    let wanted: Vec<(usize, String)> = keys
        .values()
        .flatten()
        .filter_map(|p| match &p.piece {
            Piece::Server { server, path } => Some((*server, path.clone())),
            Piece::Spooled { .. } => None,
        })
        .collect();
    let mut fetched = futures_util::stream::iter(wanted)
        .map(|(server, path)| async move { servers[server].get(&path).await })
        .buffered(IN_FLIGHT);
    let options = Options { strict: args.strict };
    let mut laying = Laying::new(args.layout.layout(), options);
    let mut whole: Vec<(String, Arc<Rendered>)> = Vec::new();
    let mut merging = assemble::MakingCost::default();
    let mut clashes = Vec::new();
    let mut progress = Progress::new("laid out", keys.len());
    for (done, (key, pieces)) in keys.into_iter().enumerate() {
        let mut doc: Option<KeyDocument> = None;
        let mut held = 0usize;
        let mut last = "";
        for Planned { seq, origin, piece } in pieces {
            let origin = &origins[origin];
            let bytes = match piece {
                Piece::Spooled { at, len } => {
                    spool.as_mut().expect("a spooled document has its spool").get(at, len)?
                }
                Piece::Server { .. } => fetched
                    .next()
                    .await
                    .expect("a document asked of a server for each one planned")?,
            };
            held = held.saturating_add(bytes.len());
            within_budget(&key, origin, held, budget)?;
            last = origin;
            match &mut doc {
                None => doc = Some(KeyDocument::new(key.clone(), bytes, origin)),
                Some(d) => clashes.extend(d.join(bytes, origin)?.into_iter().map(|c| (seq, c))),
            }
        }
        let Some(doc) = doc else { continue };
        let bytes = doc.into_bytes();
        match &mut laying {
            Some(laying) => laying
                .document(&key, &bytes, |file, bytes| sink.put(file, bytes))
                .map_err(ExportCommandError::Layout)??,
            None => {
                let rendered = Arc::new(Rendered::document(bytes));
                merging.add(&rendered);
                let cost = usize::try_from(merging.peak()).unwrap_or(usize::MAX);
                within_budget(&key, last, cost, budget / 2)?;
                whole.push((key.to_string(), rendered));
            }
        }
        progress.at(done + 1);
    }
    let report = match laying {
        Some(laying) => laying.finish(),
        None => merged_v2(whole, sink)?,
    };
    progress.done();
    // Stable: the clashes of one document stay in the order found.
    clashes.sort_by_key(|(seq, _)| *seq);
    Ok((report, clashes.into_iter().map(|(_, c)| c).collect()))
}

/// The files a path source names: itself, or for a folder every .json,
/// .yaml and .yml file below it, in path order (so a re-run reads them in
/// the same order, and the first of two clashing files is the same).
fn files_of(path: &Path) -> Result<Vec<PathBuf>, ExportCommandError> {
    let meta = std::fs::metadata(path).map_err(|e| io("reading", path, e))?;
    if !meta.is_dir() {
        return Ok(vec![path.to_owned()]);
    }
    let mut out = Vec::new();
    let mut folders = vec![path.to_owned()];
    while let Some(dir) = folders.pop() {
        for entry in std::fs::read_dir(&dir).map_err(|e| io("reading", &dir, e))? {
            let entry = entry.map_err(|e| io("reading", &dir, e))?;
            let p = entry.path();
            let kind = entry.file_type().map_err(|e| io("reading", &p, e))?;
            // Hidden files and folders (.git) are no one's schemas.
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            if kind.is_dir() {
                folders.push(p);
            } else if p
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| matches!(e, "json" | "yaml" | "yml"))
            {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

fn read_file(path: &Path, limit: usize) -> Result<Vec<u8>, ExportCommandError> {
    let reading = |e| io("reading", path, e);
    let file = std::fs::File::open(path).map_err(reading)?;
    let len = file.metadata().map_err(reading)?.len();
    read_sized(file, len, limit as u64)
        .map_err(reading)?
        .ok_or_else(|| ExportCommandError::TooLarge { path: path.display().to_string(), limit })
}

/// How many documents are asked for at once.
const IN_FLIGHT: usize = 8;

/// The client of a server source: `url` with the credential flags, or
/// (`None`) the server and credentials of the --kubeconfig context, made
/// and checked as `serve` makes a downstream's (`config/`), and the name
/// it may be shown by.
fn server_client(
    url: Option<&str>,
    args: &ExportArgs,
) -> Result<(DownstreamClient, String), ExportCommandError> {
    let given = url.map_or_else(
        || {
            format!(
                "--kubeconfig {}",
                args.kubeconfig.as_deref().unwrap_or(Path::new("")).display()
            )
        },
        |u| crate::outbound::redact::redact_url(u).into_owned(),
    );
    let downstream = match url {
        Some(url) => RawDownstream {
            url: Some(url.to_owned()),
            ca_file: args.access.ca_file.clone(),
            insecure_skip_tls_verify: args.access.insecure,
            token_file: args.access.token_file.clone(),
            ..RawDownstream::default()
        },
        None => RawDownstream {
            kubeconfig: args.kubeconfig.clone(),
            context: args.context.clone(),
            ..RawDownstream::default()
        },
    };
    let raw = RawConfig {
        downstreams: vec![RawDownstream {
            name: Some("export".to_owned()),
            timeout: Some(args.timeout.clone()),
            ..downstream
        }],
        ..RawConfig::default()
    };
    let setup =
        |problem: String| ExportCommandError::ServerSetup { source_name: given.clone(), problem };
    let config = Config::from_raw(raw).map_err(|e| setup(flag_problem(&e)))?;
    let d = config.downstreams.first().ok_or_else(|| setup("no server".to_owned()))?;
    let client =
        DownstreamClient::new(&d.name, &d.url, &d.tls, d.token.as_ref(), d.timeout, args.max_bytes)
            .map_err(|source| ExportCommandError::ServerClient {
                source_name: given.clone(),
                source: Box::new(source),
            })?;
    let shown = client.base().to_owned();
    Ok((client, shown))
}

/// A configuration error about the one downstream, told in the command's
/// flags (`downstreams[0].caFile` is `--ca-file`).
fn flag_problem(e: &ConfigError) -> String {
    match e {
        ConfigError::Invalid { field, problem } => {
            let name = field.rsplit('.').next().unwrap_or(field);
            let flag = match name {
                "url" => "SOURCE",
                "caFile" => "--ca-file",
                "tokenFile" => "--token-file",
                "insecureSkipTlsVerify" => "--insecure",
                "kubeconfig" => "--kubeconfig",
                "context" => "--context",
                "timeout" => "--timeout",
                other => other,
            };
            // The configuration's words for what export calls a flag.
            let problem = problem.replace("use tokenFile", "use --token-file");
            format!("{flag}: {problem}")
        }
        other => crate::error_chain(other),
    }
}

/// The body of `GET path` (one of `in_flight` requests made together),
/// or why there is none.
async fn get(
    client: &DownstreamClient,
    shown: &str,
    path: &str,
    in_flight: usize,
) -> Result<Vec<u8>, ExportCommandError> {
    let fetched = client
        .get_among(path, "application/json", None, in_flight)
        .await
        .map_err(|source| ExportCommandError::Server { url: shown.to_owned(), source })?;
    match fetched {
        Fetched::Body { body, .. } => Ok(body.to_vec()),
        Fetched::NotFound => Err(ExportCommandError::ServerAnswer {
            url: shown.to_owned(),
            problem: format!("GET {path}: 404, not found"),
        }),
        other => Err(ExportCommandError::ServerAnswer {
            url: shown.to_owned(),
            problem: format!("GET {path}: {other:?}"),
        }),
    }
}

/// Whether `out` names an archive rather than a folder.
fn is_archive(out: &Path) -> bool {
    let name = out.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    name.ends_with(".tar.gz") || name.ends_with(".tgz")
}

/// The `openapi-v2` layout's one file, `swagger.json`: `documents` (v3,
/// by key) converted down and merged as `serve`'s `/openapi/v2` is, one
/// document in memory at a time, and written as it is inflated.
fn merged_v2(
    documents: Vec<(String, Arc<Rendered>)>,
    sink: &mut Sink,
) -> Result<layout::Report, ExportCommandError> {
    let input = assemble::Input { name: "export".to_owned(), docs: documents, is_v2: false };
    let mut refused = None;
    let made = assemble::merged(vec![input], &BTreeMap::new(), |_, e| refused = Some(e));
    let json = match (made, refused) {
        (_, Some(e)) | (Some(Err(e)), None) => {
            return Err(ExportCommandError::Layout(LayoutError::V2(e)));
        }
        (Some(Ok(made)), None) => made.json,
        (None, None) => Rendered::json(r#"{"swagger":"2.0","info":{},"paths":{}}"#),
    };
    let reader = json.plain_reader().map_err(|e| io("reading", Path::new("/openapi/v2"), e))?;
    let newline: &[u8] = b"\n";
    sink.put_reader("swagger.json", json.len() + 1, std::io::Read::chain(reader, newline))?;
    Ok(layout::Report { files: 1, ..layout::Report::default() })
}

/// Where the files go while they are laid out: a folder, or a gzipped tar
/// archive, beside --out.
enum Sink {
    Folder {
        path: PathBuf,
        made: BTreeSet<String>,
    },
    Archive {
        path: PathBuf,
        /// Boxed: the compressor's state is a few hundred bytes, and a
        /// folder carries none.
        tar: Box<tar::Builder<GzEncoder<std::fs::File>>>,
        made: BTreeSet<String>,
    },
}

impl Sink {
    fn path(&self) -> &Path {
        match self {
            Self::Folder { path, .. } | Self::Archive { path, .. } => path,
        }
    }

    fn put(&mut self, file: &str, bytes: &[u8]) -> Result<(), ExportCommandError> {
        self.put_reader(file, bytes.len(), bytes)
    }

    /// Writes `file` of `len` bytes read from `bytes` as they come.
    fn put_reader(
        &mut self,
        file: &str,
        len: usize,
        mut bytes: impl std::io::Read,
    ) -> Result<(), ExportCommandError> {
        match self {
            Self::Folder { path, made } => {
                for folder in layout::folders([file]) {
                    if made.insert(folder.clone()) {
                        let dir = path.join(&folder);
                        std::fs::create_dir_all(&dir).map_err(|e| io("creating", &dir, e))?;
                    }
                }
                let target = path.join(file);
                let err = |e| io("writing", &target, e);
                let mut out = std::io::BufWriter::new(std::fs::File::create(&target).map_err(err)?);
                std::io::copy(&mut bytes, &mut out).map_err(err)?;
                out.flush().map_err(err)
            }
            Self::Archive { path, tar, made } => {
                let err = |e| io("writing", path, e);
                for folder in layout::folders([file]) {
                    if made.insert(folder.clone()) {
                        let mut header = archive_header(tar::EntryType::Directory, 0o755, 0);
                        tar.append_data(&mut header, format!("{folder}/"), std::io::empty())
                            .map_err(err)?;
                    }
                }
                let mut header = archive_header(tar::EntryType::Regular, 0o644, len);
                tar.append_data(&mut header, file, bytes).map_err(err)
            }
        }
    }

    /// Ends the archive (the folder needs nothing).
    fn finish(self) -> Result<(), ExportCommandError> {
        if let Self::Archive { path, tar, .. } = self {
            let err = |e| io("writing", &path, e);
            let gz = (*tar).into_inner().map_err(err)?;
            let file = gz.finish().map_err(err)?;
            file.sync_all().map_err(err)?;
        }
        Ok(())
    }

    fn remove(&self) {
        let _ = match self {
            Self::Folder { path, .. } => std::fs::remove_dir_all(path),
            Self::Archive { path, .. } => std::fs::remove_file(path),
        };
    }

    /// A folder (or an archive) beside `out` for the files as they are
    /// laid out; [`Sink::commit`] puts it in place: a reader of --out sees
    /// the old files or the new ones, never a mix, and a failed export
    /// leaves --out as it was.
    fn stage(out: &Path) -> Result<Self, ExportCommandError> {
        let temp = beside(out, "export");
        if temp.is_dir() {
            std::fs::remove_dir_all(&temp).map_err(|e| io("removing", &temp, e))?;
        } else if temp.exists() {
            std::fs::remove_file(&temp).map_err(|e| io("removing", &temp, e))?;
        }
        Ok(if is_archive(out) {
            let file = std::fs::File::create(&temp).map_err(|e| io("creating", &temp, e))?;
            // Header time 0, so that the same files give the same bytes.
            let gz = flate2::GzBuilder::new().mtime(0).write(file, flate2::Compression::default());
            Self::Archive {
                path: temp,
                tar: Box::new(tar::Builder::new(gz)),
                made: BTreeSet::new(),
            }
        } else {
            std::fs::create_dir(&temp).map_err(|e| io("creating", &temp, e))?;
            Self::Folder { path: temp, made: BTreeSet::new() }
        })
    }

    /// Ends the files and renames them to `out`, the one it replaces
    /// (--force) moved aside first and removed after.
    fn commit(self, out: &Path) -> Result<(), ExportCommandError> {
        let temp = self.path().to_owned();
        if let Err(e) = self.finish() {
            let _ = std::fs::remove_file(&temp);
            return Err(e);
        }
        let old = beside(out, "old");
        let replacing = out.symlink_metadata().is_ok();
        if replacing {
            std::fs::rename(out, &old).map_err(|e| io("moving aside", out, e))?;
        }
        if let Err(e) = std::fs::rename(&temp, out) {
            if replacing {
                let _ = std::fs::rename(&old, out);
            }
            let _ = if temp.is_dir() {
                std::fs::remove_dir_all(&temp)
            } else {
                std::fs::remove_file(&temp)
            };
            return Err(io("renaming into place", out, e));
        }
        if replacing {
            let removed = if old.is_dir() {
                std::fs::remove_dir_all(&old)
            } else {
                std::fs::remove_file(&old)
            };
            removed.map_err(|e| io("removing the replaced", &old, e))?;
        }
        Ok(())
    }
}

/// A header that says nothing of who ran the export or when (owner 0,
/// time 0), so that the same files give the same archive.
fn archive_header(kind: tar::EntryType, mode: u32, size: usize) -> tar::Header {
    let mut header = tar::Header::new_ustar();
    header.set_entry_type(kind);
    header.set_mode(mode);
    header.set_size(size as u64);
    header.set_mtime(0);
    header.set_uid(0);
    header.set_gid(0);
    header
}

fn io(action: &'static str, path: &Path, source: std::io::Error) -> ExportCommandError {
    ExportCommandError::Io { action, path: path.display().to_string(), source }
}

/// A progress line on stderr, for exports that take a while: nothing for
/// the first two seconds, then at most one line a second (rewritten in
/// place on a terminal).
struct Progress {
    what: &'static str,
    total: usize,
    started: Instant,
    last: Option<Instant>,
    terminal: bool,
}

impl Progress {
    fn new(what: &'static str, total: usize) -> Self {
        Self {
            what,
            total,
            started: Instant::now(),
            last: None,
            terminal: std::io::stderr().is_terminal(),
        }
    }

    fn at(&mut self, done: usize) {
        let now = Instant::now();
        if now.duration_since(self.started) < Duration::from_secs(2)
            || self.last.is_some_and(|l| now.duration_since(l) < Duration::from_secs(1))
        {
            return;
        }
        self.last = Some(now);
        let end = if self.terminal { "\r" } else { "\n" };
        let _ =
            write!(std::io::stderr(), "export: {} {done}/{} documents{end}", self.what, self.total);
    }

    fn done(&mut self) {
        if self.terminal && self.last.is_some() {
            let _ = writeln!(std::io::stderr());
        }
    }
}

/// Writes the summary of an export to `w` (stderr in practice): what was
/// written, then a warning line for each clash between sources and each
/// kind left out.
///
/// # Errors
/// When writing to `w` fails.
pub fn write_export_summary(w: &mut dyn Write, s: &ExportSummary) -> std::io::Result<()> {
    let schema_note = match s.layout {
        "kubeconform" | "catalog" => {
            format!(", JSON Schema {}{}", draft_name(), if s.strict { ", strict" } else { "" })
        }
        _ => String::new(),
    };
    writeln!(
        w,
        "exported: {} ({}{schema_note}) from {} of {} into {}",
        counted(s.files, "file"),
        s.layout,
        counted(s.documents, "document"),
        counted(s.sources.len(), "source"),
        s.out
    )?;
    for (name, found) in &s.sources {
        let mut held = Vec::new();
        if found.swagger > 0 {
            held.push(counted(found.swagger, "Swagger 2.0 document"));
        }
        if found.openapi > 0 {
            held.push(counted(found.openapi, "OpenAPI document"));
        }
        if found.crds > 0 {
            held.push(counted(found.crds, "CustomResourceDefinition"));
        }
        if held.is_empty() {
            held.push("nothing usable".to_owned());
        }
        writeln!(w, "  {name}: {}", held.join(", "))?;
        for skipped in &found.skipped {
            writeln!(w, "    skipped {skipped}")?;
        }
    }
    for c in &s.clashes {
        writeln!(
            w,
            "warning: {} {} differs between sources: kept {}'s, not {}'s",
            c.key, c.member, c.kept, c.dropped
        )?;
    }
    for c in &s.collisions {
        writeln!(w, "warning: {} and {} both name {}; kept the first", c.kept, c.dropped, c.file)?;
    }
    for k in &s.bad_kinds {
        writeln!(w, "warning: {k}: the kind is not a name a file can carry; left out")?;
    }
    Ok(())
}

/// `draft-07`, from the `$schema` URL written.
fn draft_name() -> &'static str {
    DRAFT.trim_end_matches("/schema#").rsplit('/').next().unwrap_or(DRAFT)
}

fn counted(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

//! Configuration: a YAML file and command-line flags, read once into a
//! validated [`Config`].
//!
//! Two steps (ripgrep's low-level/high-level split): [`RawConfig`] is what
//! serde reads, unknown fields refused; [`Config::from_raw`] checks
//! everything once — URLs parse, names are unique, durations are positive
//! and at most a day ([`MAX_DURATION`](duration::MAX_DURATION)), files
//! named for TLS and tokens exist — and reports the first problem with the
//! field it is in. After that nothing re-parses strings.
//!
//! Defaults live here and nowhere else.
//!
//! A downstream's credentials come from its own fields, or from a
//! kubeconfig or the pod's service account ([`crate::outbound::credentials`]); the
//! downstream's own fields win, group by group (server verification,
//! client certificate, token), as kubectl's flags win over its kubeconfig.

pub mod bytes;
mod duration;
mod error;
pub mod memory;
pub mod serving;

pub use duration::{parse_duration, parse_duration_or_zero};
pub use error::ConfigError;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::outbound::credentials::{
    self, BearerToken, Credentials, Environment, PemSource, TokenSource,
};
use crate::outbound::redact::redact_url;
pub use crate::outbound::tls::TlsConfig;
use serving::{RawLimits, RawServingTls, Serving};

/// Where the proxy listens unless told otherwise: loopback only, so that a
/// proxy started by hand is not reachable from the network by accident.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
/// How often each downstream is polled (conditional requests, so an
/// unchanged downstream costs a few hundred bytes).
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(30);
/// How long one request to a downstream may take, headers and body.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long readiness waits for a downstream that has not delivered, once
/// another has: two default timeouts, so that a downstream that answers
/// slowly but answers is waited for, and a dead one does not keep every
/// replica out of its Service.
pub const DEFAULT_READINESS_GRACE_PERIOD: Duration = Duration::from_secs(60);
/// The largest document accepted from a downstream. Kubernetes' whole
/// cluster Swagger document is about 4 MB; big CRD-heavy clusters reach a
/// few tens of MB.
pub const DEFAULT_MAX_DOCUMENT_BYTES: usize = 64 * 1024 * 1024;
/// The memory budget when no limit can be read: the one the deploy
/// manifests' limit gives ([`memory::default_budget`] derives the default
/// from the container's limit).
pub const DEFAULT_MEMORY_BUDGET_BYTES: usize = 224 * 1024 * 1024;
/// The smallest share of the memory budget a downstream can get: less
/// would not hold a small aggregated server's documents.
pub const MIN_MEMORY_SHARE_BYTES: usize = 1024 * 1024;

/// The configuration file as written (YAML or JSON).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawConfig {
    /// Address to listen on, `HOST:PORT`.
    pub listen: Option<String>,
    /// Default poll interval, e.g. `30s`, `2m`, `500ms`.
    pub poll_interval: Option<String>,
    /// How long `/readyz` waits for a downstream that has not delivered
    /// documents yet, once another has (`0s`: one is enough). Default 60s.
    pub readiness_grace_period: Option<String>,
    /// Largest document accepted from a downstream, in bytes (`64Mi`,
    /// `64MiB` and the like are read too).
    #[serde(default, deserialize_with = "bytes::deserialize_optional")]
    pub max_document_bytes: Option<usize>,
    /// What all downstreams' documents may hold together, in bytes; each
    /// downstream gets a share (`memoryShareBytes`, or an equal part of
    /// what is left).
    #[serde(default, deserialize_with = "bytes::deserialize_optional")]
    pub memory_budget_bytes: Option<usize>,
    /// Serve aggregated discovery `apidiscovery.k8s.io/v2beta1` besides
    /// `v2` (clients 1.26–1.29 ask only for v2beta1). Default true.
    pub discovery_v2beta1: Option<bool>,
    /// Answer ordinary plain-HTTP/1.1 requests with the direct transport,
    /// which writes prepared bodies without copying them. Default true.
    pub direct_writes: Option<bool>,
    /// Pass every request that is not metadata to the downstream that owns
    /// its group-version, with the client's credentials. Default false.
    pub front_door: Option<bool>,
    /// Who may read the metadata: anyone (`none`, the default), or only a
    /// client whose bearer token a downstream authenticates (`delegated`).
    pub metadata_authentication: Option<MetadataAuthentication>,
    /// The downstream servers, highest priority first unless `priority`
    /// says otherwise.
    #[serde(default)]
    pub downstreams: Vec<RawDownstream>,
    /// Serve HTTPS with this certificate and key (see `Serving`).
    pub tls: Option<RawServingTls>,
    /// Connection limits and timeouts of the serving side.
    pub limits: Option<RawLimits>,
}

/// Who may read the metadata the proxy answers itself (discovery, OpenAPI,
/// `/`): `/version`, the health endpoints and `/metrics` stay open either
/// way, as kube-apiserver leaves the first ones to `system:unauthenticated`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MetadataAuthentication {
    /// Anyone who reaches the proxy (a sidecar behind its pod's network).
    #[default]
    None,
    /// Only a request whose `Authorization: Bearer` token a downstream
    /// authenticates (a `SelfSubjectReview` sent with it), as
    /// kube-apiserver serves discovery and OpenAPI to `system:authenticated`.
    Delegated,
}

impl MetadataAuthentication {
    /// Reads `none` or `delegated` (the flag's values).
    ///
    /// # Errors
    /// A message naming the values taken.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "none" => Ok(Self::None),
            "delegated" => Ok(Self::Delegated),
            _ => Err(format!("{text:?}: must be none or delegated")),
        }
    }
}

/// One downstream server as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawDownstream {
    /// A unique name, used in logs and metrics.
    pub name: Option<String>,
    /// Base URL, `http://` or `https://`, without query. May be omitted
    /// with `inCluster` or `kubeconfig`, which name the server.
    pub url: Option<String>,
    /// Larger wins when two downstreams list the same group-version in
    /// discovery (it then owns its requests and its OpenAPI document) or
    /// publish the same other document; default: by order, the first one
    /// highest.
    pub priority: Option<i64>,
    /// PEM file of CA certificates to verify the server with (default: the
    /// system's roots).
    pub ca_file: Option<PathBuf>,
    /// Do not verify the server's certificate. For tests only.
    #[serde(default)]
    pub insecure_skip_tls_verify: bool,
    /// File holding a bearer token, re-read when it changes (projected
    /// service-account tokens rotate).
    pub token_file: Option<PathBuf>,
    /// PEM client certificate (chain) for mutual TLS.
    pub client_cert_file: Option<PathBuf>,
    /// PEM private key of the client certificate.
    pub client_key_file: Option<PathBuf>,
    /// Timeout of one request, e.g. `10s`.
    pub timeout: Option<String>,
    /// Poll interval of this downstream, overriding the default.
    pub poll_interval: Option<String>,
    /// Use the pod's service account: its token (re-read when rotated),
    /// its CA, and `https://KUBERNETES_SERVICE_HOST:PORT` when `url` is
    /// omitted.
    #[serde(default)]
    pub in_cluster: bool,
    /// A kubeconfig to take the server and credentials from.
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use instead of its `current-context`.
    pub context: Option<String>,
    /// This downstream's share of `memoryBudgetBytes`, in bytes (default:
    /// an equal part of what the other downstreams' shares leave).
    #[serde(default, deserialize_with = "bytes::deserialize_optional")]
    pub memory_share_bytes: Option<usize>,
}

/// The validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Largest document accepted from a downstream, in bytes.
    pub max_document_bytes: usize,
    /// What all downstreams' documents may hold together, in bytes.
    pub memory_budget_bytes: usize,
    /// Serve aggregated discovery v2beta1 too.
    pub discovery_v2beta1: bool,
    /// Answer ordinary plain-HTTP/1.1 requests with the direct writer
    /// (`serve::direct`), not actix-http.
    pub direct_writes: bool,
    /// Pass requests that are not metadata to the downstream that owns
    /// their group-version (`front_door`).
    pub front_door: bool,
    /// Who may read the metadata the proxy serves itself.
    pub metadata_authentication: MetadataAuthentication,
    /// Downstream servers, in configuration order.
    pub downstreams: Vec<DownstreamConfig>,
    /// How long readiness waits for a downstream that has not delivered,
    /// once another has.
    pub readiness_grace_period: Duration,
    /// The serving side: TLS, limits and timeouts.
    pub serving: Serving,
    /// Where `memory_budget_bytes` came from, for the log at start.
    pub memory_budget_source: memory::BudgetSource,
}

/// One validated downstream server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownstreamConfig {
    /// Unique name.
    pub name: String,
    /// Base URL without trailing slash (`https://10.0.0.1:6443`).
    pub url: String,
    /// Larger wins conflicts.
    pub priority: i64,
    /// How the server is verified and how we identify ourselves.
    pub tls: TlsConfig,
    /// Where the bearer token comes from, if anywhere (a file is re-read
    /// when it changes, an exec plugin's token kept until it expires).
    pub token: Option<TokenSource>,
    /// Timeout of one request.
    pub timeout: Duration,
    /// Time between polls.
    pub poll_interval: Duration,
    /// `memoryShareBytes`: what this downstream's documents may hold, and
    /// converting them may take, whatever the others hold. Without it the
    /// downstream draws on the budget's pool (`downstream/ledger.rs`).
    pub memory_share: Option<usize>,
}

fn invalid(field: impl Into<String>, problem: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { field: field.into(), problem: problem.into() }
}

impl RawConfig {
    /// Reads a configuration file.
    ///
    /// # Errors
    /// [`ConfigError::Read`] or [`ConfigError::Parse`].
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ConfigError::Read { path: path.display().to_string(), source })?;
        Self::from_yaml(&text)
            .map_err(|source| ConfigError::Parse { path: path.display().to_string(), source })
    }

    /// Parses configuration text (YAML; JSON is YAML too).
    ///
    /// # Errors
    /// When the text is not YAML or has unknown or mistyped fields.
    pub fn from_yaml(text: &str) -> Result<Self, serde_yaml_ng::Error> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        serde_yaml_ng::from_str(text)
    }
}

/// The process's in-cluster environment: the standard service-account
/// directory and the service variables. The only place that reads them.
#[must_use]
pub fn process_environment() -> Environment {
    Environment {
        service_account_dir: PathBuf::from(credentials::in_cluster::SERVICE_ACCOUNT_DIR),
        service_host: std::env::var("KUBERNETES_SERVICE_HOST").ok(),
        service_port: std::env::var("KUBERNETES_SERVICE_PORT").ok(),
    }
}

impl Config {
    /// Validates a raw configuration, resolving `inCluster` against this
    /// process's environment.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming the first bad field.
    pub fn from_raw(raw: RawConfig) -> Result<Self, ConfigError> {
        Self::from_raw_on(raw, &process_environment(), &memory::MachineMemory::detect())
    }

    /// Validates a raw configuration, resolving `inCluster` against `env`
    /// (tests point it at a directory of their own), on a machine whose
    /// memory limit is not known.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming the first bad field.
    pub fn from_raw_in(raw: RawConfig, env: &Environment) -> Result<Self, ConfigError> {
        Self::from_raw_on(raw, env, &memory::MachineMemory::default())
    }

    /// As [`Config::from_raw_in`], the default memory budget taken from
    /// `machine`.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming the first bad field.
    pub fn from_raw_on(
        raw: RawConfig,
        env: &Environment,
        machine: &memory::MachineMemory,
    ) -> Result<Self, ConfigError> {
        let listen_text = raw.listen.as_deref().unwrap_or(DEFAULT_LISTEN);
        let listen: SocketAddr = parse_listen(listen_text).map_err(|p| invalid("listen", p))?;
        let default_poll = match &raw.poll_interval {
            Some(text) => parse_duration(text).map_err(|p| invalid("pollInterval", p))?,
            None => DEFAULT_POLL_INTERVAL,
        };
        let readiness_grace_period = match &raw.readiness_grace_period {
            Some(text) => {
                parse_duration_or_zero(text).map_err(|p| invalid("readinessGracePeriod", p))?
            }
            None => DEFAULT_READINESS_GRACE_PERIOD,
        };
        let max_document_bytes = raw.max_document_bytes.unwrap_or(DEFAULT_MAX_DOCUMENT_BYTES);
        if max_document_bytes < 1024 {
            return Err(invalid("maxDocumentBytes", "must be at least 1024"));
        }
        let serving = Serving::from_raw(raw.tls, raw.limits)?;
        let (memory_budget_bytes, memory_budget_source) = match raw.memory_budget_bytes {
            Some(bytes) => (bytes, memory::BudgetSource::Configured),
            None => memory::default_budget(machine),
        };
        let shares = memory_shares(
            memory_budget_bytes,
            &raw.downstreams.iter().map(|d| d.memory_share_bytes).collect::<Vec<_>>(),
        )?;
        let count = raw.downstreams.len();
        let mut downstreams: Vec<DownstreamConfig> = Vec::with_capacity(count);
        for (i, d) in raw.downstreams.into_iter().enumerate() {
            let field = |f: &str| format!("downstreams[{i}].{f}");
            let name = d.name.clone().ok_or_else(|| invalid(field("name"), "missing"))?;
            if name.is_empty()
                || !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            {
                return Err(invalid(
                    field("name"),
                    format!("{name:?}: use letters, digits, '-', '_' or '.'"),
                ));
            }
            if downstreams.iter().any(|o| o.name == name) {
                return Err(invalid(field("name"), format!("{name:?} is used twice")));
            }
            let resolved = resolve_credentials(&d, env, &field)?;
            let url = match (d.url, resolved.as_ref().and_then(|r| r.server.clone())) {
                (Some(url), _) | (None, Some(url)) => url,
                (None, None) if d.in_cluster => {
                    return Err(invalid(
                        field("url"),
                        credentials::in_cluster::InClusterError::NoService.to_string(),
                    ));
                }
                (None, None) if d.kubeconfig.is_some() => {
                    return Err(invalid(
                        field("url"),
                        "missing, and the kubeconfig's cluster has no server",
                    ));
                }
                (None, None) => return Err(invalid(field("url"), "missing")),
            };
            let url = validate_url(&url).map_err(|p| invalid(field("url"), p))?;
            let https = url.starts_with("https://");
            let timeout = match &d.timeout {
                Some(t) => parse_duration(t).map_err(|p| invalid(field("timeout"), p))?,
                None => DEFAULT_TIMEOUT,
            };
            let poll_interval = match &d.poll_interval {
                Some(t) => parse_duration(t).map_err(|p| invalid(field("pollInterval"), p))?,
                None => default_poll,
            };
            for (f, path) in [
                ("caFile", &d.ca_file),
                ("tokenFile", &d.token_file),
                ("clientCertFile", &d.client_cert_file),
                ("clientKeyFile", &d.client_key_file),
            ] {
                if let Some(p) = path
                    && !p.is_file()
                {
                    return Err(invalid(
                        field(f),
                        format!("{} is not a readable file", p.display()),
                    ));
                }
            }
            let resolved = resolved.unwrap_or_default();
            let client_cert = match (d.client_cert_file, d.client_key_file) {
                (Some(c), Some(k)) => Some((c.into(), k.into())),
                (None, None) => resolved.client_cert,
                (Some(_), None) => {
                    return Err(invalid(field("clientKeyFile"), "missing (clientCertFile is set)"));
                }
                (None, Some(_)) => {
                    return Err(invalid(field("clientCertFile"), "missing (clientKeyFile is set)"));
                }
            };
            // The downstream's own verification settings replace the
            // resolved ones as a group: a caFile of its own must not be
            // overridden by a kubeconfig's insecure-skip-tls-verify.
            let (ca, insecure_skip_verify) = if d.ca_file.is_some() || d.insecure_skip_tls_verify {
                (d.ca_file.map(PemSource::File), d.insecure_skip_tls_verify)
            } else {
                (resolved.ca, resolved.insecure_skip_verify)
            };
            let token =
                d.token_file.map(|f| TokenSource::Bearer(BearerToken::File(f))).or(resolved.token);
            if !https && (ca.is_some() || client_cert.is_some() || insecure_skip_verify) {
                return Err(invalid(
                    field("url"),
                    "TLS settings are given but the URL is not https://",
                ));
            }
            // Default priorities follow the order: the first listed wins.
            let default_priority = i64::try_from(count - i).unwrap_or(i64::MAX);
            downstreams.push(DownstreamConfig {
                name,
                url,
                priority: d.priority.unwrap_or(default_priority),
                tls: TlsConfig { ca, insecure_skip_verify, client_cert },
                token,
                timeout,
                poll_interval,
                memory_share: shares.get(i).copied().flatten(),
            });
        }
        Ok(Self {
            listen,
            max_document_bytes,
            memory_budget_bytes,
            discovery_v2beta1: raw.discovery_v2beta1.unwrap_or(true),
            direct_writes: raw.direct_writes.unwrap_or(true),
            front_door: raw.front_door.unwrap_or(false),
            metadata_authentication: raw.metadata_authentication.unwrap_or_default(),
            downstreams,
            readiness_grace_period,
            serving,
            memory_budget_source,
        })
    }
}

/// Reads `HOST:PORT`, the host an IP address or a name that resolves
/// (`localhost:8081`); a name is resolved once, here, and the first
/// address it gives is the one listened on.
///
/// # Errors
/// A message saying what is wrong (the caller adds the field's name).
pub fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    if let Ok(addr) = text.parse() {
        return Ok(addr);
    }
    let shape = || format!("{text:?} is not HOST:PORT (an IP address or a host name, and a port)");
    let (host, port) = text.rsplit_once(':').ok_or_else(shape)?;
    if host.is_empty() || port.parse::<u16>().is_err() {
        return Err(shape());
    }
    std::net::ToSocketAddrs::to_socket_addrs(text)
        .map_err(|e| format!("{text:?}: {host:?} does not resolve: {e}"))?
        .next()
        .ok_or_else(|| format!("{text:?}: {host:?} resolves to no address"))
}

/// Checks each downstream's `memoryShareBytes` against the budget: the
/// fixed shares fit it, and what they leave guarantees every other
/// downstream the smallest share ([`crate::downstream::ledger`]).
fn memory_shares(
    budget: usize,
    explicit: &[Option<usize>],
) -> Result<Vec<Option<usize>>, ConfigError> {
    if budget < MIN_MEMORY_SHARE_BYTES {
        return Err(invalid(
            "memoryBudgetBytes",
            format!("{budget} is less than the smallest share, {MIN_MEMORY_SHARE_BYTES}"),
        ));
    }
    let mut assigned = 0usize;
    for (i, share) in explicit.iter().enumerate() {
        let Some(share) = *share else { continue };
        if share < MIN_MEMORY_SHARE_BYTES {
            return Err(invalid(
                format!("downstreams[{i}].memoryShareBytes"),
                format!("{share} is less than {MIN_MEMORY_SHARE_BYTES}"),
            ));
        }
        assigned = assigned.saturating_add(share);
    }
    if assigned > budget {
        return Err(invalid(
            "memoryBudgetBytes",
            format!("the downstreams' memoryShareBytes add up to {assigned}, more than {budget}"),
        ));
    }
    let pooled = explicit.iter().filter(|s| s.is_none()).count();
    let guarantee = memory::pooled_guarantee(budget - assigned, pooled);
    if pooled > 0 && guarantee < MIN_MEMORY_SHARE_BYTES {
        return Err(invalid(
            "memoryBudgetBytes",
            format!(
                "{} bytes left for {pooled} downstreams without memoryShareBytes guarantees \
                 each {guarantee}, less than {MIN_MEMORY_SHARE_BYTES}",
                budget - assigned
            ),
        ));
    }
    Ok(explicit.to_vec())
}

/// The credentials `inCluster` or `kubeconfig` provide, if either is set.
fn resolve_credentials(
    d: &RawDownstream,
    env: &Environment,
    field: &dyn Fn(&str) -> String,
) -> Result<Option<Credentials>, ConfigError> {
    match (d.in_cluster, &d.kubeconfig) {
        (true, Some(_)) => Err(invalid(field("kubeconfig"), "inCluster is set too; choose one")),
        (true, None) => credentials::in_cluster::resolve(env)
            .map(Some)
            .map_err(|e| invalid(field("inCluster"), e.to_string())),
        (false, Some(path)) => credentials::kubeconfig::resolve(path, d.context.as_deref())
            .map(Some)
            .map_err(|e| invalid(field("kubeconfig"), crate::error_chain(&e))),
        (false, None) if d.context.is_some() => {
            Err(invalid(field("context"), "set without kubeconfig"))
        }
        (false, None) => Ok(None),
    }
}

/// Checks a downstream base URL: `http` or `https`, a host, no query or
/// fragment, no credentials; returns it without trailing slash. Messages
/// quote the URL with its password hidden ([`redact_url`]): the file may
/// be shared, the error ends up in logs.
fn validate_url(url: &str) -> Result<String, String> {
    let shown = redact_url(url);
    let uri: awc::http::Uri = url.parse().map_err(|e| format!("{shown:?} is not a URL ({e})"))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        _ => return Err(format!("{shown:?} must start with http:// or https://")),
    }
    let Some(authority) = uri.authority() else {
        return Err(format!("{shown:?} has no host"));
    };
    if authority.as_str().contains('@') {
        return Err(format!(
            "{shown:?} carries credentials; use tokenFile or a client certificate"
        ));
    }
    if uri.query().is_some() || url.contains('#') {
        return Err(format!("{shown:?} must not have a query or fragment"));
    }
    Ok(url.trim_end_matches('/').to_owned())
}

/// Parses a `--downstream NAME=URL` flag into a raw downstream.
///
/// # Errors
/// When there is no `=`.
pub fn parse_downstream_flag(flag: &str) -> Result<RawDownstream, String> {
    let (name, url) =
        flag.split_once('=').ok_or_else(|| format!("{:?} is not NAME=URL", redact_url(flag)))?;
    Ok(RawDownstream {
        name: Some(name.to_owned()),
        url: Some(url.to_owned()),
        ..RawDownstream::default()
    })
}

#[cfg(test)]
mod tests;

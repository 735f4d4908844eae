//! `kubeconfig: PATH` (and `context:`): a downstream's server and
//! credentials read from a kubeconfig file, as kubectl reads it.
//!
//! Supported, with client-go's meaning:
//! - the context named by `context:`, else the file's `current-context`;
//! - its cluster's `server`, `certificate-authority` or
//!   `certificate-authority-data`, `insecure-skip-tls-verify`;
//! - its user's `client-certificate(-data)` and `client-key(-data)`,
//!   `token` and `tokenFile` (the file wins when both are set, as in
//!   client-go, and is re-read when it changes);
//! - or its user's `exec` credential plugin ([`super::exec`]), given the
//!   cluster's `disable-compression` and its
//!   `client.authentication.k8s.io/exec` extension when it asks for the
//!   cluster's information. A plugin beside `token` or `tokenFile` is
//!   refused: which one would win is not obvious to the reader of the file.
//!
//! Relative file paths are relative to the kubeconfig's directory, as in
//! client-go (a plugin's `command` too, when it is a path). Anything else
//! that changes how the proxy would connect or who it would be —
//! auth-provider, basic auth, impersonation, `proxy-url`,
//! `tls-server-name` — is refused with the field's name, rather than
//! silently ignored and then failing as a 401 far from its cause. Other
//! fields (namespace, other extensions, preferences) do not matter here
//! and are ignored. Only the chosen context, its cluster and its user are
//! looked at: the other entries of a busy kubeconfig may use anything.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine as _;
use serde::Deserialize;
use serde_yaml_ng::Value;

use super::exec::ExecPlugin;
use super::exec::stanza::{ClusterInfo, EXEC_EXTENSION, StanzaError};
use super::{BearerToken, Credentials, PemSource, TokenSource};

/// Why a kubeconfig cannot be used. Every message starts with the file and
/// names the field (`users[admin].user.exec`, entries by their name).
#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    /// The file could not be read.
    #[error("reading {path}")]
    Read {
        /// The kubeconfig.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a kubeconfig (YAML with the expected shapes).
    #[error("parsing {path}")]
    Parse {
        /// The kubeconfig.
        path: String,
        /// Why (serde names the field).
        #[source]
        source: serde_yaml_ng::Error,
    },
    /// Neither `context:` nor `current-context` names a context.
    #[error(
        "{path}: no context chosen: set `context` on the downstream, or current-context in the file"
    )]
    NoContext {
        /// The kubeconfig.
        path: String,
    },
    /// A context, cluster or user is referred to but not defined.
    #[error("{path}: {field}: {kind} {name:?} is not defined in the file")]
    Undefined {
        /// The kubeconfig.
        path: String,
        /// The field that refers to it.
        field: String,
        /// `context`, `cluster` or `user`.
        kind: &'static str,
        /// The name.
        name: String,
    },
    /// A field the proxy does not implement.
    #[error("{path}: {field} is not supported: {instead}")]
    Unsupported {
        /// The kubeconfig.
        path: String,
        /// The field.
        field: String,
        /// What to do instead.
        instead: &'static str,
    },
    /// Two fields that exclude each other are both set.
    #[error("{path}: {field} and {other} are both set; keep one")]
    Conflict {
        /// The kubeconfig.
        path: String,
        /// One field.
        field: String,
        /// The other.
        other: String,
    },
    /// A `*-data` field is not base64.
    #[error("{path}: {field} is not base64")]
    Base64 {
        /// The kubeconfig.
        path: String,
        /// The field.
        field: String,
        /// Why.
        #[source]
        source: base64::DecodeError,
    },
    /// The user's `exec` stanza cannot be used.
    #[error("{path}: {field}")]
    Exec {
        /// The kubeconfig.
        path: String,
        /// The field (`users[admin].user.exec.apiVersion`).
        field: String,
        /// Why.
        #[source]
        source: StanzaError,
    },
    /// A file it names is not there.
    #[error("{path}: {field}: {file} is not a readable file")]
    MissingFile {
        /// The kubeconfig.
        path: String,
        /// The field.
        field: String,
        /// The file, resolved against the kubeconfig's directory.
        file: String,
    },
}

/// The parts of a kubeconfig (client-go's `clientcmdapi.Config`) read here.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Kubeconfig {
    clusters: Option<Vec<NamedCluster>>,
    users: Option<Vec<NamedUser>>,
    contexts: Option<Vec<NamedContext>>,
    current_context: Option<String>,
}

#[derive(Debug, Deserialize)]
struct NamedCluster {
    name: String,
    cluster: Option<Cluster>,
}

#[derive(Debug, Deserialize)]
struct NamedUser {
    name: String,
    user: Option<User>,
}

#[derive(Debug, Deserialize)]
struct NamedContext {
    name: String,
    context: Option<Context>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Cluster {
    server: Option<String>,
    certificate_authority: Option<PathBuf>,
    certificate_authority_data: Option<String>,
    #[serde(default)]
    insecure_skip_tls_verify: bool,
    tls_server_name: Option<Value>,
    proxy_url: Option<Value>,
    #[serde(default)]
    disable_compression: bool,
    extensions: Option<Vec<NamedExtension>>,
}

#[derive(Debug, Deserialize)]
struct NamedExtension {
    name: String,
    extension: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct User {
    client_certificate: Option<PathBuf>,
    client_certificate_data: Option<String>,
    client_key: Option<PathBuf>,
    client_key_data: Option<String>,
    token: Option<String>,
    #[serde(rename = "tokenFile")]
    token_file: Option<PathBuf>,
    exec: Option<Value>,
    auth_provider: Option<Value>,
    username: Option<Value>,
    password: Option<Value>,
    #[serde(rename = "as")]
    impersonate: Option<Value>,
    as_uid: Option<Value>,
    as_groups: Option<Value>,
    as_user_extra: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
struct Context {
    #[serde(default)]
    cluster: String,
    user: Option<String>,
}

/// Whether an optional field is really set (kubeconfigs written by tools
/// are full of `""`, `null` and `{}`).
fn present(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Sequence(s)) => !s.is_empty(),
        Some(Value::Mapping(m)) => !m.is_empty(),
        Some(_) => true,
    }
}

fn text(v: Option<&String>) -> Option<&str> {
    v.map(String::as_str).filter(|s| !s.is_empty())
}

fn path(v: Option<&PathBuf>) -> Option<&Path> {
    v.map(PathBuf::as_path).filter(|p| !p.as_os_str().is_empty())
}

/// Reads `file` and resolves the credentials of `context` (or its
/// current-context).
///
/// # Errors
/// [`KubeconfigError`] naming the field.
pub fn resolve(file: &Path, context: Option<&str>) -> Result<Credentials, KubeconfigError> {
    let name = file.display().to_string();
    let yaml = std::fs::read_to_string(file)
        .map_err(|source| KubeconfigError::Read { path: name.clone(), source })?;
    let config: Kubeconfig = if yaml.trim().is_empty() {
        Kubeconfig::default()
    } else {
        serde_yaml_ng::from_str(&yaml)
            .map_err(|source| KubeconfigError::Parse { path: name.clone(), source })?
    };
    let dir = file.parent().unwrap_or_else(|| Path::new(""));
    Resolver { path: name, dir }.resolve(&config, context)
}

/// One kubeconfig being resolved: its name for messages, its directory for
/// relative paths.
struct Resolver<'a> {
    path: String,
    dir: &'a Path,
}

impl Resolver<'_> {
    fn resolve(
        &self,
        config: &Kubeconfig,
        context: Option<&str>,
    ) -> Result<Credentials, KubeconfigError> {
        let (field, chosen) =
            match (context.filter(|c| !c.is_empty()), text(config.current_context.as_ref())) {
                (Some(c), _) => ("context (downstream)".to_owned(), c),
                (None, Some(c)) => ("current-context".to_owned(), c),
                (None, None) => return Err(KubeconfigError::NoContext { path: self.path.clone() }),
            };
        let ctx = config
            .contexts
            .iter()
            .flatten()
            .find(|c| c.name == chosen)
            .ok_or_else(|| self.undefined(&field, "context", chosen))?;
        let empty = Context::default();
        let ctx_body = ctx.context.as_ref().unwrap_or(&empty);
        let cluster_field = format!("contexts[{}].context.cluster", ctx.name);
        let cluster = config
            .clusters
            .iter()
            .flatten()
            .find(|c| c.name == ctx_body.cluster)
            .ok_or_else(|| self.undefined(&cluster_field, "cluster", &ctx_body.cluster))?;
        let mut credentials = self.cluster(cluster)?;
        if let Some(user_name) = text(ctx_body.user.as_ref()) {
            let user_field = format!("contexts[{}].context.user", ctx.name);
            let user = config
                .users
                .iter()
                .flatten()
                .find(|u| u.name == user_name)
                .ok_or_else(|| self.undefined(&user_field, "user", user_name))?;
            self.user(user, cluster, &mut credentials)?;
        }
        Ok(credentials)
    }

    fn cluster(&self, named: &NamedCluster) -> Result<Credentials, KubeconfigError> {
        let at = format!("clusters[{}].cluster", named.name);
        let default = Cluster::default();
        let c = named.cluster.as_ref().unwrap_or(&default);
        self.refuse(
            &at,
            "tls-server-name",
            c.tls_server_name.as_ref(),
            "use a URL whose host the server certificate names",
        )?;
        self.refuse(
            &at,
            "proxy-url",
            c.proxy_url.as_ref(),
            "the proxy connects to downstreams directly",
        )?;
        let ca = self.pem(
            &at,
            ("certificate-authority", path(c.certificate_authority.as_ref())),
            ("certificate-authority-data", text(c.certificate_authority_data.as_ref())),
        )?;
        if c.insecure_skip_tls_verify && ca.is_some() {
            // client-go refuses this combination too.
            return Err(self.conflict(&at, "insecure-skip-tls-verify", "certificate-authority"));
        }
        Ok(Credentials {
            server: text(c.server.as_ref()).map(str::to_owned),
            ca,
            insecure_skip_verify: c.insecure_skip_tls_verify,
            client_cert: None,
            token: None,
        })
    }

    fn user(
        &self,
        named: &NamedUser,
        cluster: &NamedCluster,
        into: &mut Credentials,
    ) -> Result<(), KubeconfigError> {
        let at = format!("users[{}].user", named.name);
        let default = User::default();
        let u = named.user.as_ref().unwrap_or(&default);
        const TOKEN_OR_CERT: &str =
            "use a token, tokenFile, an exec plugin or a client certificate";
        self.refuse(&at, "auth-provider", u.auth_provider.as_ref(), "auth-provider plugins are not run by the proxy; use a token, tokenFile, an exec plugin or a client certificate")?;
        self.refuse(&at, "username", u.username.as_ref(), TOKEN_OR_CERT)?;
        self.refuse(&at, "password", u.password.as_ref(), TOKEN_OR_CERT)?;
        const OWN_IDENTITY: &str =
            "the proxy reads with its own identity; grant it the RBAC instead";
        self.refuse(&at, "as", u.impersonate.as_ref(), OWN_IDENTITY)?;
        self.refuse(&at, "as-uid", u.as_uid.as_ref(), OWN_IDENTITY)?;
        self.refuse(&at, "as-groups", u.as_groups.as_ref(), OWN_IDENTITY)?;
        self.refuse(&at, "as-user-extra", u.as_user_extra.as_ref(), OWN_IDENTITY)?;
        let cert = self.pem(
            &at,
            ("client-certificate", path(u.client_certificate.as_ref())),
            ("client-certificate-data", text(u.client_certificate_data.as_ref())),
        )?;
        let key = self.pem(
            &at,
            ("client-key", path(u.client_key.as_ref())),
            ("client-key-data", text(u.client_key_data.as_ref())),
        )?;
        into.client_cert = match (cert, key) {
            (Some(c), Some(k)) => Some((c, k)),
            (None, None) => None,
            (Some(_), None) => {
                return Err(self.unsupported(
                    &at,
                    "client-certificate",
                    "it needs client-key or client-key-data",
                ));
            }
            (None, Some(_)) => {
                return Err(self.unsupported(
                    &at,
                    "client-key",
                    "it needs client-certificate or client-certificate-data",
                ));
            }
        };
        let token = match (path(u.token_file.as_ref()), text(u.token.as_ref())) {
            (Some(file), _) => Some(BearerToken::File(self.file(&at, "tokenFile", file)?)),
            (None, Some(token)) => Some(BearerToken::Inline {
                origin: format!("{} {at}.token", self.path),
                value: token.to_owned(),
            }),
            (None, None) => None,
        };
        into.token = match (token, u.exec.as_ref().filter(|e| present(Some(e)))) {
            (Some(_), Some(_)) => {
                let other =
                    if path(u.token_file.as_ref()).is_some() { "tokenFile" } else { "token" };
                return Err(self.conflict(&at, "exec", other));
            }
            (Some(token), None) => Some(TokenSource::Bearer(token)),
            (None, Some(stanza)) => {
                Some(TokenSource::Exec(Arc::new(self.exec(&named.name, stanza, cluster, into)?)))
            }
            (None, None) => None,
        };
        Ok(())
    }

    /// The user's exec plugin; `cluster` and the credentials resolved from
    /// it are what the plugin is told when it asks (`provideClusterInfo`).
    fn exec(
        &self,
        user: &str,
        stanza: &Value,
        cluster: &NamedCluster,
        resolved: &Credentials,
    ) -> Result<ExecPlugin, KubeconfigError> {
        let c = cluster.cluster.as_ref();
        let info = ClusterInfo {
            server: resolved.server.as_deref().unwrap_or_default(),
            insecure_skip_tls_verify: resolved.insecure_skip_verify,
            ca: resolved.ca.as_ref(),
            disable_compression: c.is_some_and(|c| c.disable_compression),
            exec_extension: c
                .and_then(|c| c.extensions.as_ref())
                .into_iter()
                .flatten()
                .find(|e| e.name == EXEC_EXTENSION)
                .and_then(|e| e.extension.as_ref()),
        };
        ExecPlugin::from_stanza(stanza, format!("{} users[{user}]", self.path), self.dir, info)
            .map_err(|source| {
                let field = match source.field() {
                    "" => format!("users[{user}].user.exec"),
                    f => format!("users[{user}].user.exec.{f}"),
                };
                KubeconfigError::Exec { path: self.path.clone(), field, source }
            })
    }

    /// A PEM from a file field or its `-data` twin (not both).
    fn pem(
        &self,
        at: &str,
        (file_field, file): (&str, Option<&Path>),
        (data_field, data): (&str, Option<&str>),
    ) -> Result<Option<PemSource>, KubeconfigError> {
        match (file, data) {
            (Some(_), Some(_)) => Err(self.conflict(at, file_field, data_field)),
            (Some(f), None) => Ok(Some(PemSource::File(self.file(at, file_field, f)?))),
            (None, Some(d)) => {
                let field = format!("{at}.{data_field}");
                // Tools wrap long base64 lines; whitespace is not data.
                let compact: String = d.chars().filter(|c| !c.is_ascii_whitespace()).collect();
                let pem = base64::engine::general_purpose::STANDARD.decode(compact).map_err(
                    |source| KubeconfigError::Base64 {
                        path: self.path.clone(),
                        field: field.clone(),
                        source,
                    },
                )?;
                Ok(Some(PemSource::Inline {
                    origin: format!("{} {field}", self.path),
                    value: Arc::from(pem),
                }))
            }
            (None, None) => Ok(None),
        }
    }

    /// A file named in the kubeconfig, relative to its directory, that must
    /// exist.
    fn file(&self, at: &str, field: &str, file: &Path) -> Result<PathBuf, KubeconfigError> {
        let resolved = self.dir.join(file);
        if resolved.is_file() {
            Ok(resolved)
        } else {
            Err(KubeconfigError::MissingFile {
                path: self.path.clone(),
                field: format!("{at}.{field}"),
                file: resolved.display().to_string(),
            })
        }
    }

    fn refuse(
        &self,
        at: &str,
        field: &str,
        value: Option<&Value>,
        instead: &'static str,
    ) -> Result<(), KubeconfigError> {
        if present(value) { Err(self.unsupported(at, field, instead)) } else { Ok(()) }
    }

    fn unsupported(&self, at: &str, field: &str, instead: &'static str) -> KubeconfigError {
        KubeconfigError::Unsupported {
            path: self.path.clone(),
            field: format!("{at}.{field}"),
            instead,
        }
    }

    fn conflict(&self, at: &str, field: &str, other: &str) -> KubeconfigError {
        KubeconfigError::Conflict {
            path: self.path.clone(),
            field: format!("{at}.{field}"),
            other: format!("{at}.{other}"),
        }
    }

    fn undefined(&self, field: &str, kind: &'static str, name: &str) -> KubeconfigError {
        KubeconfigError::Undefined {
            path: self.path.clone(),
            field: field.to_owned(),
            kind,
            name: name.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests;

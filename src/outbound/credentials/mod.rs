//! Where a downstream's credentials come from: files named in the
//! configuration, a kubeconfig ([`kubeconfig`]) and the credential plugin
//! it may name ([`exec`]), or the pod's own service account
//! ([`in_cluster`]).
//!
//! Everything here is resolved once, when the configuration is validated,
//! into the same few shapes the HTTP client consumes: PEM material
//! ([`PemSource`]), where the bearer token comes from ([`TokenSource`]) and
//! an optional server URL. Files stay files — so a rotated service-account
//! token or a renewed certificate on disk is what the client reads — and
//! only what a kubeconfig carries inline (`*-data`, `token`) is held in
//! memory. An exec plugin is resolved to what it takes to run it; it runs
//! when the client first needs a token.
//!
//! Secrets never reach `Debug` output or error messages: inline values
//! print as where they came from.

pub mod exec;
pub mod in_cluster;
pub mod kubeconfig;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Credential material: a file, read when it is used — so what is rotated
/// on disk is what the client reads — or a value a kubeconfig carried
/// inline. Inline values may be private keys or tokens: `Debug` and
/// `Display` print where they came from, never the value.
#[derive(Clone, PartialEq, Eq)]
pub enum Material<T> {
    /// A file.
    File(PathBuf),
    /// A value decoded from a kubeconfig.
    Inline {
        /// Where it came from, for messages (`/root/.kube/config
        /// users[admin].client-key-data`).
        origin: String,
        /// The value; never printed.
        value: T,
    },
}

/// PEM material (certificates or a key), from a file or a kubeconfig's
/// `*-data` field.
pub type PemSource = Material<Arc<[u8]>>;

/// The bearer token sent to a downstream: a file, re-read whenever it
/// changes (projected service-account tokens are rotated by the kubelet,
/// hourly by default), or a kubeconfig's `users[].user.token`.
pub type BearerToken = Material<String>;

/// Where the bearer token sent to a downstream comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    /// A token file or a kubeconfig's inline token.
    Bearer(BearerToken),
    /// A kubeconfig's exec credential plugin, run when a token is needed.
    Exec(Arc<exec::ExecPlugin>),
}

impl From<BearerToken> for TokenSource {
    fn from(token: BearerToken) -> Self {
        Self::Bearer(token)
    }
}

impl From<PathBuf> for TokenSource {
    fn from(path: PathBuf) -> Self {
        Self::Bearer(BearerToken::File(path))
    }
}

impl<T> From<PathBuf> for Material<T> {
    fn from(path: PathBuf) -> Self {
        Self::File(path)
    }
}

impl<T> fmt::Display for Material<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File(path) => write!(f, "{}", path.display()),
            Self::Inline { origin, .. } => f.write_str(origin),
        }
    }
}

impl<T> fmt::Debug for Material<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File(path) => f.debug_tuple("File").field(path).finish(),
            Self::Inline { origin, .. } => {
                f.debug_struct("Inline").field("origin", origin).finish_non_exhaustive()
            }
        }
    }
}

impl PemSource {
    /// Every certificate in it, in order.
    ///
    /// # Errors
    /// When the file cannot be read or the PEM does not parse.
    pub fn certificates(
        &self,
    ) -> Result<Vec<CertificateDer<'static>>, rustls::pki_types::pem::Error> {
        match self {
            Self::File(path) => CertificateDer::pem_file_iter(path)?.collect(),
            Self::Inline { value: pem, .. } => CertificateDer::pem_slice_iter(pem).collect(),
        }
    }

    /// The first private key in it.
    ///
    /// # Errors
    /// When the file cannot be read or holds no PEM private key.
    pub fn private_key(&self) -> Result<PrivateKeyDer<'static>, rustls::pki_types::pem::Error> {
        match self {
            Self::File(path) => PrivateKeyDer::from_pem_file(path),
            Self::Inline { value: pem, .. } => PrivateKeyDer::from_pem_slice(pem),
        }
    }
}

/// Credentials resolved from a kubeconfig or the pod's service account,
/// before the downstream's own fields (which win) are applied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Credentials {
    /// The server URL they name (`clusters[].cluster.server`, or
    /// `https://KUBERNETES_SERVICE_HOST:KUBERNETES_SERVICE_PORT`), used when
    /// the downstream has no `url` of its own.
    pub server: Option<String>,
    /// CA certificates that verify the server.
    pub ca: Option<PemSource>,
    /// Do not verify the server.
    pub insecure_skip_verify: bool,
    /// Client certificate and key for mutual TLS.
    pub client_cert: Option<(PemSource, PemSource)>,
    /// Where the bearer token comes from.
    pub token: Option<TokenSource>,
}

/// What in-cluster resolution reads from the process: the service-account
/// directory and the service environment variables. A value, not ambient
/// state, so tests point it at a directory of their own and never touch
/// the real environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Environment {
    /// Where the service-account token and CA are mounted (normally
    /// `/var/run/secrets/kubernetes.io/serviceaccount`).
    pub service_account_dir: PathBuf,
    /// `KUBERNETES_SERVICE_HOST`.
    pub service_host: Option<String>,
    /// `KUBERNETES_SERVICE_PORT`.
    pub service_port: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_secrets_never_reach_debug_or_display() {
        let pem = PemSource::Inline {
            origin: "kc users[a].client-key-data".into(),
            value: Arc::from(&b"-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n"[..]),
        };
        let token =
            BearerToken::Inline { origin: "kc users[a].token".into(), value: "s3cr3t".into() };
        for text in [format!("{pem:?}"), pem.to_string(), format!("{token:?}"), token.to_string()] {
            assert!(!text.contains("c2VjcmV0") && !text.contains("s3cr3t"), "{text}");
            assert!(text.contains("kc users[a]"), "says where it came from: {text}");
        }
    }
}

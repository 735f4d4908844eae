//! Serving HTTPS: the rustls configuration of the listening side, with a
//! certificate that follows its files.
//!
//! cert-manager and kubelet rotate a mounted Secret by swapping the files
//! under the pod's feet; a proxy that read them once would serve the old
//! certificate until it expires. [`ReloadingCert`] checks the files'
//! modification time and length at most once a second, on a handshake, and
//! loads them again when either changed. A pair that does not load (the
//! key written before the certificate, a half-written file) is logged once
//! and the previous certificate stays: a rotation never takes HTTPS down.

use std::fs::Metadata;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tracing::{info, warn};

use crate::config::serving::ServingTls;

/// How often, at most, the files are looked at again.
const RECHECK: Duration = Duration::from_secs(1);

/// Why the serving certificate could not be loaded. Each variant names the
/// flag (and configuration field) the operator has to fix.
#[derive(Debug, thiserror::Error)]
pub enum ServingTlsError {
    /// The certificate file could not be read or holds no PEM certificate.
    #[error("reading the serving certificate {path} (--tls-cert, tls.certFile)")]
    Certificate {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    /// The certificate file holds no certificate.
    #[error("no PEM certificate in {path} (--tls-cert, tls.certFile)")]
    NoCertificate {
        /// The file.
        path: PathBuf,
    },
    /// The key file could not be read or holds no PEM private key.
    #[error("reading the serving key {path} (--tls-key, tls.keyFile)")]
    Key {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    /// The key is not one rustls can sign with, or not the certificate's.
    #[error("the key {key} does not go with the certificate {cert} (--tls-key, --tls-cert)")]
    Mismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// rustls' reason.
        #[source]
        source: rustls::Error,
    },
    /// rustls refused the protocol versions (cannot happen with the ring
    /// provider's defaults; kept typed rather than unwrapped).
    #[error("building the TLS configuration")]
    Config(#[source] rustls::Error),
}

/// What identifies a version of a file: its modification time and length.
type Stamp = Option<(SystemTime, u64)>;

fn stamp(path: &Path) -> Stamp {
    std::fs::metadata(path)
        .ok()
        .as_ref()
        .and_then(|m: &Metadata| Some((m.modified().ok()?, m.len())))
}

/// Reads and checks a certificate chain and key pair.
///
/// # Errors
/// [`ServingTlsError`] naming the file at fault.
pub fn load(
    files: &ServingTls,
    provider: &CryptoProvider,
) -> Result<CertifiedKey, ServingTlsError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&files.cert_file)
        .and_then(Iterator::collect)
        .map_err(|source| ServingTlsError::Certificate { path: files.cert_file.clone(), source })?;
    if chain.is_empty() {
        return Err(ServingTlsError::NoCertificate { path: files.cert_file.clone() });
    }
    let key = PrivateKeyDer::from_pem_file(&files.key_file)
        .map_err(|source| ServingTlsError::Key { path: files.key_file.clone(), source })?;
    CertifiedKey::from_der(chain, key, provider).map_err(|source| ServingTlsError::Mismatch {
        cert: files.cert_file.clone(),
        key: files.key_file.clone(),
        source,
    })
}

/// The mutable part of [`ReloadingCert`].
#[derive(Debug)]
struct Current {
    key: Arc<CertifiedKey>,
    /// The files' stamps when `key` was loaded (or last failed to load, so
    /// one bad version is reported once).
    stamps: (Stamp, Stamp),
    checked: Instant,
}

/// A certificate resolver that re-reads its files when they change.
#[derive(Debug)]
pub struct ReloadingCert {
    files: ServingTls,
    provider: Arc<CryptoProvider>,
    current: Mutex<Current>,
}

impl ReloadingCert {
    /// Loads the files once; a failure here stops the start.
    ///
    /// # Errors
    /// [`ServingTlsError`] naming the file at fault.
    pub fn new(files: ServingTls, provider: Arc<CryptoProvider>) -> Result<Self, ServingTlsError> {
        let stamps = (stamp(&files.cert_file), stamp(&files.key_file));
        let key = Arc::new(load(&files, &provider)?);
        Ok(Self {
            files,
            provider,
            current: Mutex::new(Current { key, stamps, checked: Instant::now() }),
        })
    }

    /// The key to serve now, reloading first when the files changed.
    fn key(&self) -> Option<Arc<CertifiedKey>> {
        // A poisoned lock means a panic elsewhere mid-update; the state is
        // still a whole `Current`, so keep serving it.
        let mut current = self.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if current.checked.elapsed() >= RECHECK {
            current.checked = Instant::now();
            let stamps = (stamp(&self.files.cert_file), stamp(&self.files.key_file));
            if stamps != current.stamps {
                current.stamps = stamps;
                match load(&self.files, &self.provider) {
                    Ok(key) => {
                        current.key = Arc::new(key);
                        info!(cert = %self.files.cert_file.display(), "serving certificate reloaded");
                    }
                    Err(e) => warn!(
                        error = %crate::error_chain(&e),
                        "serving certificate changed but does not load; keeping the previous one"
                    ),
                }
            }
        }
        Some(Arc::clone(&current.key))
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.key()
    }
}

/// The rustls server configuration for `files`: TLS 1.2 and 1.3 with the
/// ring provider (as the downstream client uses), HTTP/2 or HTTP/1.1 by
/// ALPN, no client
/// certificates (the documents are public metadata, as on kube-apiserver
/// where `/openapi/v3` and discovery are readable by `system:unauthenticated`
/// through RBAC's discovery roles).
///
/// # Errors
/// [`ServingTlsError`] when the files do not load.
pub fn server_config(files: &ServingTls) -> Result<rustls::ServerConfig, ServingTlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let resolver = ReloadingCert::new(files.clone(), Arc::clone(&provider))?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(ServingTlsError::Config)?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(resolver));
    // HTTP/2 as kube-apiserver offers it (client-go multiplexes discovery
    // over one connection), HTTP/1.1 for everyone else.
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

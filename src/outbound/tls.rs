//! The rustls client configuration for connecting to a downstream (or to
//! the server `check` examines): the system's roots or a CA bundle, a client
//! certificate for mutual TLS, and — only where an operator asked for it
//! with `insecureSkipTlsVerify` — a verifier that accepts any certificate
//! but still checks the handshake signatures.

use std::sync::Arc;

use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

use crate::outbound::credentials::PemSource;
use crate::outbound::error::ClientError;

/// TLS settings of one downstream (or of the server `check` examines).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsConfig {
    /// CA bundle; `None` means the system's roots.
    pub ca: Option<PemSource>,
    /// Skip verification (tests only; logged loudly).
    pub insecure_skip_verify: bool,
    /// Client certificate and key.
    pub client_cert: Option<(PemSource, PemSource)>,
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The rustls client configuration for one downstream (also what
/// `openapi-proxy check` connects with).
pub(crate) fn tls_config(tls: &TlsConfig) -> Result<rustls::ClientConfig, ClientError> {
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|source| ClientError::Tls {
            what: "TLS protocol versions",
            path: String::new(),
            source,
        })?;
    let builder = if tls.insecure_skip_verify {
        builder.dangerous().with_custom_certificate_verifier(Arc::new(NoVerification(provider())))
    } else {
        builder.with_root_certificates(roots(tls.ca.as_ref())?)
    };
    match &tls.client_cert {
        Some((cert, key)) => {
            let certs = read_certs(cert, "reading client certificate")?;
            let key_der = key.private_key().map_err(|source| ClientError::Pem {
                what: "reading client key",
                path: key.to_string(),
                source,
            })?;
            builder.with_client_auth_cert(certs, key_der).map_err(|source| ClientError::Tls {
                what: "using client certificate and key",
                path: format!("{cert} and {key}"),
                source,
            })
        }
        None => Ok(builder.with_no_client_auth()),
    }
}

fn read_certs(
    source: &PemSource,
    what: &'static str,
) -> Result<Vec<CertificateDer<'static>>, ClientError> {
    source.certificates().map_err(|e| ClientError::Pem {
        what,
        path: source.to_string(),
        source: e,
    })
}

fn roots(ca: Option<&PemSource>) -> Result<rustls::RootCertStore, ClientError> {
    let mut store = rustls::RootCertStore::empty();
    match ca {
        Some(source) => {
            for cert in read_certs(source, "reading CA bundle")? {
                store.add(cert).map_err(|e| ClientError::Tls {
                    what: "adding a CA certificate from",
                    path: source.to_string(),
                    source: e,
                })?;
            }
            if store.is_empty() {
                return Err(ClientError::NoRoots(source.to_string()));
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = store.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err(ClientError::NoRoots(
                    "the system has no CA certificates; set caFile".into(),
                ));
            }
        }
    }
    Ok(store)
}

/// `insecureSkipTlsVerify`: accepts any server certificate, still checks
/// that the handshake signatures are sound.
#[derive(Debug)]
struct NoVerification(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

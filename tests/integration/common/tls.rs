//! TLS for the fake downstreams: certificates made at test time and an
//! HTTPS site in front of a [`demo`](openapi_proxy::demo) site.
//!
//! [`Pki::generate`] makes two CAs that sign (one for servers, one for
//! clients), one that signs nothing, a server certificate for `127.0.0.1`
//! and `localhost`, a client certificate and a self-signed certificate for
//! another host, and writes them as PEM files into a fresh directory under
//! `target/`. Nothing is committed, so nothing expires.
//!
//! [`start_tls_site`] mirrors [`start_site`] with a rustls `ServerConfig`
//! (the ring provider, as the proxy uses), optionally requiring a client
//! certificate. Its handler passes each request on, headers and all, to a
//! plain [`start_site`] site: the demo's own handler answers it (ETags,
//! 304s, delays) and its [`Routes`] record what the proxy sent, so a TLS
//! test sets routes and reads `routes.seen()` exactly as a plain one does.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use actix_web::http::header;
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use openapi_proxy::demo::{Routes, start_site};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::common::validators::scratch_dir;

/// Certificates and keys for one test, as PEM files.
#[derive(Debug)]
pub struct Pki {
    /// The directory holding every file below.
    pub dir: PathBuf,
    /// The CA that signed [`Pki::server_cert`].
    pub ca: PathBuf,
    /// A CA that signed nothing used here.
    pub unrelated_ca: PathBuf,
    /// The CA that signed [`Pki::client_cert`] (a different one from
    /// [`Pki::ca`], as in a cluster where the front-proxy CA is not the
    /// serving CA).
    pub client_ca: PathBuf,
    /// Server certificate for `127.0.0.1` and `localhost`, signed by
    /// [`Pki::ca`].
    pub server_cert: PathBuf,
    /// Its key.
    pub server_key: PathBuf,
    /// Client certificate (`CN=openapi-proxy`), signed by
    /// [`Pki::client_ca`].
    pub client_cert: PathBuf,
    /// Its key.
    pub client_key: PathBuf,
    /// A self-signed certificate for `elsewhere.invalid`: wrong name, no
    /// known issuer.
    pub stranger_cert: PathBuf,
    /// Its key.
    pub stranger_key: PathBuf,
}

/// A certificate authority that can sign.
struct Ca {
    issuer: Issuer<'static, KeyPair>,
    pem: String,
}

fn ca(name: &str) -> Ca {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let key = KeyPair::generate().expect("CA key");
    let pem = params.self_signed(&key).expect("CA self-signs").pem();
    Ca { issuer: Issuer::new(params, key), pem }
}

/// A leaf certificate for `names` used for `purpose`, signed by `ca`
/// (self-signed without one): (certificate PEM, key PEM).
fn leaf(
    common_name: &str,
    names: &[&str],
    purpose: ExtendedKeyUsagePurpose,
    ca: Option<&Ca>,
) -> (String, String) {
    let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    let mut params = CertificateParams::new(names).expect("leaf parameters");
    params.distinguished_name.push(DnType::CommonName, common_name);
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![purpose];
    let key = KeyPair::generate().expect("leaf key");
    let cert = match ca {
        Some(ca) => params.signed_by(&key, &ca.issuer),
        None => params.self_signed(&key),
    }
    .expect("leaf signs");
    (cert.pem(), key.serialize_pem())
}

impl Pki {
    /// Makes everything afresh in `target/…/scratch/<name>-<pid>`.
    pub fn generate(name: &str) -> Self {
        let dir = scratch_dir(&format!("tls-{name}"));
        let write = |file: &str, pem: &str| {
            let path = dir.join(file);
            std::fs::write(&path, pem)
                .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
            path
        };
        let server_ca = ca("openapi-proxy test serving CA");
        let client_ca = ca("openapi-proxy test client CA");
        let unrelated = ca("openapi-proxy test unrelated CA");
        let (server_cert, server_key) = leaf(
            "127.0.0.1",
            &["127.0.0.1", "localhost"],
            ExtendedKeyUsagePurpose::ServerAuth,
            Some(&server_ca),
        );
        let (client_cert, client_key) =
            leaf("openapi-proxy", &[], ExtendedKeyUsagePurpose::ClientAuth, Some(&client_ca));
        let (stranger_cert, stranger_key) = leaf(
            "elsewhere.invalid",
            &["elsewhere.invalid"],
            ExtendedKeyUsagePurpose::ServerAuth,
            None,
        );
        Self {
            ca: write("ca.crt", &server_ca.pem),
            unrelated_ca: write("unrelated-ca.crt", &unrelated.pem),
            client_ca: write("client-ca.crt", &client_ca.pem),
            server_cert: write("server.crt", &server_cert),
            server_key: write("server.key", &server_key),
            client_cert: write("client.crt", &client_cert),
            client_key: write("client.key", &client_key),
            stranger_cert: write("stranger.crt", &stranger_cert),
            stranger_key: write("stranger.key", &stranger_key),
            dir,
        }
    }
}

/// A running HTTPS site (it and the plain site behind it run until the
/// test's actix system stops).
#[derive(Debug)]
pub struct TlsSite {
    /// Where the HTTPS server listens.
    pub addr: SocketAddr,
    /// The routes it serves, and the requests it saw.
    pub routes: Routes,
}

impl TlsSite {
    /// Its base URL, `https://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn certs(path: &Path) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_file_iter(path)
        .and_then(Iterator::collect)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The server's TLS configuration: `cert`/`key` as its identity; with
/// `client_ca`, a client certificate issued by it is required.
pub fn server_config(cert: &Path, key: &Path, client_ca: Option<&Path>) -> rustls::ServerConfig {
    let builder = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("protocol versions");
    let builder = match client_ca {
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in certs(ca) {
                roots.add(c).expect("client CA");
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider(),
            )
            .build()
            .expect("client verifier");
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let key = PrivateKeyDer::from_pem_file(key)
        .unwrap_or_else(|e| panic!("reading {}: {e}", key.display()));
    builder.with_single_cert(certs(cert), key).expect("server certificate and key")
}

/// Hop-by-hop and framing headers, which each connection sets for itself.
fn per_connection(name: &header::HeaderName) -> bool {
    [header::CONNECTION, header::CONTENT_LENGTH, header::TRANSFER_ENCODING, header::HOST]
        .contains(name)
}

/// Passes a request on to the plain site and its answer back.
async fn pass_on(req: HttpRequest, inner: web::Data<String>) -> HttpResponse {
    let client = awc::Client::builder().disable_redirects().no_default_headers().finish();
    let mut out = client.request(req.method().clone(), format!("{}{}", inner.as_str(), req.uri()));
    for (name, value) in req.headers() {
        if !per_connection(name) {
            out = out.append_header((name.clone(), value.clone()));
        }
    }
    let mut resp = match out.send().await {
        Ok(resp) => resp,
        Err(e) => return HttpResponse::BadGateway().body(format!("inner site: {e}")),
    };
    let body = match resp.body().limit(256 * 1024 * 1024).await {
        Ok(body) => body,
        Err(e) => return HttpResponse::BadGateway().body(format!("inner site body: {e}")),
    };
    let mut back = HttpResponse::build(resp.status());
    for (name, value) in resp.headers() {
        if !per_connection(name) && name != header::DATE {
            back.append_header((name.clone(), value.clone()));
        }
    }
    back.body(body)
}

/// Starts an HTTPS site on `127.0.0.1:0` serving `routes` with `cert` and
/// `key`, on the current actix system; with `client_ca`, connections
/// without a client certificate issued by that CA are refused.
///
/// # Errors
/// When no loopback port can be bound.
pub fn start_tls_site(
    routes: Routes,
    cert: &Path,
    key: &Path,
    client_ca: Option<&Path>,
) -> std::io::Result<TlsSite> {
    let inner = start_site(routes.clone())?;
    let data = web::Data::new(inner.url());
    let server = HttpServer::new(move || {
        App::new().app_data(data.clone()).default_service(web::to(pass_on))
    })
    .workers(1)
    .disable_signals()
    .bind_rustls_0_23(("127.0.0.1", 0), server_config(cert, key, client_ca))?;
    let addr =
        server.addrs().first().copied().ok_or_else(|| std::io::Error::other("no address bound"))?;
    actix_web::rt::spawn(server.run());
    Ok(TlsSite { addr, routes })
}

//! `inCluster: true`: the pod's own service account, as client-go's
//! `rest.InClusterConfig` finds it — the token and CA the kubelet mounts
//! under [`SERVICE_ACCOUNT_DIR`], and the API server's address from the
//! `KUBERNETES_SERVICE_HOST` and `KUBERNETES_SERVICE_PORT` variables every
//! pod gets.
//!
//! The token stays a file: the kubelet rotates projected tokens (hourly
//! by default, the old one valid a while longer), and the client re-reads
//! the file when it changes, so nothing here caches it.

use super::{BearerToken, Credentials, Environment, PemSource, TokenSource};

/// Where the kubelet mounts a pod's service-account credentials.
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// Why the pod's service account cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum InClusterError {
    /// The token or CA file is not there.
    #[error(
        "{path} is not a readable file (not running in a pod, or automountServiceAccountToken is false)"
    )]
    Missing {
        /// The file.
        path: String,
    },
    /// No URL was given and the service variables are not set.
    #[error(
        "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set (not running in a pod?); set url"
    )]
    NoService,
    /// `KUBERNETES_SERVICE_PORT` is not a port number.
    #[error("KUBERNETES_SERVICE_PORT {0:?} is not a port number")]
    BadPort(String),
}

/// The service account's credentials; `server` is filled from the service
/// variables when both are set (an IPv6 host gets its brackets).
///
/// # Errors
/// [`InClusterError::Missing`] when the token or CA file is absent,
/// [`InClusterError::BadPort`] for a port that is not a number.
pub fn resolve(env: &Environment) -> Result<Credentials, InClusterError> {
    let file = |name: &str| {
        let path = env.service_account_dir.join(name);
        if path.is_file() {
            Ok(path)
        } else {
            Err(InClusterError::Missing { path: path.display().to_string() })
        }
    };
    let token = file("token")?;
    let ca = file("ca.crt")?;
    Ok(Credentials {
        server: server(env)?,
        ca: Some(PemSource::File(ca)),
        insecure_skip_verify: false,
        client_cert: None,
        token: Some(TokenSource::Bearer(BearerToken::File(token))),
    })
}

/// `https://HOST:PORT` from the service variables, or `None` when either
/// is unset or empty (the caller then needs a `url`).
fn server(env: &Environment) -> Result<Option<String>, InClusterError> {
    let (Some(host), Some(port)) = (
        env.service_host.as_deref().filter(|h| !h.is_empty()),
        env.service_port.as_deref().filter(|p| !p.is_empty()),
    ) else {
        return Ok(None);
    };
    let port: u16 = port.parse().map_err(|_| InClusterError::BadPort(port.to_owned()))?;
    // net.JoinHostPort in client-go: an IPv6 literal needs brackets.
    let host = if host.contains(':') { format!("[{host}]") } else { host.to_owned() };
    Ok(Some(format!("https://{host}:{port}")))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn mounted(name: &str, files: &[&str]) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("openapi-proxy-sa-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        for f in files {
            std::fs::write(dir.join(f), "x").expect("file");
        }
        dir
    }

    fn env(dir: PathBuf, host: Option<&str>, port: Option<&str>) -> Environment {
        Environment {
            service_account_dir: dir,
            service_host: host.map(str::to_owned),
            service_port: port.map(str::to_owned),
        }
    }

    #[test]
    fn service_account_files_and_service_address_are_used() {
        let dir = mounted("ok", &["token", "ca.crt"]);
        let c = resolve(&env(dir.clone(), Some("10.96.0.1"), Some("443"))).expect("resolves");
        assert_eq!(c.server.as_deref(), Some("https://10.96.0.1:443"));
        assert_eq!(c.ca, Some(PemSource::File(dir.join("ca.crt"))));
        assert_eq!(c.token, Some(dir.join("token").into()));
        assert!(!c.insecure_skip_verify && c.client_cert.is_none());
    }

    #[test]
    fn an_ipv6_service_host_gets_brackets() {
        let dir = mounted("v6", &["token", "ca.crt"]);
        let c = resolve(&env(dir, Some("fd00:10:96::1"), Some("6443"))).expect("resolves");
        assert_eq!(c.server.as_deref(), Some("https://[fd00:10:96::1]:6443"));
    }

    #[test]
    fn without_service_variables_there_is_no_server() {
        let dir = mounted("nosvc", &["token", "ca.crt"]);
        assert_eq!(resolve(&env(dir.clone(), None, Some("443"))).expect("ok").server, None);
        assert_eq!(resolve(&env(dir, Some(""), Some("443"))).expect("ok").server, None);
    }

    #[test]
    fn a_missing_token_or_ca_is_named() {
        let dir = mounted("notoken", &["ca.crt"]);
        assert_eq!(
            resolve(&env(dir.clone(), None, None)),
            Err(InClusterError::Missing { path: dir.join("token").display().to_string() })
        );
        let dir = mounted("noca", &["token"]);
        assert_eq!(
            resolve(&env(dir.clone(), None, None)),
            Err(InClusterError::Missing { path: dir.join("ca.crt").display().to_string() })
        );
    }

    #[test]
    fn a_port_that_is_not_a_number_is_refused() {
        let dir = mounted("badport", &["token", "ca.crt"]);
        assert_eq!(
            resolve(&env(dir, Some("10.0.0.1"), Some("https"))),
            Err(InClusterError::BadPort("https".into()))
        );
    }
}

//! Why the proxy could not reach another server: a client that could not
//! be made from its configuration ([`ClientError`]), or a request that
//! failed ([`FetchError`]). Every piece of `outbound` reports through these.

use awc::http::StatusCode;

use crate::outbound::credentials::exec::cache::ExecTokenError;

/// Why a request to a downstream failed.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// Connecting, sending, or waiting for the response headers failed or
    /// timed out.
    #[error("requesting {url}")]
    Send {
        /// The URL.
        url: String,
        /// awc's error, as text (awc's error type is not `Send`).
        #[source]
        source: std::io::Error,
    },
    /// The downstream answered with a status we cannot use.
    #[error("{url} answered {status}")]
    Status {
        /// The URL.
        url: String,
        /// The status.
        status: StatusCode,
    },
    /// Reading the body failed, timed out, or exceeded the size limit.
    #[error("reading the body of {url}")]
    Body {
        /// The URL.
        url: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The token file could not be read.
    #[error("reading token file {path}")]
    Token {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The kubeconfig's exec credential plugin gave no usable token.
    #[error("exec credential plugin {command} of {user}")]
    Exec {
        /// The kubeconfig user (`/root/.kube/config users[admin]`).
        user: String,
        /// The command, as the kubeconfig spells it.
        command: String,
        /// Why (boxed: it is rare, and would make every fetch result
        /// larger).
        #[source]
        source: Box<ExecTokenError>,
    },
}

impl FetchError {
    /// Whether the body was longer than the client allowed.
    #[must_use]
    pub fn is_too_large(&self) -> bool {
        matches!(self, Self::Body { source, .. } if source.kind() == std::io::ErrorKind::FileTooLarge)
    }

    /// A short stable reason for metrics.
    #[must_use]
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Send { source, .. } | Self::Body { source, .. }
                if source.kind() == std::io::ErrorKind::TimedOut =>
            {
                "timeout"
            }
            Self::Send { .. } => "connect",
            Self::Status { .. } => "status",
            e if e.is_too_large() => "too_large",
            Self::Body { .. } => "body",
            Self::Token { .. } => "token",
            Self::Exec { .. } => "credentials",
        }
    }
}

/// Why a client could not be made from the configuration.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// A certificate or key file could not be read or parsed.
    #[error("{what} {path}")]
    Pem {
        /// Which file.
        what: &'static str,
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    /// rustls refused a certificate or key, or the configuration.
    #[error("{what} {path}")]
    Tls {
        /// What was being loaded.
        what: &'static str,
        /// The file(s) involved.
        path: String,
        /// rustls's reason.
        #[source]
        source: rustls::Error,
    },
    /// An inline token cannot be sent as a header.
    #[error("token {origin}")]
    Token {
        /// Where it came from.
        origin: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// No CA certificate was found (empty bundle, no system roots).
    #[error("no CA certificates found ({0})")]
    NoRoots(String),
}

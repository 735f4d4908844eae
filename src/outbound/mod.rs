//! Everything the proxy sends to other servers, for the poll loops and for
//! `check` alike: the HTTP [`client`] with its conditional GETs, the rustls
//! client configuration ([`tls`]), bearer tokens that follow file rotation
//! ([`token`]), credentials from kubeconfigs — exec credential plugins
//! included — and the in-cluster service account ([`credentials`]), size-limited body reading ([`body`]), and
//! server URLs as messages may show them ([`redact`]).

pub mod body;
pub mod client;
pub mod credentials;
pub mod error;
pub mod redact;
pub mod tls;
pub mod token;

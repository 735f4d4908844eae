//! Who may read the metadata: with `metadataAuthentication: delegated`,
//! only a request whose bearer token a downstream authenticates, as
//! kube-apiserver serves discovery and OpenAPI to `system:authenticated`
//! only. `/version`, the health endpoints and `/metrics` stay open, as
//! kube-apiserver binds the first ones to `system:unauthenticated`
//! (`system:public-info-viewer`); see [`Route::needs_credentials`].
//!
//! The router never awaits, so the check has two halves: a transport asks
//! [`access`] (which may ask a downstream, through an [`Authenticator`]
//! the front door room provides) and hands the [`Access`] to
//! [`router::answer`], which serves a gated route
//! only with [`Access::Accepted`] when authentication is on. A transport
//! that skipped the first half would pass [`Access::Open`], which is then
//! a 401: no path serves gated metadata unchecked.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::AppState;
use super::reply::Request;
use super::router::{self, Route};

/// The key of the core group's version: its owner authenticates tokens.
const CORE: &str = "api/v1";

/// What is known of a request's right to read the metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Nothing was checked: authentication is off, or the route is open.
    Open,
    /// A downstream authenticated the request's bearer token.
    Accepted,
    /// No bearer token, or one the downstream did not authenticate: 401.
    Refused,
    /// The downstream could not say (unreachable, an error, a timeout):
    /// 503, and nothing remembered.
    Unavailable,
    /// Too many reviews were being made to ask now: 429, nothing
    /// remembered.
    Busy,
}

/// A future an [`Authenticator`] answers with; it runs on the worker that
/// asked (the HTTP client it uses is one thread's).
pub(crate) type Verdict<'a> = Pin<Box<dyn Future<Output = Access> + 'a>>;

/// Decides whether a bearer token may read the metadata.
pub(crate) trait Authenticator: Send + Sync + std::fmt::Debug {
    /// The answer when it is known without asking anyone: no bearer token
    /// (refused), or an answer on the token still remembered.
    fn known(&self, authorization: Option<&[u8]>) -> Option<Access>;

    /// Asks a downstream about `authorization`'s token (or waits for the
    /// answer another request for it is already waiting for): `core`, the
    /// downstream the snapshot has serving the core group `/api/v1`, when
    /// there is one.
    fn review<'a>(&'a self, authorization: &'a [u8], core: Option<Arc<str>>) -> Verdict<'a>;
}

impl Route<'_> {
    /// Whether reading this route needs credentials when authentication
    /// is on. kube-apiserver's `system:public-info-viewer` opens
    /// `/version`, `/healthz`, `/livez` and `/readyz` to everyone; the
    /// proxy's own `/metrics` is scraped by Prometheus without a token and
    /// holds no API metadata (docs/operations.md#authenticated-metadata).
    pub(crate) fn needs_credentials(&self) -> bool {
        !matches!(self, Self::Version | Self::Healthz | Self::Readyz | Self::Metrics)
    }
}

/// What the router is to be told about `req`: [`Access::Open`] when
/// authentication is off or the route needs no credentials (or no route
/// serves the path), else the authenticator's answer, which may need a
/// downstream's review.
pub(crate) async fn access(state: &AppState, req: &Request<'_>) -> Access {
    let Some(auth) = &state.authentication else { return Access::Open };
    let gated = router::decode_path(req.path)
        .as_deref()
        .and_then(router::route)
        .is_some_and(|r| r.needs_credentials());
    if !gated {
        return Access::Open;
    }
    if let Some(known) = auth.known(req.authorization) {
        return known;
    }
    match req.authorization {
        Some(authorization) => {
            let core = state.store.load().owners.owner(CORE).cloned();
            auth.review(authorization, core).await
        }
        None => Access::Refused,
    }
}

/// The bearer token of an `Authorization` value, as kube-apiserver's
/// bearer-token authenticator reads it: the scheme `Bearer` in any case,
/// one space, a non-empty token up to the next space. `None` for any
/// other scheme or shape.
pub(crate) fn bearer_token(authorization: &[u8]) -> Option<&[u8]> {
    let mut parts = authorization.splitn(3, |b| *b == b' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case(b"bearer") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_are_read_as_kube_apiserver_reads_them() {
        assert_eq!(bearer_token(b"Bearer abc"), Some(&b"abc"[..]));
        assert_eq!(bearer_token(b"bearer abc"), Some(&b"abc"[..]));
        assert_eq!(bearer_token(b"Bearer abc def"), Some(&b"abc"[..]));
        assert_eq!(bearer_token(b"Bearer "), None);
        assert_eq!(bearer_token(b"Bearer"), None);
        assert_eq!(bearer_token(b"Basic YTpi"), None);
        assert_eq!(bearer_token(b""), None);
    }

    #[test]
    fn only_public_information_is_open() {
        for path in ["/version", "/healthz", "/livez", "/readyz", "/metrics"] {
            assert!(!router::route(path).unwrap().needs_credentials(), "{path}");
        }
        for path in [
            "/",
            "/api",
            "/api/v1",
            "/apis",
            "/apis/",
            "/apis/apps",
            "/apis/apps/v1",
            "/openapi/v2",
            "/openapi/v3",
            "/openapi/v3/apis/apps/v1",
        ] {
            assert!(router::route(path).unwrap().needs_credentials(), "{path}");
        }
    }
}

//! Which headers cross the front door (RFC 9110 §7.6.1).
//!
//! A proxy removes the hop-by-hop headers of the connection it received a
//! message on, and every header the `Connection` header names, before it
//! forwards the message; it adds itself to `X-Forwarded-For`. Everything
//! else crosses unchanged, both ways: `Authorization` and the
//! impersonation headers (`Impersonate-*`) are the client's and reach the
//! downstream as sent, `Content-Encoding` and `Content-Type` keep their
//! bodies' meaning, a downstream's `WWW-Authenticate` and `Status` bodies
//! reach the client. One exception, on requests only: the request-header
//! authentication headers (`X-Remote-User`, …) stay behind, as
//! kube-aggregator removes them.

use std::net::IpAddr;

use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};

/// Hop-by-hop headers, and the framing headers the proxy sets itself for
/// the message it writes (`Host` from the downstream's URL,
/// `Content-Length` from the body it streams, no `Expect`).
const NOT_FORWARDED: [&str; 12] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "proxy-authorization",
    "proxy-authenticate",
    "host",
    "content-length",
    // actix-http has answered `100 Continue` itself; the body comes anyway.
    "expect",
];

/// `X-Forwarded-For`.
pub(crate) const X_FORWARDED_FOR: &str = "x-forwarded-for";

/// Whether the header `name` (lower-case) is removed before a message is
/// forwarded, given the names its `Connection` headers list.
pub(crate) fn stays_behind(name: &str, connection: &[String]) -> bool {
    NOT_FORWARDED.contains(&name) || connection.iter().any(|t| t.eq_ignore_ascii_case(name))
}

/// The names `Connection` header values list, lower-case.
pub(crate) fn connection_names<'a>(values: impl Iterator<Item = &'a [u8]>) -> Vec<String> {
    values
        .filter_map(|v| std::str::from_utf8(v).ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().to_ascii_lowercase())
        .filter(|t| !t.is_empty())
        .collect()
}

/// The headers of `headers` a forwarded message carries (each name's
/// values in their order).
/// `X-Forwarded-For` is left out: see [`forwarded_for`].
pub(crate) fn end_to_end(headers: &HeaderMap) -> Vec<(&HeaderName, &HeaderValue)> {
    let connection = connection_names(headers.get_all("connection").map(HeaderValue::as_bytes));
    headers
        .iter()
        .filter(|(name, _)| {
            !stays_behind(name.as_str(), &connection) && name.as_str() != X_FORWARDED_FOR
        })
        .collect()
}

/// The headers of a client's request its downstream gets: the
/// [`end_to_end`] ones but the identity claims of [`claims_identity`].
pub(crate) fn to_downstream(headers: &HeaderMap) -> Vec<(&HeaderName, &HeaderValue)> {
    let mut out = end_to_end(headers);
    out.retain(|(name, _)| !claims_identity(name.as_str()));
    out
}

/// The request-header authentication headers (kube-apiserver's
/// `--requestheader-*-headers` as kube-aggregator sets them): a downstream
/// that trusts them, when the connection comes from a front proxy it
/// trusts, takes them as the caller's identity. kube-aggregator deletes
/// the client's before proxying (client-go's `SetAuthProxyHeaders`); the
/// front door sends none of its own, so a client's are claims nobody
/// vouched for. `name` is lower-case, as header maps keep names.
fn claims_identity(name: &str) -> bool {
    matches!(name, "x-remote-user" | "x-remote-group" | "x-remote-uid")
        || name.starts_with("x-remote-extra-")
}

/// `X-Forwarded-For` as the downstream gets it: the client's list with the
/// client's address appended (several lines joined, in order), as Go's
/// `httputil.ReverseProxy` and kube-aggregator do. `None` when the peer is
/// unknown and the client sent none.
pub(crate) fn forwarded_for(headers: &HeaderMap, peer: Option<IpAddr>) -> Option<HeaderValue> {
    let mut list: Vec<String> = headers
        .get_all(X_FORWARDED_FOR)
        .filter_map(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
        .collect();
    if let Some(peer) = peer {
        list.push(peer.to_string());
    }
    if list.is_empty() {
        return None;
    }
    HeaderValue::from_str(&list.join(", ")).ok()
}

/// Whether a response with `status` to a request with `method` has no body
/// (RFC 9110 §6.4.1): 1xx, 204, 304, and any answer to HEAD.
pub(crate) fn bodiless(method: &actix_web::http::Method, status: u16) -> bool {
    method == actix_web::http::Method::HEAD || status < 200 || status == 204 || status == 304
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut m = HeaderMap::new();
        for (n, v) in pairs {
            m.append(
                HeaderName::from_bytes(n.as_bytes()).expect("name"),
                HeaderValue::from_str(v).expect("value"),
            );
        }
        m
    }

    /// Sorted: actix's header map keeps the order of one name's values,
    /// not of names.
    fn names(m: &HeaderMap) -> Vec<String> {
        let mut out: Vec<String> = end_to_end(m)
            .into_iter()
            .map(|(n, v)| format!("{n}: {}", v.to_str().unwrap_or("?")))
            .collect();
        out.sort();
        out
    }

    #[test]
    fn hop_by_hop_headers_and_those_connection_names_stay_behind() {
        let m = map(&[
            ("host", "proxy:8080"),
            ("connection", "keep-alive, X-Trace"),
            ("keep-alive", "timeout=5"),
            ("x-trace", "1"),
            ("te", "trailers"),
            ("transfer-encoding", "chunked"),
            ("content-length", "12"),
            ("proxy-authorization", "Basic x"),
            ("authorization", "Bearer client"),
            ("impersonate-user", "jane"),
            ("content-encoding", "gzip"),
            ("accept", "application/json"),
            ("accept", "application/yaml"),
        ]);
        assert_eq!(
            names(&m),
            [
                "accept: application/json",
                "accept: application/yaml",
                "authorization: Bearer client",
                "content-encoding: gzip",
                "impersonate-user: jane",
            ]
        );
    }

    /// A client's claim to an identity in the request-header
    /// authentication headers never reaches a downstream, whatever the
    /// case of their names; other `X-Remote`-like names cross.
    #[test]
    fn identity_headers_sent_by_a_client_stay_behind() {
        let m = map(&[
            ("X-Remote-User", "admin"),
            ("x-remote-group", "system:masters"),
            ("X-REMOTE-GROUP", "system:nodes"),
            ("X-Remote-Uid", "0"),
            ("X-Remote-Extra-Scopes", "all"),
            ("x-remote-extra-acme.com%2fproject", "x"),
            ("authorization", "Bearer client"),
            ("x-remote-users", "kept"),
            ("x-remoteuser", "kept"),
        ]);
        let forwarded: Vec<String> = to_downstream(&m)
            .into_iter()
            .map(|(n, v)| format!("{n}: {}", v.to_str().unwrap_or("?")))
            .collect();
        let mut forwarded = forwarded;
        forwarded.sort();
        assert_eq!(
            forwarded,
            ["authorization: Bearer client", "x-remote-users: kept", "x-remoteuser: kept"]
        );
        let answer = map(&[("x-remote-user", "from the downstream")]);
        assert_eq!(
            names(&answer),
            ["x-remote-user: from the downstream"],
            "answers are not filtered"
        );
    }

    #[test]
    fn the_client_is_appended_to_x_forwarded_for() {
        let peer = Some("10.0.0.7".parse().expect("ip"));
        assert_eq!(forwarded_for(&map(&[]), peer).expect("set"), "10.0.0.7");
        let m = map(&[("x-forwarded-for", "1.2.3.4"), ("X-Forwarded-For", "5.6.7.8")]);
        assert_eq!(forwarded_for(&m, peer).expect("set"), "1.2.3.4, 5.6.7.8, 10.0.0.7");
        assert!(names(&m).is_empty(), "the old lines are replaced, not repeated");
        assert_eq!(forwarded_for(&map(&[]), None), None);
    }

    #[test]
    fn answers_without_a_body() {
        use actix_web::http::Method;
        assert!(bodiless(&Method::HEAD, 200));
        assert!(bodiless(&Method::GET, 204));
        assert!(bodiless(&Method::GET, 304));
        assert!(!bodiless(&Method::GET, 200));
        assert!(!bodiless(&Method::DELETE, 404));
    }
}

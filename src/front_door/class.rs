//! What a passed-on request is, for its metrics and its limits: the verb
//! (as kube-apiserver's `apiserver_request_total` names them, coarsely) and
//! whether it is long-running.
//!
//! kube-apiserver leaves long-running requests out of
//! `--max-requests-inflight`: the verbs `watch` and `proxy`, and the
//! subresources `attach`, `exec`, `log`, `portforward` and `proxy`
//! (`LongRunningRequestCheck` in its server config). The front door does the
//! same, so that a thousand watches never crowd out a `get`.

use actix_web::http::Method;

/// A request's class: its verb label and whether it is long-running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RequestClass {
    /// `get`, `watch`, `create`, `update`, `patch`, `delete`, `connect`
    /// (an upgrade), `options` or `other`.
    pub verb: &'static str,
    /// Not counted against `maxRequestsInflight`.
    pub long_running: bool,
}

/// Subresources kube-apiserver counts as long-running.
const LONG_RUNNING_SUBRESOURCES: [&str; 5] = ["attach", "exec", "log", "portforward", "proxy"];

/// Classifies a request: `path` without its query, `query` without `?`,
/// `upgrade` when it asks for a protocol switch.
pub(crate) fn classify(method: &Method, path: &str, query: &str, upgrade: bool) -> RequestClass {
    let segments = resource_segments(path).unwrap_or_default();
    let watch = watch_query(query) || segments.first() == Some(&"watch");
    let verb = if upgrade {
        "connect"
    } else {
        match *method {
            Method::GET | Method::HEAD if watch => "watch",
            Method::GET | Method::HEAD => "get",
            Method::POST => "create",
            Method::PUT => "update",
            Method::PATCH => "patch",
            Method::DELETE => "delete",
            Method::OPTIONS => "options",
            _ => "other",
        }
    };
    // `namespaces/<ns>/<resource>/<name>/<subresource>`, or
    // `<resource>/<name>/<subresource>` (`nodes/n/proxy`, `namespaces/n/finalize`).
    let at = if segments.first() == Some(&"namespaces") && segments.len() >= 4 { 4 } else { 2 };
    let subresource = segments.get(at).copied();
    let long_running = upgrade
        || verb == "watch"
        || subresource.is_some_and(|s| LONG_RUNNING_SUBRESOURCES.contains(&s));
    RequestClass { verb, long_running }
}

/// The segments after the group-version: `namespaces/ns/pods/name/log` of
/// `/api/v1/namespaces/ns/pods/name/log`.
fn resource_segments(path: &str) -> Option<Vec<&str>> {
    let rest = if let Some(r) = path.strip_prefix("/api/") {
        r.split_once('/')?.1
    } else {
        let r = path.strip_prefix("/apis/")?;
        r.split_once('/')?.1.split_once('/')?.1
    };
    Some(rest.split('/').filter(|s| !s.is_empty()).collect())
}

/// `watch=<true>` in the query, `true` as Go's `strconv.ParseBool` reads it.
fn watch_query(query: &str) -> bool {
    query.split('&').any(|pair| {
        pair.split_once('=').is_some_and(|(k, v)| {
            k == "watch" && matches!(v, "1" | "t" | "T" | "true" | "TRUE" | "True")
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(method: Method, target: &str) -> (&'static str, bool) {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let c = classify(&method, path, query, false);
        (c.verb, c.long_running)
    }

    #[test]
    fn verbs_follow_the_method_and_watch() {
        assert_eq!(class(Method::GET, "/api/v1/namespaces/a/pods"), ("get", false));
        assert_eq!(class(Method::GET, "/api/v1/namespaces/a/pods?watch=true"), ("watch", true));
        assert_eq!(class(Method::GET, "/api/v1/pods?limit=5&watch=1"), ("watch", true));
        assert_eq!(class(Method::GET, "/api/v1/pods?watch=false"), ("get", false));
        assert_eq!(class(Method::GET, "/api/v1/watch/namespaces/a/pods"), ("watch", true));
        assert_eq!(class(Method::GET, "/apis/apps/v1/watch/deployments"), ("watch", true));
        assert_eq!(class(Method::POST, "/api/v1/namespaces/a/pods"), ("create", false));
        assert_eq!(class(Method::PUT, "/api/v1/namespaces/a/pods/p"), ("update", false));
        assert_eq!(
            class(Method::PATCH, "/apis/apps/v1/namespaces/a/deployments/d"),
            ("patch", false)
        );
        assert_eq!(class(Method::DELETE, "/api/v1/namespaces/a/pods/p"), ("delete", false));
        let upgrade = classify(&Method::GET, "/api/v1/namespaces/a/pods/p/exec", "", true);
        assert_eq!((upgrade.verb, upgrade.long_running), ("connect", true));
    }

    #[test]
    fn logs_exec_and_proxy_are_long_running() {
        assert!(class(Method::GET, "/api/v1/namespaces/a/pods/p/log?follow=true").1);
        assert!(class(Method::GET, "/api/v1/namespaces/a/pods/p/log").1);
        assert!(class(Method::POST, "/api/v1/namespaces/a/pods/p/exec").1);
        assert!(class(Method::GET, "/api/v1/namespaces/a/services/s/proxy/x/y").1);
        assert!(class(Method::GET, "/api/v1/nodes/n/proxy/metrics").1);
        assert!(!class(Method::GET, "/api/v1/namespaces/a/pods/log").1, "a pod named log");
        assert!(!class(Method::GET, "/api/v1/namespaces/a/pods/p/status").1);
        assert!(!class(Method::GET, "/apis/apps/v1/namespaces/a/deployments/d/scale").1);
    }
}

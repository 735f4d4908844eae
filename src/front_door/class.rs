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

/// Classifies a request: `path` decoded and without its query, `query`
/// raw and without `?`, `upgrade` when it asks for a protocol switch.
///
/// It reads the request as kube-apiserver's request info does (the
/// `RequestInfoFactory` in k8s.io/apiserver), because the downstream
/// decides from that what it streams: a request the downstream holds open
/// but this counts as short would take an in-flight place for as long as
/// it lasts, whatever its spelling (`?%77atch=1`).
pub(crate) fn classify(method: &Method, path: &str, query: &str, upgrade: bool) -> RequestClass {
    let info = resource_info(path);
    let watch = info.is_some_and(|i| match i.path_verb {
        Some(verb) => verb == "watch",
        None => i.name.is_none() && watch_query(query),
    });
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
    let long_running = upgrade
        || verb == "watch"
        || info.is_some_and(|i| {
            i.path_verb.is_some()
                || i.subresource.is_some_and(|s| LONG_RUNNING_SUBRESOURCES.contains(&s))
        });
    RequestClass { verb, long_running }
}

/// What a resource request's path says, as kube-apiserver reads it.
#[derive(Debug, Clone, Copy)]
struct ResourceInfo<'a> {
    /// `watch` or `proxy` before the resource (`/api/v1/watch/pods`).
    path_verb: Option<&'a str>,
    /// The object's name, when the path names one.
    name: Option<&'a str>,
    /// What follows the name (`log` of `pods/p/log`).
    subresource: Option<&'a str>,
}

/// Path verbs (kube-apiserver's `specialVerbs`); both are long-running.
const PATH_VERBS: [&str; 2] = ["proxy", "watch"];

/// Subresources of a namespace itself (`namespaces/<ns>/finalize`), not
/// resources in it.
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["finalize", "status"];

/// The resource request in a decoded path, `None` when it is not one: the
/// path trimmed of slashes at both ends and split at every slash, empty
/// segments kept (kube-apiserver's `splitPath`); `api/<v>/…` with at least
/// one segment after the version, `apis/<g>/<v>/…` likewise.
fn resource_info(path: &str) -> Option<ResourceInfo<'_>> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let rest = match parts.as_slice() {
        ["api", _version, rest @ ..] if !rest.is_empty() => rest,
        ["apis", _group, _version, rest @ ..] if !rest.is_empty() => rest,
        _ => return None,
    };
    let (path_verb, mut rest) = match rest {
        [verb, more @ ..] if PATH_VERBS.contains(verb) => {
            if more.is_empty() {
                // kube-apiserver refuses it (no resource): not long-running.
                return None;
            }
            (Some(*verb), more)
        }
        _ => (None, rest),
    };
    // `namespaces/<ns>/<resource>/…`: the resource's parts follow.
    if let ["namespaces", _, next, ..] = rest
        && !NAMESPACE_SUBRESOURCES.contains(next)
    {
        rest = rest.get(2..).unwrap_or_default();
    }
    Some(ResourceInfo {
        path_verb,
        // An empty name (`pods//x`) is none, as kube-apiserver tests it.
        name: rest.get(1).copied().filter(|n| !n.is_empty()),
        // `proxy/...` takes no subresource (`specialVerbsNoSubresources`).
        subresource: rest.get(2).copied().filter(|_| path_verb != Some("proxy")),
    })
}

/// Whether the query asks for a watch: the first `watch` value, as Go's
/// `url.ParseQuery` decodes the query, is anything but `0` or `false` (any
/// case), as apimachinery's `Convert_Slice_string_To_bool` reads list
/// options: `?watch`, `?watch=yes`, `?%77atch=%31` are watches.
fn watch_query(query: &str) -> bool {
    query_values(query, b"watch").next().is_some_and(|v| v != b"0" && !equal_fold_false(&v))
}

/// The values of `key` in `query`, in order, decoded as Go's
/// `url.ParseQuery` decodes them: pairs split at `&`, a pair containing `;`
/// or a bad percent escape skipped, `+` a space.
fn query_values<'a>(query: &'a str, key: &'a [u8]) -> impl Iterator<Item = Vec<u8>> + 'a {
    query.split('&').filter(|pair| !pair.is_empty() && !pair.contains(';')).filter_map(
        move |pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let k = unescape_query(k)?;
            let v = unescape_query(v)?;
            (k == key).then_some(v)
        },
    )
}

/// Go's `url.QueryUnescape`: `%XX` a byte, `+` a space, `None` for a `%`
/// without two hex digits.
fn unescape_query(s: &str) -> Option<Vec<u8>> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'%' => {
                let hex = |at: usize| bytes.get(at).and_then(|h| char::from(*h).to_digit(16));
                let (hi, lo) = (hex(i + 1)?, hex(i + 2)?);
                out.push(u8::try_from(hi * 16 + lo).expect("two hex digits make a byte"));
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    Some(out)
}

/// Go's `strings.EqualFold(v, "false")`: Unicode simple case folding, in
/// which the only letter outside ASCII that folds into `false` is `ſ`
/// (U+017F, folding to `s`).
fn equal_fold_false(v: &[u8]) -> bool {
    std::str::from_utf8(v).is_ok_and(|v| {
        v.chars()
            .map(|c| if c == '\u{17f}' { 's' } else { c.to_ascii_lowercase() })
            .eq("false".chars())
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
        // `follow` does not decide it, however spelled: every log is long-running.
        assert!(class(Method::GET, "/api/v1/namespaces/a/pods/p/log?%66ollow=%30").1);
        assert!(class(Method::POST, "/api/v1/namespaces/a/pods/p/exec").1);
        assert!(class(Method::GET, "/api/v1/namespaces/a/services/s/proxy/x/y").1);
        assert!(class(Method::GET, "/api/v1/nodes/n/proxy/metrics").1);
        assert!(!class(Method::GET, "/api/v1/namespaces/a/pods/log").1, "a pod named log");
        assert!(!class(Method::GET, "/api/v1/namespaces/a/pods/p/status").1);
        assert!(!class(Method::GET, "/apis/apps/v1/namespaces/a/deployments/d/scale").1);
    }

    /// The query as Go's `url.ParseQuery` reads it (percent-decoded, `+` a
    /// space), and `watch` true unless its first value is `0` or `false`,
    /// as apimachinery's `Convert_Slice_string_To_bool` reads it.
    #[test]
    fn a_watch_is_a_watch_however_its_query_is_spelled() {
        for target in [
            "/api/v1/pods?%77atch=1",
            "/api/v1/pods?%77%61%74%63%68=%31",
            "/api/v1/pods?watch=%31",
            "/api/v1/pods?watch=%74rue",
            "/api/v1/pods?watch=yes",
            "/api/v1/pods?watch=on",
            "/api/v1/pods?watch=TRUE",
            "/api/v1/pods?watch",
            "/api/v1/pods?watch=",
            "/api/v1/pods?watch=+",
            "/api/v1/pods?watch=1&watch=0",
            "/api/v1/pods?limit=5&&watch=1",
            "/api/v1/namespaces/a/pods?watch=%zz&watch=1",
            "/apis/apps/v1/namespaces/a/deployments?%77atch=true",
        ] {
            assert_eq!(class(Method::GET, target), ("watch", true), "{target}");
        }
        for target in [
            "/api/v1/pods?watch=0",
            "/api/v1/pods?watch=false",
            "/api/v1/pods?watch=FaLsE",
            "/api/v1/pods?watch=%66alse",
            "/api/v1/pods?watch=fal%C5%BFe",
            "/api/v1/pods?watch=0&watch=1",
            "/api/v1/pods?Watch=1",
            "/api/v1/pods?watch%3D1",
            "/api/v1/pods?watch=1;x",
            "/api/v1/pods?watch=%1",
            "/api/v1/pods?x=watch",
        ] {
            assert_eq!(class(Method::GET, target), ("get", false), "{target}");
        }
    }

    /// `?watch` is read on a collection only: a GET of one object is a
    /// get, whatever its query (kube-apiserver's request info reads it only
    /// when there is no name).
    #[test]
    fn a_named_get_is_not_a_watch() {
        assert_eq!(class(Method::GET, "/api/v1/namespaces/a/pods/p?watch=1"), ("get", false));
        assert_eq!(class(Method::GET, "/api/v1/nodes/n?watch=true"), ("get", false));
        assert_eq!(class(Method::GET, "/api/v1/namespaces/a?watch=1"), ("get", false));
        assert_eq!(class(Method::GET, "/api/v1/namespaces?watch=1"), ("watch", true));
    }

    /// The path is read as kube-apiserver splits it: decoded (the caller
    /// decodes it), trimmed of slashes at both ends, empty segments kept,
    /// `namespaces/<ns>/status|finalize` a namespace's subresource, and the
    /// `watch` and `proxy` path verbs long-running.
    #[test]
    fn the_path_is_read_as_kube_apiserver_reads_it() {
        assert!(class(Method::GET, "/api/v1/namespaces/a/pods/p/log/").1);
        assert!(!class(Method::GET, "/api/v1/namespaces/a/pods/p//log").1);
        assert!(!class(Method::GET, "/api/v1/namespaces/a/log").1, "a resource named log");
        assert!(!class(Method::GET, "/api/v1/namespaces/a/exec").1);
        assert!(!class(Method::PUT, "/api/v1/namespaces/a/finalize").1);
        assert!(class(Method::GET, "/api/v1/proxy/nodes/n/metrics").1);
        assert!(class(Method::GET, "/api/v1/watch/namespaces/a/pods/p").1);
        assert!(!class(Method::GET, "/api/v1/watch").1, "no resource: an error, not a watch");
        assert!(!class(Method::GET, "/apis/apps/v1?watch=1").1, "not a resource request");
    }

    /// What the front door classifies is the decoded path, as for routing:
    /// an encoded subresource is the subresource.
    #[test]
    fn an_encoded_subresource_is_long_running() {
        for raw in [
            "/api/v1/namespaces/x/pods/p/%6Cog",
            "/api/v1/namespaces/x/pods/p/%65xec",
            "/api/v1/namespaces/x/pods/p%2Fattach",
            "/api/v1/%77atch/namespaces/x/pods",
        ] {
            let decoded = crate::http::router::decode_path(raw).expect("decodes");
            assert!(classify(&Method::GET, &decoded, "", false).long_running, "{raw}");
        }
    }
}

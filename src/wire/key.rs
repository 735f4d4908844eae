//! Document keys: the names under which Kubernetes publishes OpenAPI v3
//! documents (`/openapi/v3/<key>`).
//!
//! kube-apiserver groups its paths by the root path of the web service that
//! serves them (docs/upstream.md#b-1-1, `InstallV3` keys by `RootPath()[1:]`):
//! `api/v1` and `apis/<group>/<version>` for resources, and for the other
//! services `api`, `apis`, `apis/<group>`, `version`, `logs`,
//! `.well-known/openid-configuration`, `openid/v1/jwks`. We derive the same
//! key from a path alone:
//!
//! - `/api/<version>/…` → `api/<version>`; `/api` → `api`;
//! - `/apis/<group>/<version>/…` → `apis/<group>/<version>`;
//!   `/apis/<group>` → `apis/<group>`; `/apis` → `apis`;
//! - any other path → its leading literal segments, up to the first
//!   templated segment (`/logs/{logpath}` → `logs`,
//!   `/openid/v1/jwks/` → `openid/v1/jwks`). For a non-Kubernetes API this
//!   gives one document per static path prefix, which is deterministic and
//!   keeps related operations together.
//!
//! A key is a name a downstream chose (a root key of its `/openapi/v3`, a
//! path of its Swagger document) that we publish in a URL, so it must be
//! one Kubernetes could have published (docs/wire.md#a-4): the group and
//! version in `api/<version>`, `apis/<group>` and `apis/<group>/<version>`
//! are valid names ([`super::name`]), and every other segment is made of
//! characters a URL path carries as they are — no `?`, `#`, `%`, space or
//! non-ASCII. Anything else has no key: [`DocumentKey::parse`] refuses it,
//! [`DocumentKey::from_path`] leaves the path unplaced.

use std::fmt;

use super::GroupVersion;
use super::name::{is_group_name, is_version_name};

/// The URL key of one published document, without leading or trailing
/// slash (`apis/apps/v1`).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DocumentKey(String);

impl DocumentKey {
    /// The key that the operations at `path` are published under, or `None`
    /// for a path that has no literal first segment (`/`, `/{id}`).
    #[must_use]
    pub fn from_path(path: &str) -> Option<Self> {
        // Read no further than the key goes: a cluster's document has
        // thousands of paths, most of them long.
        let mut segments = path.split('/').filter(|s| !s.is_empty());
        let literal = |s: &&str| !s.contains('{');
        let first = segments.next().filter(literal)?;
        let more = match first {
            "api" => 1,
            "apis" => 2,
            _ => usize::MAX,
        };
        let mut key = vec![first];
        key.extend(segments.take(more).take_while(literal));
        valid_segments(&key).then(|| Self(key.join("/")))
    }

    /// Wraps a key that is already in canonical form (no leading or
    /// trailing slash, no empty segment) and names what Kubernetes could
    /// publish (see the module's documentation); `None` otherwise.
    #[must_use]
    pub fn parse(key: &str) -> Option<Self> {
        let segments: Vec<&str> = key.split('/').collect();
        valid_segments(&segments).then(|| Self(key.to_owned()))
    }

    /// True for keys that name a group-version (`api/v1`,
    /// `apis/<group>/<version>`), the documents discovery also lists.
    #[must_use]
    pub fn is_group_version(&self) -> bool {
        self.group_version().is_some()
    }

    /// The group-version this key names, if it names one.
    #[must_use]
    pub fn group_version(&self) -> Option<GroupVersion> {
        GroupVersion::from_key(&self.0)
    }

    /// The key as text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Whether `segments` make a key: each one safe, and the group and version
/// of `api/…` and `apis/…` keys valid names. `api` takes at most a version
/// and `apis` at most a group and a version, as in Kubernetes.
fn valid_segments(segments: &[&str]) -> bool {
    if segments.is_empty() || !segments.iter().all(|s| safe_segment(s)) {
        return false;
    }
    match segments {
        ["api"] | ["apis"] => true,
        ["api", version] => is_version_name(version),
        ["apis", group] => is_group_name(group),
        ["apis", group, version] => is_group_name(group) && is_version_name(version),
        ["api" | "apis", ..] => false,
        _ => true,
    }
}

/// A key segment must be usable as a URL path segment as it is, and as a
/// file name below an output directory: not empty, not `.` or `..`, and
/// only RFC 3986 `pchar`s that need no percent-encoding (letters, digits,
/// `-._~!$&'()*+,;=:@`). A hostile document's paths (`/../../etc/x`) must
/// not become keys that `convert --out` would write outside its directory,
/// and a `?`, `#`, `%` or space would give a URL that does not lead back to
/// the key.
fn safe_segment(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@".contains(&b))
}

impl fmt::Display for DocumentKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for DocumentKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(path: &str) -> Option<String> {
        DocumentKey::from_path(path).map(|k| k.0)
    }

    #[test]
    fn core_group_paths_belong_to_api_v1() {
        assert_eq!(key("/api/v1/namespaces/{namespace}/pods").as_deref(), Some("api/v1"));
        assert_eq!(key("/api/v1/").as_deref(), Some("api/v1"));
        assert_eq!(key("/api/").as_deref(), Some("api"));
    }

    #[test]
    fn named_group_paths_belong_to_their_group_version() {
        assert_eq!(key("/apis/apps/v1/deployments").as_deref(), Some("apis/apps/v1"));
        assert_eq!(key("/apis/apps/").as_deref(), Some("apis/apps"));
        assert_eq!(key("/apis/").as_deref(), Some("apis"));
    }

    #[test]
    fn other_paths_use_their_literal_prefix() {
        assert_eq!(key("/version/").as_deref(), Some("version"));
        assert_eq!(key("/logs/{logpath}").as_deref(), Some("logs"));
        assert_eq!(key("/openid/v1/jwks/").as_deref(), Some("openid/v1/jwks"));
        assert_eq!(
            key("/.well-known/openid-configuration/").as_deref(),
            Some(".well-known/openid-configuration")
        );
    }

    #[test]
    fn templated_or_empty_first_segment_has_no_key() {
        assert_eq!(key("/"), None);
        assert_eq!(key("/{id}/x"), None);
        assert_eq!(key(""), None);
    }

    #[test]
    fn dot_segments_never_make_a_key() {
        assert_eq!(key("/../../etc/passwd"), None);
        assert_eq!(key("/apis/../v1"), None);
        assert_eq!(key("/a/./b"), None);
        assert_eq!(key("/a\\b"), None);
        assert!(DocumentKey::parse("apis/../x").is_none());
        assert!(DocumentKey::parse("apis//x").is_none());
    }

    /// Root keys with `?`, `#`, a space or `%` gave URLs that 404, and a
    /// group named like a path was requested as written.
    #[test]
    fn keys_that_are_not_url_safe_or_not_kubernetes_names_are_refused() {
        for k in [
            "apis/a?b/v1",
            "apis/a#b/v1",
            "apis/a b/v1",
            "apis/a%2Fb/v1",
            "version?x",
            "logs#x",
            "open id",
            "caf%C3%A9",
            "café",
            "apis/Apps/v1",
            "apis/apps/V1",
            "apis/apps/1",
            "apis/a_b",
            "api/v1/pods",
            "apis/apps/v1/deployments",
            "api/",
            "../../api/v1/namespaces/kube-system/secrets?x=",
            "apis/../../api/v1/namespaces/kube-system/secrets?x=/v1",
        ] {
            assert!(DocumentKey::parse(k).is_none(), "{k:?}");
        }
        for path in ["/apis/a b/v1/x", "/apis/A/v1/x", "/api/V1/pods", "/x%2Fy", "/a?b", "/é"] {
            assert_eq!(key(path), None, "{path:?}");
        }
    }

    #[test]
    fn every_key_kubernetes_publishes_is_accepted() {
        for k in [
            "api",
            "api/v1",
            "apis",
            "apis/apps",
            "apis/apps/v1",
            "apis/networking.k8s.io/v1beta1",
            "apis/cluster.x-k8s.io/v1alpha4",
            "version",
            "logs",
            "openid/v1/jwks",
            ".well-known/openid-configuration",
            "a~b/c:d@e",
        ] {
            assert_eq!(DocumentKey::parse(k).map(|d| d.0).as_deref(), Some(k), "{k}");
        }
    }

    #[test]
    fn group_version_keys_are_recognised() {
        for (k, gv) in [
            ("api/v1", true),
            ("apis/apps/v1", true),
            ("api", false),
            ("apis/apps", false),
            ("version", false),
            ("openid/v1/jwks", false),
        ] {
            assert_eq!(DocumentKey::parse(k).unwrap().is_group_version(), gv, "{k}");
        }
    }
}

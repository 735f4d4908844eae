//! Document keys: the names under which Kubernetes publishes OpenAPI v3
//! documents (`/openapi/v3/<key>`).
//!
//! kube-apiserver groups its paths by the root path of the web service that
//! serves them (docs/wire.md#b-1-1, `InstallV3` keys by `RootPath()[1:]`):
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

use std::fmt;

use super::GroupVersion;

/// The URL key of one published document, without leading or trailing
/// slash (`apis/apps/v1`).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DocumentKey(String);

impl DocumentKey {
    /// The key that the operations at `path` are published under, or `None`
    /// for a path that has no literal first segment (`/`, `/{id}`).
    #[must_use]
    pub fn from_path(path: &str) -> Option<Self> {
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let literal = |s: &&str| !s.contains('{');
        let first = *segments.first().filter(|s| literal(s))?;
        let take = match first {
            "api" => 2,
            "apis" => 3,
            _ => usize::MAX,
        };
        let key: Vec<&str> = segments.iter().copied().take(take).take_while(literal).collect();
        key.iter().all(|s| safe_segment(s)).then(|| Self(key.join("/")))
    }

    /// Wraps a key that is already in canonical form (no leading or
    /// trailing slash, no empty segment); `None` otherwise.
    #[must_use]
    pub fn parse(key: &str) -> Option<Self> {
        let valid = !key.is_empty() && key.split('/').all(safe_segment);
        valid.then(|| Self(key.to_owned()))
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

/// A key segment must be usable as a URL path segment and as a file name
/// below an output directory: not empty, not `.` or `..`, no backslash or
/// NUL. A hostile document's paths (`/../../etc/x`) must not become keys
/// that `convert --out` would write outside its directory.
fn safe_segment(s: &str) -> bool {
    !s.is_empty() && s != "." && s != ".." && !s.contains(['\\', '\0'])
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

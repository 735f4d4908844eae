//! A Kubernetes group-version (`apps/v1`; the core group's `v1`), and the
//! two ways the wire spells one: as an `apiVersion` / `groupVersion`
//! (`apps/v1`, `v1`) and as a document key or discovery path (`apis/apps/v1`,
//! `api/v1`). Every place that used to split such strings by hand goes
//! through here, so the core group's empty name is handled once.

use std::fmt;

use super::name::{is_group_name, is_version_name};

/// A group and a version; `group` is empty for the core group.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct GroupVersion {
    /// The API group (`apps`, `networking.k8s.io`); empty for the core group.
    pub group: String,
    /// The version (`v1`, `v1beta2`).
    pub version: String,
}

impl GroupVersion {
    /// A group-version from its parts.
    #[must_use]
    pub fn new(group: impl Into<String>, version: impl Into<String>) -> Self {
        Self { group: group.into(), version: version.into() }
    }

    /// Reads an `apiVersion` or `groupVersion` (`apps/v1` → `apps`, `v1`;
    /// `v1` → the core group's `v1`).
    #[must_use]
    pub fn from_api_version(api_version: &str) -> Self {
        match api_version.split_once('/') {
            Some((group, version)) => Self::new(group, version),
            None => Self::new("", api_version),
        }
    }

    /// Reads a document key or discovery path without its leading slash
    /// (`api/v1`, `apis/apps/v1`); `None` for any other key (`apis/apps`,
    /// `version`, `api/v1/x`), and for a group or version that is not a
    /// valid name (`wire/name.rs`): keys come from downstreams.
    #[must_use]
    pub fn from_key(key: &str) -> Option<Self> {
        let mut it = key.split('/');
        match (it.next(), it.next(), it.next(), it.next()) {
            (Some("api"), Some(v), None, _) if is_version_name(v) => Some(Self::new("", v)),
            (Some("apis"), Some(g), Some(v), None) if is_group_name(g) && is_version_name(v) => {
                Some(Self::new(g, v))
            }
            _ => None,
        }
    }

    /// The key of `group`/`version` without building a `GroupVersion`
    /// (`("", "v1")` → `api/v1`, `("apps", "v1")` → `apis/apps/v1`): the
    /// OpenAPI v3 key, and the path of the legacy discovery list without its
    /// leading slash.
    #[must_use]
    pub fn key_of(group: &str, version: &str) -> String {
        if group.is_empty() { format!("api/{version}") } else { format!("apis/{group}/{version}") }
    }

    /// This group-version's key (see [`GroupVersion::key_of`]).
    #[must_use]
    pub fn key(&self) -> String {
        Self::key_of(&self.group, &self.version)
    }

    /// True for the core group (`/api/v1`).
    #[must_use]
    pub fn is_core(&self) -> bool {
        self.group.is_empty()
    }
}

/// The `apiVersion` spelling: `apps/v1`, or `v1` for the core group.
impl fmt::Display for GroupVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.version)
        } else {
            write!(f, "{}/{}", self.group, self.version)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_api_versions_round_trip() {
        for (gv, key, api_version) in [
            (GroupVersion::new("", "v1"), "api/v1", "v1"),
            (GroupVersion::new("apps", "v1"), "apis/apps/v1", "apps/v1"),
            (
                GroupVersion::new("a.example.com", "v1beta2"),
                "apis/a.example.com/v1beta2",
                "a.example.com/v1beta2",
            ),
        ] {
            assert_eq!(gv.key(), key);
            assert_eq!(GroupVersion::from_key(key), Some(gv.clone()));
            assert_eq!(gv.to_string(), api_version);
            assert_eq!(GroupVersion::from_api_version(api_version), gv);
        }
    }

    #[test]
    fn only_group_version_keys_are_group_versions() {
        for key in [
            "api",
            "apis",
            "apis/apps",
            "version",
            "api/v1/x",
            "apis//v1",
            "apis/a/",
            "api/",
            "apis/a?b/v1",
            "apis/A/v1",
            "api/V1",
            "apis/a/v1?x",
        ] {
            assert_eq!(GroupVersion::from_key(key), None, "{key}");
        }
    }
}

//! Group and version names from a downstream's discovery, kept only when
//! Kubernetes could have served them (docs/wire.md#a-7).
//!
//! Each listed group-version is requested from the downstream
//! (`/apis/<group>/<version>`, with the proxy's token) and republished in
//! `/apis`, `/apis/<group>` and the legacy lists. A name is therefore
//! checked before any of that happens: a group must be a DNS-1123
//! subdomain and a version a DNS-1035 label ([`crate::wire::name`]); the
//! core group's empty name is allowed where it belongs. Anything else is
//! dropped — never requested, never served — and reported as a
//! [`Refused`], so the caller can say so once; the rest of the list is
//! kept.

use std::fmt;

use super::types::APIGroupDiscovery;
use crate::wire::name::{is_group_name, is_group_or_core, is_version_name};

/// A name a downstream listed that is not a valid group or version name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Refused {
    /// A group name (never empty: the core group's is valid).
    Group(String),
    /// A version of a group whose own name is valid (`""`: the core group).
    Version {
        /// The group.
        group: String,
        /// The refused version name.
        version: String,
    },
}

/// Names as a log line shows them: quoted and escaped, so that a name
/// holding a newline or a control character cannot forge a line.
impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Group(g) => write!(f, "group {g:?}"),
            Self::Version { group, version } => write!(f, "version {version:?} of group {group:?}"),
        }
    }
}

/// Keeps the groups of an aggregated list whose names are valid (or the
/// core group's empty one), and in each the valid versions; a group left
/// without versions by that is dropped. What is dropped goes to `refused`.
pub fn retain_valid_groups(groups: &mut Vec<APIGroupDiscovery>, refused: &mut Vec<Refused>) {
    groups.retain_mut(|g| {
        let group = &g.metadata.name;
        if !is_group_or_core(group) {
            refused.push(Refused::Group(group.clone()));
            return false;
        }
        let listed = g.versions.len();
        g.versions.retain(|v| {
            let ok = is_version_name(&v.version);
            if !ok {
                refused.push(Refused::Version { group: group.clone(), version: v.version.clone() });
            }
            ok
        });
        listed == 0 || !g.versions.is_empty()
    });
}

/// The same for the `(group, versions)` a legacy `/api` or `/apis` lists.
pub fn retain_valid_targets(targets: &mut Vec<(String, Vec<String>)>, refused: &mut Vec<Refused>) {
    targets.retain_mut(|(group, versions)| {
        if !group.is_empty() && !is_group_name(group) {
            refused.push(Refused::Group(group.clone()));
            return false;
        }
        let listed = versions.len();
        versions.retain(|v| {
            let ok = is_version_name(v);
            if !ok {
                refused.push(Refused::Version { group: group.clone(), version: v.clone() });
            }
            ok
        });
        listed == 0 || !versions.is_empty()
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::types::{APIVersionDiscovery, ObjectMeta};

    const HOSTILE: &str = "../../api/v1/namespaces/kube-system/secrets?x=";

    fn group(name: &str, versions: &[&str]) -> APIGroupDiscovery {
        APIGroupDiscovery {
            metadata: ObjectMeta { name: name.into() },
            versions: versions
                .iter()
                .map(|v| APIVersionDiscovery { version: (*v).into(), ..Default::default() })
                .collect(),
        }
    }

    #[test]
    fn invalid_groups_and_versions_are_dropped_and_the_rest_kept() {
        let mut groups = vec![
            group("apps", &["v1", "V2", "v1beta1"]),
            group(HOSTILE, &["v1"]),
            group("", &["v1"]),
            group("bad.example.com", &["v1?x=", "v 2"]),
            group("a b", &["v1"]),
        ];
        let mut refused = Vec::new();
        retain_valid_groups(&mut groups, &mut refused);
        let kept: Vec<(&str, Vec<&str>)> = groups
            .iter()
            .map(|g| {
                (g.metadata.name.as_str(), g.versions.iter().map(|v| v.version.as_str()).collect())
            })
            .collect();
        assert_eq!(kept, [("apps", vec!["v1", "v1beta1"]), ("", vec!["v1"])]);
        assert_eq!(
            refused,
            [
                Refused::Version { group: "apps".into(), version: "V2".into() },
                Refused::Group(HOSTILE.into()),
                Refused::Version { group: "bad.example.com".into(), version: "v1?x=".into() },
                Refused::Version { group: "bad.example.com".into(), version: "v 2".into() },
                Refused::Group("a b".into()),
            ]
        );
    }

    #[test]
    fn legacy_targets_are_checked_the_same_way() {
        let mut targets = vec![
            (String::new(), vec!["v1".to_owned(), "v1/../x".to_owned()]),
            (HOSTILE.to_owned(), vec!["v1".to_owned()]),
            ("apps".to_owned(), vec!["v1".to_owned()]),
        ];
        let mut refused = Vec::new();
        retain_valid_targets(&mut targets, &mut refused);
        assert_eq!(
            targets,
            [(String::new(), vec!["v1".to_owned()]), ("apps".to_owned(), vec!["v1".to_owned()])]
        );
        assert_eq!(refused.len(), 2);
    }

    #[test]
    fn refused_names_are_shown_escaped() {
        assert_eq!(Refused::Group("a\nb".into()).to_string(), "group \"a\\nb\"");
        let v = Refused::Version { group: String::new(), version: "v1\u{1b}[2J".into() };
        assert_eq!(v.to_string(), "version \"v1\\u{1b}[2J\" of group \"\"");
    }
}

//! Which downstream answers each group-version's requests, for the front
//! door: taken from the merge that makes discovery, so that a client is
//! sent to the very server whose resources discovery showed it.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::Plan;
use crate::wire::GroupVersion;

/// Group-version key (`api/v1`, `apis/apps/v1`) → downstream name.
///
/// Kept beside the plan's own order of (group, version, owner), so that
/// the next rebuild can tell that nothing changed by walking both side by
/// side, without making a key ([`Owners::same_as`]): at 5,000 CRDs, making
/// the map anew on every rebuild cost a sixth of a one-change rebuild.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Owners {
    by_key: BTreeMap<String, Arc<str>>,
    /// (group, version, owner) in the plan's order.
    order: Vec<(String, String, Arc<str>)>,
}

impl Owners {
    /// The owners `plan` chose: each version's priority winner, the core
    /// group's under `api/<version>`. Versions whose owner the plan does
    /// not know ([`Plan::of`]) are left out.
    #[must_use]
    pub fn of(plan: &Plan<'_>) -> Self {
        let mut names: BTreeMap<&str, Arc<str>> = BTreeMap::new();
        let mut out = Self::default();
        for (group, version, owner) in owned(plan) {
            let name = Arc::clone(names.entry(owner).or_insert_with(|| Arc::from(owner)));
            out.by_key.insert(GroupVersion::key_of(group, version), Arc::clone(&name));
            out.order.push((group.to_owned(), version.to_owned(), name));
        }
        out
    }

    /// Whether `plan` chose exactly these owners, compared in place.
    #[must_use]
    pub fn same_as(&self, plan: &Plan<'_>) -> bool {
        let mut mine = self.order.iter();
        owned(plan).all(|(group, version, owner)| {
            mine.next().is_some_and(|(g, v, o)| g == group && v == version && &**o == owner)
        }) && mine.next().is_none()
    }

    /// The downstream that owns the group-version `key`.
    #[must_use]
    pub fn owner(&self, key: &str) -> Option<&Arc<str>> {
        self.by_key.get(key)
    }

    /// Every group-version key with its owner, for the `/openapi/v2` merge.
    #[must_use]
    pub fn by_key(&self) -> &BTreeMap<String, Arc<str>> {
        &self.by_key
    }

    /// How many group-versions have an owner.
    #[must_use]
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    /// Whether no group-version has one.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }
}

/// (group, version, owner) of every version `plan` knows the owner of, in
/// the plan's order.
fn owned<'p>(plan: &'p Plan<'_>) -> impl Iterator<Item = (&'p str, &'p str, &'p str)> {
    plan.core.iter().chain(&plan.groups).flat_map(|group| {
        group
            .versions
            .iter()
            .zip(&group.owners)
            .filter(|(_, owner)| !owner.is_empty())
            .map(move |((version, _), owner)| (group.name, version.version.as_str(), *owner))
    })
}

/// The group-version key a request path is about, as the front door
/// routes it: `/api/v1/namespaces/x/pods` → `api/v1`,
/// `/apis/apps/v1/deployments` → `apis/apps/v1`; `None` for a path under
/// no group-version (`/logs`, `/apis`), which no downstream owns here.
#[must_use]
pub fn group_version_of(path: &str) -> Option<&str> {
    let rest = path.strip_prefix('/')?;
    let skip = if rest.starts_with("api/") {
        1
    } else if rest.starts_with("apis/") {
        2
    } else {
        return None;
    };
    // The key ends after `skip` more segments; each must be non-empty.
    let mut end = rest.find('/')?;
    for _ in 0..skip {
        let start = end + 1;
        if start > rest.len() {
            return None;
        }
        let len = rest[start..].find('/').unwrap_or(rest.len() - start);
        if len == 0 {
            return None;
        }
        end = start + len;
    }
    Some(&rest[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::types::{APIGroupDiscovery, APIVersionDiscovery, ObjectMeta};
    use crate::discovery::{DownstreamDiscovery, RankedDiscovery, plan};

    #[test]
    fn paths_name_their_group_version() {
        assert_eq!(group_version_of("/api/v1/namespaces/a/pods"), Some("api/v1"));
        assert_eq!(group_version_of("/api/v1"), Some("api/v1"));
        assert_eq!(group_version_of("/apis/apps/v1/deployments"), Some("apis/apps/v1"));
        assert_eq!(group_version_of("/apis/apps/v1"), Some("apis/apps/v1"));
        assert_eq!(group_version_of("/apis/apps"), None);
        assert_eq!(group_version_of("/apis//v1/x"), None);
        assert_eq!(group_version_of("/apis/apps//x"), None);
        assert_eq!(group_version_of("/api//pods"), None);
        assert_eq!(group_version_of("/logs/x"), None);
        assert_eq!(group_version_of("/apisx/a/b"), None);
        assert_eq!(group_version_of(""), None);
    }

    fn version(v: &str) -> APIVersionDiscovery {
        APIVersionDiscovery { version: v.into(), ..APIVersionDiscovery::default() }
    }

    fn downstream(core: &[&str], groups: &[(&str, &[&str])]) -> DownstreamDiscovery {
        DownstreamDiscovery {
            core: core.iter().map(|v| version(v)).collect(),
            groups: groups
                .iter()
                .map(|(g, vs)| {
                    Arc::new(APIGroupDiscovery {
                        metadata: ObjectMeta { name: (*g).into() },
                        versions: vs.iter().map(|v| version(v)).collect(),
                    })
                })
                .collect(),
            fresh: true,
            ..DownstreamDiscovery::default()
        }
    }

    /// The priority winner of each version owns it, as discovery shows it;
    /// a version only one downstream serves is that one's.
    #[test]
    fn each_version_is_owned_by_the_downstream_discovery_took_it_from() {
        let kube = downstream(&["v1"], &[("apps", &["v1"]), ("example.com", &["v1"])]);
        let extra = downstream(&["v1"], &[("example.com", &["v1", "v2"])]);
        let sources = [
            RankedDiscovery { name: "kube", priority: 10, order: 0, discovery: &kube },
            RankedDiscovery { name: "extra", priority: 20, order: 1, discovery: &extra },
        ];
        let owners = Owners::of(&plan(&sources));
        let owner = |k| owners.owner(k).map(|o| o.to_string());
        assert_eq!(owner("api/v1").as_deref(), Some("extra"));
        assert_eq!(owner("apis/apps/v1").as_deref(), Some("kube"));
        assert_eq!(owner("apis/example.com/v1").as_deref(), Some("extra"));
        assert_eq!(owner("apis/example.com/v2").as_deref(), Some("extra"));
        assert_eq!(owner("apis/batch/v1"), None);
        assert_eq!(owners.len(), 4);
        assert!(owners.same_as(&plan(&sources)));
        // The other priority order: two versions change hands.
        let swapped = [
            RankedDiscovery { name: "kube", priority: 30, order: 0, discovery: &kube },
            RankedDiscovery { name: "extra", priority: 20, order: 1, discovery: &extra },
        ];
        assert!(!owners.same_as(&plan(&swapped)));
        // One version fewer.
        let fewer = downstream(&["v1"], &[("example.com", &["v1"])]);
        let less = [
            RankedDiscovery { name: "kube", priority: 10, order: 0, discovery: &kube },
            RankedDiscovery { name: "extra", priority: 20, order: 1, discovery: &fewer },
        ];
        assert!(!owners.same_as(&plan(&less)));
        assert!(Owners::of(&plan(&less)).same_as(&plan(&less)));
    }
}

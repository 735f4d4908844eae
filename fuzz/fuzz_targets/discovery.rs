//! Bytes → discovery documents → legacy conversion and the merge, checking
//! what must hold for any downstream answer:
//!
//! - nothing panics;
//! - as an `APIResourceList`: `legacy::to_aggregated` is deterministic and,
//!   when it succeeds, `legacy::to_legacy` gives back every name of the
//!   input (resources and `parent/sub` subresources), and converting that
//!   synthesized list again gives the same aggregated resources;
//! - as an `APIGroupDiscoveryList`: three downstreams built from it (all
//!   of it, fresh; its groups reversed, not fresh; its first half, fresh)
//!   merge to the same groups, core group, legacy paths and rendered bodies
//!   whatever order they are given in; `groups` never holds the core group,
//!   and no group or group-version is listed twice.
//!
//! Inputs that are not JSON, or that do not convert, are uninteresting,
//! not failures.

#![no_main]

use std::collections::BTreeSet;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;

use openapi_proxy::{
    APIGroupDiscovery, APIGroupDiscoveryList, APIResourceList, DownstreamDiscovery, GroupVersion,
    Merged, RankedDiscovery, merge, render_discovery as render, synthesized_legacy, to_aggregated,
    to_legacy,
};

fuzz_target!(|data: &[u8]| {
    if let Ok(list) = serde_json::from_slice::<APIResourceList>(data) {
        check_legacy(&list);
    }
    if let Ok(list) = serde_json::from_slice::<APIGroupDiscoveryList>(data) {
        check_merge(list.items);
    }
});

fn check_legacy(list: &APIResourceList) {
    let converted = to_aggregated(list);
    assert_eq!(converted, to_aggregated(list), "conversion is not deterministic");
    let Ok(resources) = converted else { return };
    let (group, version) = list.group_version.split_once('/').unwrap_or(("", &list.group_version));
    let back = to_legacy(group, version, &resources);

    let mut left: Vec<&str> = back.resources.iter().map(|r| r.name.as_str()).collect();
    for r in &list.resources {
        let Some(i) = left.iter().position(|n| *n == r.name) else {
            panic!("{:?} is lost by to_aggregated → to_legacy", r.name);
        };
        left.swap_remove(i);
    }
    // Only parents known by their subresources alone may be added.
    for name in left {
        assert!(!name.contains('/'), "to_legacy invented the subresource {name:?}");
    }

    let again = to_aggregated(&back).expect("a synthesized list always converts");
    assert_eq!(again, resources, "aggregated → legacy → aggregated is not the identity");
}

fn downstream(groups: Vec<APIGroupDiscovery>, fresh: bool) -> DownstreamDiscovery {
    let (core, named): (Vec<_>, Vec<_>) =
        groups.into_iter().partition(|g| g.metadata.name.is_empty());
    let core: Vec<_> = core.into_iter().flat_map(|g| g.versions).collect();
    let groups = named.into_iter().map(Arc::new).collect();
    let mut d = DownstreamDiscovery { core, groups, fresh, ..Default::default() };
    for v in &d.core {
        d.legacy.insert(GroupVersion::key_of("", &v.version), Arc::new(synthesized_legacy("", v)));
    }
    for g in &d.groups {
        for v in &g.versions {
            d.legacy.insert(
                GroupVersion::key_of(&g.metadata.name, &v.version),
                Arc::new(synthesized_legacy(&g.metadata.name, v)),
            );
        }
    }
    d
}

fn check_merge(items: Vec<APIGroupDiscovery>) {
    // Keep the work per input small: merging is linear, rendering gzips.
    if items.len() > 64 {
        return;
    }
    let mut reversed = items.clone();
    reversed.reverse();
    let half = items[..items.len() / 2].to_vec();
    let a = downstream(items, true);
    let b = downstream(reversed, false);
    let c = downstream(half, true);
    let sources = [
        RankedDiscovery { name: "a", priority: 10, order: 0, discovery: &a },
        RankedDiscovery { name: "b", priority: 20, order: 1, discovery: &b },
        RankedDiscovery { name: "c", priority: 10, order: 2, discovery: &c },
    ];
    let forward = merge(&sources);
    let mut backwards_sources = sources;
    backwards_sources.reverse();
    let backward = merge(&backwards_sources);

    check_merged(&forward);
    let groups = |m: &Merged| serde_json::to_vec(&m.groups).expect("discovery types serialize");
    let core = |m: &Merged| serde_json::to_vec(&m.core).expect("discovery types serialize");
    assert_eq!(groups(&forward), groups(&backward), "merged groups depend on order");
    assert_eq!(core(&forward), core(&backward), "merged core depends on order");
    assert!(
        forward.legacy.keys().eq(backward.legacy.keys()),
        "legacy paths depend on the order of the sources"
    );
    for (path, l) in &forward.legacy {
        assert_eq!(
            l.plain().ok(),
            backward.legacy[path].plain().ok(),
            "legacy {path} depends on order"
        );
    }

    let (f, b) = (render(&forward), render(&backward));
    for (x, y) in [
        (&f.api_v2, &b.api_v2),
        (&f.apis_v2, &b.apis_v2),
        (&f.apis_v2beta1, &b.apis_v2beta1),
        (&f.api_legacy, &b.api_legacy),
        (&f.apis_legacy, &b.apis_legacy),
    ] {
        assert_eq!(
            x.plain().ok(),
            y.plain().ok(),
            "rendered discovery depends on the order of the sources"
        );
    }
    let apis: serde_json::Value =
        serde_json::from_slice(&f.apis_v2.plain().expect("held")).expect("rendered /apis is JSON");
    let items = apis["items"].as_array().expect("rendered /apis has items");
    assert_eq!(items.len(), forward.groups.len());
}

fn check_merged(m: &Merged) {
    let mut names = BTreeSet::new();
    for g in &m.groups {
        assert!(!g.metadata.name.is_empty(), "the core group is listed among named groups");
        assert!(names.insert(g.metadata.name.as_str()), "group {:?} twice", g.metadata.name);
        let mut versions = BTreeSet::new();
        for v in &g.versions {
            assert!(
                versions.insert(v.version.as_str()),
                "{}/{} listed twice",
                g.metadata.name,
                v.version
            );
        }
    }
    if let Some(core) = &m.core {
        assert!(core.metadata.name.is_empty(), "the core group has a name");
        let mut versions = BTreeSet::new();
        for v in &core.versions {
            assert!(versions.insert(v.version.as_str()), "core {} listed twice", v.version);
        }
    }
}

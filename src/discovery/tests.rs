//! Unit tests of `discovery/mod.rs`.

use serde_json::json;

use super::types::{APIResourceDiscovery, CURRENT};
use super::*;

fn version(v: &str, resources: &[&str]) -> APIVersionDiscovery {
    APIVersionDiscovery {
        version: v.into(),
        resources: resources
            .iter()
            .map(|r| APIResourceDiscovery {
                resource: (*r).into(),
                scope: "Namespaced".into(),
                ..Default::default()
            })
            .collect(),
        freshness: CURRENT.into(),
    }
}

fn group(name: &str, versions: Vec<APIVersionDiscovery>) -> APIGroupDiscovery {
    APIGroupDiscovery { metadata: ObjectMeta { name: name.into() }, versions }
}

fn downstream(groups: Vec<APIGroupDiscovery>, fresh: bool) -> DownstreamDiscovery {
    DownstreamDiscovery {
        groups: groups.into_iter().map(Arc::new).collect(),
        fresh,
        ..Default::default()
    }
}

fn names(m: &Merged) -> Vec<String> {
    m.groups
        .iter()
        .map(|g| {
            let vs: Vec<&str> = g.versions.iter().map(|v| v.version.as_str()).collect();
            format!("{}:{}", g.metadata.name, vs.join(","))
        })
        .collect()
}

#[test]
fn apiregistration_first_then_groups_by_priority_then_name_and_versions_kube_ordered() {
    let a = downstream(
        vec![
            group("zeta.io", vec![version("v1", &[])]),
            group(
                "apps",
                vec![version("v1beta1", &[]), version("v1", &[]), version("v2alpha1", &[])],
            ),
            group("apiregistration.k8s.io", vec![version("v1", &[])]),
        ],
        true,
    );
    let b = downstream(vec![group("low.io", vec![version("v1", &[])])], true);
    let m = merge(&[
        RankedDiscovery { name: "b", priority: 1, order: 1, discovery: &b },
        RankedDiscovery { name: "a", priority: 2, order: 0, discovery: &a },
    ]);
    assert_eq!(
        names(&m),
        ["apiregistration.k8s.io:v1", "apps:v1,v1beta1,v2alpha1", "zeta.io:v1", "low.io:v1"]
    );
}

#[test]
fn duplicate_group_version_goes_to_the_higher_priority_whatever_the_order() {
    let a = downstream(vec![group("g.io", vec![version("v1", &["from-a"])])], true);
    let b =
        downstream(vec![group("g.io", vec![version("v1", &["from-b"]), version("v2", &[])])], true);
    for order in [[0, 1], [1, 0]] {
        let mut s = vec![
            RankedDiscovery { name: "a", priority: 5, order: 0, discovery: &a },
            RankedDiscovery { name: "b", priority: 1, order: 1, discovery: &b },
        ];
        if order[0] == 1 {
            s.reverse();
        }
        let m = merge(&s);
        let g = &m.groups[0];
        assert_eq!(g.versions[0].resources[0].resource, "from-a");
        assert_eq!(g.versions.iter().map(|v| v.version.as_str()).collect::<Vec<_>>(), ["v1", "v2"]);
    }
}

#[test]
fn an_unreachable_downstream_is_stale_with_its_last_resources() {
    let down = downstream(vec![group("g.io", vec![version("v1", &["things"])])], false);
    let m = merge(&[RankedDiscovery { name: "d", priority: 1, order: 0, discovery: &down }]);
    let v = &m.groups[0].versions[0];
    assert_eq!(v.freshness, STALE);
    assert_eq!(v.resources[0].resource, "things");
}

#[test]
fn rendered_bodies_have_the_upstream_shapes() {
    let d = DownstreamDiscovery {
        core: vec![version("v1", &["pods"])],
        groups: vec![Arc::new(group("apps", vec![version("v1", &["deployments"])]))],
        fresh: true,
        ..Default::default()
    };
    let m = merge(&[RankedDiscovery { name: "d", priority: 1, order: 0, discovery: &d }]);
    let r = render(&m);
    let api: serde_json::Value = serde_json::from_slice(&r.api_v2.plain().unwrap()).unwrap();
    assert_eq!(api["kind"], "APIGroupDiscoveryList");
    assert_eq!(api["apiVersion"], "apidiscovery.k8s.io/v2");
    assert_eq!(api["metadata"], json!({}));
    assert_eq!(api["items"][0]["metadata"], json!({}), "core group has no name");
    assert!(r.apis_v2.plain().unwrap().starts_with(b"{\"kind\":\"APIGroupDiscoveryList\",\"apiVersion\":\"apidiscovery.k8s.io/v2\",\"metadata\":{},\"items\":[{\"metadata\":{\"name\":\"apps\"}"));
    assert!(r.apis_v2.plain().unwrap().ends_with(b"}\n"));
    assert_eq!(
        &r.api_legacy.plain().unwrap()[..],
        b"{\"kind\":\"APIVersions\",\"versions\":[\"v1\"],\"serverAddressByClientCIDRs\":[]}\n"
    );
    assert_eq!(
        &r.apis_legacy.plain().unwrap()[..],
        &b"{\"kind\":\"APIGroupList\",\"apiVersion\":\"v1\",\"groups\":[{\"name\":\"apps\",\"versions\":[{\"groupVersion\":\"apps/v1\",\"version\":\"v1\"}],\"preferredVersion\":{\"groupVersion\":\"apps/v1\",\"version\":\"v1\"}}]}\n"[..]
    );
    assert!(
        r.groups["apps"]
            .plain()
            .unwrap()
            .starts_with(b"{\"kind\":\"APIGroup\",\"apiVersion\":\"v1\",\"name\":\"apps\"")
    );
    let apis: serde_json::Value = serde_json::from_slice(&r.apis_v2.plain().unwrap()).unwrap();
    assert!(
        apis["items"].as_array().unwrap().iter().all(|g| g["metadata"]["name"] != ""),
        "no core group in /apis"
    );
}

/// The lists as `serde_json` writes them whole: what joining parts must
/// give, byte for byte.
fn serialized_whole(m: &Merged, api_version: &str) -> (Vec<u8>, Vec<u8>) {
    let items = serde_json::to_vec(&m.groups).unwrap();
    let mut aggregated = format!(
        "{{\"kind\":\"APIGroupDiscoveryList\",\"apiVersion\":\"{api_version}\",\"metadata\":{{}},\"items\":"
    )
    .into_bytes();
    aggregated.extend_from_slice(&items);
    aggregated.extend_from_slice(b"}\n");
    let legacy = types::APIGroupList {
        kind: "APIGroupList".into(),
        api_version: "v1".into(),
        groups: m.groups.iter().map(|g| legacy_group(g, false)).collect(),
    };
    (aggregated, k8s_json(&legacy))
}

fn many_groups(n: usize, extra: Option<usize>) -> DownstreamDiscovery {
    let groups = (0..n)
        .map(|i| {
            let mut resources = vec!["widgets", "gadgets"];
            if extra == Some(i) {
                resources.push("sprockets");
            }
            Arc::new(group(&format!("g{i}.example.com"), vec![version("v1", &resources)]))
        })
        .collect();
    DownstreamDiscovery {
        core: vec![version("v1", &["pods"])],
        groups,
        fresh: true,
        ..Default::default()
    }
}

#[test]
fn joined_lists_are_the_bytes_serde_writes_whole() {
    for n in [0, 1, 40] {
        let d = many_groups(n, None);
        let m = merge(&[RankedDiscovery { name: "d", priority: 1, order: 0, discovery: &d }]);
        let r = render(&m);
        let (aggregated, legacy) = serialized_whole(&m, "apidiscovery.k8s.io/v2");
        assert_eq!(r.apis_v2.plain().unwrap(), aggregated, "{n} groups");
        assert_eq!(r.apis_legacy.plain().unwrap(), legacy, "{n} groups");
        let (beta, _) = serialized_whole(&m, "apidiscovery.k8s.io/v2beta1");
        assert_eq!(r.apis_v2beta1.plain().unwrap(), beta, "{n} groups");
        if let Some(gz) = &r.apis_v2.gzip {
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut out)
                .unwrap();
            assert_eq!(out, aggregated);
        }
    }
}

#[test]
fn rendering_again_reuses_every_unchanged_group() {
    let before = many_groups(30, None);
    let after = many_groups(30, Some(7));
    let m0 = merge(&[RankedDiscovery { name: "d", priority: 1, order: 0, discovery: &before }]);
    let m1 = merge(&[RankedDiscovery { name: "d", priority: 1, order: 0, discovery: &after }]);
    let r0 = render(&m0);
    assert_eq!(r0.rendered_groups, 31, "a first rendering makes every group and the core");
    let r1 = render_reusing(&Plan::of(&m1), Some(&r0));
    assert_eq!(r1.rendered_groups, 1, "only the changed group is made again");
    for (name, body) in &r1.groups {
        let same = Arc::ptr_eq(body, &r0.groups[name]);
        assert_eq!(same, name != "g7.example.com", "{name}");
    }
    let whole = render(&m1);
    for (a, b) in [
        (&r1.apis_v2, &whole.apis_v2),
        (&r1.apis_v2beta1, &whole.apis_v2beta1),
        (&r1.api_v2, &whole.api_v2),
        (&r1.apis_legacy, &whole.apis_legacy),
    ] {
        assert_eq!(a.plain().unwrap(), b.plain().unwrap());
        assert_eq!(a.gzip, b.gzip, "gzip joined from reused parts is the same");
        assert_eq!(a.etag, b.etag);
    }
}

#[test]
fn a_group_turning_stale_is_rendered_again() {
    let fresh = many_groups(3, None);
    let stale = DownstreamDiscovery { fresh: false, ..many_groups(3, None) };
    let r0 =
        render(&merge(&[RankedDiscovery { name: "d", priority: 1, order: 0, discovery: &fresh }]));
    let m1 = merge(&[RankedDiscovery { name: "d", priority: 1, order: 0, discovery: &stale }]);
    let r1 = render_reusing(&Plan::of(&m1), Some(&r0));
    assert_eq!(r1.rendered_groups, 4);
    assert_eq!(r1.apis_v2.plain().unwrap(), render(&m1).apis_v2.plain().unwrap());
}

#[test]
fn a_plan_renders_as_the_merged_model_does() {
    let a = many_groups(5, None);
    let b = DownstreamDiscovery { fresh: false, ..many_groups(8, Some(2)) };
    let sources = [
        RankedDiscovery { name: "a", priority: 2, order: 0, discovery: &a },
        RankedDiscovery { name: "b", priority: 1, order: 1, discovery: &b },
    ];
    let from_plan = render_reusing(&plan(&sources), None);
    let from_merged = render(&merge(&sources));
    assert_eq!(from_plan.apis_v2.plain().unwrap(), from_merged.apis_v2.plain().unwrap());
    assert_eq!(from_plan.apis_legacy.plain().unwrap(), from_merged.apis_legacy.plain().unwrap());
    assert!(
        from_plan.apis_v2.plain().unwrap().windows(5).any(|w| w == b"Stale"),
        "b's versions are stale"
    );
}

#[test]
fn runs_of_groups_keep_apis_gzip_close_to_compressing_it_whole() {
    // The 3,000 one-resource group-versions of the older fleet: one
    // segment per group made its gzip 13 times what compressing the body
    // whole gives (465 KB against 35 KB).
    let fleet = crate::testkit::fleet::contributions(50, 30, 2);
    let sources: Vec<RankedDiscovery<'_>> = fleet
        .iter()
        .filter_map(|c| {
            let discovery = c.discovery.as_deref()?;
            Some(RankedDiscovery { name: &c.name, priority: c.priority, order: c.order, discovery })
        })
        .collect();
    let r = render(&merge(&sources));
    let joined = r.apis_v2.gzip.as_ref().expect("compressible").len();
    let whole =
        Rendered::json(r.apis_v2.plain().unwrap().clone()).gzip.expect("compressible").len();
    assert!(joined * 2 < whole * 5, "joined gzip {joined} bytes against {whole} compressed whole");
}

#[test]
fn changing_one_group_makes_one_run_again() {
    let before = many_groups(400, None);
    let after = many_groups(400, Some(77));
    let r0 =
        render(&merge(&[RankedDiscovery { name: "d", priority: 1, order: 0, discovery: &before }]));
    let m1 = merge(&[RankedDiscovery { name: "d", priority: 1, order: 0, discovery: &after }]);
    let r1 = render_reusing(&Plan::of(&m1), Some(&r0));
    assert!(r0.runs.len() > 10, "{} runs", r0.runs.len());
    let remade: Vec<&String> =
        r1.runs.iter().filter(|(k, run)| !Arc::ptr_eq(run, &r0.runs[*k])).map(|(k, _)| k).collect();
    assert_eq!(remade.len(), 1, "{remade:?}");
}

/// The legacy `APIGroupList` is hashed as a tree of its parts
/// (docs/wire.md#a-2): equal lists get equal tags, and a list whose bytes
/// change gets another.
#[test]
fn the_legacy_group_list_tag_names_its_content() {
    let rendered = |d: &DownstreamDiscovery| {
        render(&merge(&[RankedDiscovery { name: "d", priority: 1, order: 0, discovery: d }]))
    };
    let before = many_groups(100, None);
    let mut after = before.clone();
    Arc::make_mut(&mut after.groups[40]).versions.push(version("v2", &["widgets"]));
    let (a, again, b) = (rendered(&before), rendered(&before), rendered(&after));
    assert_eq!(a.apis_legacy.etag, again.apis_legacy.etag);
    assert_ne!(a.apis_legacy.plain().unwrap(), b.apis_legacy.plain().unwrap());
    assert_ne!(a.apis_legacy.etag, b.apis_legacy.etag);
    let body = a.apis_legacy.plain().unwrap();
    assert_ne!(a.apis_legacy.hash, crate::body::digest::sha512_hex(&body), "a tree, not the body");
}

/// `n` groups of one version holding `resources` resources each.
fn groups_of(n: usize, resources: usize) -> DownstreamDiscovery {
    let names: Vec<String> = (0..resources).map(|i| format!("resource{i}s")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    downstream(
        (0..n).map(|i| group(&format!("g{i}.example.com"), vec![version("v1", &names)])).collect(),
        true,
    )
}

/// Each run's members, by name.
fn run_members(d: &DownstreamDiscovery) -> Vec<Vec<String>> {
    let r = render(&merge(&[RankedDiscovery { name: "d", priority: 1, order: 0, discovery: d }]));
    r.runs
        .values()
        .map(|run| run.members.iter().map(|m| m.model.metadata.name.clone()).collect())
        .collect()
}

/// Run boundaries are where each group's name and size say, so they are
/// the same on every replica and rebuild; no run is longer than
/// `RUN_MAX`; and taking a group away changes only the runs around it,
/// not every run after it.
#[test]
fn runs_are_bounded_and_their_boundaries_follow_the_names() {
    for (n, resources) in [(400, 2), (400, 40)] {
        let all = groups_of(n, resources);
        let runs = run_members(&all);
        assert!(runs.iter().all(|m| !m.is_empty() && m.len() <= RUN_MAX), "{runs:?}");
        assert_eq!(runs.iter().map(Vec::len).sum::<usize>(), n);
        assert!(runs.len() > 8, "{} runs of {n} groups", runs.len());
        assert_eq!(runs, run_members(&all), "the same boundaries every time");

        let gone = "g123.example.com";
        let mut fewer = all.clone();
        fewer.groups.retain(|g| g.metadata.name != gone);
        let after = run_members(&fewer);
        let moved: Vec<&Vec<String>> = runs.iter().filter(|m| !after.contains(m)).collect();
        assert!(moved.iter().any(|m| m.iter().any(|n| n == gone)), "{moved:?}");
        assert!(moved.len() <= 2, "only the run of {gone} (and one merged into it): {moved:?}");
    }
}

/// Runs hold about `RUN_BYTES` of items whatever the size of their
/// groups: a change deflates that much again, not more for large groups.
#[test]
fn runs_hold_about_run_bytes_whatever_the_group_size() {
    for resources in [20, 40, 160] {
        let d = groups_of(600, resources);
        let r =
            render(&merge(&[RankedDiscovery { name: "d", priority: 1, order: 0, discovery: &d }]));
        let bytes: usize = r.runs.values().map(|run| run.items.plain.len()).sum();
        let mean = bytes / r.runs.len();
        assert!(
            (RUN_BYTES / 3..=RUN_BYTES * 3).contains(&mean),
            "{resources} resources a group: {} runs of {mean} bytes",
            r.runs.len()
        );
    }
}

/// Issue 16: a poller hands on the very `Arc` of every group that did not
/// change; rendering recognises those without comparing their resources,
/// and still makes again a shared group whose freshness changed.
#[test]
fn groups_shared_with_the_last_rendering_are_not_compared() {
    let before = many_groups(30, None);
    let mut after = before.clone();
    after.groups[7] = Arc::clone(&many_groups(30, Some(7)).groups[7]);
    let source = |d| [RankedDiscovery { name: "d", priority: 1, order: 0, discovery: d }];
    let r0 = render_reusing(&plan(&source(&before)), None);
    let r1 = render_reusing(&plan(&source(&after)), Some(&r0));
    assert_eq!(r1.rendered_groups, 1, "only the changed group is made again");
    assert_eq!(r1.compared_groups, 2, "the changed group and the core group, which is not shared");
    for (name, body) in &r1.groups {
        assert_eq!(Arc::ptr_eq(body, &r0.groups[name]), name != "g7.example.com", "{name}");
    }
    let whole = render(&merge(&source(&after)));
    assert_eq!(
        (&r1.apis_v2.plain().unwrap(), &r1.apis_v2.etag),
        (&whole.apis_v2.plain().unwrap(), &whole.apis_v2.etag)
    );
    assert_eq!(r1.apis_v2.gzip, whole.apis_v2.gzip);
    assert_eq!(r1.apis_legacy.plain().unwrap(), whole.apis_legacy.plain().unwrap());

    let stale = DownstreamDiscovery { fresh: false, ..after.clone() };
    let r2 = render_reusing(&plan(&source(&stale)), Some(&r1));
    assert_eq!(r2.rendered_groups, 31, "the same groups, now stale: every one made again");
    assert_eq!(
        r2.apis_v2.plain().unwrap(),
        render(&merge(&source(&stale))).apis_v2.plain().unwrap()
    );
}

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
    DownstreamDiscovery { groups, fresh, ..Default::default() }
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
        Source { name: "b", priority: 1, order: 1, discovery: &b },
        Source { name: "a", priority: 2, order: 0, discovery: &a },
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
            Source { name: "a", priority: 5, order: 0, discovery: &a },
            Source { name: "b", priority: 1, order: 1, discovery: &b },
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
    let m = merge(&[Source { name: "d", priority: 1, order: 0, discovery: &down }]);
    let v = &m.groups[0].versions[0];
    assert_eq!(v.freshness, STALE);
    assert_eq!(v.resources[0].resource, "things");
}

#[test]
fn rendered_bodies_have_the_upstream_shapes() {
    let d = DownstreamDiscovery {
        core: vec![version("v1", &["pods"])],
        groups: vec![group("apps", vec![version("v1", &["deployments"])])],
        fresh: true,
        ..Default::default()
    };
    let m = merge(&[Source { name: "d", priority: 1, order: 0, discovery: &d }]);
    let r = render(&m);
    let api: serde_json::Value = serde_json::from_slice(&r.api_v2.body).unwrap();
    assert_eq!(api["kind"], "APIGroupDiscoveryList");
    assert_eq!(api["apiVersion"], "apidiscovery.k8s.io/v2");
    assert_eq!(api["metadata"], json!({}));
    assert_eq!(api["items"][0]["metadata"], json!({}), "core group has no name");
    assert!(r.apis_v2.body.starts_with(b"{\"kind\":\"APIGroupDiscoveryList\",\"apiVersion\":\"apidiscovery.k8s.io/v2\",\"metadata\":{},\"items\":[{\"metadata\":{\"name\":\"apps\"}"));
    assert!(r.apis_v2.body.ends_with(b"}\n"));
    assert_eq!(
        &r.api_legacy.body[..],
        b"{\"kind\":\"APIVersions\",\"versions\":[\"v1\"],\"serverAddressByClientCIDRs\":[]}\n"
    );
    assert_eq!(
        &r.apis_legacy.body[..],
        &b"{\"kind\":\"APIGroupList\",\"apiVersion\":\"v1\",\"groups\":[{\"name\":\"apps\",\"versions\":[{\"groupVersion\":\"apps/v1\",\"version\":\"v1\"}],\"preferredVersion\":{\"groupVersion\":\"apps/v1\",\"version\":\"v1\"}}]}\n"[..]
    );
    assert!(
        r.groups["apps"]
            .body
            .starts_with(b"{\"kind\":\"APIGroup\",\"apiVersion\":\"v1\",\"name\":\"apps\"")
    );
    let apis: serde_json::Value = serde_json::from_slice(&r.apis_v2.body).unwrap();
    assert!(
        apis["items"].as_array().unwrap().iter().all(|g| g["metadata"]["name"] != ""),
        "no core group in /apis"
    );
}

//! Discovery rules: aggregated and legacy `/api` and `/apis`, their
//! negotiation, caching, ordering and agreement (docs/upstream.md#b-11-8 to
//! B-11.14).

use serde_json::{Value, json};

use super::{Judge, missing, truncate};
use crate::check::evidence::{DiscoveryEvidence, aggregated_groups, json_ok, legacy_versions};
use crate::check::{Area, Evidence, Outcome, Profile, Rule};
use crate::wire::media::{
    DISCOVERY_NOT_ACCEPTABLE_MESSAGE, DISCOVERY_V2_CONTENT_TYPE, DISCOVERY_V2BETA1_CONTENT_TYPE,
};

fn with_discovery(e: &Evidence, f: impl FnOnce(&DiscoveryEvidence) -> Outcome) -> Outcome {
    e.discovery.as_ref().map_or_else(|| missing(Area::Discovery), f)
}

/// The base of a Content-Type (`application/json; charset=utf-8` →
/// `application/json`).
pub(super) fn base_type(ct: Option<&str>) -> &str {
    ct.unwrap_or_default().split(';').next().unwrap_or_default().trim()
}

/// B-11.8: aggregated `/apis`.
pub const AGGREGATED_APIS: Rule = Rule {
    id: "B-11.8/aggregated-apis",
    section: "B-11.8",
    area: Area::Discovery,
    title: "GET /apis with client-go's Accept gives the v2 APIGroupDiscoveryList with its Content-Type, Vary: Accept, Cache-Control: public and a quoted 128-hex ETag",
    failure_means: "kubectl falls back to one legacy request per group-version (slow discovery), or cannot cache discovery",
    upstream: "kubernetes staging/src/k8s.io/apiserver/pkg/endpoints/discovery/aggregated/handler_test.go: TestBasicResponse",
    eval: aggregated_apis,
};

fn aggregated_apis(e: &Evidence, _: Profile) -> Outcome {
    with_discovery(e, |d| {
        let mut j = Judge::new();
        let ex = &d.apis_aggregated;
        let Some(r) = j.status(ex, 200) else { return j.outcome() };
        j.header(ex, r, "content-type", DISCOVERY_V2_CONTENT_TYPE);
        j.vary(ex, r, "Accept");
        j.header(ex, r, "cache-control", "public");
        let etag = r.header("etag").unwrap_or_default();
        let ok = etag
            .strip_prefix('"')
            .and_then(|t| t.strip_suffix('"'))
            .is_some_and(|h| h.len() == 128 && h.bytes().all(|b| b.is_ascii_hexdigit()));
        if !ok {
            j.fail(Some(ex), "header etag", "\"<128 hex>\"", format!("{etag:?}"));
        }
        if let Some(body) = j.json(ex, r) {
            j.at(ex, &body, "/kind", &json!("APIGroupDiscoveryList"));
            j.at(ex, &body, "/apiVersion", &json!("apidiscovery.k8s.io/v2"));
        }
        j.outcome()
    })
}

/// B-11.9: aggregated ETag revalidation.
pub const AGGREGATED_ETAG: Rule = Rule {
    id: "B-11.9/aggregated-etag",
    section: "B-11.9",
    area: Area::Discovery,
    title: "repeating the aggregated /apis request with If-None-Match = its ETag gives 304 without body; W/\"…\" gives 200 (exact match only)",
    failure_means: "clients re-download discovery every time, or are told a weak tag matches",
    upstream: "kubernetes staging/src/k8s.io/apiserver/pkg/endpoints/discovery/aggregated/handler_test.go: TestEtagMatching, TestEtagNonMatching",
    eval: aggregated_etag,
};

fn aggregated_etag(e: &Evidence, _: Profile) -> Outcome {
    with_discovery(e, |d| {
        let (Some(exact), Some(weak)) = (&d.apis_revalidated, &d.apis_weak) else {
            return Outcome::NotApplicable("aggregated /apis gave no ETag to revalidate".into());
        };
        let mut j = Judge::new();
        if let Some(r) = j.status(exact, 304) {
            j.empty_body(exact, r);
        }
        j.status(weak, 200);
        j.outcome()
    })
}

/// B-11.10: legacy `/apis`.
pub const LEGACY_APIS: Rule = Rule {
    id: "B-11.10/legacy-apis",
    section: "B-11.10",
    area: Area::Discovery,
    title: "/apis with no Accept or application/json, and /apis/ with the aggregated Accept, give the legacy APIGroupList (preferredVersion = first version, no serverAddressByClientCIDRs; profile aggregated-apiserver: apiVersion and serverAddressByClientCIDRs may be absent and present)",
    failure_means: "old clients (and tools asking for plain JSON) cannot read discovery",
    upstream: "kubernetes test/e2e/apimachinery/discovery.go: should validate PreferredVersion for each APIGroup",
    eval: legacy_apis,
};

fn legacy_apis(e: &Evidence, profile: Profile) -> Outcome {
    let generic = profile == Profile::AggregatedApiserver;
    with_discovery(e, |d| {
        let mut j = Judge::new();
        for ex in [&d.apis_no_accept, &d.apis_json, &d.apis_slash] {
            let Some(r) = j.status(ex, 200) else { continue };
            let ct = r.header("content-type");
            if base_type(ct) != "application/json" || ct.is_some_and(|c| c.contains("g=")) {
                j.fail(Some(ex), "header content-type", "\"application/json\"", format!("{ct:?}"));
            }
            let Some(body) = j.json(ex, r) else { continue };
            j.at(ex, &body, "/kind", &json!("APIGroupList"));
            if !generic {
                j.at(ex, &body, "/apiVersion", &json!("v1"));
            }
            let Some(groups) = body.get("groups").and_then(Value::as_array) else {
                j.fail(Some(ex), "body /groups", "an array", "absent");
                continue;
            };
            for (i, g) in groups.iter().enumerate() {
                j.at(ex, g, "/preferredVersion", g.pointer("/versions/0").unwrap_or(&Value::Null));
                if !generic && g.get("serverAddressByClientCIDRs").is_some() {
                    j.fail(
                        Some(ex),
                        format!("body /groups/{i}/serverAddressByClientCIDRs"),
                        "absent",
                        "present",
                    );
                }
            }
        }
        j.outcome()
    })
}

/// B-11.11: v2beta1 served exactly, or refused exactly.
pub const V2BETA1: Rule = Rule {
    id: "B-11.11/v2beta1",
    section: "B-11.11",
    area: Area::Discovery,
    title: "an Accept naming only aggregated v2beta1 gives either the v2beta1 list with its Content-Type, or 406 with a Status (reason NotAcceptable, the supported-types message)",
    failure_means: "kubectl 1.26–1.29 gets a document it cannot read, or an error it cannot explain",
    upstream: "kubernetes staging/src/k8s.io/apiserver/pkg/endpoints/discovery/aggregated/handler_test.go: TestV2Beta1SkewSupport",
    eval: v2beta1,
};

fn v2beta1(e: &Evidence, _: Profile) -> Outcome {
    with_discovery(e, |d| {
        let mut j = Judge::new();
        let ex = &d.apis_v2beta1_only;
        let Some(r) = j.response(ex) else { return j.outcome() };
        match r.status {
            200 => {
                j.header(ex, r, "content-type", DISCOVERY_V2BETA1_CONTENT_TYPE);
                if let Some(body) = j.json(ex, r) {
                    j.at(ex, &body, "/kind", &json!("APIGroupDiscoveryList"));
                    j.at(ex, &body, "/apiVersion", &json!("apidiscovery.k8s.io/v2beta1"));
                }
            }
            406 => {
                if base_type(r.header("content-type")) != "application/json" {
                    j.fail(
                        Some(ex),
                        "header content-type",
                        "\"application/json\"",
                        format!("{:?}", r.header("content-type")),
                    );
                }
                if let Some(body) = j.json(ex, r) {
                    j.at(ex, &body, "/kind", &json!("Status"));
                    j.at(ex, &body, "/apiVersion", &json!("v1"));
                    j.at(ex, &body, "/status", &json!("Failure"));
                    j.at(ex, &body, "/reason", &json!("NotAcceptable"));
                    j.at(ex, &body, "/code", &json!(406));
                    j.at(ex, &body, "/message", &json!(DISCOVERY_NOT_ACCEPTABLE_MESSAGE));
                }
            }
            other => j.fail(Some(ex), "status", "200 (v2beta1 served) or 406", other.to_string()),
        }
        j.outcome()
    })
}

/// B-11.12: the core group lives at `/api` only.
pub const CORE_GROUP: Rule = Rule {
    id: "B-11.12/core-group",
    section: "B-11.12",
    area: Area::Discovery,
    title: "aggregated /api has exactly the core group (no name, version v1); aggregated /apis never has it; legacy /api is {kind: APIVersions, versions, serverAddressByClientCIDRs} without apiVersion (profile aggregated-apiserver: /api may be 404)",
    failure_means: "clients list core resources twice, or not at all",
    upstream: "kubernetes test/e2e/apimachinery/aggregated_discovery.go: should support raw aggregated discovery endpoint Accept headers",
    eval: core_group,
};

fn core_group(e: &Evidence, profile: Profile) -> Outcome {
    with_discovery(e, |d| {
        let mut j = Judge::new();
        let mut legacy_has_v1 = None;
        let no_core = profile == Profile::AggregatedApiserver
            && d.api_legacy.outcome.as_ref().is_ok_and(|r| r.status == 404);
        if no_core {
            // A generic apiserver without the core group: /apis must not
            // hold it either, checked below.
        } else if let Some(r) = j.status(&d.api_legacy, 200)
            && let Some(body) = j.json(&d.api_legacy, r)
        {
            let ex = &d.api_legacy;
            j.at(ex, &body, "/kind", &json!("APIVersions"));
            j.absent(ex, &body, "/apiVersion");
            if !body.get("serverAddressByClientCIDRs").is_some_and(Value::is_array) {
                j.fail(Some(ex), "body /serverAddressByClientCIDRs", "an array", "absent");
            }
            let versions = body.get("versions").and_then(Value::as_array);
            legacy_has_v1 = Some(versions.is_some_and(|v| v.contains(&json!("v1"))));
        }
        if !no_core
            && let Some(r) = j.status(&d.api_aggregated, 200)
            && let Some(body) = j.json(&d.api_aggregated, r)
        {
            let ex = &d.api_aggregated;
            let items = body.get("items").and_then(Value::as_array).cloned().unwrap_or_default();
            let core_expected = profile == Profile::KubeApiserver || legacy_has_v1 == Some(true);
            if core_expected || !items.is_empty() {
                if items.len() != 1 {
                    j.fail(
                        Some(ex),
                        "body /items",
                        "exactly one item",
                        format!("{} items", items.len()),
                    );
                }
                if let Some(item) = items.first() {
                    let name = item.pointer("/metadata/name").and_then(Value::as_str);
                    if name.is_some_and(|n| !n.is_empty()) {
                        j.fail(
                            Some(ex),
                            "body /items/0/metadata/name",
                            "absent",
                            format!("{name:?}"),
                        );
                    }
                    let versions: Vec<&str> = item
                        .get("versions")
                        .and_then(Value::as_array)
                        .map(|vs| vs.iter().filter_map(|v| v.get("version")?.as_str()).collect())
                        .unwrap_or_default();
                    if versions != ["v1"] {
                        j.fail(
                            Some(ex),
                            "body /items/0/versions",
                            "one version, v1",
                            format!("{versions:?}"),
                        );
                    }
                }
            }
        }
        let aggregated = json_ok(&d.apis_aggregated);
        if no_core && aggregated.is_none() {
            return Outcome::NotApplicable(
                "/api is 404 and aggregated /apis did not answer: nothing shows where the core group is"
                    .into(),
            );
        }
        if let Some(body) = aggregated {
            for (i, (name, _)) in aggregated_groups(&body).iter().enumerate() {
                if name.is_empty() {
                    j.fail(
                        Some(&d.apis_aggregated),
                        format!("body /items/{i}/metadata/name"),
                        "a named group (the core group belongs to /api)",
                        "absent",
                    );
                }
            }
        }
        j.outcome()
    })
}

/// B-11.13: ordering.
pub const ORDERING: Rule = Rule {
    id: "B-11.13/ordering",
    section: "B-11.13",
    area: Area::Discovery,
    title: "apiregistration.k8s.io is the first group when present; each group's versions are in the same order in aggregated /apis and legacy /apis/<group>",
    failure_means: "clients pick a different preferred version depending on which form of discovery they read",
    upstream: "kubernetes test/integration/apiserver/discovery/discovery_test.go: TestGroupPriority",
    eval: ordering,
};

fn ordering(e: &Evidence, _: Profile) -> Outcome {
    with_discovery(e, |d| {
        let Some(aggregated) = json_ok(&d.apis_aggregated) else {
            return Outcome::NotApplicable("aggregated /apis did not answer 200 JSON".into());
        };
        let mut j = Judge::new();
        let ex = &d.apis_aggregated;
        let groups = aggregated_groups(&aggregated);
        if let Some(pos) = groups.iter().position(|(n, _)| n == "apiregistration.k8s.io")
            && pos != 0
        {
            j.fail(
                Some(ex),
                format!("body /items/{pos}"),
                "apiregistration.k8s.io at /items/0",
                format!("at /items/{pos}"),
            );
        }
        for (name, versions) in &groups {
            let Some((_, gx)) = d.groups.iter().find(|(g, _)| g == name) else { continue };
            let Some(group) = j.json_body(gx, "200 with JSON (the group is listed in /apis)")
            else {
                continue;
            };
            let agg: Vec<&str> = versions.iter().map(|(v, _)| v.as_str()).collect();
            let leg = legacy_versions(&group);
            if agg != leg.iter().map(String::as_str).collect::<Vec<_>>() {
                j.fail(
                    Some(gx),
                    "body /versions",
                    format!("the aggregated order {agg:?}"),
                    format!("{leg:?}"),
                );
            }
        }
        j.outcome()
    })
}

/// B-11.14: aggregated resources agree with the legacy lists.
pub const AGGREGATED_MATCHES_LEGACY: Rule = Rule {
    id: "B-11.14/aggregated-matches-legacy",
    section: "B-11.14",
    area: Area::Discovery,
    title: "each current group-version's aggregated resources are its legacy list folded (subresources under parents, scope from namespaced, singularResource from singularName, responseKind from kind), without storageVersionHash; Stale versions carry no resources (profile kube-apiserver)",
    failure_means: "kubectl api-resources, and every client using aggregated discovery, sees different resources than legacy clients",
    upstream: "kubernetes test/e2e/apimachinery/aggregated_discovery.go: should support aggregated discovery interface",
    eval: aggregated_matches_legacy,
};

fn aggregated_matches_legacy(e: &Evidence, profile: Profile) -> Outcome {
    with_discovery(e, |d| {
        let mut j = Judge::new();
        let mut compared = 0;
        for entry in d.aggregated_versions() {
            let (ex, at, resources) = (entry.exchange, &entry.at, &entry.resources);
            if entry.stale {
                if profile == Profile::KubeApiserver && !resources.is_empty() {
                    j.fail(
                        Some(ex),
                        format!("body {at}/resources"),
                        "none (Stale)",
                        format!("{} resources", resources.len()),
                    );
                }
                continue;
            }
            for (r, res) in resources.iter().enumerate() {
                if res.get("storageVersionHash").is_some() {
                    j.fail(
                        Some(ex),
                        format!("body {at}/resources/{r}/storageVersionHash"),
                        "absent (not in the aggregated types)",
                        "present",
                    );
                }
            }
            let Some(lx) = d.resource_list(&entry.group, &entry.version) else { continue };
            let Some(legacy) = j.json_body(lx, "200 with an APIResourceList") else { continue };
            compared += 1;
            compare(&mut j, ex, at, resources, lx, &legacy);
        }
        if compared == 0 && j.clean() {
            return Outcome::NotApplicable(
                "no current group-version in aggregated discovery".into(),
            );
        }
        j.outcome()
    })
}

/// What a legacy list says one aggregated entry must be.
#[derive(Debug, PartialEq)]
struct Expected {
    scope: &'static str,
    singular: String,
    kind: String,
    subresources: Vec<(String, String)>,
}

fn compare(
    j: &mut Judge,
    ex: &crate::check::Exchange,
    at: &str,
    aggregated: &[Value],
    lx: &crate::check::Exchange,
    legacy: &Value,
) {
    let entries = legacy.get("resources").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut expected: Vec<(String, Expected)> = Vec::new();
    for entry in &entries {
        let name = entry.get("name").and_then(Value::as_str).unwrap_or_default();
        let kind = entry.get("kind").and_then(Value::as_str).unwrap_or_default().to_owned();
        let scope = if entry.get("namespaced").and_then(Value::as_bool) == Some(true) {
            "Namespaced"
        } else {
            "Cluster"
        };
        match name.split_once('/') {
            None => expected.push((
                name.to_owned(),
                Expected {
                    scope,
                    singular: entry
                        .get("singularName")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    kind,
                    subresources: Vec::new(),
                },
            )),
            Some((parent, sub)) => {
                let idx = match expected.iter().position(|(n, _)| n == parent) {
                    Some(i) => i,
                    None => {
                        expected.push((
                            parent.to_owned(),
                            Expected {
                                scope,
                                singular: String::new(),
                                kind: String::new(),
                                subresources: Vec::new(),
                            },
                        ));
                        expected.len() - 1
                    }
                };
                expected[idx].1.subresources.push((sub.to_owned(), kind));
            }
        }
    }
    for (name, want) in &expected {
        let found =
            aggregated.iter().position(|r| r.get("resource").and_then(Value::as_str) == Some(name));
        let Some(pos) = found else {
            j.fail(
                Some(ex),
                format!("body {at}/resources"),
                format!("resource {name:?} (listed by {})", lx.request.path),
                "absent",
            );
            continue;
        };
        let r = &aggregated[pos];
        let rat = format!("body {at}/resources/{pos}");
        let got = Expected {
            scope: match r.get("scope").and_then(Value::as_str) {
                Some("Namespaced") => "Namespaced",
                Some("Cluster") => "Cluster",
                _ => "",
            },
            singular: r
                .get("singularResource")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            kind: r
                .pointer("/responseKind/kind")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            subresources: r
                .get("subresources")
                .and_then(Value::as_array)
                .map(|subs| {
                    subs.iter()
                        .map(|s| {
                            (
                                s.get("subresource")
                                    .and_then(Value::as_str)
                                    .unwrap_or_default()
                                    .to_owned(),
                                s.pointer("/responseKind/kind")
                                    .and_then(Value::as_str)
                                    .unwrap_or_default()
                                    .to_owned(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default(),
        };
        if got != *want {
            j.fail(Some(ex), rat, truncate(&format!("{want:?}")), truncate(&format!("{got:?}")));
        }
    }
    for (pos, r) in aggregated.iter().enumerate() {
        let name = r.get("resource").and_then(Value::as_str).unwrap_or_default();
        if !expected.iter().any(|(n, _)| n == name) {
            j.fail(
                Some(ex),
                format!("body {at}/resources/{pos}"),
                format!("only resources {} lists", lx.request.path),
                format!("{name:?}"),
            );
        }
    }
}

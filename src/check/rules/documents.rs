//! Document-level rules: what each published OpenAPI document must be, and
//! how the OpenAPI documents and discovery must agree (docs/upstream.md#b-11-15,
//! B-1.1, B-2.1, B-6.2, KEP-2896).

use std::collections::BTreeSet;

use serde_json::Value;

use super::{Judge, missing};
use crate::check::evidence::{Document, json_ok, legacy_groups};
use crate::check::facts::{DocumentFacts, Listed, MAX_LISTED};
use crate::check::{Area, Evidence, Exchange, Outcome, Profile, Rule};
use crate::wire::GroupVersion;

/// The documents that answered 200 with a JSON body, with what their
/// bodies showed.
fn served(docs: &[Document]) -> impl Iterator<Item = (&Document, &Exchange, &DocumentFacts)> {
    docs.iter().filter_map(|d| d.served().map(|(ex, facts)| (d, ex, facts)))
}

fn with_documents(
    e: &Evidence,
    only_group_versions: bool,
    f: impl FnOnce(&mut Judge, Vec<(&Document, &Exchange, &DocumentFacts)>),
) -> Outcome {
    let Some(o) = &e.openapi else { return missing(Area::Openapi) };
    let docs: Vec<_> = served(&o.documents)
        .filter(|(d, _, _)| !only_group_versions || d.is_group_version())
        .collect();
    if docs.is_empty() {
        return Outcome::NotApplicable("no document answered 200 with JSON".into());
    }
    let mut j = Judge::new();
    f(&mut j, docs);
    j.outcome()
}

/// Fails unless `version` is `3.0.x`.
fn openapi_3_0_version(j: &mut Judge, ex: &Exchange, version: &str) {
    if !version.starts_with("3.0.") {
        j.fail(Some(ex), "body /openapi", "\"3.0.x\"", format!("{version:?}"));
    }
}

/// Findings `listed` left out, as one finding that says how many.
fn more<T>(j: &mut Judge, ex: &Exchange, listed: &Listed<T>, what: &str) {
    if listed.more > 0 {
        j.fail(
            Some(ex),
            "body",
            format!("(at most {MAX_LISTED} {what} listed per document)"),
            format!("{} more", listed.more),
        );
    }
}

/// B-11.15: group-version documents are OpenAPI 3.0, not Swagger leftovers.
pub const OPENAPI_3_0_SHAPE: Rule = Rule {
    id: "B-11.15/openapi-3.0-shape",
    section: "B-11.15",
    area: Area::Openapi,
    title: "each group-version document has openapi 3.0.x, only #/components/ refs, no $ref with siblings (wrapped in allOf), no body/formData parameters or type: file, and no servers",
    failure_means: "a converted Swagger 2.0 document kept v2 constructs: clients ignore descriptions beside $refs, mis-read request bodies, or send requests to the wrong server",
    upstream: "kubernetes test/e2e/apimachinery/openapiv3.go: should round trip OpenAPI V3 for all built-in group versions",
    eval: openapi_3_0_shape,
};

fn openapi_3_0_shape(e: &Evidence, _: Profile) -> Outcome {
    with_documents(e, true, |j, docs| {
        for (_, ex, doc) in docs {
            openapi_3_0_version(j, ex, &doc.openapi);
            if doc.servers {
                j.fail(Some(ex), "body /servers", "absent", "present");
            }
            for (at, expected, found) in &doc.shape.items {
                j.fail(Some(ex), at, expected, found);
            }
            more(j, ex, &doc.shape, "shape findings");
        }
    })
}

/// Every `serverRelativeURL` resolves on this server.
pub const URLS_RESOLVE: Rule = Rule {
    id: "doc/urls-resolve",
    section: "B-1.1",
    area: Area::Openapi,
    title: "every serverRelativeURL is under /openapi/v3/ on this server and answers 200 with a JSON body",
    failure_means: "a document listed in the root cannot be fetched: kubectl explain and client-side validation fail for that group-version",
    upstream: "kubernetes test/e2e/apimachinery/openapiv3.go: should round trip OpenAPI V3 for all built-in group versions",
    eval: urls_resolve,
};

fn urls_resolve(e: &Evidence, _: Profile) -> Outcome {
    let Some(o) = &e.openapi else { return missing(Area::Openapi) };
    if o.documents.is_empty() {
        return Outcome::NotApplicable("the root lists no document".into());
    }
    let mut j = Judge::new();
    for d in &o.documents {
        let Some(ex) = &d.exchange else {
            j.fail(
                Some(&o.root),
                format!("body /paths/{}/serverRelativeURL", super::token(&d.key)),
                "a path under /openapi/v3/ (not requested otherwise)",
                format!("{:?}", d.url),
            );
            continue;
        };
        if j.status(ex, 200).is_some()
            && let Some(Err(why)) = d.body.as_ref().map(|b| &b.json)
        {
            j.fail(Some(ex), "body", "JSON", why);
        }
    }
    j.outcome()
}

/// Documents are valid OpenAPI 3.0.
pub const VALID_OPENAPI: Rule = Rule {
    id: "doc/valid-openapi-3.0",
    section: "B-2.1",
    area: Area::Openapi,
    title: "every document deserializes as an OpenAPI 3.0 document (openapiv3 crate) with openapi 3.0.x",
    failure_means: "OpenAPI tooling (kubectl explain, generators, validators) rejects the document",
    upstream: "kubernetes test/e2e/apimachinery/openapiv3.go: should round trip OpenAPI V3 for all built-in group versions",
    eval: valid_openapi,
};

fn valid_openapi(e: &Evidence, _: Profile) -> Outcome {
    with_documents(e, false, |j, docs| {
        for (_, ex, doc) in docs {
            if let Some(err) = &doc.invalid {
                j.fail(Some(ex), "body /", "an OpenAPI 3.0 document", err);
                continue;
            }
            openapi_3_0_version(j, ex, &doc.openapi);
        }
    })
}

/// Documents are closed under `$ref`.
pub const REFS_CLOSED: Rule = Rule {
    id: "doc/refs-closed",
    section: "B-2.1",
    area: Area::Openapi,
    title: "every document is self-contained: each $ref is local (#/…) and resolves inside it",
    failure_means: "clients resolving a field's type hit a reference to nothing (kubectl explain errors, validation skips fields)",
    upstream: "kubernetes test/e2e/apimachinery/openapiv3.go: should round trip OpenAPI V3 for all built-in group versions",
    eval: refs_closed,
};

fn refs_closed(e: &Evidence, _: Profile) -> Outcome {
    with_documents(e, false, |j, docs| {
        for (_, ex, doc) in docs {
            for (at, r) in &doc.dangling.items {
                j.fail(
                    Some(ex),
                    format!("body {at}/$ref"),
                    "a reference resolving inside the document",
                    format!("{r:?}"),
                );
            }
            more(j, ex, &doc.dangling, "dangling references");
        }
    })
}

/// Discovery and OpenAPI list the same group-versions.
pub const DISCOVERY_OPENAPI_COVERAGE: Rule = Rule {
    id: "doc/discovery-openapi-coverage",
    section: "B-6.2",
    area: Area::Both,
    title: "every group-version in discovery has an OpenAPI v3 document (api/v1, apis/<g>/<v>) and every group-version document is in discovery",
    failure_means: "kubectl explain and server-side field validation tooling know no schema for a served resource, or describe one that is not served",
    upstream: "kubernetes test/e2e/apimachinery/openapiv3.go: should publish OpenAPI V3 for CustomResourceDefinition",
    eval: coverage,
};

/// The group-versions discovery lists (aggregated when served, else
/// legacy), with the exchange that lists each.
fn discovery_group_versions(e: &Evidence) -> Option<Vec<((String, String), &Exchange)>> {
    let d = e.discovery.as_ref()?;
    let mut out: Vec<((String, String), &Exchange)> = Vec::new();
    let mut aggregated = false;
    for ex in [&d.api_aggregated, &d.apis_aggregated] {
        let Some(list) = json_ok(ex) else { continue };
        if list.get("kind").and_then(Value::as_str) != Some("APIGroupDiscoveryList") {
            continue;
        }
        aggregated = true;
        for (g, versions) in crate::check::evidence::aggregated_groups(&list) {
            for (v, _) in versions {
                out.push(((g.clone(), v), ex));
            }
        }
    }
    if !aggregated {
        if let Some(list) = json_ok(&d.apis_json) {
            for (g, versions) in legacy_groups(&list) {
                for v in versions {
                    out.push(((g.clone(), v), &d.apis_json));
                }
            }
        }
        if let Some(api) = json_ok(&d.api_legacy)
            && let Some(vs) = api.get("versions").and_then(Value::as_array)
        {
            for v in vs.iter().filter_map(Value::as_str) {
                out.push(((String::new(), v.to_owned()), &d.api_legacy));
            }
        }
    }
    Some(out)
}

fn coverage(e: &Evidence, _: Profile) -> Outcome {
    let (Some(o), Some(listed)) = (&e.openapi, discovery_group_versions(e)) else {
        return Outcome::NotApplicable("needs both OpenAPI and discovery evidence".into());
    };
    let keys: BTreeSet<&str> = o.documents.iter().map(|d| d.key.as_str()).collect();
    if keys.is_empty() && listed.is_empty() {
        return Outcome::NotApplicable("the server lists no group-version".into());
    }
    let mut j = Judge::new();
    for ((g, v), ex) in &listed {
        let key = GroupVersion::key_of(g, v);
        if !keys.contains(key.as_str()) {
            j.fail(
                Some(&o.root),
                format!("body /paths/{}", super::token(&key)),
                format!("a document for {key} (listed by {})", ex.request.path),
                "absent",
            );
        }
    }
    for d in &o.documents {
        let Some(gv) = GroupVersion::from_key(&d.key) else { continue };
        if !listed.iter().any(|((lg, lv), _)| *lg == gv.group && *lv == gv.version) {
            j.fail(
                Some(&o.root),
                format!("body /paths/{}", super::token(&d.key)),
                "a group-version discovery lists",
                "not in discovery",
            );
        }
    }
    j.outcome()
}

/// Every kind has a schema `kubectl explain` can find.
pub const KINDS_HAVE_SCHEMAS: Rule = Rule {
    id: "doc/kinds-have-schemas",
    section: "B-6.2",
    area: Area::Both,
    title: "every resource kind in aggregated discovery has a schema in its group-version's document carrying x-kubernetes-group-version-kind for it",
    failure_means: "kubectl explain <resource> answers \"couldn't find resource\"; kubectl apply --validate cannot check the kind",
    upstream: "kubernetes test/e2e/apimachinery/crd_publish_openapi.go: works for CRD with validation schema",
    eval: kinds_have_schemas,
};

fn kinds_have_schemas(e: &Evidence, _: Profile) -> Outcome {
    let (Some(o), Some(d)) = (&e.openapi, &e.discovery) else {
        return Outcome::NotApplicable("needs both OpenAPI and discovery evidence".into());
    };
    let mut j = Judge::new();
    let mut checked = 0;
    for entry in d.aggregated_versions().into_iter().filter(|v| !v.stale) {
        let ex = entry.exchange;
        for (r, g, v, kind) in entry.kinds() {
            let (g, v, kind) = (g.as_str(), v.as_str(), kind.as_str());
            checked += 1;
            let key = GroupVersion::key_of(g, v);
            let at = format!("body {}/resources/{r}/responseKind", entry.at);
            let doc = o.documents.iter().find(|d| d.key == key).and_then(Document::served);
            let Some((_, doc)) = doc else {
                j.fail(
                    Some(ex),
                    at,
                    format!("a readable OpenAPI document {key} for {g}/{v} {kind}"),
                    "none",
                );
                continue;
            };
            if !doc.kinds.contains(&(g.to_owned(), v.to_owned(), kind.to_owned())) {
                j.fail(Some(ex), at, format!("a schema in {key} with x-kubernetes-group-version-kind {{group: {g:?}, version: {v:?}, kind: {kind:?}}}"), "none");
            }
        }
    }
    if checked == 0 && j.clean() {
        return Outcome::NotApplicable("aggregated discovery lists no resource kind".into());
    }
    j.outcome()
}

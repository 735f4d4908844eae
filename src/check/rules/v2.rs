//! `/openapi/v2` rules and the OpenAPI v3 `Accept` edge cases
//! (docs/upstream.md#b-11-17 to B-11.19, B-11.27).

use super::{Judge, missing, truncate};
use crate::check::evidence::{OpenApiEvidence, PROTOBUF as PROTOBUF_V3, Probes};
use crate::check::more::{PROTOBUF_V2, V2Evidence, V2Facts};
use crate::check::wire_proto::Outline;
use crate::check::{Area, Evidence, Exchange, Outcome, Profile, Rule};

/// A JSON body this large is gzipped for a client that accepts gzip
/// (Kubernetes' own `/openapi/v2` is megabytes; below this size either
/// form is right, since upstream's threshold is not pinned down,
/// docs/upstream.md#b-10).
pub const GZIP_EXPECTED_FROM: usize = 128 * 1024;

fn with_v2(e: &Evidence, f: impl FnOnce(&V2Evidence, &mut Judge)) -> Outcome {
    match &e.openapi {
        None => missing(Area::Openapi),
        Some(o) => {
            let mut j = Judge::new();
            f(&o.v2, &mut j);
            j.outcome()
        }
    }
}

/// The JSON's facts, or a finding saying why there are none.
fn json_facts<'a>(j: &mut Judge, v2: &'a V2Evidence) -> Option<&'a V2Facts> {
    let resp = j.status(&v2.json, 200)?;
    match &v2.facts {
        Some(Ok(f)) => Some(f),
        Some(Err(why)) => {
            j.fail(Some(&v2.json), "body", "a Swagger 2.0 JSON document", why);
            None
        }
        None => {
            j.fail(Some(&v2.json), "body", "a body", format!("{} bytes", resp.length));
            None
        }
    }
}

/// B-11.17: `/openapi/v2` in JSON.
pub const OPENAPI_V2: Rule = Rule {
    id: "B-11.17/openapi-v2",
    section: "B-11.17",
    area: Area::Openapi,
    title: "GET /openapi/v2 gives 200 Swagger 2.0 JSON with an ETag; If-None-Match = that ETag gives 304 repeating it; gzip inflates to the same bytes; text/html gives 406",
    failure_means: "client-go's OpenAPISchema() (kubectl validation and explain fallbacks, Helm, gitops-engine) cannot read the cluster's types, or re-downloads megabytes every time",
    upstream: "kube-openapi pkg/handler/handler_test.go: TestRegisterOpenAPIVersionedService",
    eval: openapi_v2,
};

fn openapi_v2(e: &Evidence, _: Profile) -> Outcome {
    with_v2(e, |v2, j| {
        let Some(facts) = json_facts(j, v2) else { return };
        let ex = &v2.json;
        let Ok(resp) = &ex.outcome else { return };
        if super::discovery::base_type(resp.header("content-type")) != "application/json" {
            j.fail(
                Some(ex),
                "header content-type",
                "\"application/json\"",
                format!("{:?}", resp.header("content-type")),
            );
        }
        if facts.outline.version != "2.0" {
            j.fail(Some(ex), "body /swagger", "\"2.0\"", format!("{:?}", facts.outline.version));
        }
        let etag = resp.header("etag").unwrap_or_default();
        if !(etag.len() > 2 && etag.starts_with('"') && etag.ends_with('"')) {
            j.fail(Some(ex), "header etag", "a quoted ETag", format!("{etag:?}"));
        } else if let Some(re) = &v2.revalidated
            && let Some(r) = j.status(re, 304)
        {
            j.empty_body(re, r);
            j.header(re, r, "etag", etag);
        }
        if let Some(g) = j.status(&v2.gzip, 200) {
            let gzipped =
                g.header("content-encoding").is_some_and(|v| v.eq_ignore_ascii_case("gzip"));
            match &v2.gzip_sha512 {
                Some(Ok(sha)) if *sha == facts.sha512 => {}
                Some(Ok(sha)) => j.fail(
                    Some(&v2.gzip),
                    "body",
                    format!("the JSON's bytes (SHA-512 {})", truncate(&facts.sha512)),
                    format!("other bytes (SHA-512 {})", truncate(sha)),
                ),
                Some(Err(why)) => j.fail(Some(&v2.gzip), "body", "gzip", why),
                None => {}
            }
            if !gzipped && resp.length >= GZIP_EXPECTED_FROM {
                j.fail(
                    Some(&v2.gzip),
                    "header content-encoding",
                    format!("\"gzip\" (a {} byte document)", resp.length),
                    "no such header",
                );
            }
        }
        // The body is not judged: kube-openapi's is empty, openapi-proxy's
        // a Status saying what is served; neither is read by clients.
        j.status(&v2.text_html, 406);
    })
}

/// B-11.18: `/openapi/v2` in protobuf.
pub const OPENAPI_V2_PROTOBUF: Rule = Rule {
    id: "B-11.18/openapi-v2-protobuf",
    section: "B-11.18",
    area: Area::Openapi,
    title: "/openapi/v2 with the @ or the .v1.0 protobuf Accept, or @ then application/json, gives 200 protobuf (.v1.0 Content-Type, the JSON's ETag) that decodes to the JSON's swagger, paths and definitions in order",
    failure_means: "kubectl 1.27–1.28 explain and client-side validation, which ask for protobuf only, fail or see other types than JSON readers",
    upstream: "kube-openapi pkg/handler/handler_test.go: TestRegisterOpenAPIVersionedService",
    eval: openapi_v2_protobuf,
};

fn openapi_v2_protobuf(e: &Evidence, _: Profile) -> Outcome {
    with_v2(e, |v2, j| {
        let Some(facts) = json_facts(j, v2) else { return };
        let etag = v2.json.outcome.as_ref().ok().and_then(|r| r.header("etag")).unwrap_or_default();
        for (ex, outline) in &v2.protobuf {
            let Some(r) = j.status(ex, 200) else { continue };
            j.header(ex, r, "content-type", PROTOBUF_V2);
            if !etag.is_empty() {
                j.header(ex, r, "etag", etag);
            }
            match outline {
                Some(Ok(o)) => same_outline(j, ex, &facts.outline, o, "definitions (field 9)"),
                Some(Err(why)) => j.fail(Some(ex), "body", "an openapi.v2.Document", why),
                None => {}
            }
        }
    })
}

/// Findings where a protobuf document's outline departs from its JSON's.
fn same_outline(j: &mut Judge, ex: &Exchange, json: &Outline, proto: &Outline, schemas: &str) {
    if proto.version != json.version {
        j.fail(
            Some(ex),
            "body version (field 1)",
            format!("{:?}", json.version),
            format!("{:?}", proto.version),
        );
    }
    names(j, ex, "paths", &json.paths, &proto.paths);
    names(j, ex, schemas, &json.schemas, &proto.schemas);
}

/// Findings where the protobuf's names depart from the JSON's.
fn names(j: &mut Judge, ex: &Exchange, at: &str, json: &[String], proto: &[String]) {
    if json == proto {
        return;
    }
    let first =
        json.iter().zip(proto).position(|(a, b)| a != b).unwrap_or(json.len().min(proto.len()));
    j.fail(
        Some(ex),
        format!("body {at}"),
        format!("the JSON's {} names ({:?} at {first})", json.len(), json.get(first)),
        format!("{} names ({:?} at {first})", proto.len(), proto.get(first)),
    );
}

/// B-11.19: one definition per served kind.
pub const OPENAPI_V2_KINDS: Rule = Rule {
    id: "B-11.19/openapi-v2-kinds",
    section: "B-11.19",
    area: Area::Both,
    title: "every kind aggregated discovery serves has exactly one /openapi/v2 definition listing it in x-kubernetes-group-version-kind, and no group-version-kind is listed twice",
    failure_means: "gitops-engine (Argo CD) and kubectl's v2 validation cannot find a kind's schema, or index two schemas under one kind and break",
    upstream: "kubernetes test/e2e/apimachinery/crd_publish_openapi.go: works for CRD with validation schema",
    eval: openapi_v2_kinds,
};

fn openapi_v2_kinds(e: &Evidence, _: Profile) -> Outcome {
    let (Some(o), Some(d)) = (&e.openapi, &e.discovery) else {
        return Outcome::NotApplicable("needs both OpenAPI and discovery evidence".into());
    };
    let mut j = Judge::new();
    let Some(facts) = json_facts(&mut j, &o.v2) else { return j.outcome() };
    let ex = &o.v2.json;
    for ((g, v, k), defs) in &facts.kinds {
        if defs.len() > 1 {
            j.fail(
                Some(ex),
                "body /definitions",
                format!("one definition listing {g}/{v} {k}"),
                truncate(&format!("{defs:?}")),
            );
        }
    }
    let mut checked = 0;
    for entry in d.aggregated_versions().into_iter().filter(|v| !v.stale) {
        for (r, g, v, kind) in entry.kinds() {
            checked += 1;
            let listed =
                facts.kinds.iter().any(|((fg, fv, fk), _)| *fg == g && *fv == v && *fk == kind);
            if !listed {
                j.fail(
                    Some(entry.exchange),
                    format!("body {}/resources/{r}/responseKind", entry.at),
                    format!("an /openapi/v2 definition with x-kubernetes-group-version-kind {{group: {g:?}, version: {v:?}, kind: {kind:?}}}"),
                    "none",
                );
            }
        }
    }
    if checked == 0 && j.clean() {
        return Outcome::NotApplicable("aggregated discovery lists no resource kind".into());
    }
    j.outcome()
}

/// B-11.27: the `Accept` forms clients send to a v3 document.
pub const DOCUMENT_ACCEPT_EDGES: Rule = Rule {
    id: "B-11.27/document-accept-edges",
    section: "B-11.27",
    area: Area::Openapi,
    title: "on a v3 document, no Accept, */*, application/* and application/json;foo=bar give the JSON; the protobuf decodes to the JSON's openapi, paths and schemas in order; protobuf first gives protobuf, cached as the JSON is; a stale hash asked in protobuf redirects; 304s repeat the ETag",
    failure_means: "curl, browsers and clients with wildcard or protobuf-first Accepts get an error or the wrong type; caches cannot match a 304 to what they hold",
    upstream: "kube-openapi pkg/handler3/handler_test.go: TestRegisterOpenAPIVersionedService",
    eval: document_accept_edges,
};

fn document_accept_edges(e: &Evidence, _: Profile) -> Outcome {
    let Some(o) = &e.openapi else { return missing(Area::Openapi) };
    let Some(p) = &o.probes else {
        return Outcome::NotApplicable("the root lists no document to probe".into());
    };
    let mut j = Judge::new();
    let length = document_length(o, p);
    for ex in [&p.no_accept, &p.any, &p.application_any, &p.json_with_parameter] {
        if let Some(r) = j.status(ex, 200) {
            j.header(ex, r, "content-type", "application/json");
            if let Some(n) = length
                && r.length != n
            {
                j.fail(
                    Some(ex),
                    "body",
                    format!("the JSON document ({n} bytes)"),
                    format!("{} bytes", r.length),
                );
            }
        }
    }
    if let (Ok(r), Some(Ok(json)), Some(proto)) =
        (&p.protobuf_dot.outcome, &p.json_outline, &p.protobuf_outline)
        && r.status == 200
    {
        match proto {
            Ok(proto) => same_outline(&mut j, &p.protobuf_dot, json, proto, "components.schemas"),
            Err(why) => j.fail(Some(&p.protobuf_dot), "body", "an openapi.v3.Document", why),
        }
    }
    if let Some(r) = j.status(&p.protobuf_first, 200) {
        j.header(&p.protobuf_first, r, "content-type", PROTOBUF_V3);
        j.header(&p.protobuf_first, r, "cache-control", "public, immutable");
    }
    if let Some(r) = j.status(&p.protobuf_wrong_hash, 301) {
        j.header(
            &p.protobuf_wrong_hash,
            r,
            "location",
            &format!("/openapi/v3/{}?hash={}", p.key, p.hash),
        );
    }
    let etag = format!("\"{}\"", p.hash);
    for ex in [&p.if_none_match_json, &p.if_none_match_protobuf] {
        if let Ok(r) = &ex.outcome
            && r.status == 304
        {
            j.header(ex, r, "etag", &etag);
        }
    }
    j.outcome()
}

/// The length of the probed document's JSON, as fetched for the root.
fn document_length(o: &OpenApiEvidence, p: &Probes) -> Option<usize> {
    o.documents.iter().find(|d| d.key == p.key).and_then(|d| d.body.as_ref()).map(|b| b.length)
}

//! OpenAPI v3 rules: the root, the documents' headers and hashes, and the
//! probes on one document (docs/upstream.md#b-11-1 to B-11.7, Part A 1 and 10).

use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::{Judge, is_upper_hex_512, missing, token};
use crate::body::digest::sha512_hex;
use crate::check::evidence::{OpenApiEvidence, PROTOBUF as PROTOBUF_CONTENT_TYPE, Probes};
use crate::check::{Area, Evidence, Outcome, Profile, Rule};

fn with_openapi(e: &Evidence, f: impl FnOnce(&OpenApiEvidence) -> Outcome) -> Outcome {
    e.openapi.as_ref().map_or_else(|| missing(Area::Openapi), f)
}

fn with_probes(e: &Evidence, f: impl FnOnce(&Probes) -> Outcome) -> Outcome {
    with_openapi(e, |o| match &o.probes {
        Some(p) => f(p),
        None => Outcome::NotApplicable("the root lists no document to probe".into()),
    })
}

/// B-11.1: the root's shape.
pub const ROOT_SHAPE: Rule = Rule {
    id: "B-11.1/root-shape",
    section: "B-11.1",
    area: Area::Openapi,
    title: "GET /openapi/v3 is {\"paths\":{KEY:{\"serverRelativeURL\":\"/openapi/v3/KEY?hash=<128 upper hex>\"}}}",
    failure_means: "clients (client-go's OpenAPI v3 client, kubectl explain) cannot find or cache-bust the documents",
    upstream: "kube-openapi pkg/handler3/handler_test.go: TestRegisterOpenAPIVersionedService",
    eval: root_shape,
};

fn root_shape(e: &Evidence, _: Profile) -> Outcome {
    with_openapi(e, |o| {
        let mut j = Judge::new();
        let Some(resp) = j.status(&o.root, 200) else { return j.outcome() };
        let Some(root) = j.json(&o.root, resp) else { return j.outcome() };
        let Some(obj) = root.as_object() else {
            j.fail(Some(&o.root), "body /", "an object", "another JSON type");
            return j.outcome();
        };
        let members: Vec<&String> = obj.keys().collect();
        if members != ["paths"] {
            j.fail(Some(&o.root), "body /", "exactly one member, paths", format!("{members:?}"));
        }
        let Some(paths) = root.get("paths").and_then(Value::as_object) else {
            j.fail(Some(&o.root), "body /paths", "an object", "absent or not an object");
            return j.outcome();
        };
        for (key, entry) in paths {
            let at = format!("body /paths/{}", token(key));
            if key.is_empty() || key.starts_with('/') {
                j.fail(Some(&o.root), &at, "a key without leading slash", format!("{key:?}"));
            } else if crate::wire::DocumentKey::parse(key).is_none() {
                // docs/wire.md#a-4: what openapi-proxy refuses to publish.
                j.fail(
                    Some(&o.root),
                    &at,
                    "a key Kubernetes could publish (valid group and version names, URL-safe segments)",
                    format!("{key:?}"),
                );
            }
            let Some(m) = entry.as_object() else {
                j.fail(Some(&o.root), &at, "an object", entry.to_string());
                continue;
            };
            let names: Vec<&String> = m.keys().collect();
            if names != ["serverRelativeURL"] {
                j.fail(
                    Some(&o.root),
                    &at,
                    "exactly one member, serverRelativeURL",
                    format!("{names:?}"),
                );
            }
            let url = m.get("serverRelativeURL").and_then(Value::as_str).unwrap_or_default();
            let prefix = format!("/openapi/v3/{key}?hash=");
            let ok = url.strip_prefix(&prefix).is_some_and(is_upper_hex_512);
            if !ok {
                j.fail(
                    Some(&o.root),
                    format!("{at}/serverRelativeURL"),
                    format!("{prefix}<128 upper-case hex>"),
                    format!("{url:?}"),
                );
            }
        }
        j.outcome()
    })
}

/// Part A 1: the root behaves like handler3's (openapi-proxy profile).
pub const ROOT_HEADERS: Rule = Rule {
    id: "A-1/root-headers",
    section: "A-1",
    area: Area::Openapi,
    title: "the root has Content-Type application/json, ETag = quoted SHA-512 of its body, Cache-Control no-cache, private, and If-None-Match gives 304",
    failure_means: "clients re-download the root on every start instead of revalidating it (kube-apiserver's aggregator root has no ETag: use --profile kube-apiserver there)",
    upstream: "kube-openapi pkg/handler3/handler_test.go: TestUpdateGroupVersion",
    eval: root_headers,
};

fn root_headers(e: &Evidence, profile: Profile) -> Outcome {
    if profile == Profile::KubeApiserver {
        return Outcome::NotApplicable(
            "kube-apiserver's aggregated root is sniffed text/plain without ETag (B-1.4)".into(),
        );
    }
    with_openapi(e, |o| {
        let mut j = Judge::new();
        let Some(resp) = j.status(&o.root, 200) else { return j.outcome() };
        j.header(&o.root, resp, "content-type", "application/json");
        j.header(&o.root, resp, "cache-control", "no-cache, private");
        let etag = format!("\"{}\"", sha512_hex(&resp.body));
        if j.header(&o.root, resp, "etag", &etag) {
            match &o.root_revalidated {
                Some(ex) => {
                    if let Some(r) = j.status(ex, 304) {
                        j.empty_body(ex, r);
                    }
                }
                None => j.fail(Some(&o.root), "header etag", "present", "absent"),
            }
        }
        j.outcome()
    })
}

/// B-11.2: headers of every document.
pub const DOCUMENT_HEADERS: Rule = Rule {
    id: "B-11.2/document-headers",
    section: "B-11.2",
    area: Area::Openapi,
    title: "each serverRelativeURL gives 200, Content-Type application/json, ETag \"<hash>\", Vary: Accept, Cache-Control public, immutable, Expires about a year ahead",
    failure_means: "kubectl's disk cache cannot keep documents, or keeps them under the wrong key: every command re-downloads them",
    upstream: "kube-openapi pkg/handler3/handler_test.go: TestCacheBusting",
    eval: document_headers,
};

fn document_headers(e: &Evidence, _: Profile) -> Outcome {
    with_openapi(e, |o| {
        let mut j = Judge::new();
        let mut seen = 0;
        for d in &o.documents {
            let (Some(ex), Some(hash)) = (&d.exchange, &d.hash) else { continue };
            seen += 1;
            let Some(resp) = j.status(ex, 200) else { continue };
            j.header(ex, resp, "content-type", "application/json");
            j.header(ex, resp, "etag", &format!("\"{hash}\""));
            j.vary(ex, resp, "Accept");
            j.header(ex, resp, "cache-control", "public, immutable");
            expires_in_a_year(&mut j, ex, resp, e.started);
        }
        if seen == 0 {
            return Outcome::NotApplicable("the root lists no document with a hash URL".into());
        }
        j.outcome()
    })
}

/// `Expires` parses (HTTP-date, or Go's RFC 1123 with a zone name such as
/// `UTC`) and lies 360 to 370 days after the response's `Date` (else
/// `started`).
fn expires_in_a_year(
    j: &mut Judge,
    ex: &crate::check::Exchange,
    resp: &crate::check::Response,
    started: SystemTime,
) {
    let Some(expires) = resp.header("expires") else {
        j.fail(Some(ex), "header expires", "about one year ahead", "no such header");
        return;
    };
    let Some(at) = parse_date(expires) else {
        j.fail(Some(ex), "header expires", "an HTTP date", format!("{expires:?}"));
        return;
    };
    let now = resp.header("date").and_then(parse_date).unwrap_or(started);
    let ahead = at.duration_since(now).unwrap_or_default();
    let day = 24 * 3600;
    if ahead < Duration::from_secs(360 * day) || ahead > Duration::from_secs(370 * day) {
        j.fail(
            Some(ex),
            "header expires",
            "about one year after the response's Date",
            format!("{expires:?} ({} days ahead)", ahead.as_secs() / day),
        );
    }
}

/// An HTTP date; Go's `time.RFC1123` with a zone abbreviation (`UTC`) is
/// read as GMT (upstream writes that in UTC containers, B-2.1).
fn parse_date(s: &str) -> Option<SystemTime> {
    let s = s.trim();
    let gmt = s.strip_suffix(" UTC").map_or_else(|| s.to_owned(), |head| format!("{head} GMT"));
    httpdate::parse_http_date(&gmt).ok()
}

/// B-11.3: hash = SHA-512 of the served bytes.
pub const HASH_MATCHES_BODY: Rule = Rule {
    id: "B-11.3/hash-matches-body",
    section: "B-11.3",
    area: Area::Openapi,
    title: "each document's ?hash= is the upper-case hex SHA-512 of the exact bytes served",
    failure_means: "a hash URL does not name its content: caches serve stale documents as current, replicas disagree",
    upstream: "kube-openapi pkg/handler3/handler_test.go: TestCacheBusting",
    eval: hash_matches_body,
};

fn hash_matches_body(e: &Evidence, _: Profile) -> Outcome {
    with_openapi(e, |o| {
        let mut j = Judge::new();
        let mut seen = 0;
        for d in &o.documents {
            let (Some(ex), Some(hash), Some(body)) = (&d.exchange, &d.hash, &d.body) else {
                continue;
            };
            if ex.outcome.as_ref().ok().is_none_or(|r| r.status != 200) {
                continue;
            }
            seen += 1;
            let actual = &body.sha512;
            if actual != hash {
                j.fail(
                    Some(ex),
                    "query hash",
                    format!("SHA-512 of the body, {actual}"),
                    hash.clone(),
                );
            }
        }
        if seen == 0 {
            return Outcome::NotApplicable("no document answered 200".into());
        }
        j.outcome()
    })
}

/// B-11.4: a stale hash redirects; no hash means no immutability.
pub const HASH_REDIRECT: Rule = Rule {
    id: "B-11.4/stale-hash-redirect",
    section: "B-11.4",
    area: Area::Openapi,
    title: "?hash=WRONG gives 301, empty body, Location /openapi/v3/KEY?hash=CURRENT; no hash gives 200 without Expires",
    failure_means: "a client holding an old root cannot find the current document, or caches a hash-less URL forever",
    upstream: "kube-openapi pkg/handler3/handler_test.go: TestCacheBusting",
    eval: hash_redirect,
};

fn hash_redirect(e: &Evidence, _: Profile) -> Outcome {
    with_probes(e, |p| {
        let mut j = Judge::new();
        if let Some(r) = j.status(&p.wrong_hash, 301) {
            j.empty_body(&p.wrong_hash, r);
            j.header(
                &p.wrong_hash,
                r,
                "location",
                &format!("/openapi/v3/{}?hash={}", p.key, p.hash),
            );
        }
        if let Some(r) = j.status(&p.no_hash, 200) {
            j.no_header(&p.no_hash, r, "expires");
        }
        j.outcome()
    })
}

/// B-11.5: conditional requests on a document.
pub const IF_NONE_MATCH: Rule = Rule {
    id: "B-11.5/if-none-match",
    section: "B-11.5",
    area: Area::Openapi,
    title: "If-None-Match: \"<hash>\" on a document gives 304 with an empty body, with a JSON or a protobuf Accept",
    failure_means: "clients cannot revalidate documents cheaply",
    upstream: "kube-openapi pkg/handler3/handler_test.go: TestOpenAPIV3VersionedServiceGzip",
    eval: if_none_match,
};

fn if_none_match(e: &Evidence, _: Profile) -> Outcome {
    with_probes(e, |p| {
        let mut j = Judge::new();
        if let Some(r) = j.status(&p.if_none_match_json, 304) {
            j.empty_body(&p.if_none_match_json, r);
        }
        if let Some(r) = j.status(&p.if_none_match_protobuf, 304) {
            j.empty_body(&p.if_none_match_protobuf, r);
        }
        j.outcome()
    })
}

/// B-11.6 (and Part A 10, which serves it as kube-apiserver does):
/// protobuf negotiation.
pub const PROTOBUF_ACCEPT: Rule = Rule {
    id: "B-11.6/protobuf-accept",
    section: "B-11.6",
    area: Area::Openapi,
    title: "protobuf Accepts (@ and .v1.0 spellings) give 200 protobuf with the JSON hash as ETag, and proto;q=0.5, application/json gives JSON",
    failure_means: "clients asking for protobuf get the wrong type, or a JSON-preferring client gets protobuf",
    upstream: "kube-openapi pkg/handler3/handler_test.go: TestRegisterOpenAPIVersionedService",
    eval: protobuf,
};

fn protobuf(e: &Evidence, _: Profile) -> Outcome {
    with_probes(e, |p| {
        let mut j = Judge::new();
        for ex in [&p.protobuf_at, &p.protobuf_dot] {
            if let Some(r) = j.status(ex, 200) {
                j.header(ex, r, "content-type", PROTOBUF_CONTENT_TYPE);
                j.header(ex, r, "etag", &format!("\"{}\"", p.hash));
            }
        }
        if let Some(r) = j.status(&p.protobuf_lower_q, 200) {
            j.header(&p.protobuf_lower_q, r, "content-type", "application/json");
        }
        j.outcome()
    })
}

/// B-11.7: unacceptable Accepts and unknown keys.
pub const NOT_ACCEPTABLE: Rule = Rule {
    id: "B-11.7/not-acceptable-and-unknown-key",
    section: "B-11.7",
    area: Area::Openapi,
    title: "Accept text/html or application/test gives 406, empty body, Vary: Accept; an unknown key gives 404 (profile aggregated-apiserver: or 200 with an empty body)",
    failure_means: "clients get a body they cannot read instead of an error, or an empty 200 for a group-version that does not exist",
    upstream: "kube-openapi pkg/handler3/handler_test.go: TestRegisterOpenAPIVersionedService",
    eval: not_acceptable,
};

fn not_acceptable(e: &Evidence, profile: Profile) -> Outcome {
    with_openapi(e, |o| {
        // Without a root there is nothing an unknown key could be told
        // apart from: every path of an empty server is 404.
        if o.root.outcome.as_ref().map_or(true, |r| r.status != 200) {
            return Outcome::NotApplicable("GET /openapi/v3 did not answer 200".into());
        }
        let mut j = Judge::new();
        if let Some(p) = &o.probes {
            for ex in [&p.text_html, &p.application_test] {
                if let Some(r) = j.status(ex, 406) {
                    j.empty_body(ex, r);
                    j.vary(ex, r, "Accept");
                }
            }
        }
        let handler3_alone = profile == Profile::AggregatedApiserver
            && o.unknown_key.outcome.as_ref().is_ok_and(|r| r.status == 200 && r.length == 0);
        if !handler3_alone {
            j.status(&o.unknown_key, 404);
        }
        j.outcome()
    })
}

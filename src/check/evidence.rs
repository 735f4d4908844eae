//! Everything the rules judge, fetched once.
//!
//! The requests are fixed by docs/upstream.md#b-11 and by what the server lists:
//! the OpenAPI v3 root, every document it points at, a set of probes on one
//! document (wrong hash, no hash, `If-None-Match`, protobuf and unacceptable
//! `Accept`s), an unknown key; `/api` and `/apis` with each `Accept` that
//! matters, then every group and group-version discovery lists. Rules are
//! pure functions of this value, which is what makes each of them
//! unit-testable and lets one run print evidence for all of them.
//!
//! Documents can be many and large, so their bodies are not part of it:
//! each is examined as it arrives ([`BodyFacts`]) and dropped; the probes
//! keep only their bodies' lengths. What stays is a few hundred bytes per
//! document, whatever the server publishes.

use std::time::SystemTime;

use futures_util::StreamExt;
use serde_json::Value;

use super::facts::{BodyFacts, DocumentFacts};
use super::fetch::{Exchange, Fetcher, Request};
use crate::wire::name::{is_group_name, is_group_or_core, is_version_name};

/// client-go's Accept for `/api` and `/apis` (docs/upstream.md#b-6-1).
pub const CLIENT_GO_ACCEPT: &str = crate::wire::media::CLIENT_GO_DISCOVERY_ACCEPT;
/// An Accept asking only for aggregated discovery v2beta1 (B-11.11).
pub const V2BETA1_ONLY_ACCEPT: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
/// The OpenAPI v3 protobuf media type, as the 301/200 report it.
pub const PROTOBUF: &str = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf";
/// The deprecated spelling client-go still exports.
pub const PROTOBUF_AT: &str = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf";
/// A key no server publishes (`.invalid` is reserved, RFC 2606).
pub const UNKNOWN_KEY: &str = "apis/openapi-proxy-check.invalid/v0";
/// A `?hash=` value that cannot be current (not upper-case hex).
pub const WRONG_HASH: &str = "WRONG";
/// How many requests are in flight at once.
const CONCURRENCY: usize = 8;

/// What was fetched, per area (an area left out with `--only` is `None`).
#[derive(Debug, Clone)]
pub struct Evidence {
    /// When fetching started (the reference for `Expires` when a response
    /// has no `Date`).
    pub started: SystemTime,
    /// OpenAPI v3.
    pub openapi: Option<OpenApiEvidence>,
    /// Discovery.
    pub discovery: Option<DiscoveryEvidence>,
}

/// OpenAPI v3 evidence.
#[derive(Debug, Clone)]
pub struct OpenApiEvidence {
    /// `GET /openapi/v3`.
    pub root: Exchange,
    /// The root again with `If-None-Match` set to its ETag (when it had one).
    pub root_revalidated: Option<Exchange>,
    /// One entry per key of the root, in the root's order.
    pub documents: Vec<Document>,
    /// Probes on one group-version document (none when the root lists none).
    pub probes: Option<Probes>,
    /// `GET /openapi/v3/<UNKNOWN_KEY>`.
    pub unknown_key: Exchange,
    /// `/openapi/v2`.
    pub v2: super::more::V2Evidence,
}

/// One key of the root and what its URL answered.
#[derive(Debug, Clone)]
pub struct Document {
    /// The key (`apis/apps/v1`).
    pub key: String,
    /// Its `serverRelativeURL`, when it is a string.
    pub url: Option<String>,
    /// The `?hash=` value of that URL, when it has one.
    pub hash: Option<String>,
    /// `GET url` with `Accept: application/json`, without its body (see
    /// `body`); `None` when the URL was not requested (absent, or not under
    /// `/openapi/v3/` on this server).
    pub exchange: Option<Exchange>,
    /// What the body showed, when there was a response.
    pub body: Option<BodyFacts>,
}

impl Document {
    /// Whether the key names a group-version (`api/v1`, `apis/<g>/<v>`).
    #[must_use]
    pub fn is_group_version(&self) -> bool {
        crate::wire::GroupVersion::from_key(&self.key).is_some()
    }

    /// The exchange and what the body holds, when the document answered
    /// 200 with a JSON body.
    #[must_use]
    pub fn served(&self) -> Option<(&Exchange, &DocumentFacts)> {
        let ex = self.exchange.as_ref()?;
        if ex.outcome.as_ref().ok()?.status != 200 {
            return None;
        }
        Some((ex, self.body.as_ref()?.json.as_ref().ok()?))
    }
}

/// Requests on one document, B-11.4 to B-11.7.
#[derive(Debug, Clone)]
pub struct Probes {
    /// The document's key.
    pub key: String,
    /// Its current hash, from the root.
    pub hash: String,
    /// `?hash=WRONG`.
    pub wrong_hash: Exchange,
    /// No `?hash=`.
    pub no_hash: Exchange,
    /// `If-None-Match: "<hash>"`, JSON.
    pub if_none_match_json: Exchange,
    /// `If-None-Match: "<hash>"`, protobuf.
    pub if_none_match_protobuf: Exchange,
    /// `Accept:` the deprecated `@` protobuf spelling.
    pub protobuf_at: Exchange,
    /// `Accept:` the `.v1.0` protobuf spelling.
    pub protobuf_dot: Exchange,
    /// What that protobuf body holds, when there was one.
    pub protobuf_outline: Option<Result<super::wire_proto::Outline, String>>,
    /// `Accept: <proto>;q=0.5, application/json`.
    pub protobuf_lower_q: Exchange,
    /// `Accept: text/html`.
    pub text_html: Exchange,
    /// `Accept: application/test`.
    pub application_test: Exchange,
    /// No `Accept` (hash URL).
    pub no_accept: Exchange,
    /// What that (JSON) body holds, when there was one.
    pub json_outline: Option<Result<super::wire_proto::Outline, String>>,
    /// `Accept: */*`.
    pub any: Exchange,
    /// `Accept: application/*`.
    pub application_any: Exchange,
    /// `Accept: application/json;foo=bar`: a parameter handler3 ignores.
    pub json_with_parameter: Exchange,
    /// `Accept: <proto>, application/json`: protobuf first.
    pub protobuf_first: Exchange,
    /// `?hash=WRONG` with the protobuf Accept.
    pub protobuf_wrong_hash: Exchange,
}

/// Discovery evidence.
#[derive(Debug, Clone)]
pub struct DiscoveryEvidence {
    /// `/apis` with client-go's Accept.
    pub apis_aggregated: Exchange,
    /// The same with `If-None-Match` = its ETag (when it had one).
    pub apis_revalidated: Option<Exchange>,
    /// The same with `If-None-Match: W/<ETag>`.
    pub apis_weak: Option<Exchange>,
    /// `/apis` without Accept.
    pub apis_no_accept: Exchange,
    /// `/apis` with `Accept: application/json`.
    pub apis_json: Exchange,
    /// `/apis/` with client-go's Accept.
    pub apis_slash: Exchange,
    /// `/apis` with only the v2beta1 aggregated clause.
    pub apis_v2beta1_only: Exchange,
    /// `/api` with client-go's Accept.
    pub api_aggregated: Exchange,
    /// `/api` with `Accept: application/json`.
    pub api_legacy: Exchange,
    /// `/apis/<group>` for each group listed (legacy `APIGroup`).
    pub groups: Vec<(String, Exchange)>,
    /// `/apis/<g>/<v>` (or `/api/v1`) for each current group-version.
    pub resource_lists: Vec<((String, String), Exchange)>,
    /// `/version`, `/`, trailing slashes, other Accepts.
    pub more: super::more::DiscoveryMore,
}

impl DiscoveryEvidence {
    /// The legacy resource list fetched for `(group, version)`.
    #[must_use]
    pub fn resource_list(&self, group: &str, version: &str) -> Option<&Exchange> {
        self.resource_lists.iter().find(|((g, v), _)| g == group && v == version).map(|(_, e)| e)
    }

    /// Every version entry of aggregated `/api` (the core group) and then
    /// `/apis`, as the rules that look inside them walk them; lists that
    /// did not answer 200 with JSON give none.
    #[must_use]
    pub fn aggregated_versions(&self) -> Vec<AggregatedVersion<'_>> {
        let mut out = Vec::new();
        for (exchange, core) in [(&self.api_aggregated, true), (&self.apis_aggregated, false)] {
            let Some(list) = json_ok(exchange) else { continue };
            let Some(items) = list.get("items").and_then(Value::as_array) else { continue };
            for (i, item) in items.iter().enumerate() {
                let group = if core { "" } else { str_at(item, "/metadata/name") };
                let Some(versions) = item.get("versions").and_then(Value::as_array) else {
                    continue;
                };
                for (k, v) in versions.iter().enumerate() {
                    out.push(AggregatedVersion {
                        exchange,
                        at: format!("/items/{i}/versions/{k}"),
                        group: group.to_owned(),
                        version: str_at(v, "/version").to_owned(),
                        stale: str_at(v, "/freshness") == "Stale",
                        resources: v
                            .get("resources")
                            .and_then(Value::as_array)
                            .cloned()
                            .unwrap_or_default(),
                    });
                }
            }
        }
        out
    }
}

/// One version entry of an aggregated discovery list.
#[derive(Debug, Clone)]
pub struct AggregatedVersion<'a> {
    /// The `/api` or `/apis` exchange it was read from.
    pub exchange: &'a Exchange,
    /// Its JSON pointer in that body (`/items/<i>/versions/<k>`).
    pub at: String,
    /// The group (empty for the core group).
    pub group: String,
    /// The version.
    pub version: String,
    /// `freshness: Stale`.
    pub stale: bool,
    /// Its `resources`.
    pub resources: Vec<Value>,
}

impl AggregatedVersion<'_> {
    /// `(index, group, version, kind)` of each resource naming a kind, its
    /// `responseKind`'s group-version when given, else this version's.
    #[must_use]
    pub fn kinds(&self) -> Vec<(usize, String, String, String)> {
        let mut out = Vec::new();
        for (r, res) in self.resources.iter().enumerate() {
            let kind = str_at(res, "/responseKind/kind");
            if kind.is_empty() {
                continue;
            }
            let (kg, kv) =
                (str_at(res, "/responseKind/group"), str_at(res, "/responseKind/version"));
            let (g, v) =
                if kv.is_empty() { (self.group.as_str(), self.version.as_str()) } else { (kg, kv) };
            out.push((r, g.to_owned(), v.to_owned(), kind.to_owned()));
        }
        out
    }
}

/// The string at `pointer` in `v`, or `""`.
fn str_at<'v>(v: &'v Value, pointer: &str) -> &'v str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

/// The parsed 200 JSON body of `ex`, if any.
#[must_use]
pub fn json_ok(ex: &Exchange) -> Option<Value> {
    let resp = ex.outcome.as_ref().ok()?;
    if resp.status != 200 {
        return None;
    }
    resp.json().ok()
}

/// `(group name, versions with their freshness)` of an aggregated list.
#[must_use]
pub fn aggregated_groups(list: &Value) -> Vec<(String, Vec<(String, bool)>)> {
    let Some(items) = list.get("items").and_then(Value::as_array) else { return Vec::new() };
    items
        .iter()
        .map(|item| {
            let name = item.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
            let versions = item
                .get("versions")
                .and_then(Value::as_array)
                .map(|vs| {
                    vs.iter()
                        .filter_map(|v| {
                            let version = v.get("version").and_then(Value::as_str)?;
                            let stale = v.get("freshness").and_then(Value::as_str) == Some("Stale");
                            Some((version.to_owned(), stale))
                        })
                        .collect()
                })
                .unwrap_or_default();
            (name.to_owned(), versions)
        })
        .collect()
}

/// `(group name, versions)` of a legacy `APIGroupList`.
#[must_use]
pub fn legacy_groups(list: &Value) -> Vec<(String, Vec<String>)> {
    let Some(groups) = list.get("groups").and_then(Value::as_array) else { return Vec::new() };
    groups
        .iter()
        .map(|g| {
            let name = g.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
            (name, legacy_versions(g))
        })
        .collect()
}

/// The `versions[].version` of a legacy `APIGroup`.
#[must_use]
pub fn legacy_versions(group: &Value) -> Vec<String> {
    group
        .get("versions")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter_map(|v| v.get("version").and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Fetches the OpenAPI v3 evidence.
pub async fn gather_openapi(fetcher: &Fetcher) -> OpenApiEvidence {
    let root = fetcher.send(Request::get("/openapi/v3", &[])).await;
    let root_etag = root
        .outcome
        .as_ref()
        .ok()
        .filter(|r| r.status == 200)
        .and_then(|r| r.header("etag"))
        .map(str::to_owned);
    let root_revalidated = match root_etag {
        Some(etag) => {
            Some(fetcher.send(Request::get("/openapi/v3", &[("If-None-Match", &etag)])).await)
        }
        None => None,
    };
    let mut listed = Vec::new();
    if let Some(Value::Object(paths)) = json_ok(&root).and_then(|r| r.get("paths").cloned()) {
        for (key, entry) in paths {
            let url = entry.get("serverRelativeURL").and_then(Value::as_str).map(str::to_owned);
            let hash = url.as_deref().and_then(hash_of_url).map(str::to_owned);
            listed.push((key, url, hash));
        }
    }
    let documents: Vec<Document> = futures_util::stream::iter(listed)
        .map(|(key, url, hash)| async move {
            let (exchange, body) = match url.as_deref() {
                Some(u) if u.starts_with("/openapi/v3/") => {
                    let request = Request::get(u, &[("Accept", "application/json")]);
                    let (exchange, body) =
                        fetcher.send_digest(request, |body| BodyFacts::of(body)).await;
                    (Some(exchange), body)
                }
                _ => (None, None),
            };
            Document { key, url, hash, exchange, body }
        })
        .buffered(CONCURRENCY)
        .collect()
        .await;
    let sample = documents
        .iter()
        .filter(|d| d.hash.is_some() && d.exchange.is_some())
        .find(|d| d.is_group_version())
        .or_else(|| documents.iter().find(|d| d.hash.is_some() && d.exchange.is_some()));
    let probes = match sample {
        Some(d) => Some(probe(fetcher, &d.key, d.hash.clone().unwrap_or_default()).await),
        None => None,
    };
    let unknown_key = fetcher
        .send(Request::get(
            &format!("/openapi/v3/{UNKNOWN_KEY}"),
            &[("Accept", "application/json")],
        ))
        .await;
    let v2 = super::more::gather_v2(fetcher).await;
    OpenApiEvidence { root, root_revalidated, documents, probes, unknown_key, v2 }
}

/// The `hash` query value of a `serverRelativeURL`.
#[must_use]
pub fn hash_of_url(url: &str) -> Option<&str> {
    let (_, query) = url.split_once('?')?;
    query.split('&').find_map(|p| p.strip_prefix("hash="))
}

async fn probe(fetcher: &Fetcher, key: &str, hash: String) -> Probes {
    let path = format!("/openapi/v3/{key}");
    let with_hash = format!("{path}?hash={hash}");
    let inm = format!("\"{hash}\"");
    let json = ("Accept", "application/json");
    let lower_q = format!("{PROTOBUF};q=0.5, application/json");
    // The rules look at the probes' statuses, headers and body lengths:
    // a probe answered with the whole document does not keep it.
    let send = |path: &str, headers: &[(&str, &str)]| {
        let request = Request::get(path, headers);
        async move { fetcher.send_digest(request, |_| ()).await.0 }
    };
    // Two answers are read as documents, to compare their outlines.
    let (protobuf_dot, protobuf_outline) = fetcher
        .send_digest(Request::get(&with_hash, &[("Accept", PROTOBUF)]), |b| {
            super::wire_proto::v3_outline(b).map_err(|e| e.to_string())
        })
        .await;
    let (no_accept, json_outline) = fetcher
        .send_digest(Request::get(&with_hash, &[]), |b| super::more::v3_json_outline(b))
        .await;
    Probes {
        key: key.to_owned(),
        wrong_hash: send(&format!("{path}?hash={WRONG_HASH}"), &[json]).await,
        no_hash: send(&path, &[json]).await,
        if_none_match_json: send(&with_hash, &[json, ("If-None-Match", &inm)]).await,
        if_none_match_protobuf: send(&with_hash, &[("Accept", PROTOBUF), ("If-None-Match", &inm)])
            .await,
        protobuf_at: send(&with_hash, &[("Accept", PROTOBUF_AT)]).await,
        protobuf_dot,
        protobuf_outline,
        protobuf_lower_q: send(&with_hash, &[("Accept", &lower_q)]).await,
        text_html: send(&with_hash, &[("Accept", "text/html")]).await,
        application_test: send(&with_hash, &[("Accept", "application/test")]).await,
        no_accept,
        json_outline,
        any: send(&with_hash, &[("Accept", "*/*")]).await,
        application_any: send(&with_hash, &[("Accept", "application/*")]).await,
        json_with_parameter: send(&with_hash, &[("Accept", "application/json;foo=bar")]).await,
        protobuf_first: send(&with_hash, &[("Accept", &format!("{PROTOBUF}, application/json"))])
            .await,
        protobuf_wrong_hash: send(&format!("{path}?hash={WRONG_HASH}"), &[("Accept", PROTOBUF)])
            .await,
        hash,
    }
}

/// The exchange of a request not sent: a group or version name that
/// Kubernetes would refuse is listed (docs/wire.md#a-7), and a path built
/// from it could lead anywhere on the server.
fn not_requested(request: Request, why: String) -> Exchange {
    Exchange { request, outcome: Err(format!("not requested: {why}")) }
}

/// Fetches the discovery evidence.
pub async fn gather_discovery(fetcher: &Fetcher) -> DiscoveryEvidence {
    let aggregated = ("Accept", CLIENT_GO_ACCEPT);
    let apis_aggregated = fetcher.send(Request::get("/apis", &[aggregated])).await;
    let etag = apis_aggregated
        .outcome
        .as_ref()
        .ok()
        .filter(|r| r.status == 200)
        .and_then(|r| r.header("etag"))
        .map(str::to_owned);
    let (apis_revalidated, apis_weak) = match etag {
        Some(etag) => (
            Some(
                fetcher.send(Request::get("/apis", &[aggregated, ("If-None-Match", &etag)])).await,
            ),
            Some(
                fetcher
                    .send(Request::get(
                        "/apis",
                        &[aggregated, ("If-None-Match", &format!("W/{etag}"))],
                    ))
                    .await,
            ),
        ),
        None => (None, None),
    };
    let apis_no_accept = fetcher.send(Request::get("/apis", &[])).await;
    let apis_json = fetcher.send(Request::get("/apis", &[("Accept", "application/json")])).await;
    let apis_slash = fetcher.send(Request::get("/apis/", &[aggregated])).await;
    let apis_v2beta1_only =
        fetcher.send(Request::get("/apis", &[("Accept", V2BETA1_ONLY_ACCEPT)])).await;
    let api_aggregated = fetcher.send(Request::get("/api", &[aggregated])).await;
    let api_legacy = fetcher.send(Request::get("/api", &[("Accept", "application/json")])).await;

    // Which groups and group-versions to read: what either form lists;
    // Stale versions are skipped (upstream proxies them to a failing server).
    let mut group_names: Vec<String> = Vec::new();
    let mut current: Vec<(String, String)> = Vec::new();
    let mut push_gv = |g: &str, v: &str| {
        if !current.iter().any(|(cg, cv)| cg == g && cv == v) {
            current.push((g.to_owned(), v.to_owned()));
        }
    };
    for list in [json_ok(&api_aggregated), json_ok(&apis_aggregated)].into_iter().flatten() {
        if list.get("kind").and_then(Value::as_str) != Some("APIGroupDiscoveryList") {
            continue;
        }
        for (group, versions) in aggregated_groups(&list) {
            if !group.is_empty() && !group_names.contains(&group) {
                group_names.push(group.clone());
            }
            for (version, stale) in versions {
                if !stale {
                    push_gv(&group, &version);
                }
            }
        }
    }
    if let Some(list) = json_ok(&apis_json) {
        for (group, versions) in legacy_groups(&list) {
            if !group.is_empty() && !group_names.contains(&group) {
                group_names.push(group.clone());
            }
            for version in versions {
                push_gv(&group, &version);
            }
        }
    }
    if let Some(api) = json_ok(&api_legacy)
        && let Some(versions) = api.get("versions").and_then(Value::as_array)
    {
        for v in versions.iter().filter_map(Value::as_str) {
            push_gv("", v);
        }
    }
    let json = ("Accept", "application/json");
    let first_group = group_names.first().cloned();
    let first_group_version = current.iter().find(|(g, _)| !g.is_empty()).cloned();
    let groups = futures_util::stream::iter(group_names)
        .map(|g| async move {
            let request = Request::get(&format!("/apis/{g}"), &[json]);
            let ex = if is_group_name(&g) {
                fetcher.send(request).await
            } else {
                not_requested(request, format!("{g:?} is not a valid group name"))
            };
            (g, ex)
        })
        .buffered(CONCURRENCY)
        .collect()
        .await;
    let resource_lists = futures_util::stream::iter(current)
        .map(|(g, v)| async move {
            let path = if g.is_empty() { format!("/api/{v}") } else { format!("/apis/{g}/{v}") };
            let request = Request::get(&path, &[json]);
            let ex = if is_group_or_core(&g) && is_version_name(&v) {
                fetcher.send(request).await
            } else {
                not_requested(request, format!("{g:?}/{v:?} is not a valid group-version"))
            };
            ((g, v), ex)
        })
        .buffered(CONCURRENCY)
        .collect()
        .await;
    let more = super::more::gather_discovery_more(
        fetcher,
        first_group.as_deref(),
        first_group_version.as_ref().map(|(g, v)| (g.as_str(), v.as_str())),
    )
    .await;
    DiscoveryEvidence {
        more,
        apis_aggregated,
        apis_revalidated,
        apis_weak,
        apis_no_accept,
        apis_json,
        apis_slash,
        apis_v2beta1_only,
        api_aggregated,
        api_legacy,
        groups,
        resource_lists,
    }
}

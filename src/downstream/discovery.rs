//! Fetching one downstream's discovery (docs/upstream.md#b-4-9, B-6.1).
//!
//! `/api` and `/apis` are asked for with client-go's Accept list
//! (aggregated v2, v2beta1, then plain JSON) and the answer is classified by
//! its Content-Type parameters, as client-go classifies it. An aggregated
//! answer is taken as it is (freshness overwritten with `Current`, a null
//! `responseKind` replaced by an empty one, as kube-aggregator does for old
//! clients); a legacy answer is completed by fetching every
//! `/apis/<g>/<v>` and converting it (B-4.10). Either way each
//! group-version's legacy `APIResourceList` is kept — the downstream's own
//! bytes when it serves them — because it carries `storageVersionHash`,
//! which the aggregated form drops.
//!
//! Group and version names are checked before anything is requested or
//! kept ([`crate::discovery::names`]): an invalid one is dropped, and
//! logged once per downstream and name.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use awc::http::header::HeaderValue;
use bytes::Bytes;
use futures_util::StreamExt as _;

use super::{CONCURRENT_FETCHES, PollError, within};
use crate::body::rendered::Rendered;
use crate::discovery::names::{self, Refused};
use crate::discovery::types::{
    APIGroupDiscovery, APIGroupDiscoveryList, APIGroupList, APIResourceList, APIVersionDiscovery,
    APIVersions, CURRENT, GroupVersionKind, ObjectMeta, STALE, ServerAddressByClientCIDR,
};
use crate::discovery::{DownstreamDiscovery, legacy, synthesized_legacy};
use crate::metrics::Metrics;
use crate::outbound::client::{DownstreamClient, FetchError, Fetched};
use crate::wire::GroupVersion;
use crate::wire::{media, negotiate};

/// What one of `/api`, `/apis` last said.
#[derive(Debug, Clone, Default)]
struct PathState {
    /// ETag of an aggregated answer (legacy answers have none).
    etag: Option<HeaderValue>,
    /// Its groups. A group equal to the last round's is that same `Arc`
    /// (see [`DownstreamDiscovery::groups`]: rendering then skips it).
    groups: Vec<Arc<APIGroupDiscovery>>,
    /// Made from a legacy answer: each version's resources are the
    /// conversion of its legacy list in `legacy`, so a list whose bytes
    /// did not change keeps its resources without being parsed again.
    from_legacy: bool,
    legacy: BTreeMap<String, Arc<Rendered>>,
    server_addresses: Vec<ServerAddressByClientCIDR>,
}

/// One downstream's discovery state across polls.
#[derive(Debug, Default)]
pub struct DiscoveryFetcher {
    api: Option<PathState>,
    apis: Option<PathState>,
    fresh: bool,
    /// Names already warned about: a legacy downstream lists them again
    /// every round, and one line per name is enough.
    warned: BTreeSet<Refused>,
}

/// How many refused names are remembered (and warned about) per
/// downstream: a downstream inventing new names every round must not grow
/// the set, or the log, without end.
const MAX_WARNED: usize = 256;

/// Whether a Content-Type names aggregated discovery (v2 or v2beta1):
/// base `application/json` and `g`, `v`, `as` as expected, in any order,
/// extra parameters tolerated — client-go's `mime.ParseMediaType` test.
fn is_aggregated(content_type: Option<&HeaderValue>) -> bool {
    let Some(ct) = content_type.and_then(|c| c.to_str().ok()) else { return false };
    let clauses = negotiate::parse_accept(ct);
    let Some(c) = clauses.first() else { return false };
    c.type_.eq_ignore_ascii_case("application")
        && c.subtype.eq_ignore_ascii_case("json")
        && c.param("g") == Some("apidiscovery.k8s.io")
        && c.param("as") == Some("APIGroupDiscoveryList")
        && matches!(c.param("v"), Some("v2" | "v2beta1"))
}

impl DiscoveryFetcher {
    /// The discovery to contribute: the last good answers, marked stale
    /// when this round failed. `None` before any answer.
    #[must_use]
    pub fn current(&self) -> Option<DownstreamDiscovery> {
        if self.api.is_none() && self.apis.is_none() {
            return None;
        }
        let api = self.api.clone().unwrap_or_default();
        let apis = self.apis.clone().unwrap_or_default();
        let mut legacy = api.legacy;
        legacy.extend(apis.legacy);
        Some(DownstreamDiscovery {
            core: api.groups.iter().flat_map(|g| g.versions.iter().cloned()).collect(),
            groups: apis.groups,
            legacy,
            server_addresses: api.server_addresses,
            fresh: self.fresh,
        })
    }

    /// What this discovery holds, for the downstream's memory share: the
    /// legacy lists' bytes, four times over — the parsed resources, and
    /// the aggregated renditions (v2, v2beta1) every snapshot makes of
    /// them, are each about as large as the lists.
    #[must_use]
    pub fn weight(&self) -> usize {
        path_weight(self.api.as_ref()).saturating_add(path_weight(self.apis.as_ref()))
    }

    /// One round: `/api`, then `/apis`, together holding at most
    /// `allowed` bytes (as [`DiscoveryFetcher::weight`] counts them): a
    /// server listing hundreds of group-versions with megabytes of
    /// resources each is refused as the lists arrive.
    ///
    /// # Errors
    /// The first failure; what failed keeps its last good state.
    pub async fn fetch(
        &mut self,
        client: &DownstreamClient,
        metrics: &Metrics,
        name: &str,
        allowed: usize,
    ) -> Result<(), PollError> {
        let mut refused = Vec::new();
        let for_api = allowed.saturating_sub(path_weight(self.apis.as_ref()));
        let mut admission = Admission { allowed: for_api, refused: &mut refused };
        let api =
            fetch_path(client, metrics, name, "/api", self.api.as_ref(), &mut admission).await;
        let api_weight = match &api {
            Ok(Fetch::Changed(state, _)) => path_weight(Some(state)),
            _ => path_weight(self.api.as_ref()),
        };
        let for_apis = allowed.saturating_sub(api_weight);
        let mut admission = Admission { allowed: for_apis, refused: &mut refused };
        let apis =
            fetch_path(client, metrics, name, "/apis", self.apis.as_ref(), &mut admission).await;
        self.warn_refused(name, refused);
        // A failed `/api` or `/apis` makes the whole downstream stale; a
        // failed group-version of a legacy server only that version (it is
        // already marked in its state), but the round still fails.
        let mut first_error = None;
        let mut partial = None;
        for (result, slot) in [(api, &mut self.api), (apis, &mut self.apis)] {
            match result {
                Ok(Fetch::Unchanged) => {}
                Ok(Fetch::Changed(state, failed)) => {
                    *slot = Some(state);
                    if let Some(e) = failed {
                        partial.get_or_insert(e);
                    }
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        self.fresh = first_error.is_none();
        first_error.or(partial).map_or(Ok(()), Err)
    }

    /// One warning per refused name not warned about before.
    fn warn_refused(&mut self, downstream: &str, refused: Vec<Refused>) {
        for r in refused {
            if self.warned.len() >= MAX_WARNED || self.warned.contains(&r) {
                continue;
            }
            tracing::warn!(
                downstream = %downstream,
                name = %r,
                "discovery lists a name Kubernetes would refuse; not requested, not served"
            );
            self.warned.insert(r);
        }
    }
}

/// What one legacy list counts against the share: its bytes, four times
/// over — the parsed resources, and the aggregated renditions (v2,
/// v2beta1) each snapshot makes of them, are each about as large.
fn list_weight(rendered: &Rendered) -> usize {
    rendered.weight().saturating_mul(4)
}

fn path_weight(state: Option<&PathState>) -> usize {
    state.map_or(0, |p| p.legacy.values().map(|r| list_weight(r)).sum())
}

/// What one of `/api`, `/apis` gave this round.
enum Fetch {
    /// 304: the last answer stands.
    Unchanged,
    /// A new state, and the first group-version that failed in it, if any.
    Changed(PathState, Option<PollError>),
}

/// What one path's answer must keep to before it is taken.
struct Admission<'r> {
    /// The bytes its lists may weigh ([`list_weight`]); beyond, the answer
    /// is refused whole.
    allowed: usize,
    /// Names Kubernetes would refuse, left out and noted here for one
    /// warning each.
    refused: &'r mut Vec<Refused>,
}

/// Fetches `/api` or `/apis`.
async fn fetch_path(
    client: &DownstreamClient,
    metrics: &Metrics,
    name: &str,
    path: &'static str,
    previous: Option<&PathState>,
    admission: &mut Admission<'_>,
) -> Result<Fetch, PollError> {
    let document = if path == "/api" { "discovery_api" } else { "discovery_apis" };
    let etag = previous.and_then(|p| p.etag.clone());
    let result = client.get(path, media::CLIENT_GO_DISCOVERY_ACCEPT, etag.as_ref()).await;
    count(metrics, name, document, &result);
    match result? {
        Fetched::NotModified => Ok(Fetch::Unchanged),
        // A server without the core group (or without named groups).
        Fetched::NotFound => Ok(Fetch::Changed(PathState::default(), None)),
        Fetched::NotAcceptable => Err(PollError::NotAcceptable { path: path.into() }),
        Fetched::Body { body, etag, content_type } => {
            if is_aggregated(content_type.as_ref()) {
                let state =
                    aggregated(client, metrics, name, path, &body, etag, previous, admission)
                        .await?;
                Ok(Fetch::Changed(state, None))
            } else {
                let (state, failed) =
                    legacy_only(client, metrics, name, path, &body, previous, admission).await?;
                Ok(Fetch::Changed(state, failed))
            }
        }
    }
}

/// Just the `kind` of a discovery document.
#[derive(serde::Deserialize)]
struct KindProbe {
    #[serde(default)]
    kind: String,
}

/// Refuses a document of another kind. Every field of the discovery types
/// has a default, so a `Status` (or any JSON object) would otherwise parse
/// as an empty list and make the downstream's groups disappear; client-go
/// turns such an answer into an error too. A missing `kind` is accepted,
/// as client-go's decoder accepts it.
fn check_kind(path: &str, body: &[u8], expected: &str) -> Result<(), PollError> {
    let probe: KindProbe = serde_json::from_slice(body).map_err(|e| bad(path, e))?;
    if probe.kind.is_empty() || probe.kind == expected {
        return Ok(());
    }
    let message = format!("kind is {:?}, expected {expected:?}", probe.kind);
    Err(bad(path, serde::de::Error::custom(message)))
}

fn count(
    metrics: &Metrics,
    name: &str,
    document: &'static str,
    result: &Result<Fetched, FetchError>,
) {
    metrics.fetch(name, document, Fetched::result(result));
}

fn bad(path: &str, source: serde_json::Error) -> PollError {
    PollError::BadDocument { path: path.to_owned(), source }
}

#[allow(clippy::too_many_arguments)] // one call site, each argument a different thing
async fn aggregated(
    client: &DownstreamClient,
    metrics: &Metrics,
    name: &str,
    path: &str,
    body: &Bytes,
    etag: Option<HeaderValue>,
    previous: Option<&PathState>,
    admission: &mut Admission<'_>,
) -> Result<PathState, PollError> {
    // The aggregated list itself is parsed and kept as well.
    let mut held = body.len().saturating_mul(2);
    within("discovery", held, admission.allowed)?;
    check_kind(path, body, "APIGroupDiscoveryList")?;
    let list: APIGroupDiscoveryList = serde_json::from_slice(body).map_err(|e| bad(path, e))?;
    let mut groups = list.items;
    let core = path == "/api";
    // /api holds the core group only, /apis named groups only (B-4.7).
    groups.retain(|g| g.metadata.name.is_empty() == core);
    names::retain_valid_groups(&mut groups, admission.refused);
    for g in &mut groups {
        for v in &mut g.versions {
            v.freshness = CURRENT.to_owned();
            for r in &mut v.resources {
                r.response_kind.get_or_insert_with(GroupVersionKind::default);
                for s in &mut r.subresources {
                    s.response_kind.get_or_insert_with(GroupVersionKind::default);
                }
            }
        }
    }
    let mut legacy = BTreeMap::new();
    // Several lists in flight, taken in order (CONCURRENT_FETCHES).
    let targets = groups.iter().flat_map(|g| g.versions.iter().map(move |v| (g, v)));
    let mut lists = futures_util::stream::iter(targets)
        .map(|(g, v)| async move {
            let lpath = GroupVersion::key_of(&g.metadata.name, &v.version);
            let fetched = fetch_legacy_body(client, metrics, name, &lpath).await;
            (g, v, lpath, fetched)
        })
        .buffered(CONCURRENT_FETCHES);
    while let Some((g, v, lpath, fetched)) = lists.next().await {
        let kept = previous.and_then(|p| p.legacy.get(&lpath));
        let fetched = match fetched {
            // The same bytes as last round: prepared then.
            Ok(Some(body)) => match kept.filter(|k| same_bytes(k, &body)) {
                Some(k) => Some(Arc::clone(k)),
                None => parse_legacy_list(&lpath, body).ok().map(|(rendered, _)| rendered),
            },
            Ok(None) | Err(_) => None,
        };
        // Not served (or broken): synthesize from the aggregated form.
        let rendered = fetched.unwrap_or_else(|| Arc::new(synthesized_legacy(&g.metadata.name, v)));
        held = held.saturating_add(list_weight(&rendered));
        within("discovery", held, admission.allowed)?;
        legacy.insert(lpath, rendered);
    }
    drop(lists);
    let groups = share_unchanged(groups, previous);
    Ok(PathState { etag, groups, legacy, server_addresses: Vec::new(), from_legacy: false })
}

/// `groups`, each equal to one of `previous`'s as that same `Arc`: the
/// poller compares once, here, so that every rebuild need not (issue 16).
fn share_unchanged(
    groups: Vec<APIGroupDiscovery>,
    previous: Option<&PathState>,
) -> Vec<Arc<APIGroupDiscovery>> {
    let before: BTreeMap<&str, &Arc<APIGroupDiscovery>> = previous
        .map(|p| p.groups.iter().map(|g| (g.metadata.name.as_str(), g)).collect())
        .unwrap_or_default();
    groups
        .into_iter()
        .map(|g| match before.get(g.metadata.name.as_str()) {
            Some(b) if ***b == g => Arc::clone(b),
            _ => Arc::new(g),
        })
        .collect()
}

/// `GET /<lpath>`: the body of a legacy `APIResourceList`, unparsed.
/// `None` on 404.
async fn fetch_legacy_body(
    client: &DownstreamClient,
    metrics: &Metrics,
    name: &str,
    lpath: &str,
) -> Result<Option<Bytes>, PollError> {
    let path = format!("/{lpath}");
    let result = client.get_among(&path, media::APPLICATION_JSON, None, CONCURRENT_FETCHES).await;
    count(metrics, name, "discovery_group_version", &result);
    match result? {
        Fetched::Body { body, .. } => Ok(Some(body)),
        Fetched::NotFound | Fetched::NotModified => Ok(None),
        Fetched::NotAcceptable => Err(PollError::NotAcceptable { path }),
    }
}

/// A legacy list's body prepared for serving as it is, and parsed.
fn parse_legacy_list(
    lpath: &str,
    body: Bytes,
) -> Result<(Arc<Rendered>, APIResourceList), PollError> {
    let path = format!("/{lpath}");
    check_kind(&path, &body, "APIResourceList")?;
    let list: APIResourceList = serde_json::from_slice(&body).map_err(|e| bad(&path, e))?;
    Ok((Arc::new(Rendered::json(body)), list))
}

/// What the last legacy round made of the list at one group-version, when
/// `body` is the same bytes: its prepared list and its resources. A legacy
/// server is asked for every list on every poll (it has no ETags); at
/// 1,000 group-versions parsing, hashing and compressing each again every
/// second took the cores a rebuild needs (issue 16). Hashing to compare is
/// a small part of that.
fn unchanged_list<'p>(
    previous: Option<&'p PathState>,
    group: Option<&'p Arc<APIGroupDiscovery>>,
    version: &str,
    lpath: &str,
    body: &[u8],
) -> Option<(&'p Arc<Rendered>, &'p APIVersionDiscovery)> {
    let bytes = previous.filter(|p| p.from_legacy)?.legacy.get(lpath)?;
    let known = group?.versions.iter().find(|v| v.version == version && v.freshness == CURRENT)?;
    same_bytes(bytes, body).then_some((bytes, known))
}

/// Whether `body` is the body `prepared` was made from (compared by its
/// SHA-512, which [`Rendered::json`] computed anyway).
fn same_bytes(prepared: &Rendered, body: &[u8]) -> bool {
    crate::body::digest::sha512_hex(body) == prepared.hash
}

/// A version that could not be fetched or converted: listed, stale, empty
/// (upstream publishes exactly this, B-4.9).
fn stale(version: &str) -> APIVersionDiscovery {
    APIVersionDiscovery {
        version: version.to_owned(),
        resources: Vec::new(),
        freshness: STALE.to_owned(),
    }
}

/// A legacy server's `/api` or `/apis`, completed with each listed
/// group-version's `APIResourceList`. A group-version that cannot be
/// fetched or converted keeps what `previous` had for it (resources and
/// legacy bytes), marked `Stale` — last good wins, per group-version — and
/// the first such failure is returned beside the state.
async fn legacy_only(
    client: &DownstreamClient,
    metrics: &Metrics,
    name: &str,
    path: &str,
    body: &Bytes,
    previous: Option<&PathState>,
    admission: &mut Admission<'_>,
) -> Result<(PathState, Option<PollError>), PollError> {
    // (group, versions) to fetch, preferred first.
    let (mut targets, server_addresses): (Vec<(String, Vec<String>)>, _) = if path == "/api" {
        check_kind(path, body, "APIVersions")?;
        let v: APIVersions = serde_json::from_slice(body).map_err(|e| bad(path, e))?;
        (vec![(String::new(), v.versions)], v.server_address_by_client_cidrs)
    } else {
        check_kind(path, body, "APIGroupList")?;
        let l: APIGroupList = serde_json::from_slice(body).map_err(|e| bad(path, e))?;
        let targets = l
            .groups
            .into_iter()
            .filter(|g| !g.name.is_empty())
            .map(|g| {
                // The preferred version first, then the others in order.
                let mut versions: Vec<String> = vec![g.preferred_version.version.clone()];
                versions.extend(g.versions.into_iter().map(|v| v.version));
                versions.retain(|v| !v.is_empty());
                let mut seen = Vec::new();
                versions.retain(|v| {
                    if seen.contains(v) {
                        false
                    } else {
                        seen.push(v.clone());
                        true
                    }
                });
                (g.name, versions)
            })
            .collect();
        (targets, Vec::new())
    };
    names::retain_valid_targets(&mut targets, admission.refused);
    let before: BTreeMap<&str, &Arc<APIGroupDiscovery>> = previous
        .map(|p| p.groups.iter().map(|g| (g.metadata.name.as_str(), g)).collect())
        .unwrap_or_default();
    let mut groups: Vec<APIGroupDiscovery> = targets
        .iter()
        .map(|(group, _)| APIGroupDiscovery {
            metadata: ObjectMeta { name: group.clone() },
            versions: Vec::new(),
        })
        .collect();
    let mut legacy = BTreeMap::new();
    let mut first_error = None;
    let mut held = 0usize;
    // Several lists in flight, taken in order (CONCURRENT_FETCHES): the
    // result is that of fetching them one after another.
    let targets = targets.into_iter().enumerate().flat_map(|(index, (group, versions))| {
        versions.into_iter().map(move |version| (index, group.clone(), version))
    });
    let before_ref = &before;
    let mut lists = futures_util::stream::iter(targets)
        .map(|(index, group, version)| async move {
            let kept_group = before_ref.get(group.as_str()).copied();
            let lpath = GroupVersion::key_of(&group, &version);
            let fetched = match fetch_legacy_body(client, metrics, name, &lpath).await {
                Ok(Some(body)) => {
                    match unchanged_list(previous, kept_group, &version, &lpath, &body) {
                        Some((rendered, known)) => {
                            Ok((Arc::clone(rendered), known.resources.clone()))
                        }
                        None => parse_legacy_list(&lpath, body).and_then(|(rendered, list)| {
                            legacy::to_aggregated(&list)
                                .map(|resources| (rendered, resources))
                                .map_err(|source| PollError::BadResourceList {
                                    path: lpath.clone(),
                                    source,
                                })
                        }),
                    }
                }
                // Listed but not served: upstream counts that as a failure.
                Ok(None) => Err(PollError::Fetch(FetchError::Status {
                    url: format!("{}/{lpath}", client.base()),
                    status: awc::http::StatusCode::NOT_FOUND,
                })),
                Err(e) => Err(e),
            };
            (index, group, version, lpath, fetched)
        })
        .buffered(CONCURRENT_FETCHES);
    while let Some((index, group, version, lpath, fetched)) = lists.next().await {
        let Some(entry) = groups.get_mut(index) else { continue };
        match fetched {
            Ok((rendered, resources)) => {
                // Refused whole: the last good discovery stays.
                held = held.saturating_add(list_weight(&rendered));
                within("discovery", held, admission.allowed)?;
                entry.versions.push(APIVersionDiscovery {
                    version,
                    resources,
                    freshness: CURRENT.into(),
                });
                legacy.insert(lpath, rendered);
            }
            Err(e) => {
                tracing::debug!(downstream = %name, group_version = %lpath, error = %crate::error_chain(&e), "group-version failed; keeping its last good state, stale");
                let (last, bytes) = last_good(previous, &group, &version, &lpath);
                entry.versions.push(last);
                if let Some(bytes) = bytes {
                    held = held.saturating_add(list_weight(&bytes));
                    within("discovery", held, admission.allowed)?;
                    legacy.insert(lpath, bytes);
                }
                first_error.get_or_insert(e);
            }
        }
    }
    drop(lists);
    // Equal to the last round's group: that same `Arc`.
    let groups = groups
        .into_iter()
        .map(|entry| match before.get(entry.metadata.name.as_str()) {
            Some(l) if ***l == entry => Arc::clone(l),
            _ => Arc::new(entry),
        })
        .collect();
    let state = PathState { etag: None, groups, legacy, server_addresses, from_legacy: true };
    Ok((state, first_error))
}

/// What `previous` had for one group-version, marked `Stale`: its
/// resources (Part A item 8) and its legacy bytes; an empty stale entry
/// when it was never fetched (B-4.9).
fn last_good(
    previous: Option<&PathState>,
    group: &str,
    version: &str,
    lpath: &str,
) -> (APIVersionDiscovery, Option<Arc<Rendered>>) {
    let known = previous
        .and_then(|p| p.groups.iter().find(|g| g.metadata.name == group))
        .and_then(|g| g.versions.iter().find(|v| v.version == version));
    let entry = match known {
        Some(v) => APIVersionDiscovery { freshness: STALE.to_owned(), ..v.clone() },
        None => stale(version),
    };
    (entry, previous.and_then(|p| p.legacy.get(lpath).cloned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A legacy `/apis` listing `n` groups of one version each, every
    /// `APIResourceList` answered after `delay`.
    fn legacy_site(n: usize, delay: std::time::Duration) -> crate::demo::Site {
        use crate::demo::{Route, Routes, start_site};
        let routes = Routes::default();
        let groups: Vec<serde_json::Value> = (0..n)
            .map(|i| {
                let gv = serde_json::json!({"groupVersion": format!("g{i}.example.com/v1"), "version": "v1"});
                serde_json::json!({"name": format!("g{i}.example.com"), "versions": [gv], "preferredVersion": gv})
            })
            .collect();
        let list = serde_json::json!({"kind": "APIGroupList", "groups": groups});
        routes.set("/apis", Route::json(list.to_string()));
        for i in 0..n {
            let resources = serde_json::json!({
                "kind": "APIResourceList",
                "groupVersion": format!("g{i}.example.com/v1"),
                "resources": [{"name": "widgets", "singularName": "widget", "namespaced": true,
                               "kind": "Widget", "verbs": ["get", "list"]}],
            });
            routes.set(
                &format!("/apis/g{i}.example.com/v1"),
                Route::json(resources.to_string()).delayed(delay),
            );
        }
        start_site(routes).expect("site")
    }

    fn client(site: &crate::demo::Site) -> DownstreamClient {
        let tls = crate::outbound::tls::TlsConfig::default();
        let timeout = std::time::Duration::from_secs(5);
        DownstreamClient::new("d", &site.url(), &tls, None, timeout, 1 << 20).expect("client")
    }

    /// Issue 16: a thousand group-versions' lists, one after another, were
    /// half of a legacy downstream's cold start.
    #[actix_web::test]
    async fn legacy_lists_are_fetched_several_at_once_and_kept_in_order() {
        let site = legacy_site(24, std::time::Duration::from_millis(30));
        let client = client(&site);
        let mut fetcher = DiscoveryFetcher::default();
        fetcher.fetch(&client, &Metrics::default(), "d", usize::MAX).await.expect("fetched");
        let most = site.routes.most_in_flight();
        assert!(most > 1 && most <= super::super::CONCURRENT_FETCHES, "{most} at once");
        let current = fetcher.current().expect("discovery");
        let names: Vec<&str> = current.groups.iter().map(|g| g.metadata.name.as_str()).collect();
        let expected: Vec<String> = (0..24).map(|i| format!("g{i}.example.com")).collect();
        assert_eq!(names, expected);
        assert!(
            current
                .groups
                .iter()
                .all(|g| g.versions.len() == 1 && g.versions[0].freshness == CURRENT)
        );
        assert_eq!(current.legacy.len(), 24);

        // One failing group-version among them: stale with its last
        // resources, the others current, the round failed with it.
        site.routes.set(
            "/apis/g5.example.com/v1",
            crate::demo::Route::status(awc::http::StatusCode::SERVICE_UNAVAILABLE),
        );
        let e = fetcher
            .fetch(&client, &Metrics::default(), "d", usize::MAX)
            .await
            .expect_err("one fails");
        assert!(crate::error_chain(&e).contains("/apis/g5.example.com/v1"), "{e}");
        let current = fetcher.current().expect("discovery");
        for g in &current.groups {
            let stale = g.metadata.name == "g5.example.com";
            assert_eq!(
                g.versions[0].freshness,
                if stale { STALE } else { CURRENT },
                "{}",
                g.metadata.name
            );
            assert_eq!(g.versions[0].resources.len(), 1);
        }
        assert_eq!(current.legacy.len(), 24);
    }

    #[test]
    fn a_document_of_another_kind_is_refused_and_a_missing_kind_accepted() {
        let status = br#"{"kind":"Status","apiVersion":"v1","status":"Failure"}"#;
        assert!(check_kind("/apis", status, "APIGroupList").is_err());
        assert!(
            check_kind("/apis", br#"{"kind":"APIGroupList","groups":[]}"#, "APIGroupList").is_ok()
        );
        assert!(check_kind("/apis", br#"{"groups":[]}"#, "APIGroupList").is_ok());
        assert!(check_kind("/apis", b"[1,2]", "APIGroupList").is_err());
    }

    #[test]
    fn a_failed_group_version_keeps_its_last_resources_stale() {
        let known = APIVersionDiscovery {
            version: "v1".into(),
            resources: vec![Default::default()],
            freshness: CURRENT.into(),
        };
        let bytes = Arc::new(Rendered::json(&b"{}"[..]));
        let previous = PathState {
            groups: vec![Arc::new(APIGroupDiscovery {
                metadata: ObjectMeta { name: "g".into() },
                versions: vec![known],
            })],
            legacy: BTreeMap::from([("apis/g/v1".to_owned(), Arc::clone(&bytes))]),
            ..Default::default()
        };
        let (entry, kept) = last_good(Some(&previous), "g", "v1", "apis/g/v1");
        assert_eq!(entry.freshness, STALE);
        assert_eq!(entry.resources.len(), 1);
        assert!(kept.is_some_and(|k| Arc::ptr_eq(&k, &bytes)));
        let (never, none) = last_good(Some(&previous), "g", "v2", "apis/g/v2");
        assert_eq!((never.freshness.as_str(), never.resources.len()), (STALE, 0));
        assert!(none.is_none());
    }

    /// Issue 16: what did not change since the last round is handed on as
    /// the same `Arc`s (the rebuild then skips it), and a legacy list
    /// whose bytes did not change is not parsed or prepared again.
    #[test]
    fn unchanged_groups_and_lists_are_handed_on_shared() {
        let version = |resources: usize| APIVersionDiscovery {
            version: "v1".into(),
            resources: vec![Default::default(); resources],
            freshness: CURRENT.into(),
        };
        let group = |name: &str, resources| APIGroupDiscovery {
            metadata: ObjectMeta { name: name.into() },
            versions: vec![version(resources)],
        };
        let body = &br#"{"kind":"APIResourceList","groupVersion":"g/v1","resources":[]}"#[..];
        let previous = PathState {
            groups: vec![Arc::new(group("g", 1)), Arc::new(group("h", 1))],
            legacy: BTreeMap::from([("apis/g/v1".to_owned(), Arc::new(Rendered::json(body)))]),
            from_legacy: true,
            ..Default::default()
        };
        let next = share_unchanged(vec![group("g", 1), group("h", 2)], Some(&previous));
        assert!(Arc::ptr_eq(&next[0], &previous.groups[0]), "unchanged: the same Arc");
        assert!(!Arc::ptr_eq(&next[1], &previous.groups[1]), "changed: a new one");

        let g = previous.groups.first();
        let kept = unchanged_list(Some(&previous), g, "v1", "apis/g/v1", body);
        assert!(kept.is_some_and(|(l, _)| Arc::ptr_eq(l, &previous.legacy["apis/g/v1"])));
        assert!(
            unchanged_list(Some(&previous), g, "v1", "apis/g/v1", b"{}").is_none(),
            "new bytes"
        );
        let aggregated = PathState { from_legacy: false, ..previous.clone() };
        assert!(
            unchanged_list(Some(&aggregated), g, "v1", "apis/g/v1", body).is_none(),
            "resources of an aggregated answer are not the list's conversion"
        );
        let stale = Arc::new(APIGroupDiscovery {
            versions: vec![APIVersionDiscovery { freshness: STALE.into(), ..version(1) }],
            ..group("g", 1)
        });
        assert!(
            unchanged_list(Some(&previous), Some(&stale), "v1", "apis/g/v1", body).is_none(),
            "a stale version is fetched and converted again"
        );
    }

    #[test]
    fn aggregated_content_type_is_recognised_as_client_go_does() {
        let ct = |s: &'static str| Some(HeaderValue::from_static(s));
        assert!(is_aggregated(
            ct("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList").as_ref()
        ));
        assert!(is_aggregated(
            ct("application/json;as=APIGroupDiscoveryList;v=v2beta1;g=apidiscovery.k8s.io")
                .as_ref()
        ));
        assert!(is_aggregated(
            ct(
                "application/json;charset=utf-8;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
            )
            .as_ref()
        ));
        assert!(!is_aggregated(ct("application/json").as_ref()));
        assert!(!is_aggregated(
            ct("application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList").as_ref()
        ));
        assert!(!is_aggregated(
            ct("application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList").as_ref()
        ));
        assert!(!is_aggregated(None));
    }
}

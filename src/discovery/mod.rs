//! Discovery: aggregated (KEP-3352, `apidiscovery.k8s.io` v2/v2beta1) and
//! legacy (`APIVersions`, `APIGroupList`, `APIGroup`, `APIResourceList`),
//! merged across downstream servers.
//!
//! - [`types`]: the wire types, field for field as Kubernetes writes them.
//! - [`legacy`]: legacy ↔ aggregated conversion (B-4.10).
//! - [`names`]: group and version names a downstream lists, kept only when
//!   valid (Part A item 7).
//! - [`version`]: Kubernetes version preference (B-4.8).
//! - [`merge`] (here): every downstream's discovery → one ordered model,
//!   with `Stale` for downstreams that cannot be reached (Part A item 8).
//! - [`render`] (here): that model → every body discovery serves, prepared
//!   once per snapshot; [`render_reusing`] takes what did not change from
//!   the previous snapshot's rendering.
//! - [`forms`]: the YAML ([`yaml`]) and protobuf ([`proto`]) forms of
//!   those bodies, made on first request and kept while their JSON is.

pub mod forms;
pub mod legacy;
pub mod names;
pub mod owners;
pub mod proto;
pub mod types;
pub mod version;
pub mod yaml;

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use serde::Serialize;

use self::types::{
    APIGroup, APIGroupDiscovery, APIVersionDiscovery, APIVersions, GroupVersionForDiscovery,
    ObjectMeta, STALE, ServerAddressByClientCIDR,
};
use actix_web::http::header::HeaderValue;

use crate::body::rendered::{Rendered, Segment};
use crate::wire::DocumentKey;
use crate::wire::GroupVersion;
use crate::wire::media::{DISCOVERY_V2_CONTENT_TYPE, DISCOVERY_V2BETA1_CONTENT_TYPE};

/// What one downstream's discovery currently says (its last good answer).
#[derive(Debug, Clone, Default)]
pub struct DownstreamDiscovery {
    /// Versions of the core group (from `/api`).
    pub core: Vec<APIVersionDiscovery>,
    /// Named groups (from `/apis`), in the downstream's order.
    ///
    /// Shared, and immutable once shared: a poller that finds a group
    /// unchanged hands on the same `Arc`, and rendering takes the same
    /// `Arc` as proof that the group's versions are the ones it rendered
    /// before, without comparing thousands of resources (issue 16).
    pub groups: Vec<Arc<APIGroupDiscovery>>,
    /// Legacy `APIResourceList` per group-version path (`api/v1`,
    /// `apis/<g>/<v>`): the downstream's own bytes where it serves them
    /// (they carry `storageVersionHash`), else synthesized.
    pub legacy: BTreeMap<String, Arc<Rendered>>,
    /// The core group's `serverAddressByClientCIDRs`, when the downstream
    /// served legacy `/api`.
    pub server_addresses: Vec<ServerAddressByClientCIDR>,
    /// The last discovery poll succeeded. When false, every version of this
    /// downstream is published `Stale` (with its last known resources).
    pub fresh: bool,
}

/// One downstream's discovery with what ranks it.
#[derive(Debug, Clone, Copy)]
pub struct RankedDiscovery<'a> {
    /// The downstream's name.
    pub name: &'a str,
    /// Larger wins.
    pub priority: i64,
    /// Configuration order; earlier wins ties.
    pub order: usize,
    /// Its discovery.
    pub discovery: &'a DownstreamDiscovery,
}

/// The merged discovery model.
#[derive(Debug, Clone, Default)]
pub struct Merged {
    /// The core group, if any downstream serves it.
    pub core: Option<APIGroupDiscovery>,
    /// Named groups in serving order.
    pub groups: Vec<APIGroupDiscovery>,
    /// Legacy lists of the winning group-versions, by path.
    pub legacy: BTreeMap<String, Arc<Rendered>>,
    /// For legacy `/api`.
    pub server_addresses: Vec<ServerAddressByClientCIDR>,
}

struct Candidate<'a> {
    owner: &'a str,
    priority: i64,
    order: usize,
    version: &'a APIVersionDiscovery,
    origin: Option<&'a Arc<APIGroupDiscovery>>,
    fresh: bool,
    /// Its legacy list and the key it is found under, made once for the
    /// lookup and kept for the merged map.
    legacy: Option<(String, &'a Arc<Rendered>)>,
}

/// Merges every downstream's discovery (docs/upstream.md#b-4-8, B-4.9, Part A 8).
///
/// - A group-version served by several downstreams comes from the one with
///   the highest priority (then the earliest configured); the result does
///   not depend on the order of `sources`.
/// - Versions in a group: by their downstream's priority, then Kubernetes
///   version preference (GA > beta > alpha, then numbers, others last).
/// - Groups: `apiregistration.k8s.io` first whatever its priority
///   (kube-aggregator forces it there), then by the highest priority among
///   their versions, then by name.
/// - A downstream that is not `fresh` has its versions marked `Stale`,
///   keeping their last known resources.
#[must_use]
pub fn merge(sources: &[RankedDiscovery<'_>]) -> Merged {
    plan(sources).to_merged()
}

/// The merged model, borrowed from the sources it was merged from:
/// [`merge`] without copying a single resource. Rendering compares it with
/// what it rendered before and copies only the groups that changed
/// (issue 16: at 5,000 CRDs, copying every resource on each rebuild, and
/// freeing the copies, was a large part of a one-change rebuild).
#[derive(Debug, Clone, Default)]
pub struct Plan<'a> {
    /// The core group, if any downstream serves it.
    pub core: Option<GroupPlan<'a>>,
    /// Named groups in serving order.
    pub groups: Vec<GroupPlan<'a>>,
    /// Legacy lists of the winning group-versions, by path.
    pub legacy: BTreeMap<String, Arc<Rendered>>,
    /// For legacy `/api`.
    pub server_addresses: &'a [ServerAddressByClientCIDR],
}

/// One group of a [`Plan`].
#[derive(Debug, Clone)]
pub struct GroupPlan<'a> {
    /// Its name (`""` for the core group).
    pub name: &'a str,
    /// Its versions in serving order, each with whether its downstream is
    /// stale (then it is published `Stale`).
    pub versions: Vec<(&'a APIVersionDiscovery, bool)>,
    /// For each of `versions`, the downstream group it was taken from,
    /// when that group is shared ([`DownstreamDiscovery::groups`]; `None`
    /// for the core group and for [`Plan::of`]).
    pub origins: Vec<Option<&'a Arc<APIGroupDiscovery>>>,
    /// For each of `versions`, the name of the downstream it was taken
    /// from: the one the front door sends the version's requests to, so
    /// that routing agrees with discovery by construction (empty for
    /// [`Plan::of`], which does not know).
    pub owners: Vec<&'a str>,
}

impl GroupPlan<'_> {
    /// The group as it is published.
    #[must_use]
    pub fn to_group(&self) -> APIGroupDiscovery {
        APIGroupDiscovery {
            metadata: ObjectMeta { name: self.name.to_owned() },
            versions: self
                .versions
                .iter()
                .map(|(v, stale)| {
                    let mut v = (*v).clone();
                    if *stale {
                        v.freshness = STALE.to_owned();
                    }
                    v
                })
                .collect(),
        }
    }

    /// Whether it publishes exactly `group`, compared in place.
    #[must_use]
    pub fn publishes(&self, group: &APIGroupDiscovery) -> bool {
        self.name == group.metadata.name
            && self.versions.len() == group.versions.len()
            && self.versions.iter().zip(&group.versions).all(|((v, stale), g)| {
                let freshness = if *stale { STALE } else { v.freshness.as_str() };
                v.version == g.version && freshness == g.freshness && v.resources == g.resources
            })
    }

    /// Whether every version is taken from the very groups `origins` (by
    /// `Arc`), and is the same version of it, with the same freshness, as
    /// in `group`: then it publishes exactly `group` without comparing a
    /// resource. Sound because a shared group is never changed in place
    /// and `origins` keeps it alive, so its address is not reused.
    fn has_origins(
        &self,
        group: &APIGroupDiscovery,
        origins: &[Option<Arc<APIGroupDiscovery>>],
    ) -> bool {
        self.name == group.metadata.name
            && self.versions.len() == group.versions.len()
            && self.origins.len() == self.versions.len()
            && origins.len() == group.versions.len()
            && self.versions.iter().zip(&self.origins).zip(group.versions.iter().zip(origins)).all(
                |(((v, stale), mine), (g, theirs))| {
                    let freshness = if *stale { STALE } else { v.freshness.as_str() };
                    matches!((mine, theirs), (Some(a), Some(b)) if Arc::ptr_eq(a, b))
                        && v.version == g.version
                        && freshness == g.freshness
                },
            )
    }

    /// The groups its versions were taken from, held by the rendered
    /// piece so that [`GroupPlan::has_origins`] can trust their addresses.
    fn held_origins(&self) -> Vec<Option<Arc<APIGroupDiscovery>>> {
        self.origins.iter().map(|o| o.map(Arc::clone)).collect()
    }
}

impl<'a> Plan<'a> {
    /// The plan of an already merged model (nothing is stale that is not
    /// already marked so).
    #[must_use]
    pub fn of(merged: &'a Merged) -> Self {
        let group = |g: &'a APIGroupDiscovery| GroupPlan {
            name: &g.metadata.name,
            versions: g.versions.iter().map(|v| (v, false)).collect(),
            origins: vec![None; g.versions.len()],
            owners: vec![""; g.versions.len()],
        };
        Self {
            core: merged.core.as_ref().map(group),
            groups: merged.groups.iter().map(group).collect(),
            legacy: merged.legacy.clone(),
            server_addresses: &merged.server_addresses,
        }
    }

    /// The merged model, copied out.
    #[must_use]
    pub fn to_merged(&self) -> Merged {
        Merged {
            core: self.core.as_ref().map(GroupPlan::to_group),
            groups: self.groups.iter().map(GroupPlan::to_group).collect(),
            legacy: self.legacy.clone(),
            server_addresses: self.server_addresses.to_vec(),
        }
    }
}

/// Merges every downstream's discovery by the rules of [`merge`], borrowing
/// from `sources`.
#[must_use]
pub fn plan<'a>(sources: &[RankedDiscovery<'a>]) -> Plan<'a> {
    let mut ranked: Vec<&RankedDiscovery<'a>> = sources.iter().collect();
    ranked.sort_by(|a, b| b.priority.cmp(&a.priority).then(a.order.cmp(&b.order)));

    let mut core: BTreeMap<&str, Candidate<'a>> = BTreeMap::new();
    let mut groups: BTreeMap<&'a str, BTreeMap<&str, Candidate<'a>>> = BTreeMap::new();
    for s in &ranked {
        let d = s.discovery;
        for v in &d.core {
            core.entry(v.version.as_str()).or_insert_with(|| candidate(s, v, None, ""));
        }
        for g in &d.groups {
            if g.metadata.name.is_empty() {
                continue; // the core group never appears under /apis
            }
            let versions = groups.entry(g.metadata.name.as_str()).or_default();
            for v in &g.versions {
                versions
                    .entry(v.version.as_str())
                    .or_insert_with(|| candidate(s, v, Some(g), &g.metadata.name));
            }
        }
    }

    let mut merged = Plan {
        server_addresses: ranked
            .iter()
            .find(|s| !s.discovery.server_addresses.is_empty())
            .map(|s| s.discovery.server_addresses.as_slice())
            .unwrap_or_default(),
        ..Plan::default()
    };
    if !core.is_empty() {
        merged.core = Some(group_entry("", core, &mut merged.legacy));
    }
    let mut ordered: Vec<(i64, &'a str, BTreeMap<&str, Candidate<'a>>)> = groups
        .into_iter()
        .map(|(name, versions)| {
            let priority = versions.values().map(|c| c.priority).max().unwrap_or(i64::MIN);
            (priority, name, versions)
        })
        .collect();
    // kube-aggregator gives apiregistration.k8s.io group priority 20001,
    // above the 20000 any other group can have: it is always first.
    ordered.sort_by(|a, b| {
        (b.1 == "apiregistration.k8s.io")
            .cmp(&(a.1 == "apiregistration.k8s.io"))
            .then(b.0.cmp(&a.0))
            .then_with(|| a.1.cmp(b.1))
    });
    for (_, name, versions) in ordered {
        let entry = group_entry(name, versions, &mut merged.legacy);
        merged.groups.push(entry);
    }
    merged
}

fn candidate<'a>(
    s: &RankedDiscovery<'a>,
    version: &'a APIVersionDiscovery,
    origin: Option<&'a Arc<APIGroupDiscovery>>,
    group: &str,
) -> Candidate<'a> {
    Candidate {
        owner: s.name,
        priority: s.priority,
        order: s.order,
        version,
        origin,
        fresh: s.discovery.fresh,
        legacy: {
            let key = GroupVersion::key_of(group, &version.version);
            s.discovery.legacy.get(&key).map(|l| (key, l))
        },
    }
}

fn group_entry<'a>(
    name: &'a str,
    versions: BTreeMap<&str, Candidate<'a>>,
    legacy: &mut BTreeMap<String, Arc<Rendered>>,
) -> GroupPlan<'a> {
    let mut candidates: Vec<Candidate<'a>> = versions.into_values().collect();
    candidates.sort_by(|a, b| {
        b.priority
            .cmp(&a.priority)
            .then(a.order.cmp(&b.order))
            .then_with(|| version::preference(&a.version.version, &b.version.version))
    });
    let mut out = GroupPlan {
        name,
        versions: Vec::with_capacity(candidates.len()),
        origins: Vec::with_capacity(candidates.len()),
        owners: Vec::with_capacity(candidates.len()),
    };
    for c in candidates {
        if let Some((key, l)) = c.legacy {
            legacy.insert(key, Arc::clone(l));
        }
        out.versions.push((c.version, !c.fresh));
        out.origins.push(c.origin);
        out.owners.push(c.owner);
    }
    out
}

/// Every discovery body, prepared once.
#[derive(Debug, Clone)]
pub struct Rendering {
    /// `/api`, aggregated v2.
    pub api_v2: Rendered,
    /// `/api`, aggregated v2beta1.
    pub api_v2beta1: Rendered,
    /// `/apis`, aggregated v2.
    pub apis_v2: Rendered,
    /// `/apis`, aggregated v2beta1.
    pub apis_v2beta1: Rendered,
    /// `/api`, legacy `APIVersions`.
    pub api_legacy: Rendered,
    /// `/apis`, legacy `APIGroupList`.
    pub apis_legacy: Rendered,
    /// `/apis/<group>`: `APIGroup` per group.
    pub groups: BTreeMap<String, Arc<Rendered>>,
    /// `/api/v1`, `/apis/<g>/<v>`: `APIResourceList` per path.
    pub resources: BTreeMap<String, Arc<Rendered>>,
    /// How many groups (the core group counts as one) this rendering
    /// serialized and compressed; the others were taken unchanged from
    /// the rendering it was given ([`render_reusing`]). Reported with
    /// each rebuild, and what the regression test for issue 16 checks.
    pub rendered_groups: usize,
    /// How many groups had to be compared resource by resource with what
    /// the previous rendering was made from; the others were recognised
    /// by their shared origin ([`DownstreamDiscovery::groups`]) or had no
    /// previous piece. Reported with each rebuild (issue 16).
    pub compared_groups: usize,
    /// Each group's prepared parts, by name (`""` for the core group):
    /// what the next rendering reuses.
    pieces: BTreeMap<String, Arc<GroupPiece>>,
    /// Runs of consecutive groups compressed together, by their first
    /// group's name: what the next rendering reuses.
    runs: BTreeMap<String, Arc<Run>>,
    /// The core group's piece, for `/api`'s other forms.
    core: Option<Arc<GroupPiece>>,
    /// The runs in serving order, for `/apis`'s other forms.
    ordered_runs: Vec<Arc<Run>>,
    /// The YAML and protobuf forms, made on request ([`forms`]); shared
    /// by clones.
    forms: Arc<forms::Forms>,
}

/// Consecutive groups of `/apis`, joined and compressed as one segment.
///
/// One segment per group made the gzip of `/apis` 2.7 times larger at
/// 5,000 CRDs and 13 times for 1,500 one-resource groups: every segment
/// carries its own deflate block header, Huffman tables and sync flush,
/// and finds no matches in its neighbours. Where a run ends is decided by
/// each group alone ([`ends_run`]), so the boundaries follow the names:
/// adding or changing one group makes one run again, not every run after
/// it.
#[derive(Debug)]
struct Run {
    /// Its groups, in order; reused only when they are the very pieces.
    members: Vec<Arc<GroupPiece>>,
    /// The members' aggregated items, comma-separated.
    items: Segment,
    /// The members' `APIGroupList` entries, comma-separated.
    legacy: Segment,
    /// The members' aggregated items as protobuf, made on request.
    protobuf: OnceLock<Result<Segment, forms::FormError>>,
    /// The members' aggregated items as YAML, made on request.
    yaml: OnceLock<Result<Segment, forms::FormError>>,
}

/// About this many bytes of aggregated items make a run. A change
/// deflates the run holding its group again, and the gzip of `/apis`
/// pays a block and lost matches per run: the size is that trade. Runs
/// of 16 groups whatever their size (the rule before) were 77 KB of items
/// at 5,000 CRDs, and deflating the changed one was a third of a
/// one-change rebuild (issue 16), while 1,500 one-resource groups got
/// runs of 19 KB.
const RUN_BYTES: usize = 32 * 1024;
/// A run ends after one group in at most this many (as a power of two),
/// however small the groups: bounds the deflate of a run of tiny groups.
const RUN_SPLIT_MAX_LOG2: u32 = 5;
/// No run is longer than this many groups.
const RUN_MAX: usize = 64;

impl Run {
    fn new(members: &[Arc<GroupPiece>]) -> Self {
        let join = |part: &dyn Fn(&GroupPiece) -> Option<&Segment>| {
            let mut out = Vec::new();
            for (i, m) in members.iter().filter_map(|m| part(m)).enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(&m.plain);
            }
            Segment::new(out)
        };
        Self {
            members: members.to_vec(),
            items: join(&|m| Some(&m.item)),
            legacy: join(&|m| m.legacy_item.as_ref()),
            protobuf: OnceLock::new(),
            yaml: OnceLock::new(),
        }
    }
}

/// Whether a run ends after the group `name` whose aggregated item is
/// `len` bytes: when FNV-1a of the name is 0 mod 2^k, 2^k being about
/// [`RUN_BYTES`] / `len` by powers of two. So a run holds about
/// [`RUN_BYTES`] whatever the size of its groups, and the choice depends
/// on the group alone (its name, and its size only by power of two, which
/// a change seldom crosses): the same on every replica and rebuild.
fn ends_run(name: &str, len: usize) -> bool {
    let h = name
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    let k = RUN_BYTES.ilog2().saturating_sub(len.max(1).ilog2()).min(RUN_SPLIT_MAX_LOG2);
    h % (1 << k) == 0
}

/// `groups` in runs, each taken from `previous` when it holds the same
/// pieces.
fn runs(
    groups: &[Arc<GroupPiece>],
    previous: Option<&BTreeMap<String, Arc<Run>>>,
) -> Vec<Arc<Run>> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, g) in groups.iter().enumerate() {
        let last = i + 1 == groups.len();
        let ends = ends_run(&g.model.metadata.name, g.item.plain.len());
        if !(last || ends || i + 1 - start >= RUN_MAX) {
            continue;
        }
        let members = groups.get(start..=i).unwrap_or_default();
        let first = members.first().map(|m| m.model.metadata.name.as_str()).unwrap_or_default();
        let reused = previous.and_then(|p| p.get(first)).filter(|r| {
            r.members.len() == members.len()
                && r.members.iter().zip(members).all(|(a, b)| Arc::ptr_eq(a, b))
        });
        out.push(reused.map_or_else(|| Arc::new(Run::new(members)), Arc::clone));
        start = i + 1;
    }
    out
}

/// What one group contributes to the discovery bodies, prepared once and
/// kept for as long as the group does not change.
#[derive(Debug)]
struct GroupPiece {
    /// The merged group these parts were made from: a group equal to it
    /// needs nothing made again.
    model: APIGroupDiscovery,
    /// For each of `model`'s versions, the shared downstream group it was
    /// taken from (see [`GroupPlan::has_origins`]).
    origins: Vec<Option<Arc<APIGroupDiscovery>>>,
    /// Its item in the aggregated lists (v2 and v2beta1 write the same).
    item: Segment,
    /// Its entry in the legacy `APIGroupList` (named groups only).
    legacy_item: Option<Segment>,
    /// `/apis/<group>` (named groups only).
    group: Option<Arc<Rendered>>,
}

impl GroupPiece {
    fn new(g: APIGroupDiscovery, origins: Vec<Option<Arc<APIGroupDiscovery>>>, core: bool) -> Self {
        let item = serde_json::to_vec(&g).expect("discovery types always serialize");
        let (legacy_item, group) = if core {
            (None, None)
        } else {
            let list_entry = serde_json::to_vec(&legacy_group(&g, false))
                .expect("discovery types always serialize");
            (
                Some(Segment::new(list_entry)),
                Some(Arc::new(Rendered::json(k8s_json(&legacy_group(&g, true))))),
            )
        };
        Self { model: g, origins, item: Segment::new(item), legacy_item, group }
    }
}

/// Compact JSON and a trailing newline, as the Kubernetes JSON serializer
/// writes discovery.
fn k8s_json<T: Serialize>(value: &T) -> Vec<u8> {
    let mut out = serde_json::to_vec(value).expect("discovery types always serialize");
    out.push(b'\n');
    out
}

/// `PREFIX[ITEM,ITEM,…]SUFFIX` from prepared segments: the JSON array
/// `serde_json` writes for the items, framed, with its gzip joined from
/// the items' own (see [`Segment`]). Hashed as a tree of its parts
/// ([`Rendered::from_segments_tree`], docs/wire.md#a-2), as the aggregated
/// lists are: the legacy `APIGroupList` is 138 KB at 5,000 CRDs, and
/// hashing all of it again was about 6 % of a one-change rebuild (issue
/// 16, perf) when its parts' digests are already at hand.
fn framed_list<'a>(
    head: &'static str,
    items: impl IntoIterator<Item = &'a Segment>,
    tail: &'static str,
    comma: &'a Segment,
    content_type: HeaderValue,
) -> Rendered {
    let head = Segment::fixed(head);
    let tail = Segment::fixed(tail);
    let mut parts: Vec<&Segment> = vec![&head];
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            parts.push(comma);
        }
        parts.push(item);
    }
    parts.push(&tail);
    Rendered::from_segments_tree(parts.iter().copied(), content_type)
}

const AGGREGATED_V2: &str = "{\"kind\":\"APIGroupDiscoveryList\",\"apiVersion\":\"apidiscovery.k8s.io/v2\",\"metadata\":{},\"items\":[";
const AGGREGATED_V2BETA1: &str = "{\"kind\":\"APIGroupDiscoveryList\",\"apiVersion\":\"apidiscovery.k8s.io/v2beta1\",\"metadata\":{},\"items\":[";

/// `{"kind":"APIGroupDiscoveryList","apiVersion":…,"metadata":{},"items":[…]}`
/// around items serialized once, as v2 and as v2beta1: the two differ only
/// in their `apiVersion`, so everything after it is joined once
/// ([`Rendered::variants_sharing_tail`]). Their ETags are hashes of
/// their parts: hashing all of `/apis` twice was most of a one-change
/// rebuild at 5,000 CRDs.
fn aggregated_lists<'a>(
    items: impl IntoIterator<Item = &'a Segment>,
    comma: &'a Segment,
) -> [Rendered; 2] {
    let close = Segment::fixed("]}\n");
    let mut tail: Vec<&Segment> = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            tail.push(comma);
        }
        tail.push(item);
    }
    tail.push(&close);
    Rendered::variants_sharing_tail(
        [
            (&Segment::fixed(AGGREGATED_V2), HeaderValue::from_static(DISCOVERY_V2_CONTENT_TYPE)),
            (
                &Segment::fixed(AGGREGATED_V2BETA1),
                HeaderValue::from_static(DISCOVERY_V2BETA1_CONTENT_TYPE),
            ),
        ],
        tail.iter().copied(),
    )
}

fn legacy_group(g: &APIGroupDiscovery, standalone: bool) -> APIGroup {
    let versions: Vec<GroupVersionForDiscovery> = g
        .versions
        .iter()
        .map(|v| GroupVersionForDiscovery {
            group_version: format!("{}/{}", g.metadata.name, v.version),
            version: v.version.clone(),
        })
        .collect();
    APIGroup {
        kind: if standalone { "APIGroup".into() } else { String::new() },
        api_version: if standalone { "v1".into() } else { String::new() },
        name: g.metadata.name.clone(),
        preferred_version: versions.first().cloned().unwrap_or_default(),
        versions,
    }
}

/// Renders every discovery body of a merged model.
#[must_use]
pub fn render(merged: &Merged) -> Rendering {
    render_reusing(&Plan::of(merged), None)
}

/// Renders every discovery body of a merged model, taking each group's
/// prepared parts from `previous` when the group is equal to what they
/// were made from (issue 16: at 5,000 CRDs a change to one group-version
/// must not serialize and compress a thousand others again).
///
/// The result is the same, byte for byte, as [`render`] of `merged`:
/// parts depend only on their group, and the lists are joined from parts
/// in `merged`'s order either way. What is still made whole on every
/// call: joining the lists (copying; v2beta1 copies v2's items in one
/// piece), their CRC-32 for gzip (once for both renditions), the small
/// `/api` bodies, and the
/// per-group-version legacy lists' map (shared, not copied).
#[must_use]
pub fn render_reusing(merged: &Plan<'_>, previous: Option<&Rendering>) -> Rendering {
    let mut rendered_groups = 0;
    let mut compared_groups = 0;
    let mut piece = |g: &GroupPlan<'_>, core: bool| -> Arc<GroupPiece> {
        if let Some(p) = previous.and_then(|p| p.pieces.get(g.name)) {
            // The same shared versions: nothing to compare. Else compare
            // in place (another downstream's poller, or a test, may hand
            // equal groups in new allocations).
            if g.has_origins(&p.model, &p.origins) {
                return Arc::clone(p);
            }
            compared_groups += 1;
            if g.publishes(&p.model) {
                return Arc::clone(p);
            }
        }
        rendered_groups += 1;
        Arc::new(GroupPiece::new(g.to_group(), g.held_origins(), core))
    };
    let core = merged.core.as_ref().map(|g| piece(g, true));
    let groups: Vec<Arc<GroupPiece>> = merged.groups.iter().map(|g| piece(g, false)).collect();
    let comma = Segment::fixed(",");
    let runs = runs(&groups, previous.map(|p| &p.runs));
    let api_legacy = APIVersions {
        kind: "APIVersions".into(),
        versions: merged
            .core
            .iter()
            .flat_map(|g| g.versions.iter().map(|(v, _)| v.version.clone()))
            .collect(),
        server_address_by_client_cidrs: merged.server_addresses.to_vec(),
    };
    let apis_legacy = framed_list(
        "{\"kind\":\"APIGroupList\",\"apiVersion\":\"v1\",\"groups\":[",
        runs.iter().map(|r| &r.legacy),
        "]}\n",
        &comma,
        HeaderValue::from_static("application/json"),
    );
    let [api_v2, api_v2beta1] = aggregated_lists(core.iter().map(|p| &p.item), &comma);
    let [apis_v2, apis_v2beta1] = aggregated_lists(runs.iter().map(|r| &r.items), &comma);
    let api_legacy = Rendered::json(k8s_json(&api_legacy));
    let group_bodies: BTreeMap<String, Arc<Rendered>> = groups
        .iter()
        .filter_map(|p| p.group.as_ref().map(|r| (p.model.metadata.name.clone(), Arc::clone(r))))
        .collect();
    let resources = merged.legacy.clone();
    let mut forms = forms::Forms::carried(previous.map(|p| &*p.forms), &group_bodies, &resources);
    forms.api_legacy =
        Some(forms::LegacyForms::new(Arc::new(api_legacy.clone()), forms::LegacyKind::Versions));
    forms.apis_legacy =
        Some(forms::LegacyForms::new(Arc::new(apis_legacy.clone()), forms::LegacyKind::GroupList));
    Rendering {
        api_v2,
        api_v2beta1,
        apis_v2,
        apis_v2beta1,
        api_legacy,
        apis_legacy,
        groups: group_bodies,
        resources,
        rendered_groups,
        compared_groups,
        runs: runs
            .iter()
            .filter_map(|r| {
                r.members.first().map(|m| (m.model.metadata.name.clone(), Arc::clone(r)))
            })
            .collect(),
        pieces: core
            .iter()
            .chain(&groups)
            .map(|p| (p.model.metadata.name.clone(), Arc::clone(p)))
            .collect(),
        core,
        ordered_runs: runs,
        forms: Arc::new(forms),
    }
}

/// The legacy list of a group-version, synthesized from its aggregated
/// resources and prepared for serving.
#[must_use]
pub fn synthesized_legacy(group: &str, version: &APIVersionDiscovery) -> Rendered {
    Rendered::json(k8s_json(&legacy::to_legacy(group, &version.version, &version.resources)))
}

/// Discovery for a downstream whose discovery never answered: the
/// group-versions its OpenAPI documents name, listed `Stale` and empty
/// (docs/wire.md#a-8), so clients see them as failing rather than absent.
#[must_use]
pub fn stale_from_openapi<'k>(
    keys: impl IntoIterator<Item = &'k DocumentKey>,
) -> DownstreamDiscovery {
    let mut out = DownstreamDiscovery::default();
    for gv in keys.into_iter().filter_map(DocumentKey::group_version) {
        let stale = APIVersionDiscovery {
            version: gv.version,
            resources: Vec::new(),
            freshness: types::STALE.into(),
        };
        if gv.group.is_empty() {
            out.core.push(stale);
        } else if let Some(e) = out.groups.iter_mut().find(|e| e.metadata.name == gv.group) {
            Arc::make_mut(e).versions.push(stale);
        } else {
            out.groups.push(Arc::new(APIGroupDiscovery {
                metadata: types::ObjectMeta { name: gv.group },
                versions: vec![stale],
            }));
        }
    }
    out
}

#[cfg(test)]
mod tests;

//! Discovery's YAML and protobuf forms (docs/wire.md#a-12), made on the
//! first request for each and kept.
//!
//! Why lazily: every Kubernetes client reads discovery in JSON, so making
//! four more aggregated lists (2.2 MB of JSON each at 5,000 CRDs) and two
//! more forms of every legacy document on each rebuild would cost every
//! rebuild and all that memory for the few clients that ask. What is made
//! is kept for as long as what it was made from:
//!
//! - each run's items, encoded, joined and deflated, with the run (carried
//!   over while its groups do not change): so, as for JSON, a change to
//!   one group encodes and compresses that group's run again, not the
//!   list. A group's item is not kept on its own: a run is about 32 KB
//!   of JSON, so encoding its groups again costs little, and keeping them
//!   would hold every list's bytes once more;
//! - the aggregated lists themselves, each version on its own, kept
//!   gzipped only as large OpenAPI documents are (a client that does not
//!   take gzip gets them inflated, `body::identity`), and the legacy `/api`
//!   and `/apis`, with the rendering (one snapshot);
//! - the legacy `APIGroup` and `APIResourceList` forms with the very JSON
//!   body they were made from, carried over to the next rendering while it
//!   serves that body.
//!
//! Every form carries the ETag of its JSON form, as kube-apiserver's do.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use actix_web::http::header::HeaderValue;
use serde::Deserialize;

use super::{GroupPiece, Rendering, Run, proto, types, yaml};
use crate::body::rendered::{Rendered, Segment};
use crate::wire::negotiate::{DiscoveryFormat, DiscoveryVersion};

/// Why a form of a discovery body cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum FormError {
    /// The JSON body does not parse as the document it is served as.
    #[error("the JSON form does not parse")]
    Json(#[from] serde_json::Error),
    /// The JSON body's plain bytes cannot be had.
    #[error("the JSON form does not inflate")]
    Plain(#[from] std::io::Error),
    /// The YAML emitter failed.
    #[error("writing YAML")]
    Yaml(#[from] yaml::YamlError),
    /// A part of the body could not be made (said when it was tried).
    #[error("a part could not be made: {0}")]
    Part(String),
}

impl FormError {
    /// The same failure again, for a body made of a part that failed
    /// before (the part keeps its error).
    fn again(e: &Self) -> Self {
        Self::Part(crate::error_chain(e))
    }
}

/// Which legacy document a body is (which message its protobuf form is).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LegacyKind {
    /// `/api`: `APIVersions`.
    Versions,
    /// `/apis`: `APIGroupList`.
    GroupList,
    /// `/apis/<group>`: `APIGroup`.
    Group,
    /// `/api/v1`, `/apis/<group>/<version>`: `APIResourceList`.
    ResourceList,
}

/// A legacy discovery body in every form: its JSON, and the YAML and
/// protobuf made from it on first request.
#[derive(Debug)]
pub struct LegacyForms {
    json: Arc<Rendered>,
    kind: LegacyKind,
    yaml: OnceLock<Result<Rendered, FormError>>,
    protobuf: OnceLock<Result<Rendered, FormError>>,
}

impl LegacyForms {
    /// The forms of `json`, a `kind` document.
    #[must_use]
    pub fn new(json: Arc<Rendered>, kind: LegacyKind) -> Self {
        Self { json, kind, yaml: OnceLock::new(), protobuf: OnceLock::new() }
    }

    /// The body in `format`, made now if it was not yet.
    ///
    /// # Errors
    /// When the JSON body does not read as its document (a downstream's
    /// list that parsed when fetched always does).
    pub fn get(&self, format: DiscoveryFormat) -> Result<&Rendered, &FormError> {
        let made = match format {
            DiscoveryFormat::Json => return Ok(&self.json),
            DiscoveryFormat::Yaml => self.yaml.get_or_init(|| self.make(format)),
            DiscoveryFormat::Protobuf => self.protobuf.get_or_init(|| self.make(format)),
        };
        made.as_ref()
    }

    fn make(&self, format: DiscoveryFormat) -> Result<Rendered, FormError> {
        let json = self.json.plain()?;
        let body = match format {
            DiscoveryFormat::Json => json.to_vec(),
            DiscoveryFormat::Yaml => yaml::from_json(&json)?.into_bytes(),
            DiscoveryFormat::Protobuf => legacy_protobuf(self.kind, &json)?,
        };
        Ok(Rendered::form_of(body, HeaderValue::from_static(format.content_type()), &self.json))
    }
}

/// The type of a JSON body, as its `kind` and `apiVersion` say.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Kinded {
    kind: String,
    #[serde(rename = "apiVersion")]
    api_version: String,
}

/// A legacy JSON body as an enveloped protobuf message, its type taken
/// from the JSON (so `/api` and `/api/v1` keep their empty `apiVersion`).
fn legacy_protobuf(kind: LegacyKind, json: &[u8]) -> Result<Vec<u8>, FormError> {
    let t: Kinded = serde_json::from_slice(json)?;
    let (v, k) = (t.api_version.as_str(), t.kind.as_str());
    Ok(match kind {
        LegacyKind::Versions => {
            let doc: types::APIVersions = serde_json::from_slice(json)?;
            proto::enveloped(v, k, &proto::api_versions(&doc))
        }
        LegacyKind::GroupList => {
            let doc: types::APIGroupList = serde_json::from_slice(json)?;
            proto::enveloped(v, k, &proto::api_group_list(&doc))
        }
        LegacyKind::Group => {
            let doc: types::APIGroup = serde_json::from_slice(json)?;
            proto::enveloped(v, k, &proto::api_group(&doc))
        }
        LegacyKind::ResourceList => {
            let doc: types::APIResourceList = serde_json::from_slice(json)?;
            proto::enveloped(v, k, &proto::api_resource_list(&doc))
        }
    })
}

/// The forms one rendering makes on request.
#[derive(Debug, Default)]
pub(super) struct Forms {
    /// `/api` aggregated, as [YAML, protobuf] × [v2, v2beta1].
    api: [[OnceLock<Result<Rendered, FormError>>; 2]; 2],
    /// `/apis` aggregated, the same.
    apis: [[OnceLock<Result<Rendered, FormError>>; 2]; 2],
    /// Legacy `/api`.
    pub(super) api_legacy: Option<LegacyForms>,
    /// Legacy `/apis`.
    pub(super) apis_legacy: Option<LegacyForms>,
    /// `/apis/<group>` by group, those asked for.
    groups: Mutex<BTreeMap<String, Arc<LegacyForms>>>,
    /// `APIResourceList` by path (`api/v1`), those asked for.
    resources: Mutex<BTreeMap<String, Arc<LegacyForms>>>,
}

impl Forms {
    /// The forms `previous` made of the legacy bodies `groups` and
    /// `resources` still serve (the same `Arc`), taken over.
    pub(super) fn carried(
        previous: Option<&Self>,
        groups: &BTreeMap<String, Arc<Rendered>>,
        resources: &BTreeMap<String, Arc<Rendered>>,
    ) -> Self {
        let keep = |mine: Option<&Mutex<BTreeMap<String, Arc<LegacyForms>>>>,
                    now: &BTreeMap<String, Arc<Rendered>>| {
            let Some(mine) = mine else { return BTreeMap::new() };
            let mine = mine.lock().unwrap_or_else(PoisonError::into_inner);
            mine.iter()
                .filter(|(k, f)| now.get(*k).is_some_and(|j| Arc::ptr_eq(j, &f.json)))
                .map(|(k, f)| (k.clone(), Arc::clone(f)))
                .collect()
        };
        Self {
            groups: Mutex::new(keep(previous.map(|p| &p.groups), groups)),
            resources: Mutex::new(keep(previous.map(|p| &p.resources), resources)),
            ..Self::default()
        }
    }
}

fn slot(format: DiscoveryFormat) -> Option<usize> {
    match format {
        DiscoveryFormat::Json => None,
        DiscoveryFormat::Yaml => Some(0),
        DiscoveryFormat::Protobuf => Some(1),
    }
}

impl Rendering {
    /// `/api` (`core`) or `/apis` aggregated, as `version`, in `format`.
    ///
    /// # Errors
    /// When a group's YAML cannot be written (no string discovery holds
    /// is known to make the emitter fail; kept as an error rather than a
    /// panic, the strings being a downstream's).
    pub fn aggregated(
        &self,
        core: bool,
        version: DiscoveryVersion,
        format: DiscoveryFormat,
    ) -> Result<&Rendered, &FormError> {
        let json = if core {
            [&self.api_v2, &self.api_v2beta1]
        } else {
            [&self.apis_v2, &self.apis_v2beta1]
        };
        let i = usize::from(version == DiscoveryVersion::V2beta1);
        let Some(s) = slot(format) else { return Ok(json[i]) };
        let lists = if core { &self.forms.api } else { &self.forms.apis };
        let made = lists[s][i].get_or_init(|| {
            let items: Vec<Segment> = if core {
                self.core
                    .iter()
                    .map(|p| item(p, format).map(Segment::new))
                    .collect::<Result<_, _>>()?
            } else {
                self.ordered_runs
                    .iter()
                    .map(|r| run_items(r, format).cloned().map_err(FormError::again))
                    .collect::<Result<_, _>>()?
            };
            Ok(aggregated_list(&items, format, version, json[i]))
        });
        made.as_ref()
    }

    /// Legacy `/api` (`core`) or `/apis` in `format`.
    ///
    /// # Errors
    /// Never for the bodies rendered here; see [`LegacyForms::get`].
    pub fn legacy_root(
        &self,
        core: bool,
        format: DiscoveryFormat,
    ) -> Result<&Rendered, &FormError> {
        let forms = if core { &self.forms.api_legacy } else { &self.forms.apis_legacy };
        match forms {
            Some(f) => f.get(format),
            None => Ok(if core { &self.api_legacy } else { &self.apis_legacy }),
        }
    }

    /// `/apis/<group>` in every form; `None` for a group not served.
    #[must_use]
    pub fn group_forms(&self, group: &str) -> Option<Arc<LegacyForms>> {
        legacy_forms(&self.forms.groups, &self.groups, group, LegacyKind::Group)
    }

    /// `/api/v1` or `/apis/<g>/<v>` (by its key, `api/v1`) in every form;
    /// `None` for a group-version not served.
    #[must_use]
    pub fn resource_forms(&self, key: &str) -> Option<Arc<LegacyForms>> {
        legacy_forms(&self.forms.resources, &self.resources, key, LegacyKind::ResourceList)
    }
}

fn legacy_forms(
    made: &Mutex<BTreeMap<String, Arc<LegacyForms>>>,
    json: &BTreeMap<String, Arc<Rendered>>,
    key: &str,
    kind: LegacyKind,
) -> Option<Arc<LegacyForms>> {
    let json = json.get(key)?;
    let mut made = made.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(f) = made.get(key) {
        return Some(Arc::clone(f));
    }
    let f = Arc::new(LegacyForms::new(Arc::clone(json), kind));
    made.insert(key.to_owned(), Arc::clone(&f));
    Some(f)
}

/// A group's aggregated item as protobuf (`format`), else as YAML (JSON
/// items are [`GroupPiece::item`]).
fn item(p: &GroupPiece, format: DiscoveryFormat) -> Result<Vec<u8>, FormError> {
    if format == DiscoveryFormat::Protobuf {
        return Ok(proto::list_item(&p.model));
    }
    let value = serde_json::to_value(&p.model)?;
    Ok(yaml::list_item(&yaml::from_value(value)?).into_bytes())
}

/// A run's items in `format`, joined and deflated as one segment.
fn run_items(r: &Run, format: DiscoveryFormat) -> Result<&Segment, &FormError> {
    let cell = if format == DiscoveryFormat::Protobuf { &r.protobuf } else { &r.yaml };
    cell.get_or_init(|| {
        let mut out = Vec::new();
        for m in &r.members {
            out.extend_from_slice(&item(m, format)?);
        }
        Ok(Segment::new(out))
    })
    .as_ref()
}

/// The YAML document after an aggregated list's items.
const YAML_TAIL: &str = "kind: APIGroupDiscoveryList\nmetadata: {}\n";

/// The `version` list of `items` in `format`, named as its JSON form
/// `json`, kept gzipped only when large.
fn aggregated_list(
    items: &[Segment],
    format: DiscoveryFormat,
    version: DiscoveryVersion,
    json: &Rendered,
) -> Rendered {
    let head = Segment::new(if format == DiscoveryFormat::Protobuf {
        proto::list_head(version.api_version(), items.iter().map(|s| s.plain.len()).sum())
    } else if items.is_empty() {
        format!("apiVersion: {}\nitems: []\n", version.api_version()).into_bytes()
    } else {
        format!("apiVersion: {}\nitems:\n", version.api_version()).into_bytes()
    });
    let tail = Segment::fixed(if format == DiscoveryFormat::Protobuf {
        proto::ENVELOPE_END
    } else {
        YAML_TAIL
    });
    let parts = std::iter::once(&head).chain(items).chain(std::iter::once(&tail));
    Rendered::from_segments_tree(parts, HeaderValue::from_static(version.content_type_as(format)))
        .retagged(json)
        .gzipped_only()
}

#[cfg(test)]
mod tests;

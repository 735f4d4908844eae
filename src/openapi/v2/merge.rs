//! Several Swagger 2.0 documents into one, as kube-aggregator merges its
//! APIServices' specs (kube-openapi `pkg/aggregator`,
//! `MergeSpecsIgnorePathConflictRenamingDefinitionsAndParameters`), with
//! the choices it leaves to map order made fixed (docs/wire.md, A-13):
//!
//! - **Paths.** A path of a group-version comes only from the downstream
//!   that owns the group-version (the owner discovery and the front door
//!   use); any other path (`/version/`, `/apis/`, `/logs/`, a group-version
//!   nobody owns) from the first source, highest priority first, that has
//!   it.
//! - **What a source brings.** A source that lost no path brings all its
//!   definitions and parameters; one that lost some brings those its kept
//!   paths reach, transitively (kube-aggregator filters the same way).
//! - **Clashes.** A name is claimed first by the definitions that carry an
//!   `x-kubernetes-group-version-kind` of a group-version their source
//!   owns, then by the rest, sources in priority order, names in byte
//!   order. An identical definition (member order aside) is kept once; a
//!   different one is renamed `<name>_v2`, `_v3`, … (the first suffix
//!   neither the merge nor its own source uses: kube-aggregator's rule),
//!   and every `$ref` of its source to it is rewritten. Shared
//!   `parameters` likewise, by priority.
//! - **Kinds.** No group-version-kind is listed by two definitions
//!   (gitops-engine and client-go's `OpenAPISchema()` index by it): the
//!   definition of the group-version's owner keeps it, else the first
//!   claimed; it is dropped from the others.
//! - **Order.** Top-level members in the highest-priority source's order;
//!   `paths`, `definitions`, `parameters`, `responses` and
//!   `securityDefinitions` sorted by name, as Go writes its maps; inside
//!   them, each source's own member order.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::refs;
use crate::json::tree::{Node, Object, Text};
use crate::wire::GroupVersion;
use crate::wire::key::DocumentKey;

/// The vendor extension Kubernetes lists a definition's kinds in.
const GVK: &str = "x-kubernetes-group-version-kind";

/// Top-level maps merged by name (first source wins) rather than taken
/// from the first source.
const NAMED_MAPS: [&str; 2] = ["responses", "securityDefinitions"];

/// Why a document cannot take part in a merge.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// The document is no JSON object.
    #[error("not a JSON object")]
    NotAnObject,
    /// `swagger` is missing or not `"2.0"`.
    #[error("not a Swagger 2.0 document (`swagger` is not \"2.0\")")]
    NotSwagger2,
    /// A map the merge reads (`paths`, `definitions`, …) is no object.
    #[error("`{0}` is not an object")]
    NotAMap(&'static str),
}

/// One downstream's Swagger 2.0 document, taken apart for the merge.
#[derive(Debug)]
pub struct Source<'a> {
    name: String,
    /// Top-level members in order; the merged maps are `None` here.
    top: Vec<(Text<'a>, Option<Node<'a>>)>,
    paths: Vec<(Text<'a>, Node<'a>)>,
    definitions: BTreeMap<String, Node<'a>>,
    parameters: BTreeMap<String, Node<'a>>,
    named: BTreeMap<&'static str, Vec<(Text<'a>, Node<'a>)>>,
}

impl<'a> Source<'a> {
    /// Takes `doc`, the document of downstream `name`, apart.
    ///
    /// # Errors
    /// [`MergeError`] when `doc` is not a Swagger 2.0 document.
    pub fn new(name: impl Into<String>, doc: Node<'a>) -> Result<Self, MergeError> {
        let Node::Object(doc) = doc else { return Err(MergeError::NotAnObject) };
        if doc.get("swagger").and_then(Node::as_str) != Some("2.0") {
            return Err(MergeError::NotSwagger2);
        }
        let mut source = Self {
            name: name.into(),
            top: Vec::new(),
            paths: Vec::new(),
            definitions: BTreeMap::new(),
            parameters: BTreeMap::new(),
            named: BTreeMap::new(),
        };
        for (key, value) in doc {
            let members = |what: &'static str, value: Node<'a>| match value {
                Node::Object(o) => Ok(o),
                _ => Err(MergeError::NotAMap(what)),
            };
            match key.as_str() {
                "paths" => source.paths = members("paths", value)?.into_iter().collect(),
                "definitions" => {
                    source.definitions = by_name(members("definitions", value)?);
                }
                "parameters" => source.parameters = by_name(members("parameters", value)?),
                other => {
                    if let Some(what) = NAMED_MAPS.iter().find(|m| **m == other) {
                        source.named.insert(what, members(what, value)?.into_iter().collect());
                    } else {
                        source.top.push((key, Some(value)));
                        continue;
                    }
                }
            }
            source.top.push((key, None));
        }
        Ok(source)
    }
}

fn by_name(o: Object<'_>) -> BTreeMap<String, Node<'_>> {
    o.into_iter().map(|(k, v)| (k.as_str().to_owned(), v)).collect()
}

/// A definition or parameter that took another name in the merge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Renamed {
    /// The downstream whose document it came from.
    pub downstream: String,
    /// `definitions` or `parameters`.
    pub section: &'static str,
    /// Its name in the downstream's document.
    pub from: String,
    /// Its name in the merged one.
    pub to: String,
}

/// The merged document and what the merge had to settle.
#[derive(Debug)]
pub struct Merged<'a> {
    /// A Swagger 2.0 document.
    pub doc: Node<'a>,
    /// Definitions and parameters renamed on a clash.
    pub renamed: Vec<Renamed>,
    /// Group-version-kinds dropped from a definition because another
    /// lists them.
    pub kinds_dropped: usize,
    /// Where each path and definition of `doc` came from.
    pub provenance: Provenance,
}

/// Per section (`definitions`, `parameters`): a source's name → the name
/// it has in the merged document.
pub type Renames = BTreeMap<&'static str, BTreeMap<String, String>>;

/// Where the merged document's paths and definitions came from, and how
/// each source's references were rewritten: what it takes to make the
/// same document again from the sources' own trees, one at a time
/// (`super::skeleton`), after merging stand-ins for them.
#[derive(Debug, Default)]
pub struct Provenance {
    /// Merged definition name → (source index, its name there).
    pub definitions: BTreeMap<String, (usize, String)>,
    /// Merged path → source index.
    pub paths: BTreeMap<String, usize>,
    /// Per source index: the renames applied to its references.
    pub renames: Vec<Renames>,
}

/// What one source keeps: its paths, and the names of the definitions
/// and parameters it brings.
struct Kept<'a> {
    paths: Vec<(Text<'a>, Node<'a>)>,
    sections: BTreeMap<&'static str, BTreeSet<String>>,
}

/// Merges `sources`, highest priority first, with `owners` (group-version
/// key → downstream name) deciding whose paths of a group-version are
/// kept. `None` when there is no source.
#[must_use]
pub fn merge<'a>(
    sources: Vec<Source<'a>>,
    owners: &BTreeMap<String, Arc<str>>,
) -> Option<Merged<'a>> {
    let mut sources = sources;
    let first_top = std::mem::take(&mut sources.first_mut()?.top);

    // Paths: the owner's for a group-version, else the first source's.
    let mut taken: BTreeSet<String> = BTreeSet::new();
    let mut kept: Vec<Kept<'a>> = Vec::with_capacity(sources.len());
    for s in &mut sources {
        let mut paths = Vec::new();
        let mut lost = false;
        for (path, item) in std::mem::take(&mut s.paths) {
            let owner = DocumentKey::from_path(&path)
                .filter(DocumentKey::is_group_version)
                .and_then(|k| owners.get(k.as_str()));
            let keep = owner.is_none_or(|o| **o == *s.name) && !taken.contains(path.as_str());
            if keep {
                taken.insert(path.as_str().to_owned());
                paths.push((path, item));
            } else {
                lost = true;
            }
        }
        let sections = if lost {
            reached(s, &paths)
        } else {
            BTreeMap::from([
                ("definitions", s.definitions.keys().cloned().collect()),
                ("parameters", s.parameters.keys().cloned().collect()),
            ])
        };
        kept.push(Kept { paths, sections });
    }

    // Names: owners' kinds first, then by priority.
    let mut claims = Claims::default();
    claims.renames.resize_with(sources.len(), BTreeMap::new);
    for pass in [Pass::OwnedKinds, Pass::Rest] {
        for (i, (s, k)) in sources.iter().zip(&kept).enumerate() {
            for name in &k.sections["definitions"] {
                let def = &s.definitions[name];
                if (pass == Pass::OwnedKinds) == owns_a_kind(def, &s.name, owners) {
                    claims.claim("definitions", i, name, &sources);
                }
            }
        }
    }
    for (i, k) in kept.iter().enumerate() {
        for name in &k.sections["parameters"] {
            claims.claim("parameters", i, name, &sources);
        }
    }

    // Move everything in, with each source's references renamed.
    let mut provenance = Provenance::default();
    let mut out_paths: BTreeMap<String, Node<'a>> = BTreeMap::new();
    for (i, k) in kept.into_iter().enumerate() {
        for (path, mut item) in k.paths {
            refs::rename(&mut item, &claims.renames[i]);
            provenance.paths.insert(path.as_str().to_owned(), i);
            out_paths.insert(path.as_str().to_owned(), item);
        }
    }
    let mut sections: BTreeMap<&'static str, BTreeMap<String, Node<'a>>> = BTreeMap::new();
    let mut claim_order: Vec<(String, usize)> = Vec::new();
    for (section, names) in &claims.order {
        let out = sections.entry(section).or_default();
        for (name, (i, from)) in names {
            let s = &mut sources[*i];
            let map =
                if *section == "definitions" { &mut s.definitions } else { &mut s.parameters };
            let Some(mut node) = map.remove(from) else { continue };
            refs::rename(&mut node, &claims.renames[*i]);
            out.insert(name.clone(), node);
            if *section == "definitions" {
                claim_order.push((name.clone(), *i));
                provenance.definitions.insert(name.clone(), (*i, from.clone()));
            }
        }
    }
    let mut definitions = sections.remove("definitions").unwrap_or_default();
    let kinds_dropped = dedupe_kinds(&mut definitions, &claim_order, &sources, owners);
    let parameters = sections.remove("parameters").unwrap_or_default();

    let mut named: BTreeMap<&'static str, BTreeMap<String, Node<'a>>> = BTreeMap::new();
    for s in &mut sources {
        for (what, members) in std::mem::take(&mut s.named) {
            let out = named.entry(what).or_default();
            for (k, v) in members {
                out.entry(k.as_str().to_owned()).or_insert(v);
            }
        }
    }

    let mut doc = Object::new();
    let mut merged: BTreeMap<&str, BTreeMap<String, Node<'a>>> = named;
    merged.insert("paths", out_paths);
    merged.insert("definitions", definitions);
    merged.insert("parameters", parameters);
    for (key, value) in first_top {
        match value {
            Some(v) => doc.insert(key, v),
            None => {
                if let Some(map) = merged.remove(key.as_str()) {
                    doc.insert(key, sorted(map));
                }
            }
        }
    }
    // Maps the first source did not have, when another brought them.
    for (key, map) in merged {
        if !map.is_empty() || key == "paths" {
            doc.insert(key, sorted(map));
        }
    }
    provenance.renames = claims.renames;
    Some(Merged { doc: Node::Object(doc), renamed: claims.renamed, kinds_dropped, provenance })
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Pass {
    OwnedKinds,
    Rest,
}

/// Where a merged name came from: the source and its name there.
type Origin = (usize, String);

/// Names claimed so far and the renames each source needs.
#[derive(Default)]
struct Claims {
    /// Section → merged name → (source, its name there), in claim order.
    order: BTreeMap<&'static str, Vec<(String, Origin)>>,
    /// Section → merged name → (source, its name there).
    by_name: BTreeMap<&'static str, BTreeMap<String, Origin>>,
    /// Per source: section → its name → merged name.
    renames: Vec<Renames>,
    renamed: Vec<Renamed>,
}

impl Claims {
    fn claim(&mut self, section: &'static str, i: usize, name: &str, sources: &[Source<'_>]) {
        let node = |j: usize, n: &str| section_of(&sources[j], section).get(n);
        let own = |n: &str| node(i, n).is_some();
        let claimed = self.by_name.entry(section).or_default();
        let merged_name = match claimed.get(name) {
            None => name.to_owned(),
            Some((j, theirs)) => {
                let same =
                    node(*j, theirs).zip(node(i, name)).is_some_and(|(a, b)| refs::same(a, b));
                if same {
                    return;
                }
                let mut n = 2;
                let mut candidate = format!("{name}_v{n}");
                while claimed.contains_key(&candidate) || own(&candidate) {
                    n += 1;
                    candidate = format!("{name}_v{n}");
                }
                self.renames[i]
                    .entry(section)
                    .or_default()
                    .insert(name.to_owned(), candidate.clone());
                self.renamed.push(Renamed {
                    downstream: sources[i].name.clone(),
                    section,
                    from: name.to_owned(),
                    to: candidate.clone(),
                });
                candidate
            }
        };
        claimed.insert(merged_name.clone(), (i, name.to_owned()));
        self.order.entry(section).or_default().push((merged_name, (i, name.to_owned())));
    }
}

fn section_of<'s, 'a>(s: &'s Source<'a>, section: &str) -> &'s BTreeMap<String, Node<'a>> {
    if section == "definitions" { &s.definitions } else { &s.parameters }
}

/// The definitions and parameters `paths` reach in `s`, transitively.
fn reached(
    s: &Source<'_>,
    paths: &[(Text<'_>, Node<'_>)],
) -> BTreeMap<&'static str, BTreeSet<String>> {
    let mut found: BTreeMap<&'static str, BTreeSet<String>> =
        BTreeMap::from([("definitions", BTreeSet::new()), ("parameters", BTreeSet::new())]);
    let mut work: Vec<(&'static str, String)> = Vec::new();
    let mut note = |reference: &str, work: &mut Vec<(&'static str, String)>| {
        let Some((section, name)) = refs::local(reference) else { return };
        let section = match section {
            "definitions" => "definitions",
            "parameters" => "parameters",
            _ => return,
        };
        let map = if section == "definitions" { &s.definitions } else { &s.parameters };
        if map.contains_key(name.as_ref())
            && found.get_mut(section).is_some_and(|set| set.insert(name.to_string()))
        {
            work.push((section, name.into_owned()));
        }
    };
    for (_, item) in paths {
        refs::each(item, &mut |r| note(r, &mut work));
    }
    while let Some((section, name)) = work.pop() {
        let map = if section == "definitions" { &s.definitions } else { &s.parameters };
        if let Some(node) = map.get(&name) {
            let mut next = Vec::new();
            refs::each(node, &mut |r| note(r, &mut next));
            work.extend(next);
        }
    }
    found
}

/// The group-version-kinds a definition lists, as (group, version, kind).
fn kinds<'n>(def: &'n Node<'_>) -> Vec<(&'n str, &'n str, &'n str)> {
    def.get(GVK)
        .and_then(Node::as_array)
        .unwrap_or_default()
        .iter()
        .filter_map(|gvk| {
            let field = |f: &str| gvk.get(f).and_then(Node::as_str);
            Some((field("group")?, field("version")?, field("kind")?))
        })
        .collect()
}

fn owns(owners: &BTreeMap<String, Arc<str>>, group: &str, version: &str, name: &str) -> bool {
    owners.get(&GroupVersion::key_of(group, version)).is_some_and(|o| **o == *name)
}

fn owns_a_kind(def: &Node<'_>, name: &str, owners: &BTreeMap<String, Arc<str>>) -> bool {
    kinds(def).iter().any(|(g, v, _)| owns(owners, g, v, name))
}

/// Leaves each group-version-kind on one definition: its owner's, else
/// the first in `order`. Returns how many listings were dropped.
fn dedupe_kinds(
    definitions: &mut BTreeMap<String, Node<'_>>,
    order: &[(String, usize)],
    sources: &[Source<'_>],
    owners: &BTreeMap<String, Arc<str>>,
) -> usize {
    let mut holder: BTreeMap<(String, String, String), &str> = BTreeMap::new();
    for owned_first in [true, false] {
        for (name, i) in order {
            let Some(def) = definitions.get(name) else { continue };
            for (g, v, k) in kinds(def) {
                if owned_first && !owns(owners, g, v, &sources[*i].name) {
                    continue;
                }
                holder.entry((g.to_owned(), v.to_owned(), k.to_owned())).or_insert(name);
            }
        }
    }
    let mut dropped = 0;
    for (name, def) in definitions.iter_mut() {
        let Node::Object(o) = def else { continue };
        let Some(Node::Array(list)) = o.get_mut(GVK) else { continue };
        let before = list.len();
        list.retain(|gvk| {
            let field = |f: &str| gvk.get(f).and_then(Node::as_str).unwrap_or_default().to_owned();
            let key = (field("group"), field("version"), field("kind"));
            holder.get(&key).is_none_or(|h| *h == name.as_str())
        });
        dropped += before - list.len();
        if list.is_empty() && before > 0 {
            o.remove(GVK);
        }
    }
    dropped
}

fn sorted<'a>(map: BTreeMap<String, Node<'a>>) -> Node<'a> {
    let mut o = Object::with_capacity(map.len());
    for (k, v) in map {
        o.push_new(Text::from(k), v);
    }
    Node::Object(o)
}

#[cfg(test)]
mod tests;

//! The merged `/openapi/v2` made with one input document in memory at a
//! time (docs/wire.md, A-13). At 5,000 CRDs the inputs are 440 MiB plain;
//! holding every tree and the output at once took a GiB more.
//!
//! Two passes over the documents: the merge of their stand-ins
//! ([`super::skeleton`]), then each kept path item and definition taken
//! from its document again and written, in the merged order, straight
//! into the answer's gzip ([`GzipJoin`]), which is held gzipped only when
//! it is large.

use std::collections::BTreeMap;
use std::sync::Arc;

use actix_web::http::header::HeaderValue;

use super::merge::{self, Merged, Provenance, Renamed, Renames, Source};
use super::{V2Error, down, skeleton};
use crate::body::rendered::{GzipJoin, Piece, Rendered};
use crate::json::tree::{Node, parse_within};

/// The merged document and what the merge had to settle.
#[derive(Debug)]
pub struct Assembled {
    /// The Swagger 2.0 document, as JSON.
    pub json: Rendered,
    /// Definitions and parameters renamed on a clash.
    pub renamed: Vec<Renamed>,
    /// Group-version-kinds dropped from a definition because another
    /// lists them.
    pub kinds_dropped: usize,
}

/// The merge of `inputs`, highest priority first, with `owners`
/// (group-version key → downstream name) deciding whose paths of a
/// group-version are kept; an input whose documents cannot take part is
/// left out and told to `left_out`. `None` when nothing is left to merge.
///
/// # Errors
/// [`AssembleError`] when a document read again does not give what its
/// first reading did (memory corrupted).
pub fn merged(
    inputs: Vec<Input>,
    owners: &BTreeMap<String, Arc<str>>,
    mut left_out: impl FnMut(&str, AssembleError),
) -> Option<Result<Assembled, AssembleError>> {
    let mut kept: Vec<(Input, Option<Provenance>)> = Vec::new();
    let mut sources: Vec<Source<'static>> = Vec::new();
    for input in inputs {
        match input.source() {
            Ok((source, inner)) => {
                sources.push(source);
                kept.push((input, inner));
            }
            Err(e) => left_out(&input.name, e),
        }
    }
    let merged = merge::merge(sources, owners)?;
    let json = put_together(&merged, &kept);
    Some(json.map(|json| Assembled {
        json,
        renamed: merged.renamed,
        kinds_dropped: merged.kinds_dropped,
    }))
}

/// What an input's stand-ins may hold at most, per byte of its documents'
/// plain size (Kubernetes 1.35's Swagger: 0.35 bytes a byte, its many
/// path items naming shared parameters; CRDs converted down: about 0.12).
/// An input past it is left out: a document of tiny path items full of
/// `$ref`s makes stand-ins several times its size.
const STAND_INS_AT_MOST: usize = 2;

/// What making the merged `/openapi/v2` holds at its peak, estimated from
/// its inputs (see [`merged`]), added up one input document at a time:
/// its gzip (a quarter more than the inputs hold gzipped: runs compress a
/// little less well than whole documents; measured 0.9 at 5,000 CRDs,
/// whose v3 documents shrink as they are converted down), the stand-ins
/// and the merge's own state (a sixth of the inputs' plain size), and one
/// document at a time read, parsed and converted down (four times its
/// plain size).
#[derive(Debug, Default, Clone, Copy)]
pub struct MakingCost {
    /// What the inputs hold gzipped.
    gzip: usize,
    stand_ins: usize,
    largest: usize,
}

impl MakingCost {
    /// Plain bytes per byte of stand-ins and merge state, at the least
    /// (measured 6.2 at 5,000 CRDs: `examples/merge_v2.rs`).
    const PLAIN_PER_STAND_IN_BYTE: usize = 6;
    /// What a small document's stand-ins may hold whatever its size: a
    /// few dozen small definitions and path items.
    const STAND_INS_AT_LEAST: usize = 64 * 1024;
    /// What reading one document holds, per byte of it: its plain bytes,
    /// its tree, its tree converted down and its stand-ins.
    const ONE_DOCUMENT_PER_BYTE: usize = 4;

    /// The cost of making it from `documents`.
    #[must_use]
    pub fn of<'a>(documents: impl IntoIterator<Item = &'a Rendered>) -> Self {
        let mut cost = Self::default();
        for r in documents {
            cost.add(r);
        }
        cost
    }

    /// Counts one more input document.
    pub fn add(&mut self, r: &Rendered) {
        let gzip = r.gzip.as_ref().map_or(r.len(), bytes::Bytes::len);
        self.gzip = self.gzip.saturating_add(gzip);
        let stand_ins = (r.len() / Self::PLAIN_PER_STAND_IN_BYTE).max(Self::STAND_INS_AT_LEAST);
        self.stand_ins = self.stand_ins.saturating_add(stand_ins);
        self.largest = self.largest.max(r.len());
    }

    /// The room reserved for the answer's gzip ([`put_together`]): half
    /// as much again as the inputs hold gzipped, so that it is not moved
    /// as it grows. Untouched, the reserve beyond the answer costs
    /// nothing.
    fn answer_room(self) -> usize {
        self.gzip.saturating_add(self.gzip / 2)
    }

    /// The peak, in bytes.
    #[must_use]
    pub fn peak(self) -> u64 {
        let peak = self
            .gzip
            .saturating_add(self.gzip / 4)
            .saturating_add(self.stand_ins)
            .saturating_add(self.largest.saturating_mul(Self::ONE_DOCUMENT_PER_BYTE));
        u64::try_from(peak).unwrap_or(u64::MAX)
    }
}

/// What one downstream brings to `/openapi/v2`: its own, or its OpenAPI
/// v3 documents, each converted down.
pub struct Input {
    /// The downstream's name.
    pub name: String,
    /// By key; the one `openapi/v2` when `is_v2`.
    pub docs: Vec<(String, Arc<Rendered>)>,
    /// Whether it brings its own Swagger 2.0 document.
    pub is_v2: bool,
}

impl Input {
    /// Document `j`'s key and plain bytes.
    fn read(&self, j: usize) -> Result<(&str, bytes::Bytes), AssembleError> {
        let (key, rendered) = self.docs.get(j).ok_or(AssembleError::Missing)?;
        let bytes =
            rendered.plain().map_err(|source| AssembleError::Read { key: key.clone(), source })?;
        Ok((key, bytes))
    }

    /// A document as a Swagger 2.0 tree borrowing `bytes`.
    fn tree<'b>(&self, key: &str, bytes: &'b [u8]) -> Result<Node<'b>, AssembleError> {
        // Already read within the downstream's share by its poller.
        let tree = parse_within(bytes, usize::MAX)
            .map_err(|source| AssembleError::Json { key: key.to_owned(), source })?;
        if self.is_v2 {
            return Ok(tree);
        }
        down::down_convert(tree)
            .map_err(|source| AssembleError::from(V2Error::Down { key: key.to_owned(), source }))
    }

    /// Its source for the merge, made of stand-ins, and where the
    /// members of its documents went when it has several.
    fn source(&self) -> Result<(Source<'static>, Option<Provenance>), AssembleError> {
        let mut skeletons = Vec::with_capacity(self.docs.len());
        let mut strings = skeleton::Strings::default();
        let allowed = self.docs.iter().fold(0usize, |sum, (_, r)| {
            sum.saturating_add((r.len() / STAND_INS_AT_MOST).max(MakingCost::STAND_INS_AT_LEAST))
        });
        for j in 0..self.docs.len() {
            let (key, bytes) = self.read(j)?;
            let stand_ins = skeleton::skeleton(&self.tree(key, &bytes)?, &mut strings);
            let held = strings.held();
            if held > allowed {
                return Err(AssembleError::StandIns { key: key.to_owned(), held, allowed });
            }
            skeletons.push(stand_ins);
        }
        if self.is_v2 {
            let doc = skeletons.pop().unwrap_or(Node::Null);
            return Ok((Source::new(self.name.clone(), doc).map_err(V2Error::from)?, None));
        }
        let (source, inner) = super::joined(&self.name, skeletons).map_err(V2Error::from)?;
        Ok((source, Some(inner)))
    }
}

/// The merged document `merged` (made of stand-ins) as it would have been
/// made of the documents: every real member taken from its document and
/// given the renames and kinds of its stand-in, written in the merged
/// document's order straight into its gzip. A document's members that are
/// next to each other there are a *run*, compressed together; a
/// document's runs of one section are made when it is read for the first
/// of them, those not due yet kept compressed until their turn.
fn put_together(
    merged: &Merged<'static>,
    inputs: &[(Input, Option<Provenance>)],
) -> Result<Rendered, AssembleError> {
    let Node::Object(top) = &merged.doc else { return Err(AssembleError::Missing) };
    let runs = runs(merged, inputs)?;
    // A document is read once per section it has members in: holding the
    // runs of a later section compressed until their turn (at 5,000 CRDs,
    // every kind's schema while the paths are written) held as much again
    // as the answer.
    let mut by_document: BTreeMap<((usize, usize), Section), Vec<usize>> = BTreeMap::new();
    for (r, run) in runs.iter().enumerate() {
        by_document.entry((run.document, run.section)).or_default().push(r);
    }
    // Reserved, not touched: pages never written cost nothing.
    let room = MakingCost::of(inputs.iter().flat_map(|(input, _)| &input.docs).map(|(_, r)| &**r))
        .answer_room();
    let mut join = GzipJoin::with_capacity(room);
    let mut ahead: BTreeMap<usize, Piece> = BTreeMap::new();
    let mut next = 0;
    let mut text = Vec::new();
    join.push(b"{");
    for (n, (key, value)) in top.iter().enumerate() {
        text.clear();
        if n > 0 {
            text.push(b',');
        }
        let Some(section) = Section::of(key.as_str()) else {
            skeleton::member(key.as_str(), value, &mut text);
            join.push(&text);
            continue;
        };
        Node::String(key.clone()).render(&mut text);
        text.extend_from_slice(b":{");
        join.push(&text);
        while runs.get(next).is_some_and(|run| run.section == section) {
            match ahead.remove(&next) {
                Some(piece) => join.push_piece(piece),
                None => {
                    let document = runs[next].document;
                    let of_document =
                        by_document.get(&(document, section)).map_or(&[][..], Vec::as_slice);
                    let made = make_runs(merged, inputs, &runs, document, of_document)?;
                    for (r, plain) in made {
                        if r == next {
                            join.push(&plain);
                        } else {
                            ahead.insert(r, Piece::new(&plain));
                        }
                    }
                }
            }
            next += 1;
        }
        join.push(b"}");
    }
    join.push(b"}");
    let json =
        join.finish(HeaderValue::from_static("application/json")).ok_or(AssembleError::TooLarge)?;
    if json.inflates_while_written() {
        return Ok(json);
    }
    // Small enough to be held as every other document is, hashed whole.
    let plain = json
        .plain()
        .map_err(|source| AssembleError::Read { key: "/openapi/v2".to_owned(), source })?;
    Ok(Rendered::document(plain))
}

/// The sections of a Swagger 2.0 document whose members are stand-ins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Section {
    Definitions,
    Paths,
}

impl Section {
    /// The section a top-level key names, if it is one.
    fn of(key: &str) -> Option<Self> {
        [Self::Definitions, Self::Paths].into_iter().find(|s| s.key() == key)
    }

    fn key(self) -> &'static str {
        match self {
            Self::Definitions => "definitions",
            Self::Paths => "paths",
        }
    }
}

/// Members of one section of the merged document, next to each other
/// there, all from one document.
struct Run<'m> {
    section: Section,
    /// (input, document of the input).
    document: (usize, usize),
    /// (name in the document, name in the merged one, place in the section).
    members: Vec<(String, &'m str, usize)>,
}

/// Every run of the merged document, in its order.
fn runs<'m>(
    merged: &'m Merged<'static>,
    inputs: &[(Input, Option<Provenance>)],
) -> Result<Vec<Run<'m>>, AssembleError> {
    let prov = &merged.provenance;
    let inner_of = |i: usize| inputs.get(i).map(|(_, p)| p.as_ref()).ok_or(AssembleError::Missing);
    let mut runs: Vec<Run<'m>> = Vec::new();
    let Node::Object(top) = &merged.doc else { return Err(AssembleError::Missing) };
    for (key, value) in top {
        let (Some(section), Node::Object(members)) = (Section::of(key.as_str()), value) else {
            continue;
        };
        for (place, name) in members.keys().enumerate() {
            let to = name.as_str();
            let (document, from) = match section {
                Section::Definitions => {
                    let (i, from) = prov.definitions.get(to).ok_or(AssembleError::Missing)?;
                    match inner_of(*i)? {
                        Some(inner) => {
                            let (j, name) =
                                inner.definitions.get(from).ok_or(AssembleError::Missing)?;
                            ((*i, *j), name.clone())
                        }
                        None => ((*i, 0), from.clone()),
                    }
                }
                Section::Paths => {
                    let i = *prov.paths.get(to).ok_or(AssembleError::Missing)?;
                    let j = match inner_of(i)? {
                        Some(inner) => *inner.paths.get(to).ok_or(AssembleError::Missing)?,
                        None => 0,
                    };
                    ((i, j), to.to_owned())
                }
            };
            match runs.last_mut() {
                Some(run) if run.section == section && run.document == document => {
                    run.members.push((from, to, place));
                }
                _ => runs.push(Run { section, document, members: vec![(from, to, place)] }),
            }
        }
    }
    Ok(runs)
}

/// Reads `document` once and renders its runs `of_document` (indexes into
/// `runs`): each run's text, its members restored from their stand-ins.
fn make_runs(
    merged: &Merged<'static>,
    inputs: &[(Input, Option<Provenance>)],
    runs: &[Run<'_>],
    (i, j): (usize, usize),
    of_document: &[usize],
) -> Result<Vec<(usize, Vec<u8>)>, AssembleError> {
    let (input, inner) = inputs.get(i).ok_or(AssembleError::Missing)?;
    let (key, bytes) = input.read(j)?;
    let Node::Object(mut doc) = input.tree(key, &bytes)? else {
        return Err(AssembleError::Missing);
    };
    let renames: Vec<&Renames> = inner
        .iter()
        .filter_map(|p| p.renames.get(j))
        .chain(merged.provenance.renames.get(i))
        .collect();
    let stand_ins = merged.doc.get("definitions");
    let mut made = Vec::with_capacity(of_document.len());
    for &r in of_document {
        let run = runs.get(r).ok_or(AssembleError::Missing)?;
        let mut text = Vec::new();
        for (from, to, place) in &run.members {
            let node = match doc.get_mut(run.section.key()) {
                Some(Node::Object(o)) => o.remove(from),
                _ => None,
            }
            .ok_or(AssembleError::Missing)?;
            let stand_in = match run.section {
                Section::Definitions => stand_ins.and_then(|d| d.get(to)),
                Section::Paths => None,
            };
            let node = skeleton::restore(node, stand_in, &renames);
            if *place > 0 {
                text.push(b',');
            }
            skeleton::member(to, &node, &mut text);
        }
        made.push((r, text));
    }
    Ok(made)
}

/// Why a downstream's documents were left out of `/openapi/v2`, or the
/// merged document could not be put together.
#[derive(Debug, thiserror::Error)]
pub enum AssembleError {
    #[error("{key} could not be read")]
    Read {
        key: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "its stand-ins would hold {held} bytes by {key}, more than the {allowed} its documents' size allows (documents of little but references)"
    )]
    StandIns { key: String, held: usize, allowed: usize },
    #[error("a member the merge kept is not in its document")]
    Missing,
    #[error("the merged document is over 4 GiB")]
    TooLarge,
    #[error("{key} is not JSON")]
    Json {
        key: String,
        #[source]
        source: crate::json::tree::SyntaxError,
    },
    #[error(transparent)]
    Merge(#[from] V2Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(name: &str, doc: &serde_json::Value) -> Input {
        let json = Arc::new(Rendered::document(serde_json::to_vec(doc).unwrap()));
        Input { name: name.to_owned(), docs: vec![("openapi/v2".to_owned(), json)], is_v2: true }
    }

    /// A document of little but references (20,000 tiny path items, each
    /// naming its own definition) would make stand-ins several times its
    /// size, past what the merge's bound counts: it is left out, saying
    /// why, and the others are merged.
    #[test]
    fn a_document_of_little_but_references_is_left_out() {
        let paths: serde_json::Map<String, serde_json::Value> = (0..20_000)
            .map(|i| {
                let item = serde_json::json!({"get": {"responses": {"200": {"schema":
                    {"$ref": format!("#/definitions/D{i}")}}}}});
                (format!("/p{i}"), item)
            })
            .collect();
        let hostile =
            input("hostile", &serde_json::json!({"swagger": "2.0", "info": {}, "paths": paths}));
        let honest = input(
            "honest",
            &serde_json::json!({"swagger": "2.0", "info": {}, "paths": {"/apis/a/v1/x": {}},
                "definitions": {"A": {"type": "object"}}}),
        );
        let mut left = Vec::new();
        let made = merged(vec![hostile, honest], &BTreeMap::new(), |name, e| {
            left.push((name.to_owned(), e.to_string()));
        });
        let made = made.expect("the honest one").expect("made");
        assert_eq!(left.len(), 1, "{left:?}");
        assert_eq!(left[0].0, "hostile");
        assert!(left[0].1.contains("stand-ins"), "{}", left[0].1);
        let doc: serde_json::Value = serde_json::from_slice(&made.json.plain().unwrap()).unwrap();
        assert_eq!(doc["paths"].as_object().unwrap().len(), 1);
        assert!(doc["definitions"].get("A").is_some());
    }
}

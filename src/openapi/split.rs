//! Splitting a whole document into one self-contained document per
//! [`DocumentKey`].
//!
//! Kubernetes publishes OpenAPI v3 per group-version; an aggregated server
//! that only has `/openapi/v2` hands over one document for everything it
//! serves. [`split`] cuts such a document (Swagger 2.0, or its OpenAPI 3.0
//! conversion) by the key of each path and gives every part exactly the
//! components it reaches — the transitive closure of its local `$ref`s — so
//! each part is valid on its own and no larger than it needs to be.
//!
//! Invariant (checked by the tests and the property test below): every local
//! `$ref` in an output document resolves inside that same document.
//!
//! How the work is shared between keys: the whole input is walked once —
//! each component, each path and each member that every output keeps — and
//! every walk records the node's direct references as edges of a graph.
//! Each key then only runs a breadth-first search over that graph, so a
//! schema such as `ObjectMeta`, reached by almost every group-version, is
//! walked once rather than once per key, and only what lands in an output is
//! cloned.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Range;

use serde_json::Value;

use crate::json::tree::render::{text_len, write_key};
use crate::json::tree::{Node, Object, Text};

use crate::json::pointer::{JsonPointer, fragment_pointer, unescape_token};
use crate::wire::key::DocumentKey;

/// The documents a whole document splits into.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Split {
    /// One document per key, in key order.
    pub documents: BTreeMap<DocumentKey, Value>,
    /// Paths that belong to no key (`/`, or a first segment that is a
    /// template such as `/{id}`); they appear in no document.
    pub unplaced: Vec<String>,
}

/// Why a document could not be split.
#[derive(Debug, thiserror::Error)]
pub enum SplitError {
    /// The document is neither Swagger 2.0 (`swagger: "2.0"`) nor OpenAPI
    /// 3.0 (`openapi: "3.0.x"`).
    #[error("neither Swagger 2.0 nor OpenAPI 3.0")]
    UnknownFormat,
    /// A local `$ref` names a component the document does not have.
    #[error("reference {reference} at {at} points to nothing")]
    UnresolvedRef {
        /// The `$ref` value.
        reference: String,
        /// Where the `$ref` stands in the input document.
        at: JsonPointer,
    },
    /// The documents would add up to more bytes than the caller allows:
    /// refused before any is rendered.
    #[error(
        "the {documents} documents would take {expected} bytes, more than the {limit} bytes allowed"
    )]
    TooLarge {
        /// How many documents the split makes.
        documents: usize,
        /// Their bytes, all together.
        expected: usize,
        /// The most allowed.
        limit: usize,
    },
}

/// Splits `doc` into one document per key of its paths.
///
/// Every output keeps all top-level members of `doc` in their order, with
/// `paths` cut down to the paths of its key (in input order) and each
/// component section (v2: `definitions`, `parameters`, `responses`; v3: the
/// same under `components`, plus `requestBodies`, `headers`, `examples`,
/// `links`, `callbacks`) cut down to the components reachable by local
/// `$ref`s. A section left empty is omitted; v3 `components` itself stays,
/// as Kubernetes always emits it. Security schemes are kept whole because
/// `security` names them without a `$ref`.
///
/// Reachability starts from the key's paths and from everything every
/// output keeps whole (`info`, `x-` extensions, security schemes, …): a
/// `$ref` there appears in every output, so its target must too. A `$ref`
/// into a component (`#/definitions/A/properties/b`) keeps all of `A`; a
/// `$ref` to a whole section (`#/definitions`) keeps that section even if
/// nothing in it is reached; a `$ref` to anything else kept whole needs
/// nothing more. Non-local references (`other.json#/x`, URLs) are left
/// alone.
///
/// A document without a `paths` object splits into nothing.
///
/// # Errors
/// [`SplitError::UnknownFormat`] when `doc` is not an object with
/// `swagger: "2.0"` or an `openapi` version `3.0`/`3.0.x`.
/// [`SplitError::UnresolvedRef`] when a local `$ref` reachable from some
/// output points to nothing in `doc`, or points into a path that belongs to
/// another output (the part would not be self-contained, and copying a
/// foreign path into it would publish an operation under the wrong key).
pub fn split(doc: &Value) -> Result<Split, SplitError> {
    let tree = Node::from_value(doc);
    let (documents, unplaced) = split_with(
        &tree,
        None,
        usize::MAX,
        &mut Fragments::default(),
        |_, index, paths, indices, reach, _| index.document(paths, indices, reach).to_value(),
    )?;
    Ok(Split { documents, unplaced })
}

/// The documents a whole tree splits into, as trees that share strings
/// with it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TreeSplit<'a> {
    /// One document per key, in key order.
    pub documents: BTreeMap<DocumentKey, Node<'a>>,
    /// Paths that belong to no key; they appear in no document.
    pub unplaced: Vec<String>,
}

/// [`split`] over a [`Node`] tree (the one implementation; `split` borrows
/// its `Value` as a tree), for callers that render the parts rather than
/// look into them.
///
/// # Errors
/// As [`split`].
pub fn split_tree<'a>(doc: &'a Node<'a>) -> Result<TreeSplit<'a>, SplitError> {
    let (documents, unplaced) = split_with(
        doc,
        None,
        usize::MAX,
        &mut Fragments::default(),
        |_, index, paths, indices, reach, _| index.document(paths, indices, reach),
    )?;
    Ok(TreeSplit { documents, unplaced })
}

/// The documents a whole document splits into, already serialized.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RenderedSplit {
    /// One compact JSON document per key, in key order; each is byte for
    /// byte what `serde_json::to_vec` gives for the same key's document
    /// from [`split`].
    pub documents: BTreeMap<DocumentKey, Vec<u8>>,
    /// Paths that belong to no key; they appear in no document.
    pub unplaced: Vec<String>,
}

/// [`split`], but straight to bytes: what a server publishes and what
/// `convert --out` writes.
///
/// Most components are shared by many outputs (`ObjectMeta` by almost every
/// group-version): cloning them into each output tree and serializing each
/// tree costs the sum of the outputs, which for Kubernetes is several times
/// the input. Here every component and every member kept whole is
/// serialized once, on first use, and each output is assembled from those
/// bytes.
///
/// # Errors
/// As [`split`].
pub fn split_rendered(doc: &Value) -> Result<RenderedSplit, SplitError> {
    split_rendered_tree(&Node::from_value(doc))
}

/// [`split_rendered`] over a [`Node`] tree: what `convert --out` uses, on
/// the tree it parsed and converted without building a `Value`.
///
/// # Errors
/// As [`split`].
pub fn split_rendered_tree(doc: &Node<'_>) -> Result<RenderedSplit, SplitError> {
    let mut documents = BTreeMap::new();
    let unplaced = split_rendered_each(doc, 0, usize::MAX, |key, bytes| {
        documents.insert(key.clone(), bytes.to_vec());
    })?;
    Ok(RenderedSplit { documents, unplaced })
}

/// [`split_rendered_tree`], handing each document to `each` (in key order)
/// as soon as it is rendered, from one buffer reused for all of them,
/// instead of keeping them all: `convert --out` writes each to its file and
/// never holds the 5 MB of output at once. Returns the paths that belong
/// to no key.
///
/// Nothing is handed out when splitting fails: every key's components are
/// worked out before the first document is rendered.
///
/// `size_hint` is about how many bytes `doc` renders to (the length of the
/// text it was parsed from will do; 0 when unknown). The shared fragments
/// and the output buffer start at a share of it (see [`FRAGMENTS_SHARE`]
/// and [`OUTPUT_SHARE`]) instead of doubling their way up: on the 1.27
/// document the abandoned smaller buffers raised the peak resident size
/// from 36 to 46 MB, and every megabyte touched is a megabyte the kernel
/// zeroes.
///
/// `max_output` bounds the bytes of all documents together. A document
/// whose one large component is reached from every key multiplies on the
/// way out (1 MB reached from 3,000 group-versions is 3 GB), so the sizes
/// are added up from the components' lengths before anything is rendered,
/// and a split past the bound is refused whole ([`SplitError::TooLarge`]).
///
/// # Errors
/// As [`split`]; [`SplitError::TooLarge`] past `max_output`.
pub fn split_rendered_each(
    doc: &Node<'_>,
    size_hint: usize,
    max_output: usize,
    each: impl FnMut(&DocumentKey, &[u8]),
) -> Result<Vec<String>, SplitError> {
    split_rendered_each_hinted(doc, None, size_hint, max_output, each)
}

/// The share of the size hint the shared fragments take at first
/// (numerator, denominator): what a document's components render to.
/// Kubernetes' are a fifth of its Swagger (743 KB of 1.27's 4.0 MB); a
/// document with more grows the buffer once or twice. Reserving more than
/// is written costs no memory, but the allocator places a large block
/// past the pages in use, and each fresh 2 MiB the buffer reaches is a
/// transparent huge page the kernel zeroes whole: reserving the whole
/// hint, `convert` of 1.27 touched one more.
const FRAGMENTS_SHARE: (usize, usize) = (1, 4);

/// The share of the size hint the output buffer takes at first: the
/// largest document of a split, Kubernetes' core group (1.2 MB of 1.27's
/// 4.0 MB, three tenths); a bigger one grows it once.
const OUTPUT_SHARE: (usize, usize) = (3, 8);

/// [`split_rendered_each`] of a tree whose builder recorded the references
/// under some of its objects (`hints`, see [`RefHints`]): those are not
/// walked again. The documents are the same with or without hints.
///
/// # Errors
/// As [`split_rendered_each`].
pub fn split_rendered_each_hinted<'a>(
    doc: &'a Node<'a>,
    hints: Option<&'a RefHints<'a>>,
    size_hint: usize,
    max_output: usize,
    mut each: impl FnMut(&DocumentKey, &[u8]),
) -> Result<Vec<String>, SplitError> {
    // Both buffers are taken when first written to, after the split's
    // bookkeeping: its many small allocations then fill the pages the
    // converted tree began, instead of fresh ones beyond the buffers.
    let mut fragments = Fragments {
        reserve: size_hint / FRAGMENTS_SHARE.1 * FRAGMENTS_SHARE.0,
        ..Fragments::default()
    };
    let mut scratch = Vec::new();
    let (_, unplaced) = split_with(
        doc,
        hints,
        max_output,
        &mut fragments,
        |key, index, paths, indices, reach, fragments| {
            if scratch.capacity() == 0 {
                scratch.reserve(size_hint / OUTPUT_SHARE.1 * OUTPUT_SHARE.0);
            }
            scratch.clear();
            index.render(paths, indices, reach, fragments, &mut scratch);
            each(key, &scratch);
        },
    )?;
    Ok(unplaced)
}

/// The splitting shared by [`split`] and [`split_rendered`]: which paths
/// and components each key gets; `emit` turns that into an output. The
/// outputs' rendered sizes together must not pass `max_output` (checked
/// before the first is emitted; `usize::MAX` skips the check). The check
/// serializes the shared parts into `fragments`, where rendering finds
/// them, so sizing costs little more than rendering does anyway.
fn split_with<'a, T>(
    doc: &'a Node<'a>,
    hints: Option<&'a RefHints<'a>>,
    max_output: usize,
    fragments: &mut Fragments,
    mut emit: impl FnMut(
        &DocumentKey,
        &Index<'a>,
        &[(&'a Text<'a>, &'a Node<'a>)],
        &[usize],
        &Reach,
        &mut Fragments,
    ) -> T,
) -> Result<(BTreeMap<DocumentKey, T>, Vec<String>), SplitError> {
    let root = doc.as_object().ok_or(SplitError::UnknownFormat)?;
    let format = Format::detect(root).ok_or(SplitError::UnknownFormat)?;
    let Some(paths) = root.get("paths").and_then(Node::as_object) else {
        return Ok((BTreeMap::new(), Vec::new()));
    };

    let path_entries: Vec<(&'a Text<'a>, &'a Node<'a>)> = paths.iter().collect();
    let mut by_key: BTreeMap<DocumentKey, Vec<usize>> = BTreeMap::new();
    let mut unplaced = Vec::new();
    for (i, (path, _)) in path_entries.iter().enumerate() {
        match DocumentKey::from_path(path) {
            Some(key) => by_key.entry(key).or_default().push(i),
            None => unplaced.push(path.to_string()),
        }
    }
    if by_key.is_empty() {
        // Nothing is published, so nothing is reachable and no reference
        // can be at fault.
        return Ok((BTreeMap::new(), unplaced));
    }

    // Which key (by its position in `by_key`) owns each path, to judge
    // `$ref`s that point into `paths`.
    let mut path_owner: Vec<Option<usize>> = vec![None; path_entries.len()];
    for (ordinal, indices) in by_key.values().enumerate() {
        for &i in indices {
            if let Some(owner) = path_owner.get_mut(i) {
                *owner = Some(ordinal);
            }
        }
    }

    let index = Index::new(doc, root, format, paths);
    let graph = Graph::build(&index, hints, &path_entries, &path_owner);

    // Every key's reach first, so that an error leaves nothing emitted:
    // `split_rendered_each` hands documents out as they are made.
    let reaches = by_key
        .values()
        .enumerate()
        .map(|(ordinal, indices)| graph.reach(ordinal, indices, &path_owner))
        .collect::<Result<Vec<_>, _>>()?;
    if max_output != usize::MAX {
        let expected = index.output_len(&path_entries, by_key.values(), &reaches, fragments);
        if expected > max_output {
            return Err(SplitError::TooLarge {
                documents: by_key.len(),
                expected,
                limit: max_output,
            });
        }
    }
    let mut documents = BTreeMap::new();
    for ((key, indices), reach) in by_key.into_iter().zip(&reaches) {
        let out = emit(&key, &index, &path_entries, &indices, reach, fragments);
        documents.insert(key, out);
    }
    Ok((documents, unplaced))
}

/// The two input formats; they differ only in where the components live.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Swagger2,
    OpenApi3,
}

/// Swagger 2.0 component sections, top-level maps.
const V2_SECTIONS: &[&str] = &["definitions", "parameters", "responses"];

/// OpenAPI 3.0 component sections reduced per output, under `components`.
/// `securitySchemes` is deliberately absent: it is kept whole.
const V3_SECTIONS: &[&str] = &[
    "schemas",
    "parameters",
    "responses",
    "requestBodies",
    "headers",
    "examples",
    "links",
    "callbacks",
];

impl Format {
    fn detect(root: &Object<'_>) -> Option<Self> {
        if root.get("swagger").and_then(Node::as_str) == Some("2.0") {
            return Some(Self::Swagger2);
        }
        // `3.0` or `3.0.<patch>`; 3.1 changed schemas enough that splitting
        // it with 3.0's rules would be a guess.
        let v3 = root
            .get("openapi")
            .and_then(Node::as_str)
            .is_some_and(|v| v == "3.0" || v.starts_with("3.0."));
        v3.then_some(Self::OpenApi3)
    }
}

/// One segment of the location of a node inside the input, kept while
/// walking so that a pointer is built only when an error needs one.
#[derive(Clone, Copy)]
enum Token<'a> {
    Key(&'a str),
    Index(usize),
}

fn to_pointer(tokens: &[Token<'_>]) -> JsonPointer {
    tokens.iter().fold(JsonPointer::root(), |p, t| match *t {
        Token::Key(k) => p.push(k),
        Token::Index(i) => p.index(i),
    })
}

/// A component section that is reduced per output: it exists in the input
/// and is an object. A section of any other type cannot be cut by name, so
/// it is kept whole like any other member.
struct Section {
    name: &'static str,
    /// The ids of its components, which are numbered in section order.
    ids: Range<usize>,
}

/// One named entry of a reducible section.
#[derive(Clone, Copy)]
struct Component<'a> {
    section: usize,
    name: &'a Text<'a>,
    value: &'a Node<'a>,
}

/// What a local `$ref` points to, as far as splitting cares.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Target {
    /// Into (or exactly at) a component: the whole component is needed.
    Component(usize),
    /// A whole reducible section: the section must exist in the output.
    Section(usize),
    /// Into a path item: only the output owning that path has it.
    Path(usize),
    /// Into something every output keeps (or a container every output
    /// has, such as `paths` or v3 `components`).
    Kept,
    /// Nothing in the input.
    Missing,
}

/// Read-only facts about the input: its format, its reducible sections and
/// components, and how to resolve a reference.
struct Index<'a> {
    doc: &'a Node<'a>,
    root: &'a Object<'a>,
    format: Format,
    sections: Vec<Section>,
    components: Vec<Component<'a>>,
    /// (section, name) → component id. Hashed (see [`Hashed`]): an
    /// ordered map compared the names' long shared prefixes
    /// (`io.k8s.api.`) at every step of each of the 600 insertions and
    /// each lookup.
    lookup: Hashed<(usize, &'a str), usize>,
    /// Path → its position in `paths`.
    path_ids: BTreeMap<&'a str, usize>,
}

impl<'a> Index<'a> {
    fn new(doc: &'a Node<'a>, root: &'a Object<'a>, format: Format, paths: &'a Object<'a>) -> Self {
        let container = match format {
            Format::Swagger2 => Some(root),
            Format::OpenApi3 => root.get("components").and_then(Node::as_object),
        };
        let names = match format {
            Format::Swagger2 => V2_SECTIONS,
            Format::OpenApi3 => V3_SECTIONS,
        };
        let mut sections = Vec::new();
        let mut components = Vec::new();
        let mut lookup = Hashed::new();
        // Sections in the input's order, so that component ids (and hence
        // output order within a section) follow the input.
        for (name, value) in container.into_iter().flatten() {
            let Some(&name) = names.iter().find(|n| **n == name.as_str()) else { continue };
            let Some(map) = value.as_object() else { continue };
            let section = sections.len();
            let start = components.len();
            lookup.reserve(map.len());
            for (component, value) in map {
                lookup.insert((section, component.as_str()), components.len());
                components.push(Component { section, name: component, value });
            }
            sections.push(Section { name, ids: start..components.len() });
        }
        let path_ids = paths.keys().enumerate().map(|(i, p)| (p.as_str(), i)).collect();
        Self { doc, root, format, sections, components, lookup, path_ids }
    }

    /// The component a pointer names whole (`/definitions/<name>`,
    /// `/components/schemas/<name>`), when `lookup` has it; `tokens` are
    /// its first three, unescaped.
    ///
    /// Nearly every reference is one; finding it by name here spares
    /// [`Node::pointer`] a walk through the section's members (600
    /// definitions for Kubernetes) for each reference resolved.
    fn whole_component(&self, pointer: &str, tokens: &[Cow<'_, str>]) -> Option<usize> {
        let depth = match self.format {
            Format::Swagger2 => 2,
            Format::OpenApi3 => 3,
        };
        if tokens.len() != depth || pointer.split('/').count() != depth + 1 {
            return None;
        }
        let (section, name) = match (self.format, tokens) {
            (Format::Swagger2, [section, name]) => (section, name),
            (Format::OpenApi3, [components, section, name]) if components == "components" => {
                (section, name)
            }
            _ => return None,
        };
        self.named(section, name)
    }

    /// The component a reference of the usual shape names whole
    /// (`#/components/<section>/<name>`, `#/<section>/<name>` in Swagger
    /// 2.0) when its name needs no decoding (no `%`, `~` or `/`), found
    /// without building its pointer and tokens: all but a few references
    /// of a document. `None` sends any other reference, or a name not
    /// found, the long way, which gives the same answer for these.
    fn plain_component(&self, reference: &str) -> Option<usize> {
        let rest = reference.strip_prefix("#/")?;
        let rest = match self.format {
            Format::Swagger2 => rest,
            Format::OpenApi3 => rest.strip_prefix("components/")?,
        };
        let (section, name) = rest.split_once('/')?;
        if name.bytes().any(|b| matches!(b, b'/' | b'~' | b'%')) {
            return None;
        }
        self.named(section, name)
    }

    /// Component `name` of the reducible section called `section`.
    fn named(&self, section: &str, name: &str) -> Option<usize> {
        let section = self.section(section)?;
        self.lookup.get(&(section, name)).copied()
    }

    fn section(&self, name: &str) -> Option<usize> {
        self.sections.iter().position(|s| s.name == name)
    }

    /// The location prefix of a component, for error pointers.
    fn component_location(&self, component: Component<'a>) -> Vec<Token<'a>> {
        let section = self.sections.get(component.section).map_or("", |s| s.name);
        match self.format {
            Format::Swagger2 => vec![Token::Key(section), Token::Key(component.name)],
            Format::OpenApi3 => {
                vec![Token::Key("components"), Token::Key(section), Token::Key(component.name)]
            }
        }
    }

    /// Resolves a local reference (`#/…`) as an RFC 6901 pointer into the
    /// whole input and says what it lands on.
    ///
    /// The fragment is percent-decoded first (RFC 6901 §6): the converter
    /// writes characters a URI fragment does not allow encoded. Kubernetes'
    /// references have no `%`, and then nothing is copied.
    fn resolve(&self, reference: &str) -> Target {
        match self.plain_component(reference) {
            Some(component) => Target::Component(component),
            None => self.resolve_pointer(reference),
        }
    }

    /// [`Index::resolve`] by the pointer the reference holds, decoded.
    fn resolve_pointer(&self, reference: &str) -> Target {
        let Some(pointer) = reference.strip_prefix('#').and_then(fragment_pointer) else {
            return Target::Missing;
        };
        // Only the first three tokens decide.
        let tokens: Vec<Cow<'_, str>> =
            pointer.split('/').skip(1).take(3).map(unescape_token).collect();
        if let Some(component) = self.whole_component(&pointer, &tokens) {
            // In `lookup`, so it is there: no walk of its section by name.
            return Target::Component(component);
        }
        if self.doc.pointer(&pointer).is_none() {
            return Target::Missing;
        }
        let first = tokens.first().map(|t| &**t);
        if first == Some("paths") {
            return match tokens.get(1) {
                None => Target::Kept,
                // Present: the pointer resolved through `paths`.
                Some(path) => {
                    self.path_ids.get(&**path).map_or(Target::Missing, |&p| Target::Path(p))
                }
            };
        }
        let rest = match (self.format, first) {
            (Format::Swagger2, Some(name)) => self.section(name).map(|s| (s, tokens.get(1))),
            (Format::OpenApi3, Some("components")) => {
                tokens.get(1).and_then(|name| self.section(name)).map(|s| (s, tokens.get(2)))
            }
            _ => None,
        };
        match rest {
            None => Target::Kept,
            Some((section, None)) => Target::Section(section),
            Some((section, Some(name))) => self
                .lookup
                .get(&(section, &**name))
                .map_or(Target::Missing, |&c| Target::Component(c)),
        }
    }

    /// The output document for one key.
    fn document(
        &self,
        path_entries: &[(&Text<'a>, &Node<'a>)],
        indices: &[usize],
        reach: &Reach,
    ) -> Node<'a> {
        let mut out = Object::with_capacity(self.root.len());
        for (name, value) in self.root {
            let reduced = match (self.format, name.as_str()) {
                (_, "paths") => {
                    let paths = indices
                        .iter()
                        .filter_map(|&i| path_entries.get(i))
                        .map(|(p, v)| ((*p).clone(), (*v).clone()))
                        .collect();
                    Some(Node::Object(paths))
                }
                (Format::Swagger2, section) => match self.section(section) {
                    Some(s) => match self.reduced_section(s, reach) {
                        Some(map) => Some(map),
                        None => continue,
                    },
                    None => None,
                },
                (Format::OpenApi3, "components") => value.as_object().map(|components| {
                    let mut kept = Object::with_capacity(components.len());
                    for (member, value) in components {
                        match self.section(member) {
                            Some(s) => {
                                if let Some(map) = self.reduced_section(s, reach) {
                                    kept.insert(member.clone(), map);
                                }
                            }
                            None => {
                                kept.insert(member.clone(), value.clone());
                            }
                        }
                    }
                    Node::Object(kept)
                }),
                (Format::OpenApi3, _) => None,
            };
            out.insert(name.clone(), reduced.unwrap_or_else(|| value.clone()));
        }
        Node::Object(out)
    }

    /// Section `s` with only its reached components, or `None` when that
    /// leaves it empty and no `$ref` names the section itself.
    fn reduced_section(&self, s: usize, reach: &Reach) -> Option<Node<'a>> {
        let section = self.sections.get(s)?;
        let mut map = Object::new();
        for id in section.ids.clone() {
            if reach.components.get(id).copied().unwrap_or(false)
                && let Some(c) = self.components.get(id)
            {
                map.insert(c.name.clone(), c.value.clone());
            }
        }
        let wanted = !map.is_empty() || reach.sections.get(s).copied().unwrap_or(false);
        wanted.then_some(Node::Object(map))
    }
}

/// Serialized pieces shared between the outputs of [`split_rendered`],
/// written one after another into one buffer: a buffer per piece cost an
/// allocation and its regrowth each, for 600 pieces.
#[derive(Default)]
struct Fragments {
    /// Every piece's bytes.
    arena: Vec<u8>,
    /// The room `arena` takes when the first piece is written.
    reserve: usize,
    /// Component id → its piece, once serialized.
    components: BTreeMap<usize, Range<usize>>,
    /// Members kept whole (top level, and v3 `components` members that are
    /// not sections), by name; `true` in the key for v3 `components`
    /// members.
    members: BTreeMap<(bool, String), Range<usize>>,
}

impl Fragments {
    /// Appends the serialized `value` to `out`, serializing it into the
    /// arena under `range` first if that was not done yet.
    fn copy(
        arena: &mut Vec<u8>,
        reserve: usize,
        range: &mut Option<Range<usize>>,
        value: &Node<'_>,
        out: &mut Vec<u8>,
    ) {
        let range = range.get_or_insert_with(|| Self::piece(arena, reserve, value));
        out.extend_from_slice(arena.get(range.clone()).unwrap_or_default());
    }

    /// Serializes `value` at the end of the arena, which takes its
    /// `reserve` first if it has no room yet.
    fn piece(arena: &mut Vec<u8>, reserve: usize, value: &Node<'_>) -> Range<usize> {
        if arena.capacity() == 0 {
            arena.reserve(reserve);
        }
        let start = arena.len();
        value.render(arena);
        start..arena.len()
    }

    /// Serializes component `id` into the arena (once) and gives its
    /// length.
    fn component_len(&mut self, id: usize, value: &Node<'_>) -> usize {
        let (arena, reserve) = (&mut self.arena, self.reserve);
        self.components.entry(id).or_insert_with(|| Self::piece(arena, reserve, value)).len()
    }

    /// Serializes a member kept whole into the arena (once) and gives its
    /// length.
    fn member_len(&mut self, key: (bool, &str), value: &Node<'_>) -> usize {
        let (arena, reserve) = (&mut self.arena, self.reserve);
        self.members
            .entry((key.0, key.1.to_owned()))
            .or_insert_with(|| Self::piece(arena, reserve, value))
            .len()
    }

    fn component(&mut self, id: usize, value: &Node<'_>, out: &mut Vec<u8>) {
        let mut range = self.components.get(&id).cloned();
        let fresh = range.is_none();
        Self::copy(&mut self.arena, self.reserve, &mut range, value, out);
        if let (true, Some(r)) = (fresh, range) {
            self.components.insert(id, r);
        }
    }

    fn member(&mut self, key: (bool, &str), value: &Node<'_>, out: &mut Vec<u8>) {
        let mut range = self.members.get(&(key.0, key.1.to_owned())).cloned();
        let fresh = range.is_none();
        Self::copy(&mut self.arena, self.reserve, &mut range, value, out);
        if let (true, Some(r)) = (fresh, range) {
            self.members.insert((key.0, key.1.to_owned()), r);
        }
    }
}

/// Appends `,` (unless first) and `"key":`.
fn push_key(out: &mut Vec<u8>, first: &mut bool, key: &Text<'_>) {
    if !std::mem::take(first) {
        out.push(b',');
    }
    write_key(out, key);
}

impl<'a> Index<'a> {
    /// The rendered size of all outputs together, from the lengths of the
    /// parts they are made of: the members every output keeps whole and
    /// each reached component are serialized into `fragments` (where
    /// rendering takes them from), each key's paths measured. Within a few
    /// bytes per section of what rendering gives; saturating, so a hostile
    /// document cannot wrap it round.
    fn output_len<'k>(
        &self,
        path_entries: &[(&Text<'a>, &Node<'a>)],
        keys: impl Iterator<Item = &'k Vec<usize>>,
        reaches: &[Reach],
        fragments: &mut Fragments,
    ) -> usize {
        let mut kept = 2;
        for (name, value) in self.root {
            match (self.format, name.as_str()) {
                (_, "paths") => kept += text_len(name) + 3,
                (Format::Swagger2, section) if self.section(section).is_some() => {
                    kept += text_len(name) + 3;
                }
                (Format::OpenApi3, "components") if value.is_object() => {
                    kept += text_len(name) + 3;
                    for (member, value) in value.as_object().into_iter().flatten() {
                        kept += text_len(member)
                            + match self.section(member) {
                                Some(_) => 3,
                                None => 2 + fragments.member_len((true, member), value),
                            };
                    }
                }
                _ => kept += text_len(name) + 2 + fragments.member_len((false, name), value),
            }
        }
        let mut components: Vec<Option<usize>> = vec![None; self.components.len()];
        let mut total = 0usize;
        for (indices, reach) in keys.zip(reaches) {
            let paths: usize = indices
                .iter()
                .filter_map(|&i| path_entries.get(i))
                .map(|(p, v)| text_len(p) + 2 + v.rendered_len())
                .sum();
            let mut reached = 0usize;
            for (id, _) in reach.components.iter().enumerate().filter(|(_, r)| **r) {
                let (Some(slot), Some(c)) = (components.get_mut(id), self.components.get(id))
                else {
                    continue;
                };
                let len = *slot.get_or_insert_with(|| {
                    text_len(c.name) + 2 + fragments.component_len(id, c.value)
                });
                reached = reached.saturating_add(len);
            }
            total = total.saturating_add(kept + paths + reached);
        }
        total
    }

    /// The output document for one key, serialized: the same bytes as
    /// `serde_json::to_vec(&self.document(..))`, from shared fragments.
    fn render(
        &self,
        path_entries: &[(&Text<'a>, &Node<'a>)],
        indices: &[usize],
        reach: &Reach,
        fragments: &mut Fragments,
        out: &mut Vec<u8>,
    ) {
        out.push(b'{');
        let mut first = true;
        for (name, value) in self.root {
            let v2_section = match self.format {
                Format::Swagger2 => self.section(name),
                Format::OpenApi3 => None,
            };
            match (self.format, name.as_str(), v2_section) {
                (_, "paths", _) => {
                    push_key(out, &mut first, name);
                    out.push(b'{');
                    let mut first_path = true;
                    for (path, item) in indices.iter().filter_map(|&i| path_entries.get(i)) {
                        // Each path belongs to one key: nothing to share.
                        push_key(out, &mut first_path, path);
                        item.render(out);
                    }
                    out.push(b'}');
                }
                (Format::Swagger2, _, Some(s)) => {
                    self.render_section_member(name, s, reach, fragments, out, &mut first);
                }
                (Format::OpenApi3, "components", _) if value.is_object() => {
                    push_key(out, &mut first, name);
                    out.push(b'{');
                    let mut first_member = true;
                    for (member, value) in value.as_object().into_iter().flatten() {
                        match self.section(member) {
                            Some(s) => {
                                self.render_section_member(
                                    member,
                                    s,
                                    reach,
                                    fragments,
                                    out,
                                    &mut first_member,
                                );
                            }
                            None => {
                                push_key(out, &mut first_member, member);
                                fragments.member((true, member), value, out);
                            }
                        }
                    }
                    out.push(b'}');
                }
                _ => {
                    push_key(out, &mut first, name);
                    fragments.member((false, name), value, out);
                }
            }
        }
        out.push(b'}');
    }

    /// `"name":` and section `s` as [`Index::render_section`] writes it, or
    /// nothing when that leaves it out.
    fn render_section_member(
        &self,
        name: &Text<'_>,
        s: usize,
        reach: &Reach,
        fragments: &mut Fragments,
        out: &mut Vec<u8>,
        first: &mut bool,
    ) {
        let mark = out.len();
        let was_first = *first;
        push_key(out, first, name);
        if !self.render_section(s, reach, fragments, out) {
            out.truncate(mark);
            *first = was_first;
        }
    }

    /// Section `s` with only its reached components, serialized into `out`;
    /// `false` when it is left empty and no `$ref` names the section itself
    /// — as [`Index::reduced_section`] decides — and the caller takes back
    /// what was written.
    fn render_section(
        &self,
        s: usize,
        reach: &Reach,
        fragments: &mut Fragments,
        out: &mut Vec<u8>,
    ) -> bool {
        let Some(section) = self.sections.get(s) else { return false };
        out.push(b'{');
        let mut first = true;
        for id in section.ids.clone() {
            if reach.components.get(id).copied().unwrap_or(false)
                && let Some(c) = self.components.get(id)
            {
                push_key(out, &mut first, c.name);
                fragments.component(id, c.value, out);
            }
        }
        out.push(b'}');
        !first || reach.sections.get(s).copied().unwrap_or(false)
    }
}

/// One direct reference of a walked node.
#[derive(Clone, Copy)]
enum Edge {
    Component(usize),
    Section(usize),
    /// A reference into path `path`; `site` says where it stands, for the
    /// error when an output that lacks the path reaches it.
    Path {
        path: usize,
        site: usize,
    },
    /// A reference that resolves to nothing; an error only if reached.
    Dangling(usize),
}

/// Where a reference stands, kept for error reporting.
struct Site {
    reference: String,
    at: JsonPointer,
}

impl Site {
    fn to_error(&self) -> SplitError {
        SplitError::UnresolvedRef { reference: self.reference.clone(), at: self.at.clone() }
    }
}

/// The reference graph: the direct references of every component, every
/// placed path, and of everything every output keeps whole.
struct Graph<'i, 'a> {
    index: &'i Index<'a>,
    /// Edges of each component, by component id.
    component_edges: Vec<Vec<Edge>>,
    /// Edges of each path, by position in `paths` (empty for unplaced
    /// paths, which no output contains).
    path_edges: Vec<Vec<Edge>>,
    /// Edges of the members every output keeps whole.
    shared_edges: Vec<Edge>,
    sites: Vec<Site>,
    /// How many reference lookups hashed the reference's bytes.
    #[cfg(test)]
    text_lookups: usize,
}

/// The state of one key's search.
struct Search<'s> {
    /// The key searched for, by position in key order.
    owner: usize,
    path_owner: &'s [Option<usize>],
    reach: &'s mut Reach,
    queue: &'s mut Vec<usize>,
}

/// What one output reaches.
struct Reach {
    components: Vec<bool>,
    sections: Vec<bool>,
}

impl<'i, 'a> Graph<'i, 'a> {
    fn build(
        index: &'i Index<'a>,
        hints: Option<&'a RefHints<'a>>,
        path_entries: &[(&'a Text<'a>, &'a Node<'a>)],
        path_owner: &[Option<usize>],
    ) -> Self {
        let mut walker = Walker {
            index,
            // About one distinct reference per component: sized once, not
            // rehashed as they come.
            cache: Hashed::with_capacity(index.components.len()),
            by_place: WordMap::with_capacity_and_hasher(
                index.components.len(),
                foldhash::fast::FixedState::default(),
            ),
            #[cfg(test)]
            text_lookups: 0,
            sites: Vec::new(),
            stack: Vec::new(),
            seen: WordSet::default(),
        };

        let component_edges = index
            .components
            .iter()
            .map(|&c| walker.edges_hinted(hints, c.value, &index.component_location(c)))
            .collect();

        let path_edges = path_entries
            .iter()
            .zip(path_owner)
            .map(|((path, value), owner)| match owner {
                Some(_) => {
                    walker.edges_hinted(hints, value, &[Token::Key("paths"), Token::Key(path)])
                }
                None => Vec::new(),
            })
            .collect();

        let mut shared_edges = Vec::new();
        for (name, value) in index.root {
            match (index.format, name.as_str()) {
                (_, "paths") => {}
                (Format::Swagger2, section) if index.section(section).is_some() => {}
                (Format::OpenApi3, "components") if value.is_object() => {
                    for (member, value) in value.as_object().into_iter().flatten() {
                        if index.section(member).is_none() {
                            let at = [Token::Key("components"), Token::Key(member)];
                            shared_edges.extend(walker.edges(value, &at));
                        }
                    }
                }
                _ => shared_edges.extend(walker.edges(value, &[Token::Key(name)])),
            }
        }

        Self {
            index,
            component_edges,
            path_edges,
            shared_edges,
            sites: walker.sites,
            #[cfg(test)]
            text_lookups: walker.text_lookups,
        }
    }

    /// Breadth-first search from the shared members and the paths of the
    /// key numbered `owner`.
    fn reach(
        &self,
        owner: usize,
        paths: &[usize],
        path_owner: &[Option<usize>],
    ) -> Result<Reach, SplitError> {
        let mut reach = Reach {
            components: vec![false; self.index.components.len()],
            sections: vec![false; self.index.sections.len()],
        };
        let mut queue: Vec<usize> = Vec::new();
        let mut search = Search { owner, path_owner, reach: &mut reach, queue: &mut queue };
        self.follow(&self.shared_edges, &mut search)?;
        for &p in paths {
            self.follow(self.path_edges.get(p).map_or(&[], Vec::as_slice), &mut search)?;
        }
        let mut next = 0;
        while let Some(&c) = search.queue.get(next) {
            next += 1;
            self.follow(self.component_edges.get(c).map_or(&[], Vec::as_slice), &mut search)?;
        }
        Ok(reach)
    }

    /// Marks what `edges` reach, queueing newly reached components.
    fn follow(&self, edges: &[Edge], search: &mut Search<'_>) -> Result<(), SplitError> {
        for edge in edges {
            match *edge {
                Edge::Component(c) => {
                    if let Some(seen) = search.reach.components.get_mut(c)
                        && !*seen
                    {
                        *seen = true;
                        search.queue.push(c);
                    }
                }
                Edge::Section(s) => {
                    if let Some(kept) = search.reach.sections.get_mut(s) {
                        *kept = true;
                    }
                }
                Edge::Path { path, site } => {
                    if search.path_owner.get(path).copied().flatten() != Some(search.owner) {
                        return Err(self.site_error(site));
                    }
                }
                Edge::Dangling(site) => return Err(self.site_error(site)),
            }
        }
        Ok(())
    }

    fn site_error(&self, site: usize) -> SplitError {
        match self.sites.get(site) {
            Some(site) => site.to_error(),
            // Sites are only ever created together with the edge naming them.
            None => SplitError::UnresolvedRef { reference: String::new(), at: JsonPointer::root() },
        }
    }
}

/// A map looked up, never iterated: hashing costs less than an ordered
/// map's comparisons of references that share long prefixes
/// (`#/components/schemas/io.k8s.api.`), and no order can reach an output.
#[allow(clippy::disallowed_types)]
pub(crate) type Hashed<K, V> = std::collections::HashMap<K, V>;

/// A set looked up, never iterated (see [`Hashed`]), of keys the input
/// cannot choose (component numbers): hashed by foldhash's fixed-seed
/// hasher, a multiply per word. SipHash, which keeps an adversary from
/// making strings collide, cost a tenth of a microsecond for each of the
/// split's tens of thousands of lookups.
#[allow(clippy::disallowed_types)]
type WordSet<T> = std::collections::HashSet<T, foldhash::fast::FixedState>;

/// A map looked up, never iterated (see [`Hashed`]), keyed by places in
/// memory, which the input cannot choose: hashed as [`WordSet`].
#[allow(clippy::disallowed_types)]
type WordMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::FixedState>;

/// Collects direct references, resolving each distinct reference string
/// once (Kubernetes 1.27 has 2152 `$ref`s to 492 targets, `WatchEvent`
/// alone 135 times).
struct Walker<'i, 'a> {
    index: &'i Index<'a>,
    /// Hashed, not ordered: references share long prefixes, which an
    /// ordered map compares again at every step of every lookup.
    cache: Hashed<&'a str, Target>,
    /// The same, for references whose text is shared (the converter makes
    /// one per target, [`Text::shared_place`]): looked up by where that
    /// text is, without hashing its bytes.
    by_place: WordMap<(usize, usize), Target>,
    /// How many lookups hashed a reference's bytes.
    #[cfg(test)]
    text_lookups: usize,
    sites: Vec<Site>,
    /// The nodes still to visit, kept from walk to walk (1,300 of them
    /// for Kubernetes 1.27) rather than allocated for each.
    stack: Vec<&'a Node<'a>>,
    /// The targets one walk has recorded, kept from walk to walk like
    /// `stack` (cleared, its room stays).
    seen: WordSet<Target>,
}

impl<'a> Walker<'_, 'a> {
    /// The direct references found anywhere under `value`, which stands at
    /// `location` in the input.
    ///
    /// Each target is recorded once, at its first occurrence: that keeps
    /// every later search short, and it bounds the error sites (each of
    /// which builds a pointer) by the number of distinct targets, since a
    /// search stops at the first bad edge of a node anyway. For the same
    /// reason only the first dangling reference of a node is kept.
    ///
    /// The walk keeps no location: only a reference into a path or to
    /// nothing needs one (for its error), and [`Walker::locate`] finds it
    /// then. Keeping it for every node of the converted 1.27 document made
    /// this walk a tenth of the `convert` command's time.
    ///
    /// Iterative, so that a deeply nested hostile document cannot overflow
    /// the stack here.
    fn edges(&mut self, value: &'a Node<'a>, location: &[Token<'a>]) -> Vec<Edge> {
        let mut edges = Vec::new();
        let mut stack = std::mem::take(&mut self.stack);
        let mut seen = std::mem::take(&mut self.seen);
        seen.clear();
        for_each_local_ref(value, &mut stack, |reference| {
            let target = self.target(reference);
            if target != Target::Kept && seen.insert(target) {
                edges.push(self.edge(target, value, location));
            }
        });
        self.stack = stack;
        self.seen = seen;
        edges
    }

    /// [`Walker::edges`] from the references the converter found under
    /// `value` ([`RefHints`]), in the order the walk would meet them: the
    /// same edges, without walking the tree again.
    fn edges_from(
        &mut self,
        references: &'a [Text<'a>],
        value: &'a Node<'a>,
        location: &[Token<'a>],
    ) -> Vec<Edge> {
        let mut edges = Vec::new();
        let mut seen = std::mem::take(&mut self.seen);
        seen.clear();
        for reference in references {
            let target = self.target(reference);
            if target != Target::Kept && seen.insert(target) {
                edges.push(self.edge(target, value, location));
            }
        }
        self.seen = seen;
        edges
    }

    /// [`Walker::edges_from`] when `hints` has `value`'s references, else
    /// [`Walker::edges`].
    fn edges_hinted(
        &mut self,
        hints: Option<&'a RefHints<'a>>,
        value: &'a Node<'a>,
        location: &[Token<'a>],
    ) -> Vec<Edge> {
        match hints.and_then(|h| h.get(value)) {
            Some(references) => self.edges_from(references, value, location),
            None => self.edges(value, location),
        }
    }

    /// The first reference under `value` (in the order [`Walker::edges`]
    /// meets them) that lands on `target`, and where it stands.
    fn locate(
        &mut self,
        value: &'a Node<'a>,
        location: &[Token<'a>],
        target: Target,
    ) -> Option<(&'a str, Vec<Token<'a>>)> {
        let mut path: Vec<Token<'a>> = location.to_vec();
        let base = location.len();
        // (node, length of its location, its last token unless it is the root)
        let mut stack: Vec<(&'a Node<'a>, usize, Option<Token<'a>>)> = vec![(value, base, None)];
        while let Some((node, depth, token)) = stack.pop() {
            match token {
                Some(token) => {
                    path.truncate(depth.saturating_sub(1));
                    path.push(token);
                }
                None => path.truncate(depth),
            }
            match node {
                Node::Object(map) => {
                    for (k, v) in map.iter().rev() {
                        match v {
                            Node::String(reference)
                                if k == "$ref"
                                    && reference.starts_with("#/")
                                    && self.target(reference) == target =>
                            {
                                return Some((reference.as_str(), path));
                            }
                            _ => {
                                if let Some(v) = to_walk(v) {
                                    stack.push((v, depth + 1, Some(Token::Key(k))));
                                }
                            }
                        }
                    }
                }
                Node::Array(items) => {
                    for (i, v) in items.iter().enumerate().rev() {
                        if let Some(v) = to_walk(v) {
                            stack.push((v, depth + 1, Some(Token::Index(i))));
                        }
                    }
                }
                Node::Shared(shared) if shared.holds_refs() => {
                    stack.push((shared.node(), depth, token));
                }
                _ => {}
            }
        }
        None
    }

    fn target(&mut self, reference: &'a Text<'a>) -> Target {
        let Some(place) = reference.shared_place() else {
            return self.target_of_text(reference);
        };
        if let Some(&target) = self.by_place.get(&place) {
            return target;
        }
        let target = self.target_of_text(reference);
        self.by_place.insert(place, target);
        target
    }

    fn target_of_text(&mut self, reference: &'a str) -> Target {
        #[cfg(test)]
        {
            self.text_lookups += 1;
        }
        let index = self.index;
        *self.cache.entry(reference).or_insert_with(|| index.resolve(reference))
    }

    /// The edge for a reference to `target` found under `value` (at
    /// `location`); `target` is not [`Target::Kept`], which needs no edge.
    fn edge(&mut self, target: Target, value: &'a Node<'a>, location: &[Token<'a>]) -> Edge {
        match target {
            Target::Component(c) => Edge::Component(c),
            Target::Section(s) => Edge::Section(s),
            Target::Path(path) => Edge::Path { path, site: self.site_of(target, value, location) },
            Target::Kept | Target::Missing => Edge::Dangling(self.site_of(target, value, location)),
        }
    }

    /// The error site of the first reference to `target` under `value`.
    fn site_of(&mut self, target: Target, value: &'a Node<'a>, location: &[Token<'a>]) -> usize {
        match self.locate(value, location, target) {
            Some((reference, at)) => self.site(reference, &at),
            // `edges` just found such a reference under `value`.
            None => self.site("", location),
        }
    }

    fn site(&mut self, reference: &str, at: &[Token<'_>]) -> usize {
        self.sites.push(Site { reference: reference.to_owned(), at: to_pointer(at) });
        self.sites.len() - 1
    }
}

/// Calls `f` with every local `$ref` (a string starting with `#/`) under
/// `value`, in the order [`Walker::edges`] records them: objects in
/// depth-first order, the last member first. `stack` is scratch room, kept
/// by the caller from walk to walk.
///
/// Iterative, so that a deeply nested hostile document cannot overflow
/// the stack here.
fn for_each_local_ref<'n, 'a>(
    value: &'n Node<'a>,
    stack: &mut Vec<&'n Node<'a>>,
    mut f: impl FnMut(&'n Text<'a>),
) {
    stack.clear();
    stack.extend(to_walk(value));
    while let Some(node) = stack.pop() {
        match node {
            Node::Object(map) => {
                // One pass over the members finds the `$ref` and the
                // children, instead of a lookup of `$ref` in every object
                // of a 4 MB document.
                for (k, v) in map.iter().rev() {
                    match v {
                        Node::String(reference) if k == "$ref" && reference.starts_with("#/") => {
                            f(reference);
                        }
                        _ => stack.extend(to_walk(v)),
                    }
                }
            }
            Node::Array(items) => stack.extend(items.iter().rev().filter_map(to_walk)),
            _ => {}
        }
    }
}

/// What a walk for references looks into at `node`: an object or an
/// array, or what a shared node holding a `$ref` shares. Not a shared node
/// without one (`Shared`): an API's parameters are most of its objects.
fn to_walk<'n, 'a>(node: &'n Node<'a>) -> Option<&'n Node<'a>> {
    match node {
        Node::Object(_) | Node::Array(_) => Some(node),
        Node::Shared(shared) if shared.holds_refs() => Some(shared.node()),
        _ => None,
    }
}

/// The local `$ref`s under objects of a tree, recorded by whoever built
/// them, so that splitting need not walk them again.
///
/// The converter records each converted definition and path item as soon
/// as it is made, while it is still in the processor's cache; walking
/// them again when splitting, from memory, was the splitter's largest cost
/// (`Walker::edges`, an eighth of the `convert` command's time).
///
/// An object is known by its member list's place in memory: the tree may
/// move an object's node, never its members. The tree must not change
/// under a recorded object afterwards, and an object freed and another
/// made in its place would be taken for it: the converter records only
/// objects the converted document keeps as they are. An empty object has
/// no references whatever its place says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RefHints<'a> {
    /// (member list's address, member count) → the references, in the
    /// order [`Walker::edges`] meets them.
    by_object: WordMap<(usize, usize), Vec<Text<'a>>>,
}

impl<'a> RefHints<'a> {
    /// Records the local references under `node`, an object the tree will
    /// keep unchanged; anything else is not recorded.
    pub(crate) fn record(&mut self, node: &Node<'a>) {
        let Node::Object(object) = node else { return };
        let mut references = Vec::new();
        // Room for the walk of a Kubernetes definition at once, rather
        // than grown (and freed) step by step for each object recorded.
        let mut stack = Vec::with_capacity(32);
        for_each_local_ref(node, &mut stack, |r| references.push(r.clone()));
        self.by_object.insert(object.place(), references);
    }

    /// The references recorded for `node`, if it was.
    fn get(&self, node: &Node<'_>) -> Option<&[Text<'a>]> {
        let Node::Object(object) = node else { return None };
        self.by_object.get(&object.place()).map(Vec::as_slice)
    }
}

#[cfg(test)]
mod tests;

//! Swagger 2.0 → OpenAPI 3.0 conversion, pure: `&Value` in, a document and
//! notes out.
//!
//! Aggregated API servers that only publish `/openapi/v2` are converted so
//! clients can drop v2 entirely (KEP-2896). Upstream's converter
//! (`kube-openapi/pkg/openapiconv`, docs/upstream.md#b-8) has known defects; this
//! one fixes each of them (docs/wire.md#a-5): it inherits global
//! `produces`/`consumes`, finds the body parameter by `in: body`, keeps the
//! validation fields of simple parameters inside `schema`, maps
//! `collectionFormat` to `style`/`explode`, turns `formData` into a form
//! request body, converts inside `allOf`/`anyOf`/`oneOf`/`not`, moves
//! top-level parameters and responses into `components`, maps security
//! schemes to valid v3 forms, and never drops an existing `allOf` when it
//! wraps a `$ref`.
//!
//! References (in `refs.rs`): every local `$ref` follows its target
//! wherever it stands, vendor extensions included; fragments are
//! percent-decoded before they are read as JSON pointers; component names
//! OpenAPI 3.0 forbids are renamed, with a note, and references follow.
//!
//! Equal parameters and responses (an API repeats a few hundred of them
//! thousands of times) are converted once and shared where they stand
//! (in `reuse.rs`).
//!
//! Kubernetes heuristics (in `schema.rs`): IntOrString and Quantity become
//! `anyOf`, and a `$ref` that carries siblings (a description, a default) is
//! wrapped in `allOf` so the siblings survive.
//!
//! What v3 cannot express is not silently lost: it is reported as a
//! [`Note`] with a JSON pointer into the input. Only input that cannot be a
//! Swagger 2.0 document, or a `$ref` to nothing (outside vendor extensions,
//! which are not the converter's to refuse), is an error.
//!
//! Output is deterministic: object members follow the input's order (the
//! crate enables `serde_json/preserve_order`), and nothing depends on a
//! hash map's iteration order, a clock or randomness.

mod media;
mod operation;
mod parameter;
mod refs;
mod request_body;
mod response;
mod reuse;
mod schema;
mod security;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::rc::Rc;

use serde_json::Value;

use crate::json::tree::{Node, Number, Object};

use crate::json::pointer::{JsonPointer, Location};
use crate::openapi::split::{Hashed, RefHints};

/// The OpenAPI version written into converted documents; the one Kubernetes
/// itself publishes.
pub const OPENAPI_VERSION: &str = "3.0.0";

/// The result of a conversion: the OpenAPI 3.0 document and what could not
/// be carried over exactly.
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    /// The OpenAPI 3.0 document.
    pub document: Value,
    /// Lossy spots, in the order they were found.
    pub notes: Vec<Note>,
}

/// [`Converted`] as a tree whose strings borrow from the input tree: what
/// [`convert_tree`] gives, for callers that render or split the result
/// rather than look into it.
#[derive(Debug, Clone, PartialEq)]
pub struct ConvertedTree<'a> {
    /// The OpenAPI 3.0 document.
    pub document: Node<'a>,
    /// Lossy spots, in the order they were found.
    pub notes: Vec<Note>,
    /// The local references under each converted definition and path
    /// item, recorded as each was made, for splitting `document` without
    /// walking it again (`split::split_rendered_each_hinted`).
    pub refs: RefHints<'a>,
}

/// One spot of the input that OpenAPI 3.0 could not carry exactly.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Note {
    /// Where in the input document.
    pub at: JsonPointer,
    /// What happened there.
    pub kind: NoteKind,
}

/// What a [`Note`] is about.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NoteKind {
    /// A JSON Schema keyword OpenAPI 3.0's schema object does not allow was
    /// dropped (`additionalItems`, `patternProperties`, `dependencies`, …).
    DroppedSchemaKeyword {
        /// The keyword.
        keyword: String,
    },
    /// `items` held a list of schemas (tuple validation); v3 allows one
    /// schema, so the list became `anyOf` and position is lost.
    TupleItems,
    /// `type` held a list; it became `nullable` and/or `anyOf`.
    TypeList,
    /// `type: "null"` (JSON Schema's null type, which OpenAPI 3.0 lacks)
    /// became `nullable: true` without a type: v3.0 can say "null is
    /// allowed" but not "only null is".
    NullType,
    /// `collectionFormat: tsv` has no v3 style; the parameter keeps the
    /// default style.
    TabSeparatedCollection,
    /// An array field of a `multipart/form-data` body got its
    /// `collectionFormat` as an encoding `style`, which OpenAPI 3.0 defines
    /// for URL-encoded bodies only (3.1 for multipart too): a strict 3.0
    /// reader may ignore it.
    MultipartCollectionFormat,
    /// A `collectionFormat` that does not apply where it stands (for
    /// example `multi` on a path parameter) was dropped.
    UnsupportedCollectionFormat {
        /// The collection format.
        format: String,
    },
    /// An operation without `responses` (required in both versions) got an
    /// empty `responses` object.
    MissingResponses,
    /// A response without `description` (required in both versions) got an
    /// empty description.
    MissingDescription,
    /// A `$ref` to another document was left as it is: that document is not
    /// converted, so the reference may not resolve in v3 terms.
    ExternalRef {
        /// The reference.
        reference: String,
    },
    /// A local `$ref` into something that is not a definition, parameter or
    /// response was left as it is.
    UnmappedRef {
        /// The reference.
        reference: String,
    },
    /// A top-level `formData` parameter cannot be a v3 component; it is
    /// inlined into the form body of each operation that references it.
    FormDataComponent {
        /// The parameter's name in `parameters`.
        name: String,
    },
    /// A parameter with an `in` that v3 does not know was dropped.
    UnknownParameterLocation {
        /// The `in` value.
        location: String,
    },
    /// A member that neither version defines where it stands (`title` on
    /// a query parameter, say, or an unknown member of an operation, a
    /// path item or the document) was dropped.
    DroppedField {
        /// The member's name.
        field: String,
    },
    /// `allowEmptyValue` only exists for query parameters in v3; dropped.
    AllowEmptyValueOutsideQuery,
    /// A security scheme v3 cannot express was kept as written.
    UnknownSecurityScheme {
        /// The scheme's `type` (or `flow` for oauth2).
        kind: String,
    },
    /// Per-operation `schemes` differ from the document's but there is no
    /// `host` to build per-operation servers from; dropped.
    OperationSchemes,
    /// An operation has more than one body parameter; the first one wins.
    ExtraBodyParameter,
    /// An operation has `formData` parameters beside a body parameter,
    /// which v2 forbids; the body wins and the form field was dropped.
    FormBesideBody,
    /// A component name OpenAPI 3.0 does not allow (outside
    /// `^[a-zA-Z0-9.\-_]+$`) was changed; every reference to it follows.
    RenamedComponent {
        /// The name in the input.
        from: String,
        /// The name in the output.
        to: String,
    },
    /// A local `$ref` inside a vendor extension points to nothing; it was
    /// kept as written (extensions are not the converter's to refuse).
    DanglingRef {
        /// The reference.
        reference: String,
    },
    /// A `$ref` pointed at a schema inside `paths` (a response's or a body
    /// parameter's, or one within it), which has no such place in v3; the
    /// schema was copied into `components.schemas` under `name` and the
    /// reference points there.
    HoistedSchema {
        /// Its name in `components.schemas`.
        name: String,
    },
    /// `swagger` was the number `2.0` (YAML reads an unquoted `2.0` as a
    /// number) rather than the string the specification requires; the
    /// document was converted as Swagger 2.0 all the same.
    NumericSwaggerVersion,
    /// A local reference without the `/` that starts a JSON pointer
    /// (`#definitions/x`) was read as `#/definitions/x`.
    RefWithoutSlash {
        /// The reference as written.
        reference: String,
    },
    /// A reference to another file was followed (`convert` only): what it
    /// points at was copied into the document, and the reference now
    /// points there (`to`), or the path item it named was copied in its
    /// place (`to` is `None`).
    BundledRef {
        /// The reference as written.
        reference: String,
        /// The local reference it became.
        to: Option<String>,
    },
    /// A reference to another file could not be followed and was kept as
    /// written (`convert` only).
    UnreadRef {
        /// The reference as written.
        reference: String,
        /// Why.
        why: String,
    },
}

impl NoteKind {
    /// A short stable label, used to summarise notes by kind.
    #[must_use]
    pub fn label(&self) -> &'static str {
        match self {
            Self::DroppedSchemaKeyword { .. } => "dropped-schema-keyword",
            Self::TupleItems => "tuple-items",
            Self::TypeList => "type-list",
            Self::NullType => "null-type",
            Self::TabSeparatedCollection => "tsv-collection",
            Self::UnsupportedCollectionFormat { .. } => "unsupported-collection-format",
            Self::MultipartCollectionFormat => "multipart-collection-format",
            Self::MissingResponses => "missing-responses",
            Self::MissingDescription => "missing-description",
            Self::ExternalRef { .. } => "external-ref",
            Self::UnmappedRef { .. } => "unmapped-ref",
            Self::FormDataComponent { .. } => "formdata-component",
            Self::UnknownParameterLocation { .. } => "unknown-parameter-location",
            Self::DroppedField { .. } => "dropped-field",
            Self::AllowEmptyValueOutsideQuery => "allow-empty-value-outside-query",
            Self::UnknownSecurityScheme { .. } => "unknown-security-scheme",
            Self::OperationSchemes => "operation-schemes",
            Self::ExtraBodyParameter => "extra-body-parameter",
            Self::FormBesideBody => "form-beside-body",
            Self::RenamedComponent { .. } => "renamed-component",
            Self::DanglingRef { .. } => "dangling-ref",
            Self::HoistedSchema { .. } => "hoisted-schema",
            Self::NumericSwaggerVersion => "numeric-swagger-version",
            Self::RefWithoutSlash { .. } => "ref-without-slash",
            Self::BundledRef { .. } => "bundled-ref",
            Self::UnreadRef { .. } => "unread-ref",
        }
    }
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.at)?;
        match &self.kind {
            NoteKind::DroppedSchemaKeyword { keyword } => {
                write!(f, "schema keyword {keyword:?} has no OpenAPI 3.0 equivalent; dropped")
            }
            NoteKind::TupleItems => f.write_str("tuple `items` became `anyOf`; positions are lost"),
            NoteKind::TypeList => f.write_str("a list of types became `nullable`/`anyOf`"),
            NoteKind::NullType => {
                f.write_str("type \"null\" has no OpenAPI 3.0 equivalent; became `nullable: true`")
            }
            NoteKind::TabSeparatedCollection => {
                f.write_str("collectionFormat tsv has no OpenAPI 3.0 style; default style used")
            }
            NoteKind::MultipartCollectionFormat => f.write_str(
                "collectionFormat of a multipart field became an encoding style, \
                 which OpenAPI 3.0 defines for URL-encoded bodies only",
            ),
            NoteKind::UnsupportedCollectionFormat { format } => {
                write!(f, "collectionFormat {format:?} does not apply here; dropped")
            }
            NoteKind::MissingResponses => f.write_str("operation has no responses"),
            NoteKind::MissingDescription => f.write_str("response has no description"),
            NoteKind::ExternalRef { reference } => {
                write!(f, "reference {reference:?} to another document left unchanged")
            }
            NoteKind::UnmappedRef { reference } => {
                write!(f, "reference {reference:?} has no OpenAPI 3.0 counterpart; left unchanged")
            }
            NoteKind::FormDataComponent { name } => {
                write!(f, "formData parameter {name:?} inlined where used (not a v3 component)")
            }
            NoteKind::UnknownParameterLocation { location } => {
                write!(f, "parameter location {location:?} unknown; parameter dropped")
            }
            NoteKind::DroppedField { field } => {
                write!(f, "{field:?} has no OpenAPI 3.0 place here; dropped")
            }
            NoteKind::AllowEmptyValueOutsideQuery => {
                f.write_str("allowEmptyValue only applies to query parameters; dropped")
            }
            NoteKind::UnknownSecurityScheme { kind } => {
                write!(f, "security scheme {kind:?} unknown; kept as written")
            }
            NoteKind::OperationSchemes => {
                f.write_str("operation schemes cannot be expressed without a host; dropped")
            }
            NoteKind::FormBesideBody => {
                f.write_str("formData parameter beside a body parameter; dropped, the body is kept")
            }
            NoteKind::ExtraBodyParameter => {
                f.write_str("more than one body parameter; only the first is kept")
            }
            NoteKind::RenamedComponent { from, to } => {
                write!(f, "component name {from:?} is not valid OpenAPI 3.0; renamed {to:?}")
            }
            NoteKind::DanglingRef { reference } => {
                write!(f, "reference {reference:?} in a vendor extension points to nothing; kept")
            }
            NoteKind::HoistedSchema { name } => {
                write!(f, "schema referred to inside paths copied to components.schemas {name:?}")
            }
            NoteKind::NumericSwaggerVersion => f.write_str(
                "swagger version is the number 2.0, not the string \"2.0\"; read as 2.0",
            ),
            NoteKind::RefWithoutSlash { reference } => {
                write!(f, "reference {reference:?} lacks the \"/\" after \"#\"; read with it")
            }
            NoteKind::BundledRef { reference, to: Some(to) } => {
                write!(f, "reference {reference:?} read from its file and copied to {to:?}")
            }
            NoteKind::BundledRef { reference, to: None } => {
                write!(f, "path item {reference:?} read from its file and copied here")
            }
            NoteKind::UnreadRef { reference, why } => {
                write!(f, "reference {reference:?} not followed ({why}); kept as written")
            }
        }
    }
}

/// Why a document could not be converted at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    /// The document is not a JSON object.
    #[error("not a Swagger 2.0 document: the top level is not an object")]
    NotAnObject,
    /// The document does not declare `swagger: "2.0"`.
    #[error("not a Swagger 2.0 document ({})", describe_version(.found))]
    NotSwagger2 {
        /// The `swagger` or `openapi` value found, if any.
        found: Option<String>,
    },
    /// A local `$ref` points to nothing in the document.
    #[error("reference {reference} at {at} points to nothing")]
    UnresolvedRef {
        /// The reference.
        reference: String,
        /// Where it stands.
        at: JsonPointer,
    },
    /// A member has a JSON type Swagger 2.0 does not allow there.
    #[error("{at} must be {expected}")]
    WrongType {
        /// Where.
        at: JsonPointer,
        /// What Swagger 2.0 requires there.
        expected: &'static str,
    },
    /// Copies would make the output much larger than the input: shared
    /// parameters of huge schemas used by many operations, or a schema
    /// written once for each of many media types. Refused, so that no
    /// document can make the converter hold many times its own size.
    #[error(
        "copies of shared parameters and of schemas for each media type would make {copied} \
         values, more than the {limit} allowed (the values of the whole input, and at least \
         {COPY_FLOOR})"
    )]
    CopiesOverBudget {
        /// Values copied when the limit was passed.
        copied: usize,
        /// The limit: the number of values in the input, at least
        /// `COPY_FLOOR` (half a million).
        limit: usize,
    },
}

fn describe_version(found: &Option<String>) -> String {
    match found {
        Some(v) => format!("found {v}"),
        None => "no `swagger: \"2.0\"` member".to_owned(),
    }
}

/// Converts a Swagger 2.0 document into an OpenAPI 3.0 document.
///
/// # Errors
/// [`ConvertError`] when `v2` is not a Swagger 2.0 document (including an
/// OpenAPI 3 document), when a member has a type Swagger 2.0 forbids where
/// the converter must look inside it, or when a local `$ref` dangles.
pub fn convert(v2: &Value) -> Result<Converted, ConvertError> {
    let tree = Node::from_value(v2);
    let ConvertedTree { document, notes, .. } = convert_tree(&tree)?;
    Ok(Converted { document: document.to_value(), notes })
}

/// [`convert`] over a [`Node`] tree, giving a tree: the same conversion
/// (it is the one implementation), without building `Value`s. Its output
/// renders ([`Node::render`]) to the bytes `serde_json` writes for
/// [`convert`]'s.
///
/// # Errors
/// As [`convert`].
pub fn convert_tree<'a>(v2: &'a Node<'a>) -> Result<ConvertedTree<'a>, ConvertError> {
    let root = swagger2_root(v2)?;
    let mut cx = Context::new(v2, root)?;
    if let Some(Node::Number(_)) = root.get("swagger") {
        cx.note(&Location::root().key("swagger"), NoteKind::NumericSwaggerVersion);
    }
    let mut document = cx.document()?;
    cx.add_hoisted(&mut document)?;
    cx.drop_unreferenced_parameter_components(&mut document);
    Ok(ConvertedTree { document, notes: cx.notes, refs: cx.refs_under })
}

/// The top-level object of `v2`, once it is known to declare
/// `swagger: "2.0"`: what every conversion checks first, and what the
/// pipeline checks before it splits (a document that splits into nothing
/// must still be refused when it is no Swagger 2.0 document).
///
/// The number `2.0` is accepted too: a YAML file that writes `swagger: 2.0`
/// unquoted means Swagger 2.0, and refusing it "found 2.0" helps nobody
/// ([`convert_tree`] notes it as [`NoteKind::NumericSwaggerVersion`]).
///
/// # Errors
/// [`ConvertError::NotAnObject`] or [`ConvertError::NotSwagger2`].
pub fn swagger2_root<'t, 'a>(v2: &'t Node<'a>) -> Result<&'t Object<'a>, ConvertError> {
    let root = v2.as_object().ok_or(ConvertError::NotAnObject)?;
    match root.get("swagger") {
        Some(Node::String(s)) if s == "2.0" => Ok(root),
        Some(Node::Number(n)) if is_two_point_zero(n) => Ok(root),
        Some(other) => Err(ConvertError::NotSwagger2 { found: Some(version_text(other)) }),
        None => {
            let found = root.get("openapi").map(|v| format!("openapi {}", version_text(v)));
            Err(ConvertError::NotSwagger2 { found })
        }
    }
}

/// True for the number 2.0 written as a decimal (`2.0`, `2.00`, `20e-1`),
/// which is how YAML and JSON read an unquoted `2.0`; the integer `2` is not
/// a version anyone writes by mistake for `"2.0"`, so it stays refused.
fn is_two_point_zero(n: &Number<'_>) -> bool {
    match n {
        Number::Parsed(n) => n.is_f64() && n.as_f64() == Some(2.0),
        _ => false,
    }
}

fn version_text(v: &Node<'_>) -> String {
    match v {
        Node::String(s) => s.to_string(),
        other => other.to_string(),
    }
}

/// State shared by the parts of one conversion: the input (to resolve
/// references against), the document-wide defaults and the notes.
pub(crate) struct Context<'a> {
    root: &'a Node<'a>,
    doc: &'a Object<'a>,
    /// The document's `consumes` and `produces`, the default of each
    /// operation: shared with it, not copied for it (a hostile document's
    /// lists are as long as its bytes allow, its operations as many).
    consumes: Rc<[&'a str]>,
    produces: Rc<[&'a str]>,
    /// The document's `schemes`, read when an operation first has its own.
    schemes: Option<Vec<&'a str>>,
    notes: Vec<Note>,
    /// Local references already resolved, and what each became (see
    /// `Context::local_ref`). Hashed: the references of a document share
    /// long prefixes (`#/definitions/io.k8s.api.`), which an ordered map
    /// compares again at every step of every lookup; nothing iterates it
    /// in an order that shows (its values are gathered into a set).
    refs: Hashed<String, refs::Mapped>,
    /// Component names OpenAPI 3.0 does not allow, and their new names.
    renames: refs::Renames,
    /// The notes already taken, so that each is taken once. Ordered by a
    /// fingerprint first, as notes share long pointer prefixes
    /// (`/paths/~1apis~1`) that would be compared at each step. The seed
    /// is fixed, so an input may make fingerprints collide: that costs
    /// comparisons, never the B-tree's bound. A B-tree, not a hash table:
    /// its small nodes fill pages already in use, where a growing table
    /// took a large block of fresh memory (a huge page more to zero).
    noted: BTreeSet<(u64, Note)>,
    /// How many notes were taken, repeated ones included: a conversion
    /// that took none is the same wherever its input stands.
    note_calls: usize,
    /// Plain parameters converted so far, for equal ones elsewhere.
    reused_parameters: reuse::Reuse<'a>,
    /// Responses converted so far, for equal ones elsewhere.
    reused_responses: reuse::Reuse<'a>,
    /// The bytes shared nodes may still keep rendered (see `reuse.rs`).
    rendered_left: usize,
    /// Top-level query, header and path parameters, converted once and
    /// copied into each operation that refers to them.
    shared_parameters: BTreeMap<String, Option<Node<'a>>>,
    /// Values copied so far where a shared parameter is used.
    copied: usize,
    /// How many times copies were counted (`Context::charge_values`).
    charge_calls: usize,
    /// The top-level parameters (input names) some operation took in
    /// place: their component entries are not needed for that.
    taken_in_place: BTreeSet<String>,
    /// The number of values in the input, counted at the first copy: what
    /// the copies may add up to.
    input_values: Option<usize>,
    /// Schemas inside `paths` that references point at, for
    /// `components.schemas` (see `Context::hoist`).
    hoisted: Vec<refs::Hoisted<'a>>,
    /// The names `components.schemas` has, made when the first schema is
    /// hoisted.
    hoisted_names: Option<refs::ComponentNames>,
    /// The local references under each converted definition and path item.
    refs_under: RefHints<'a>,
    /// The input's definitions by name, so that resolving
    /// `#/definitions/<name>` does not walk the member list (600 for
    /// Kubernetes) for each reference. Hashed like [`Context::refs`].
    definitions: Hashed<&'a str, &'a Node<'a>>,
}

/// A note's place in [`Context::noted`]'s order.
fn fingerprint(note: &Note) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::default().hash_one(note)
}

/// The copies of shared parameters any document may make, whatever its
/// size: half a million values, some 25 MB of tree.
pub const COPY_FLOOR: usize = 500_000;

const ROOT_CONSUMES: &str = "consumes";
const ROOT_PRODUCES: &str = "produces";

impl<'a> Context<'a> {
    fn new(root: &'a Node<'a>, doc: &'a Object<'a>) -> Result<Self, ConvertError> {
        let top = Location::root();
        let consumes = media_types(doc.get(ROOT_CONSUMES), &top.key(ROOT_CONSUMES))?;
        let produces = media_types(doc.get(ROOT_PRODUCES), &top.key(ROOT_PRODUCES))?;
        let mut notes = Vec::new();
        let renames = refs::Renames::new(doc, &mut notes);
        Ok(Self {
            root,
            doc,
            consumes: consumes.into(),
            produces: produces.into(),
            schemes: None,
            noted: notes.iter().map(|n| (fingerprint(n), n.clone())).collect(),
            notes,
            note_calls: 0,
            reused_parameters: reuse::Reuse::default(),
            reused_responses: reuse::Reuse::default(),
            rendered_left: reuse::RENDERED_ALL,
            // Most references name a definition, a parameter or a response:
            // sized for them at once rather than rehashed as it doubles.
            refs: Hashed::with_capacity(
                ["definitions", "parameters", "responses"]
                    .iter()
                    .filter_map(|section| doc.get(section).and_then(Node::as_object))
                    .map(Object::len)
                    .sum(),
            ),
            renames,
            shared_parameters: BTreeMap::new(),
            copied: 0,
            charge_calls: 0,
            taken_in_place: BTreeSet::new(),
            input_values: None,
            hoisted: Vec::new(),
            hoisted_names: None,
            refs_under: RefHints::default(),
            definitions: doc
                .get("definitions")
                .and_then(Node::as_object)
                .map(|d| d.iter().map(|(name, schema)| (name.as_str(), schema)).collect())
                .unwrap_or_default(),
        })
    }

    /// Records a note once: a shared parameter is converted at each
    /// operation that uses it, and its spot of the input is one spot.
    fn note(&mut self, at: &Location<'_>, kind: NoteKind) {
        self.note_calls += 1;
        let note = Note { at: at.to_pointer(), kind };
        if self.noted.insert((fingerprint(&note), note.clone())) {
            self.notes.push(note);
        }
    }

    /// Notes that member `key` of the object at `at` was dropped.
    fn dropped_field(&mut self, key: &str, at: &Location<'_>) {
        self.note(&at.key(key), NoteKind::DroppedField { field: key.to_owned() });
    }

    /// Counts `node`'s values as copied, refusing the document once the
    /// copies outnumber the values of the whole input (and
    /// [`COPY_FLOOR`], so that a small document may use its shared
    /// parameters freely). The converted tree thus stays within about
    /// twice the parsed one, which is what the pipeline's budget assumes
    /// (`openapi::pipeline::Budget`). Kubernetes 1.35, which shares 47
    /// parameters among its operations, copies a small fraction of that.
    fn charge_copy(&mut self, node: &Node<'_>) -> Result<(), ConvertError> {
        self.charge_values(count_values(node))
    }

    /// [`Context::charge_copy`] of a copy of `values` values, counted
    /// once for a node copied many times (a schema per media type).
    fn charge_values(&mut self, values: usize) -> Result<(), ConvertError> {
        self.charge_calls += 1;
        self.copied = self.copied.saturating_add(values);
        // The limit is never below the floor: the input is counted only
        // once the copies pass it (Kubernetes' never do).
        if self.copied <= COPY_FLOOR {
            return Ok(());
        }
        let root = self.root;
        let limit = *self.input_values.get_or_insert_with(|| count_values(root).max(COPY_FLOOR));
        if self.copied > limit {
            return Err(ConvertError::CopiesOverBudget { copied: self.copied, limit });
        }
        Ok(())
    }

    /// The document level: input members in input order, each mapped to its
    /// v3 place (`host`/`basePath`/`schemes` → `servers`, `definitions`,
    /// `parameters`, `responses`, `securityDefinitions` → `components`).
    fn document(&mut self) -> Result<Node<'a>, ConvertError> {
        let top = Location::root();
        let mut out = Object::new();
        out.insert("openapi", Node::String(OPENAPI_VERSION.into()));
        let mut components_done = false;
        let mut servers_done = false;
        for (key, value) in self.doc {
            match key.as_str() {
                "swagger" | "consumes" | "produces" => {}
                "host" | "basePath" | "schemes" => {
                    if !servers_done {
                        servers_done = true;
                        if let Some(servers) = self.servers()? {
                            out.insert("servers", servers);
                        }
                    }
                }
                "paths" => {
                    let paths = self.paths(value, &top.key("paths"))?;
                    out.insert("paths", paths);
                }
                "definitions" | "parameters" | "responses" | "securityDefinitions" => {
                    if !components_done {
                        components_done = true;
                        let components = self.components()?;
                        out.insert("components", components);
                    }
                }
                "security" => {
                    out.insert(key.clone(), self.security_requirements(value));
                }
                // info, tags, externalDocs and x- extensions are the same
                // objects in v3, but local `$ref`s anywhere in them follow
                // their targets.
                k if matches!(k, "info" | "tags" | "externalDocs") || k.starts_with("x-") => {
                    let converted = self.extension(value, &top.key(key));
                    // Appended: the input's keys are unique and none of
                    // these is one the conversion writes itself (a search
                    // per member made 50,000 extensions take seconds).
                    out.push_new(key.clone(), converted);
                }
                // v3 forbids other members at the top, so copying one
                // would make the document invalid.
                _ => self.dropped_field(key, top),
            }
        }
        if !components_done {
            // Kubernetes always publishes `components`, even when empty.
            out.insert("components", Node::Object(Object::new()));
        }
        Ok(Node::Object(out))
    }

    /// `servers` from `host`, `basePath` and `schemes`; `None` when the
    /// document names no host and no base path other than `/` (v3's
    /// default server is `/`), as Kubernetes documents do.
    fn servers(&mut self) -> Result<Option<Node<'a>>, ConvertError> {
        let top = Location::root();
        let host = opt_str(self.doc.get("host"), &top.key("host"))?;
        let base = opt_str(self.doc.get("basePath"), &top.key("basePath"))?;
        let schemes = media_types(self.doc.get("schemes"), &top.key("schemes"))?;
        Ok(server_urls(host, base, &schemes).map(|urls| {
            Node::Array(
                urls.into_iter()
                    .map(|url| {
                        let mut s = Object::new();
                        s.insert("url", Node::string(url));
                        Node::Object(s)
                    })
                    .collect(),
            )
        }))
    }

    fn components(&mut self) -> Result<Node<'a>, ConvertError> {
        let top = Location::root();
        let mut out = Object::new();
        if let Some(defs) = self.doc.get("definitions") {
            let at = top.key("definitions");
            let defs = as_object(defs, &at, "an object of schemas")?;
            let mut schemas = Object::new();
            for (name, s) in defs {
                let converted = self.named_schema(name, s, &at.key(name))?;
                // Recorded now, while it is in the processor's cache; it
                // is not changed after this.
                self.refs_under.record(&converted);
                schemas.push_new(self.component_key("definitions", name), converted);
            }
            out.insert("schemas", Node::Object(schemas));
        }
        if let Some(responses) = self.doc.get("responses") {
            let at = top.key("responses");
            let responses = as_object(responses, &at, "an object of responses")?;
            let produces = Rc::clone(&self.produces);
            let mut converted = Object::new();
            for (name, r) in responses {
                let response = self.response(r, &produces, &at.key(name))?;
                converted.push_new(self.component_key("responses", name), response);
            }
            out.insert("responses", Node::Object(converted));
        }
        if let Some(params) = self.doc.get("parameters") {
            let (parameters, bodies) = self.parameter_components(params)?;
            if !parameters.is_empty() {
                out.insert("parameters", Node::Object(parameters));
            }
            if !bodies.is_empty() {
                out.insert("requestBodies", Node::Object(bodies));
            }
        }
        if let Some(defs) = self.doc.get("securityDefinitions") {
            let schemes = self.security_schemes(defs, &top.key("securityDefinitions"))?;
            out.insert("securitySchemes", schemes);
        }
        Ok(Node::Object(out))
    }
}

/// The number of values in `node`, itself included; without recursion, so
/// depth costs no stack.
fn count_values(node: &Node<'_>) -> usize {
    let mut count = 0;
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        count += 1;
        match n.resolved() {
            Node::Object(o) => stack.extend(o.iter().map(|(_, v)| v)),
            Node::Array(a) => stack.extend(a.iter()),
            _ => {}
        }
    }
    count
}

/// The server URLs for a host, base path and schemes (see
/// [`Context::servers`]). Without schemes the URL is scheme-relative
/// (`//host/base`), which v2 defines as "the scheme used to fetch this
/// document".
fn server_urls(host: Option<&str>, base: Option<&str>, schemes: &[&str]) -> Option<Vec<String>> {
    let base = base.unwrap_or("");
    match host {
        Some(host) if !host.is_empty() => {
            if schemes.is_empty() {
                Some(vec![format!("//{host}{base}")])
            } else {
                Some(schemes.iter().map(|s| format!("{s}://{host}{base}")).collect())
            }
        }
        _ if !base.is_empty() && base != "/" => Some(vec![base.to_owned()]),
        _ => None,
    }
}

fn as_object<'v, 'a>(
    v: &'v Node<'a>,
    at: &Location<'_>,
    expected: &'static str,
) -> Result<&'v Object<'a>, ConvertError> {
    v.as_object().ok_or_else(|| ConvertError::WrongType { at: at.to_pointer(), expected })
}

fn opt_str<'v>(
    v: Option<&'v Node<'_>>,
    at: &Location<'_>,
) -> Result<Option<&'v str>, ConvertError> {
    match v {
        None => Ok(None),
        Some(Node::String(s)) => Ok(Some(s)),
        Some(_) => Err(ConvertError::WrongType { at: at.to_pointer(), expected: "a string" }),
    }
}

/// A list of strings (`consumes`, `produces`, `schemes`); absent is empty.
fn media_types<'v>(
    v: Option<&'v Node<'_>>,
    at: &Location<'_>,
) -> Result<Vec<&'v str>, ConvertError> {
    match v {
        None => Ok(Vec::new()),
        Some(Node::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                item.as_str().ok_or_else(|| ConvertError::WrongType {
                    at: at.index(i).to_pointer(),
                    expected: "a string",
                })
            })
            .collect(),
        Some(_) => {
            Err(ConvertError::WrongType { at: at.to_pointer(), expected: "a list of strings" })
        }
    }
}

#[cfg(test)]
mod tests;

//! Parameters: simple (query, header, path, cookie) parameters, the
//! references to top-level parameters, and `components.parameters`.
//!
//! - Simple parameters carry their type, format, items, enum, default and
//!   limits inside `schema`, and `collectionFormat` becomes
//!   `style`/`explode` (for form fields, in the body's `encoding`, see
//!   `request_body.rs`).
//! - A parameter is classified once its `$ref` (if any) is looked at: a
//!   body or form field becomes part of the request body, anything else a
//!   v3 parameter.
//! - A reference to a top-level simple parameter is copied in place, as
//!   Kubernetes' own v3 has it; a `components.parameters` or
//!   `components.requestBodies` entry that operations took in place is
//!   dropped unless something else refers to it.

use std::collections::BTreeSet;
use std::rc::Rc;

use crate::json::pointer::{JsonPointer, Location, fragment_pointer, unescape_token};
use crate::json::tree::{Node, Object, Shared, Text};

use super::refs::ref_object_value;
use super::reuse;
use super::{Context, ConvertError, NoteKind, as_object};

/// Fields of a v2 simple parameter, header or items object that move into
/// the v3 `schema` unchanged.
pub(super) const SIMPLE_SCHEMA_FIELDS: [&str; 15] = [
    "format",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "enum",
    "multipleOf",
    "x-nullable",
];

/// `components.parameters` and `components.requestBodies`, made from the
/// top-level `parameters`.
type ParameterComponents<'a> = (Object<'a>, Object<'a>);

/// A v2 parameter after its `$ref` (if any) was looked at.
pub(super) enum Param<'a> {
    /// A parameter that stays a v3 parameter.
    Plain(Node<'a>),
    /// `in: body`, item `index` of its parameter list, whose place the
    /// caller knows: a pointer is written out only for a note or an error
    /// under the body, not for each of an API's hundreds of bodies.
    Body { param: &'a Object<'a>, index: usize },
    /// `$ref` to a top-level body parameter.
    BodyRef {
        /// The parameter referred to.
        param: &'a Object<'a>,
        /// Its name under `#/parameters/`.
        name: String,
        /// Where it stands in the input.
        at: JsonPointer,
    },
    /// `in: formData`.
    Form { param: &'a Object<'a>, at: JsonPointer },
}

impl Param<'_> {
    /// The `(in, name)` identity v2 uses to let operation parameters
    /// override path-level ones.
    pub(super) fn identity(&self) -> Option<(&str, &str)> {
        match self {
            Param::Plain(node) => {
                let p = node.as_object()?;
                Some((p.get("in").and_then(Node::as_str)?, p.get("name").and_then(Node::as_str)?))
            }
            Param::Form { param, .. } => {
                Some(("formData", param.get("name").and_then(Node::as_str)?))
            }
            _ => None,
        }
    }
}

impl<'a> Context<'a> {
    /// Reads a `parameters` list, resolving references to top-level
    /// parameters far enough to know whether they are bodies or form
    /// fields.
    pub(super) fn parameter_list(
        &mut self,
        list: &'a Node<'a>,
        at: &Location<'_>,
    ) -> Result<Vec<Param<'a>>, ConvertError> {
        let Node::Array(list) = list else {
            return Err(ConvertError::WrongType {
                at: at.to_pointer(),
                expected: "a list of parameters",
            });
        };
        let mut out = Vec::with_capacity(list.len());
        for (i, p) in list.iter().enumerate() {
            let at = at.index(i);
            let obj = as_object(p, &at, "a parameter object")?;
            if let Some(reference) = obj.get("$ref") {
                out.extend(self.parameter_ref(reference, &at)?);
            } else if let Some(param) = self.parameter(obj, &at, i)? {
                out.push(param);
            }
        }
        Ok(out)
    }

    fn parameter_ref(
        &mut self,
        reference: &Node<'a>,
        at: &Location<'_>,
    ) -> Result<Option<Param<'a>>, ConvertError> {
        let Node::String(r) = reference else {
            return Err(ConvertError::WrongType {
                at: at.key("$ref").to_pointer(),
                expected: "a string",
            });
        };
        let slashed = self.slashed(r, at);
        let r = slashed.as_deref().unwrap_or(r.as_str());
        if !r.starts_with("#/parameters/") {
            // External or unusual references stay references.
            return Ok(Some(Param::Plain(ref_object_value(self.rewrite_ref(reference, at)?))));
        }
        let (target, pointer) = self.resolve(r, at)?;
        // The parameter's name, decoded: `#/parameters/` is followed by one
        // token (a deeper reference is no parameter and stays plain).
        let name = match pointer.strip_prefix("/parameters/") {
            Some(name) if !name.contains('/') => unescape_token(name).into_owned(),
            _ => return Ok(Some(Param::Plain(ref_object_value(self.rewrite_ref(reference, at)?)))),
        };
        let target_at = JsonPointer::root().push("parameters").push(&name);
        let param = as_object(target, &Location::at(&target_at), "a parameter object")?;
        let location = param.get("in").and_then(Node::as_str);
        if location != Some("body") && !self.taken_in_place.contains(&name) {
            self.taken_in_place.insert(name.clone());
        }
        Ok(match location {
            Some("body") => Some(Param::BodyRef { param, name, at: target_at }),
            Some("formData") => Some(Param::Form { param, at: target_at }),
            _ => self.shared_parameter(name, param, &target_at)?.map(Param::Plain),
        })
    }

    /// A top-level query, header or path parameter, copied where it is
    /// used as Kubernetes' own v3 has it (its 1.35 Swagger shares `pretty`,
    /// `watch`, `fieldManager`, … as `#/parameters/…`; its v3 writes each
    /// in place and has no `components.parameters`). Converted once; `None`
    /// for a location v3 lacks, which is noted and dropped.
    fn shared_parameter(
        &mut self,
        name: String,
        param: &'a Object<'a>,
        at: &JsonPointer,
    ) -> Result<Option<Node<'a>>, ConvertError> {
        let converted = match self.shared_parameters.get(&name) {
            Some(converted) => {
                let converted = converted.clone();
                if let Some(Node::Shared(shared)) = &converted {
                    // Placed a second time: written out once, copied after.
                    self.keep_rendered(shared);
                }
                converted
            }
            None => {
                let converted = match self.parameter(param, &Location::at(at), 0)? {
                    Some(Param::Plain(v)) => Some(v),
                    _ => None,
                };
                self.shared_parameters.insert(name, converted.clone());
                converted
            }
        };
        if let Some(node) = &converted {
            self.charge_copy(node)?;
        }
        Ok(converted)
    }

    /// Removes the `components.parameters` and `components.requestBodies`
    /// entries that operations took in place and nothing else refers to:
    /// an entry is kept for a reference from elsewhere (a vendor extension
    /// such as `x-ms-parameterized-host`), and one no operation uses stays
    /// too, so that nothing of the input is lost without a note.
    pub(super) fn drop_unreferenced_parameter_components(&self, document: &mut Node<'a>) {
        if self.taken_in_place.is_empty() {
            return;
        }
        let Node::Object(doc) = document else { return };
        let Some(Node::Object(components)) = doc.get_mut("components") else { return };
        // Sets, not lists: a document may share thousands of parameters.
        let taken: BTreeSet<&str> = self
            .taken_in_place
            .iter()
            .map(|input| self.renames.name("parameters", input))
            .collect();
        for section in ["parameters", "requestBodies"] {
            let prefix = format!("#/components/{section}/");
            let referenced: BTreeSet<String> = self
                .refs
                .values()
                .filter_map(|m| match m {
                    super::refs::Mapped::To(to) => to.strip_prefix(&prefix),
                    super::refs::Mapped::Unmapped => None,
                })
                .filter_map(|rest| {
                    let token = rest.split('/').next().unwrap_or(rest);
                    fragment_pointer(token).map(|t| unescape_token(&t).into_owned())
                })
                .collect();
            let Some(Node::Object(entries)) = components.get_mut(section) else { continue };
            entries.retain(|name, _| !taken.contains(name) || referenced.contains(name));
            if entries.is_empty() {
                components.retain(|k, _| k != section);
            }
        }
    }

    /// Classifies and converts one inline parameter, item `index` of its
    /// list (if it is in one); `None` when it was dropped (unknown
    /// location).
    fn parameter(
        &mut self,
        p: &'a Object<'a>,
        at: &Location<'_>,
        index: usize,
    ) -> Result<Option<Param<'a>>, ConvertError> {
        let location = match p.get("in") {
            Some(Node::String(s)) => s.as_str(),
            _ => {
                return Err(ConvertError::WrongType {
                    at: at.key("in").to_pointer(),
                    expected: "a parameter location",
                });
            }
        };
        match location {
            "body" => Ok(Some(Param::Body { param: p, index })),
            "formData" => Ok(Some(Param::Form { param: p, at: at.to_pointer() })),
            "query" | "header" | "path" | "cookie" => {
                Ok(Some(Param::Plain(self.reused_plain_parameter(p, location, at)?)))
            }
            other => {
                self.note(at, NoteKind::UnknownParameterLocation { location: other.to_owned() });
                Ok(None)
            }
        }
    }

    /// [`Context::plain_parameter`], shared with every equal input
    /// converted before or after when the conversion is the same wherever
    /// it stands (see `reuse.rs`).
    fn reused_plain_parameter(
        &mut self,
        p: &'a Object<'a>,
        location: &str,
        at: &Location<'_>,
    ) -> Result<Node<'a>, ConvertError> {
        let print = reuse::fingerprint(p, &[]);
        if let Some(kept) = self.reused_parameters.get(print, p, &[]) {
            // Placed a second time: written out once, copied after.
            let shared = kept.shared.clone();
            self.keep_rendered(&shared);
            return Ok(Node::Shared(shared));
        }
        let before = (self.note_calls, self.charge_calls);
        let converted = self.plain_parameter(p, location, at)?;
        // Kept when nothing was noted or counted as copies (nothing in a
        // parameter is, and a copy placed would have to be counted again).
        if (self.note_calls, self.charge_calls) != before || !self.reused_parameters.has_room(print)
        {
            return Ok(converted);
        }
        Ok(match Shared::new(converted) {
            Ok(shared) => {
                self.reused_parameters.keep(print, p, &[], shared.clone(), (0, 0));
                Node::Shared(shared)
            }
            Err(converted) => converted,
        })
    }

    /// A query, header or path parameter: the simple-schema fields move
    /// into `schema`, `collectionFormat` becomes `style`/`explode`.
    fn plain_parameter(
        &mut self,
        p: &Object<'a>,
        location: &str,
        at: &Location<'_>,
    ) -> Result<Node<'a>, ConvertError> {
        // Sized for the members kept and `schema` (`style` and `explode`,
        // for array parameters only, grow it): a document has thousands of
        // query parameters, and a list regrown for each left its smaller
        // copy behind. The members are the input's, whose keys are unique,
        // and three names none of them can be: nothing to search for.
        let kept = p.keys().filter(|k| kept_in_parameter(k, location)).count();
        let mut out = Object::with_capacity(kept + 1);
        for (key, value) in p {
            match key.as_str() {
                k if kept_in_parameter(k, location) && !k.starts_with("x-") => {
                    out.push_new(key.clone(), value.clone());
                }
                "allowEmptyValue" => {
                    self.note(&at.key(key), NoteKind::AllowEmptyValueOutsideQuery);
                }
                k if k.starts_with("x-") && k != "x-nullable" => {
                    let converted = self.extension(value, &at.key(key));
                    out.push_new(key.clone(), converted);
                }
                k if moves_into_schema(k) => {}
                _ => self.dropped_field(key, at),
            }
        }
        if let Some((style, explode)) = self.collection_style(p, location, at)? {
            out.push_new(Text::plain("style"), Node::String(Text::plain(style)));
            out.push_new(Text::plain("explode"), Node::Bool(explode));
        }
        let schema = match p.get("schema") {
            // Not valid v2 outside a body, but seen in the wild.
            Some(s) => self.schema(s, &at.key("schema"))?,
            None => self.simple_schema(p, at)?,
        };
        out.push_new(Text::plain("schema"), schema);
        Ok(Node::Object(out))
    }

    /// v3 `style`/`explode` for a v2 `collectionFormat` (default `csv`) of
    /// an array parameter; `None` where v3's default already says the same.
    pub(super) fn collection_style(
        &mut self,
        p: &Object<'a>,
        location: &str,
        at: &Location<'_>,
    ) -> Result<Option<(&'static str, bool)>, ConvertError> {
        if p.get("type").and_then(Node::as_str) != Some("array") {
            return Ok(None);
        }
        let format = match p.get("collectionFormat") {
            None => "csv",
            Some(Node::String(s)) => s.as_str(),
            Some(_) => {
                return Err(ConvertError::WrongType {
                    at: at.key("collectionFormat").to_pointer(),
                    expected: "a collection format",
                });
            }
        };
        let query_or_form = matches!(location, "query" | "formData");
        Ok(match (format, query_or_form) {
            // v3's default for query is form+explode, which is `multi`, so
            // v2's default `csv` must be spelled out.
            ("csv", true) => Some(("form", false)),
            // path and header default to simple, which is csv.
            ("csv", false) => None,
            ("multi", true) => Some(("form", true)),
            ("ssv", true) => Some(("spaceDelimited", false)),
            ("pipes", true) => Some(("pipeDelimited", false)),
            ("tsv", _) => {
                self.note(&at.key("collectionFormat"), NoteKind::TabSeparatedCollection);
                None
            }
            (other, _) => {
                self.note(
                    &at.key("collectionFormat"),
                    NoteKind::UnsupportedCollectionFormat { format: other.to_owned() },
                );
                None
            }
        })
    }

    /// The schema of a simple parameter, header or `items` object: its type
    /// and every validation field, `items` recursively, `file` as a binary
    /// string.
    pub(super) fn simple_schema(
        &mut self,
        p: &Object<'a>,
        at: &Location<'_>,
    ) -> Result<Node<'a>, ConvertError> {
        // Counted first (a handful of members), so that the schema of each
        // of a document's thousands of query parameters is allocated once,
        // at its size.
        let room = p
            .keys()
            .filter(|k| {
                matches!(k.as_str(), "type" | "items" | "x-nullable")
                    || SIMPLE_SCHEMA_FIELDS.contains(&k.as_str())
            })
            .count();
        // `type: file` becomes a type and a format.
        let file = p.get("type").and_then(Node::as_str) == Some("file");
        // Appended, not searched for: what `type` gives first, then the
        // parameter's own fields (unique keys, none of them `type`,
        // `nullable` or `items`; `format` skipped when `type` gave one),
        // then `items`. Only `x-nullable` may meet a `nullable` already
        // there.
        let mut out = Object::with_capacity(room + usize::from(file));
        match p.get("type") {
            Some(Node::String(t)) if t == "file" => {
                out.push_new(Text::plain("type"), Node::String(Text::plain("string")));
                out.push_new(Text::plain("format"), Node::String(Text::plain("binary")));
            }
            // As in a schema: OpenAPI 3.0 has no null type.
            Some(Node::String(t)) if t == "null" => {
                self.note(&at.key("type"), NoteKind::NullType);
                out.push_new(Text::plain("nullable"), Node::Bool(true));
            }
            Some(t @ Node::String(_)) => {
                out.push_new(Text::plain("type"), t.clone());
            }
            Some(_) => {
                return Err(ConvertError::WrongType {
                    at: at.key("type").to_pointer(),
                    expected: "a type name",
                });
            }
            None => {}
        }
        // One pass over the parameter's own members (in their order) rather
        // than a lookup per field: Kubernetes documents have thousands of
        // query parameters.
        for (field, v) in p {
            match field.as_str() {
                "x-nullable" if v.is_boolean() => {
                    out.insert("nullable", v.clone());
                }
                // `type: file` already set `format: binary`.
                "format" if out.contains_key("format") => {}
                f if SIMPLE_SCHEMA_FIELDS.contains(&f) => {
                    out.push_new(field.clone(), v.clone());
                }
                _ => {}
            }
        }
        if let Some(items) = p.get("items") {
            let items_at = at.key("items");
            let items = as_object(items, &items_at, "an items object")?;
            if items.contains_key("collectionFormat") {
                // Nested collection formats (`a,b|c,d`) have no v3 style.
                self.note(
                    &items_at.key("collectionFormat"),
                    NoteKind::UnsupportedCollectionFormat {
                        format: items
                            .get("collectionFormat")
                            .map(|v| v.to_string())
                            .unwrap_or_default(),
                    },
                );
            }
            let converted = if items.contains_key("$ref") {
                // Items of a body schema slipped into a simple parameter.
                self.schema(&Node::Object(items.clone()), &items_at)?
            } else {
                self.simple_schema(items, &items_at)?
            };
            out.push_new(Text::plain("items"), converted);
        }
        Ok(Node::Object(out))
    }

    /// Top-level `parameters` → `components.parameters` and, for body
    /// parameters, `components.requestBodies` (content from the document's
    /// `consumes`). Form parameters cannot be components; they are inlined
    /// where referenced.
    pub(super) fn parameter_components(
        &mut self,
        params: &'a Node<'a>,
    ) -> Result<ParameterComponents<'a>, ConvertError> {
        let at = Location::root().key("parameters");
        let params = as_object(params, &at, "an object of parameters")?;
        // Collected, then made objects once (`Object::from_members`): a
        // document may share as many parameters as it has bytes for.
        let mut parameters = Vec::new();
        let mut bodies = Vec::new();
        let consumes = Rc::clone(&self.consumes);
        for (name, p) in params {
            let at = at.key(name);
            let obj = as_object(p, &at, "a parameter object")?;
            match self.parameter(obj, &at, 0)? {
                Some(Param::Plain(v)) => {
                    parameters.push((self.component_key("parameters", name), v));
                }
                Some(Param::Body { param, .. }) => {
                    let body = self.request_body(param, &consumes, &at)?;
                    bodies.push((self.component_key("parameters", name), body));
                }
                Some(Param::Form { .. }) => {
                    self.note(&at, NoteKind::FormDataComponent { name: name.to_string() });
                }
                Some(Param::BodyRef { .. }) | None => {}
            }
        }
        Ok((Object::from_members(parameters), Object::from_members(bodies)))
    }
}

/// True for the members of a v2 query, header or path parameter (at
/// `location`) that its v3 form keeps as they are (`x-` extensions with
/// their references followed).
fn kept_in_parameter(key: &str, location: &str) -> bool {
    match key {
        // v3 parameters have `example`; v2 ones do not, but documents
        // write it (swagger2openapi's issue79).
        "name" | "in" | "description" | "required" | "deprecated" | "example" => true,
        "allowEmptyValue" => location == "query",
        k => k.starts_with("x-") && k != "x-nullable",
    }
}

/// True for the members of a v2 simple parameter, header or form field
/// that its v3 `schema` (or `style`/`explode`) carries.
pub(super) fn moves_into_schema(key: &str) -> bool {
    matches!(key, "type" | "items" | "collectionFormat" | "schema")
        || SIMPLE_SCHEMA_FIELDS.contains(&key)
}

//! Paths, operations, parameters, request bodies and responses.
//!
//! Where v2 and v3 differ most:
//! - v2 parameters `in: body` and `in: formData` become one v3
//!   `requestBody`; the body parameter is found by `in: body` (upstream
//!   looks for the *name* `body`, docs/upstream.md#b-8-2), form parameters
//!   become the properties of an object schema under a form media type;
//! - the media types of request and response content come from the
//!   operation's `consumes`/`produces`, else the document's, else `*/*`:
//!   nothing was declared, so nothing narrower is claimed (upstream ignores
//!   the document's lists and loses the schemas of operations that have
//!   none);
//! - simple parameters carry their type, format, items, enum, default and
//!   limits inside `schema`, and `collectionFormat` becomes
//!   `style`/`explode` (for form fields, in the body's `encoding`);
//! - a shared body parameter (`#/parameters/…`) is a `$ref` to its
//!   `components.requestBodies` entry only where the operation consumes
//!   what the document does; elsewhere it is inlined with the operation's
//!   media types (see `body_of`).

use std::collections::BTreeSet;

use crate::json::tree::{Node, Object};

use super::{Context, ConvertError, NoteKind, as_object, media_types};
use crate::json::pointer::{JsonPointer, Location, fragment_pointer, unescape_token};

/// The operations a v2 path item can hold.
pub(super) const METHODS: [&str; 7] = ["get", "put", "post", "delete", "options", "head", "patch"];
use crate::wire::media::{ANY_MEDIA_TYPE, FORM_URLENCODED, MULTIPART_FORM_DATA as MULTIPART};

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
enum Param<'a> {
    /// A parameter that stays a v3 parameter.
    Plain(Node<'a>),
    /// `in: body`.
    Body { param: &'a Object<'a>, at: JsonPointer },
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
    fn identity(&self) -> Option<(&str, &str)> {
        match self {
            Param::Plain(Node::Object(p)) => {
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
    pub(super) fn paths(
        &mut self,
        paths: &'a Node<'a>,
        at: &Location<'_>,
    ) -> Result<Node<'a>, ConvertError> {
        let paths = as_object(paths, at, "an object of path items")?;
        let mut out = Object::with_capacity(paths.len());
        for (path, item) in paths {
            let converted = if path.starts_with("x-") {
                self.extension(item, &at.key(path))
            } else {
                self.path_item(item, &at.key(path))?
            };
            out.push_new(path.clone(), converted);
        }
        Ok(Node::Object(out))
    }

    fn path_item(
        &mut self,
        item: &'a Node<'a>,
        at: &Location<'_>,
    ) -> Result<Node<'a>, ConvertError> {
        let item = as_object(item, at, "a path item object")?;
        let shared = match item.get("parameters") {
            Some(list) => self.parameter_list(list, &at.key("parameters"))?,
            None => Vec::new(),
        };
        let mut out = Object::new();
        for (key, value) in item {
            match key.as_str() {
                "parameters" => {
                    // Path-level bodies and form fields have no v3 home at
                    // the path level: they are merged into each operation.
                    let plain: Vec<Node<'a>> = shared
                        .iter()
                        .filter_map(|p| match p {
                            Param::Plain(v) => Some(v.clone()),
                            _ => None,
                        })
                        .collect();
                    if !plain.is_empty() {
                        out.insert(key.clone(), Node::Array(plain));
                    }
                }
                m if METHODS.contains(&m) => {
                    let op = self.operation(value, &shared, &at.key(key))?;
                    out.insert(key.clone(), op);
                }
                k if k.starts_with("x-") => {
                    let converted = self.extension(value, &at.key(key));
                    out.insert(key.clone(), converted);
                }
                // To another file, in practice, which is not converted:
                // noted like every other reference to another document (a
                // local one follows its target, or is noted as unmapped).
                "$ref" => {
                    let converted = self.rewrite_ref(value, at)?;
                    out.insert(key.clone(), converted);
                }
                // Not v2, but v3 path items have them: kept.
                "summary" | "description" => {
                    out.insert(key.clone(), value.clone());
                }
                // v3 forbids other members, so copying one would make the
                // document invalid (a `trace` or `foo` of v2 documents).
                _ => self.dropped_field(key, at),
            }
        }
        Ok(Node::Object(out))
    }

    fn operation(
        &mut self,
        op: &'a Node<'a>,
        shared: &[Param<'a>],
        at: &Location<'_>,
    ) -> Result<Node<'a>, ConvertError> {
        let op = as_object(op, at, "an operation object")?;
        let consumes = match op.get("consumes") {
            Some(v) => media_types(Some(v), &at.key("consumes"))?,
            None => self.consumes.clone(),
        };
        let produces = match op.get("produces") {
            Some(v) => media_types(Some(v), &at.key("produces"))?,
            None => self.produces.clone(),
        };
        let own = match op.get("parameters") {
            Some(list) => self.parameter_list(list, &at.key("parameters"))?,
            None => Vec::new(),
        };
        // The operation's parameters, then the path-level bodies and form
        // fields it does not override (same `in` and `name`).
        let own_ids: Vec<_> = own.iter().filter_map(Param::identity).collect();
        let mut plain = Vec::new();
        let mut body: Option<Node<'a>> = None;
        let mut form: Vec<(&'a Object<'a>, JsonPointer)> = Vec::new();
        let inherited = shared.iter().filter(|p| match p.identity() {
            Some(id) => !own_ids.contains(&id),
            None => true,
        });
        let mut own_body_seen = false;
        for (p, is_own) in own.iter().map(|p| (p, true)).chain(inherited.map(|p| (p, false))) {
            match p {
                // Path-level plain parameters stay at the path level in v3.
                Param::Plain(_) if !is_own => {}
                Param::Plain(v) => plain.push(v.clone()),
                Param::Body { .. } | Param::BodyRef { .. } => {
                    // An operation's own body replaces a path-level one.
                    if !is_own && own_body_seen {
                        continue;
                    }
                    if body.is_some() {
                        self.note(&at.key("parameters"), NoteKind::ExtraBodyParameter);
                        continue;
                    }
                    own_body_seen |= is_own;
                    body = self.body_of(p, &consumes)?;
                }
                Param::Form { param, at } => form.push((*param, at.clone())),
            }
        }
        if body.is_none() && !form.is_empty() {
            let form_body = self.form_body(&form, &consumes)?;
            // Shared form fields (`#/parameters/…`) are copies too.
            if form.iter().any(|(_, at)| at.as_str().starts_with("/parameters/")) {
                self.charge_copy(&form_body)?;
            }
            body = Some(form_body);
        } else {
            // v2 forbids form fields beside a body; the body wins.
            for (_, at) in form {
                self.note(&Location::at(&at), NoteKind::FormBesideBody);
            }
        }

        let mut out = Object::new();
        let mut responses_seen = false;
        for (key, value) in op {
            match key.as_str() {
                "consumes" | "produces" => {}
                "parameters" => {}
                "schemes" => self.operation_schemes(value, &mut out, &at.key(key))?,
                "responses" => {
                    responses_seen = true;
                    // v3 puts the request before the responses.
                    insert_parameters_and_body(&mut out, &mut plain, &mut body);
                    out.insert(key.clone(), self.responses(value, &produces, &at.key(key))?);
                }
                "security" => {
                    out.insert(key.clone(), self.security_requirements(value));
                }
                k if k.starts_with("x-") => {
                    let converted = self.extension(value, &at.key(key));
                    out.insert(key.clone(), converted);
                }
                "tags" | "summary" | "description" | "externalDocs" | "operationId"
                | "deprecated" => {
                    out.insert(key.clone(), value.clone());
                }
                // v3 forbids other members, so copying one would make the
                // document invalid.
                _ => self.dropped_field(key, at),
            }
        }
        insert_parameters_and_body(&mut out, &mut plain, &mut body);
        if !responses_seen {
            self.note(at, NoteKind::MissingResponses);
            out.insert("responses", Node::Object(Object::new()));
        }
        Ok(Node::Object(out))
    }

    /// The request body a body parameter (inline or referenced) stands for.
    ///
    /// A referenced one is inlined too: a request body's media types are
    /// its operation's `consumes`, which a shared component cannot follow,
    /// and Kubernetes writes every request body inline (its 1.35 Swagger
    /// shares the DeleteOptions body as `#/parameters/body-2Y1dVQaQ` among
    /// DELETE operations that consume `*/*`, and PATCH bodies among the
    /// patch media types; its v3 has no `components.requestBodies`).
    fn body_of(
        &mut self,
        p: &Param<'a>,
        consumes: &[&'a str],
    ) -> Result<Option<Node<'a>>, ConvertError> {
        Ok(match p {
            Param::Body { param, at } => {
                Some(self.request_body(param, consumes, &Location::at(at))?)
            }
            Param::BodyRef { param, name, at } => {
                // Taken in place here, where it is used: a reference that
                // is dropped (a second body) leaves its component standing.
                self.taken_in_place.insert(name.clone());
                let body = self.request_body(param, consumes, &Location::at(at))?;
                self.charge_copy(&body)?;
                Some(body)
            }
            Param::Plain(_) | Param::Form { .. } => None,
        })
    }

    /// Per-operation `schemes` become per-operation `servers` when they
    /// differ from the document's and a host is known; otherwise they add
    /// nothing v3 can say.
    fn operation_schemes(
        &mut self,
        value: &Node<'a>,
        out: &mut Object<'a>,
        at: &Location<'_>,
    ) -> Result<(), ConvertError> {
        let schemes = media_types(Some(value), at)?;
        let global = media_types(self.doc.get("schemes"), &Location::root().key("schemes"))?;
        if schemes == global {
            return Ok(());
        }
        let host = self.doc.get("host").and_then(Node::as_str).filter(|h| !h.is_empty());
        let Some(host) = host else {
            self.note(at, NoteKind::OperationSchemes);
            return Ok(());
        };
        let base = self.doc.get("basePath").and_then(Node::as_str).unwrap_or("");
        let servers = schemes
            .iter()
            .map(|s| {
                let mut m = Object::new();
                m.insert("url", Node::String(format!("{s}://{host}{base}").into()));
                Node::Object(m)
            })
            .collect();
        out.insert("servers", Node::Array(servers));
        Ok(())
    }

    /// Reads a `parameters` list, resolving references to top-level
    /// parameters far enough to know whether they are bodies or form
    /// fields.
    fn parameter_list(
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
            } else if let Some(param) = self.parameter(obj, &at)? {
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
            Some(converted) => converted.clone(),
            None => {
                let converted = match self.parameter(param, &Location::at(at))? {
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

    /// Classifies and converts one inline parameter; `None` when it was
    /// dropped (unknown location).
    fn parameter(
        &mut self,
        p: &'a Object<'a>,
        at: &Location<'_>,
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
            "body" => Ok(Some(Param::Body { param: p, at: at.to_pointer() })),
            "formData" => Ok(Some(Param::Form { param: p, at: at.to_pointer() })),
            "query" | "header" | "path" | "cookie" => {
                Ok(Some(Param::Plain(self.plain_parameter(p, location, at)?)))
            }
            other => {
                self.note(at, NoteKind::UnknownParameterLocation { location: other.to_owned() });
                Ok(None)
            }
        }
    }

    /// A query, header or path parameter: the simple-schema fields move
    /// into `schema`, `collectionFormat` becomes `style`/`explode`.
    fn plain_parameter(
        &mut self,
        p: &Object<'a>,
        location: &str,
        at: &Location<'_>,
    ) -> Result<Node<'a>, ConvertError> {
        let mut out = Object::new();
        for (key, value) in p {
            match key.as_str() {
                "name" | "in" | "description" | "required" | "deprecated" => {
                    out.insert(key.clone(), value.clone());
                }
                "allowEmptyValue" => {
                    if location == "query" {
                        out.insert(key.clone(), value.clone());
                    } else {
                        self.note(&at.key(key), NoteKind::AllowEmptyValueOutsideQuery);
                    }
                }
                // v3 parameters have `example`; v2 ones do not, but
                // documents write it (swagger2openapi's issue79).
                "example" => {
                    out.insert(key.clone(), value.clone());
                }
                k if k.starts_with("x-") && k != "x-nullable" => {
                    let converted = self.extension(value, &at.key(key));
                    out.insert(key.clone(), converted);
                }
                k if moves_into_schema(k) => {}
                _ => self.dropped_field(key, at),
            }
        }
        if let Some((style, explode)) = self.collection_style(p, location, at)? {
            out.insert("style", Node::String(style.into()));
            out.insert("explode", Node::Bool(explode));
        }
        let schema = match p.get("schema") {
            // Not valid v2 outside a body, but seen in the wild.
            Some(s) => self.schema(s, &at.key("schema"))?,
            None => self.simple_schema(p, at)?,
        };
        out.insert("schema", schema);
        Ok(Node::Object(out))
    }

    /// v3 `style`/`explode` for a v2 `collectionFormat` (default `csv`) of
    /// an array parameter; `None` where v3's default already says the same.
    fn collection_style(
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
    fn simple_schema(
        &mut self,
        p: &Object<'a>,
        at: &Location<'_>,
    ) -> Result<Node<'a>, ConvertError> {
        let mut out = Object::new();
        match p.get("type") {
            Some(Node::String(t)) if t == "file" => {
                out.insert("type", Node::String("string".into()));
                out.insert("format", Node::String("binary".into()));
            }
            // As in a schema: OpenAPI 3.0 has no null type.
            Some(Node::String(t)) if t == "null" => {
                self.note(&at.key("type"), NoteKind::NullType);
                out.insert("nullable", Node::Bool(true));
            }
            Some(t @ Node::String(_)) => {
                out.insert("type", t.clone());
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
                    out.insert(field.clone(), v.clone());
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
            out.insert("items", converted);
        }
        Ok(Node::Object(out))
    }

    /// A body parameter → `requestBody` with one content entry per media
    /// type it consumes.
    fn request_body(
        &mut self,
        param: &Object<'a>,
        consumes: &[&'a str],
        at: &Location<'_>,
    ) -> Result<Node<'a>, ConvertError> {
        let schema = match param.get("schema") {
            Some(s) => self.schema(s, &at.key("schema"))?,
            None => Node::Object(Object::new()),
        };
        let mut out = Object::new();
        if let Some(d) = param.get("description") {
            out.insert("description", d.clone());
        }
        let mut content = Object::new();
        for mt in media_or_default(consumes) {
            content.insert(mt, media_type(Some(schema.clone()), None));
        }
        out.insert("content", Node::Object(content));
        if param.get("required") == Some(&Node::Bool(true)) {
            out.insert("required", Node::Bool(true));
        }
        for (k, v) in param {
            match k.as_str() {
                x if x.starts_with("x-") => {
                    let converted = self.extension(v, &at.key(k));
                    out.insert(k.clone(), converted);
                }
                // A v3 request body has no name: a body parameter's name
                // is documentation only in v2 (and every Kubernetes body
                // has one), so it goes without a note.
                "name" | "in" | "description" | "required" | "schema" => {}
                _ => self.dropped_field(k, at),
            }
        }
        Ok(Node::Object(out))
    }

    /// `formData` parameters → one object schema under the form media
    /// types the operation consumes (multipart when a file is uploaded and
    /// nothing says otherwise, else URL-encoded); an array field's
    /// `collectionFormat` becomes its `encoding` `style`/`explode`, as for a
    /// query parameter.
    fn form_body(
        &mut self,
        form: &[(&'a Object<'a>, JsonPointer)],
        consumes: &[&'a str],
    ) -> Result<Node<'a>, ConvertError> {
        let mut properties = Object::new();
        let mut required = Vec::new();
        let mut encoding = Object::new();
        // Where each field that got an encoding `style` states its format.
        let mut styled = Vec::new();
        let mut has_file = false;
        for (p, at) in form {
            let at = &Location::at(at);
            let name = match p.get("name") {
                Some(Node::String(n)) => n.clone(),
                _ => {
                    return Err(ConvertError::WrongType {
                        at: at.key("name").to_pointer(),
                        expected: "a parameter name",
                    });
                }
            };
            has_file |= p.get("type").and_then(Node::as_str) == Some("file");
            let mut schema = self.simple_schema(p, at)?;
            if let Node::Object(s) = &mut schema {
                self.form_field_extras(p, s, at);
            }
            if p.get("required") == Some(&Node::Bool(true)) {
                required.push(Node::String(name.clone()));
            }
            if let Some((style, explode)) = self.collection_style(p, "formData", at)? {
                let mut e = Object::new();
                e.insert("style", Node::String(style.into()));
                e.insert("explode", Node::Bool(explode));
                encoding.insert(name.clone(), Node::Object(e));
                // The default `csv` is written nowhere: point at the field.
                styled.push(if p.contains_key("collectionFormat") {
                    at.key("collectionFormat").to_pointer()
                } else {
                    at.to_pointer()
                });
            }
            properties.insert(name, schema);
        }
        let mut schema = Object::new();
        schema.insert("type", Node::String("object".into()));
        schema.insert("properties", Node::Object(properties));
        let any_required = !required.is_empty();
        if any_required {
            schema.insert("required", Node::Array(required));
        }
        let schema = Node::Object(schema);
        let declared: Vec<&str> = consumes
            .iter()
            .copied()
            .filter(|m| media_base(m) == FORM_URLENCODED || media_base(m) == MULTIPART)
            .collect();
        let types = if !declared.is_empty() {
            declared
        } else if has_file {
            vec![MULTIPART]
        } else {
            vec![FORM_URLENCODED]
        };
        // OpenAPI 3.0 defines an encoding's `style`/`explode` for URL-encoded
        // bodies only; 3.1 extends them to multipart, and tools read them
        // there. They are written for multipart too, so a `pipes` field
        // keeps saying so, with a note that a strict 3.0 reader may ignore
        // it (dropping it left nothing at all, not even a note).
        if !encoding.is_empty() && types.iter().any(|mt| media_base(mt) == MULTIPART) {
            for at in styled {
                self.notes.push(super::Note { at, kind: NoteKind::MultipartCollectionFormat });
            }
        }
        let mut content = Object::new();
        for mt in types {
            let form = matches!(media_base(mt), FORM_URLENCODED | MULTIPART);
            let enc = (form && !encoding.is_empty()).then(|| encoding.clone());
            content.insert(mt, media_type(Some(schema.clone()), enc));
        }
        let mut out = Object::new();
        out.insert("content", Node::Object(content));
        if any_required {
            out.insert("required", Node::Bool(true));
        }
        Ok(Node::Object(out))
    }

    /// What a form field carries besides its type and validation: its
    /// description, example and extensions go into its property schema
    /// (where v3 allows all three); `allowEmptyValue` (query only in v3)
    /// and anything unknown are dropped with a note.
    fn form_field_extras(&mut self, p: &Object<'a>, schema: &mut Object<'a>, at: &Location<'_>) {
        for (key, value) in p {
            match key.as_str() {
                "description" | "example" => {
                    schema.insert(key.clone(), value.clone());
                }
                "allowEmptyValue" => {
                    self.note(&at.key(key), NoteKind::AllowEmptyValueOutsideQuery);
                }
                k if k.starts_with("x-") && k != "x-nullable" => {
                    let converted = self.extension(value, &at.key(key));
                    schema.insert(key.clone(), converted);
                }
                "name" | "in" | "required" => {}
                k if moves_into_schema(k) => {}
                _ => self.dropped_field(key, at),
            }
        }
    }

    /// Notes that member `key` of the object at `at` was dropped.
    pub(super) fn dropped_field(&mut self, key: &str, at: &Location<'_>) {
        self.note(&at.key(key), NoteKind::DroppedField { field: key.to_owned() });
    }

    fn responses(
        &mut self,
        responses: &Node<'a>,
        produces: &[&'a str],
        at: &Location<'_>,
    ) -> Result<Node<'a>, ConvertError> {
        let responses = as_object(responses, at, "an object of responses")?;
        let mut out = Object::with_capacity(responses.len());
        for (code, r) in responses {
            let converted = if code.starts_with("x-") {
                self.extension(r, &at.key(code))
            } else {
                self.response(r, produces, &at.key(code))?
            };
            out.push_new(code.clone(), converted);
        }
        Ok(Node::Object(out))
    }

    /// One response: schema and examples become `content` per produced
    /// media type; headers get their schema.
    pub(super) fn response(
        &mut self,
        r: &Node<'a>,
        produces: &[&'a str],
        at: &Location<'_>,
    ) -> Result<Node<'a>, ConvertError> {
        let r = as_object(r, at, "a response object")?;
        if let Some(reference) = r.get("$ref") {
            return Ok(ref_object_value(self.rewrite_ref(reference, at)?));
        }
        let schema = match r.get("schema") {
            Some(s) => Some(self.schema(s, &at.key("schema"))?),
            None => None,
        };
        let examples = match r.get("examples") {
            Some(e) => Some(as_object(e, &at.key("examples"), "an object of examples")?),
            None => None,
        };
        let mut out = Object::new();
        match r.get("description") {
            Some(d) => {
                out.insert("description", d.clone());
            }
            None => {
                self.note(at, NoteKind::MissingDescription);
                out.insert("description", Node::string(""));
            }
        }
        if let Some(headers) = r.get("headers") {
            let at = at.key("headers");
            let headers = as_object(headers, &at, "an object of headers")?;
            let mut converted = Object::new();
            for (name, h) in headers {
                converted.insert(name.clone(), self.header(h, &at.key(name))?);
            }
            out.insert("headers", Node::Object(converted));
        }
        let mut content = Object::new();
        if let Some(schema) = &schema {
            for mt in media_or_default(produces) {
                let example = examples.and_then(|e| e.get(mt)).cloned();
                let mut m = media_type(Some(schema.clone()), None);
                if let (Some(ex), Node::Object(m)) = (example, &mut m) {
                    m.insert("example", ex);
                }
                content.insert(mt, m);
            }
        }
        if let Some(examples) = examples {
            for (mt, ex) in examples {
                if !content.contains_key(mt) {
                    let mut m = Object::new();
                    if let Some(schema) = &schema {
                        m.insert("schema", schema.clone());
                    }
                    m.insert("example", ex.clone());
                    content.insert(mt.clone(), Node::Object(m));
                }
            }
        }
        if !content.is_empty() {
            out.insert("content", Node::Object(content));
        }
        for (k, v) in r {
            match k.as_str() {
                x if x.starts_with("x-") => {
                    let converted = self.extension(v, &at.key(k));
                    out.insert(k.clone(), converted);
                }
                "description" | "schema" | "examples" | "headers" => {}
                _ => self.dropped_field(k, at),
            }
        }
        Ok(Node::Object(out))
    }

    fn header(&mut self, h: &Node<'a>, at: &Location<'_>) -> Result<Node<'a>, ConvertError> {
        let h = as_object(h, at, "a header object")?;
        let mut out = Object::new();
        if let Some(d) = h.get("description") {
            out.insert("description", d.clone());
        }
        if let Some((style, explode)) = self.collection_style(h, "header", at)? {
            out.insert("style", Node::String(style.into()));
            out.insert("explode", Node::Bool(explode));
        }
        out.insert("schema", self.simple_schema(h, at)?);
        for (k, v) in h {
            match k.as_str() {
                "example" => {
                    out.insert(k.clone(), v.clone());
                }
                x if x.starts_with("x-") && x != "x-nullable" => {
                    let converted = self.extension(v, &at.key(k));
                    out.insert(k.clone(), converted);
                }
                "description" => {}
                x if moves_into_schema(x) => {}
                _ => self.dropped_field(k, at),
            }
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
        let mut parameters = Object::new();
        let mut bodies = Object::new();
        let consumes = self.consumes.clone();
        for (name, p) in params {
            let at = at.key(name);
            let obj = as_object(p, &at, "a parameter object")?;
            match self.parameter(obj, &at)? {
                Some(Param::Plain(v)) => {
                    parameters.insert(self.component_key("parameters", name), v);
                }
                Some(Param::Body { param, at }) => {
                    let at = Location::at(&at);
                    let body = self.request_body(param, &consumes, &at)?;
                    bodies.insert(self.component_key("parameters", name), body);
                }
                Some(Param::Form { .. }) => {
                    self.note(&at, NoteKind::FormDataComponent { name: name.to_string() });
                }
                Some(Param::BodyRef { .. }) | None => {}
            }
        }
        Ok((parameters, bodies))
    }
}

/// True for the members of a v2 simple parameter, header or form field
/// that its v3 `schema` (or `style`/`explode`) carries.
fn moves_into_schema(key: &str) -> bool {
    matches!(key, "type" | "items" | "collectionFormat" | "schema")
        || SIMPLE_SCHEMA_FIELDS.contains(&key)
}

fn insert_parameters_and_body<'a>(
    out: &mut Object<'a>,
    plain: &mut Vec<Node<'a>>,
    body: &mut Option<Node<'a>>,
) {
    if !plain.is_empty() {
        out.insert("parameters", Node::Array(std::mem::take(plain)));
    }
    if let Some(b) = body.take() {
        out.insert("requestBody", b);
    }
}

/// The media types a body or response is written under: those declared,
/// else `*/*` (docs/wire.md#a-5 says why not `application/json`).
pub(super) fn media_or_default<'m>(types: &[&'m str]) -> Vec<&'m str> {
    if types.is_empty() { vec![ANY_MEDIA_TYPE] } else { types.to_vec() }
}

/// The media type without parameters (`multipart/form-data; boundary=x` →
/// `multipart/form-data`).
fn media_base(mt: &str) -> &str {
    mt.split(';').next().unwrap_or(mt).trim()
}

fn media_type<'a>(schema: Option<Node<'a>>, encoding: Option<Object<'a>>) -> Node<'a> {
    let mut m = Object::new();
    if let Some(s) = schema {
        m.insert("schema", s);
    }
    if let Some(e) = encoding {
        m.insert("encoding", Node::Object(e));
    }
    Node::Object(m)
}

fn ref_object_value<'a>(reference: Node<'a>) -> Node<'a> {
    let mut m = Object::new();
    m.insert("$ref", reference);
    Node::Object(m)
}

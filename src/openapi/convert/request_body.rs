//! Request bodies: v2 parameters `in: body` and `in: formData` become one
//! v3 `requestBody`.
//!
//! - The body parameter is found by `in: body` (upstream looks for the
//!   *name* `body`, docs/upstream.md#b-8-2); its content has one entry per media
//!   type the operation consumes.
//! - Form parameters become the properties of an object schema under a form
//!   media type, their `collectionFormat` the `encoding`'s `style`/`explode`.
//! - A shared body parameter (`#/parameters/…`) is inlined with the
//!   operation's media types, as Kubernetes writes every request body (see
//!   `body_of`).

use crate::json::pointer::{JsonPointer, Location};
use crate::json::tree::{Node, Object};
use crate::wire::media::{FORM_URLENCODED, MULTIPART_FORM_DATA as MULTIPART};

use super::media::{distinct, media_base, media_or_default, media_type};
use super::parameter::{Param, moves_into_schema};
use super::{Context, ConvertError, NoteKind, count_values};

impl<'a> Context<'a> {
    /// The request body a body parameter (inline or referenced) stands for.
    ///
    /// A referenced one is inlined too: a request body's media types are
    /// its operation's `consumes`, which a shared component cannot follow,
    /// and Kubernetes writes every request body inline (its 1.35 Swagger
    /// shares the DeleteOptions body as `#/parameters/body-2Y1dVQaQ` among
    /// DELETE operations that consume `*/*`, and PATCH bodies among the
    /// patch media types; its v3 has no `components.requestBodies`).
    ///
    /// `list_at` is where the parameter list it came from stands.
    pub(super) fn body_of(
        &mut self,
        p: &Param<'a>,
        consumes: &[&'a str],
        list_at: &Location<'_>,
    ) -> Result<Option<Node<'a>>, ConvertError> {
        Ok(match p {
            Param::Body { param, index } => {
                Some(self.request_body(param, consumes, &list_at.index(*index))?)
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

    /// A body parameter → `requestBody` with one content entry per media
    /// type it consumes.
    pub(super) fn request_body(
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
        let types = media_or_default(consumes);
        let mut content = Object::with_capacity(types.len());
        // A copy per media type, counted as copies are; the last takes
        // the schema itself.
        let size = count_values(&schema);
        let mut schema = Some(schema);
        let last = types.len().saturating_sub(1);
        for (i, mt) in types.into_iter().enumerate() {
            let this = if i == last {
                schema.take()
            } else {
                self.charge_values(size)?;
                schema.clone()
            };
            // `types` holds each media type once.
            content.push_new(mt.into(), media_type(this, None));
        }
        out.insert("content", Node::Object(content));
        if param.get("required") == Some(&Node::Bool(true)) {
            out.insert("required", Node::Bool(true));
        }
        for (k, v) in param {
            match k.as_str() {
                x if x.starts_with("x-") => {
                    let converted = self.extension(v, &at.key(k));
                    // Unique in the input, and no name the body gets else.
                    out.push_new(k.clone(), converted);
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
    pub(super) fn form_body(
        &mut self,
        form: &[(&'a Object<'a>, JsonPointer)],
        consumes: &[&'a str],
    ) -> Result<Node<'a>, ConvertError> {
        // Collected, then made objects once (`Object::from_members`): a
        // form may have as many fields as its document has bytes for, and
        // a field named twice is resolved as inserting it twice would.
        let mut properties = Vec::new();
        let mut required = Vec::new();
        let mut encoding = Vec::new();
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
                encoding.push((name.clone(), Node::Object(e)));
                // The default `csv` is written nowhere: point at the field.
                styled.push(if p.contains_key("collectionFormat") {
                    at.key("collectionFormat").to_pointer()
                } else {
                    at.to_pointer()
                });
            }
            properties.push((name, schema));
        }
        let properties = Object::from_members(properties);
        let encoding = Object::from_members(encoding);
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
            distinct(&declared)
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
        // The schema and the encoding per media type: past the first,
        // counted as copies are.
        let size = count_values(&schema)
            + 1
            + encoding.iter().map(|(_, e)| count_values(e)).sum::<usize>();
        let mut content = Object::with_capacity(types.len());
        for (i, mt) in types.into_iter().enumerate() {
            if i > 0 {
                self.charge_values(size)?;
            }
            let form = matches!(media_base(mt), FORM_URLENCODED | MULTIPART);
            let enc = (form && !encoding.is_empty()).then(|| encoding.clone());
            // `types` holds each media type once.
            content.push_new(mt.into(), media_type(Some(schema.clone()), enc));
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
                    // Unique in the input; the simple schema's only
                    // extension is `x-nullable`, not taken here.
                    schema.push_new(key.clone(), converted);
                }
                "name" | "in" | "required" => {}
                k if moves_into_schema(k) => {}
                _ => self.dropped_field(key, at),
            }
        }
    }
}

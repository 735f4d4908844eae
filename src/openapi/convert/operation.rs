//! Paths, path items and operations: the skeleton of `paths`, with each
//! operation's parameters, request body and responses gathered from the
//! operation and its path item (the parts themselves are converted in
//! `parameter.rs`, `request_body.rs` and `response.rs`).
//!
//! - An operation's own parameters override its path item's (same `in` and
//!   `name`); path-level plain parameters stay at the path level, while
//!   path-level bodies and form fields, which v3 has no path-level home for,
//!   are merged into each operation.
//! - The media types of request and response content come from the
//!   operation's `consumes`/`produces`, else the document's, else `*/*`:
//!   nothing was declared, so nothing narrower is claimed (upstream ignores
//!   the document's lists and loses the schemas of operations that have
//!   none).
//! - Per-operation `schemes` become per-operation `servers` when a host is
//!   known.

use std::rc::Rc;

use crate::json::pointer::{JsonPointer, Location};
use crate::json::tree::{Node, Object, Text};

use super::parameter::Param;
use super::{Context, ConvertError, NoteKind, as_object, media_types};

/// The operations a v2 path item can hold.
pub(super) const METHODS: [&str; 7] = ["get", "put", "post", "delete", "options", "head", "patch"];

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
                let item = self.path_item(item, &at.key(path))?;
                // Recorded now, while it is in the processor's cache; it
                // is not changed after this.
                self.refs_under.record(&item);
                item
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
        let has_plain = shared.iter().any(|p| matches!(p, Param::Plain(_)));
        let mut out = Object::with_capacity(item.len());
        for (key, value) in item {
            match key.as_str() {
                // Path-level bodies and form fields have no v3 home at the
                // path level: they are merged into each operation. The
                // plain ones are put in this place once the operations,
                // which read them, are done: moved there, not copied.
                "parameters" => {
                    if has_plain {
                        out.insert(key.clone(), Node::Null);
                    }
                }
                m if METHODS.contains(&m) => {
                    let op = self.operation(value, &shared, &at.key(key), &at.key("parameters"))?;
                    out.insert(key.clone(), op);
                }
                k if k.starts_with("x-") => {
                    let converted = self.extension(value, &at.key(key));
                    // Unique in the input, and no name the item gets else.
                    out.push_new(key.clone(), converted);
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
        if let Some(slot) = out.get_mut("parameters").filter(|_| has_plain) {
            let plain = shared
                .into_iter()
                .filter_map(|p| match p {
                    Param::Plain(v) => Some(v),
                    _ => None,
                })
                .collect();
            *slot = Node::Array(plain);
        }
        Ok(Node::Object(out))
    }

    /// One operation; `shared` are its path item's parameters, read from
    /// `shared_at`.
    fn operation(
        &mut self,
        op: &'a Node<'a>,
        shared: &[Param<'a>],
        at: &Location<'_>,
        shared_at: &Location<'_>,
    ) -> Result<Node<'a>, ConvertError> {
        let op = as_object(op, at, "an operation object")?;
        let consumes: Rc<[&'a str]> = match op.get("consumes") {
            Some(v) => media_types(Some(v), &at.key("consumes"))?.into(),
            None => Rc::clone(&self.consumes),
        };
        let produces: Rc<[&'a str]> = match op.get("produces") {
            Some(v) => media_types(Some(v), &at.key("produces"))?.into(),
            None => Rc::clone(&self.produces),
        };
        let own_at = at.key("parameters");
        let own = match op.get("parameters") {
            Some(list) => self.parameter_list(list, &own_at)?,
            None => Vec::new(),
        };
        // The operation's parameters, then the path-level bodies and form
        // fields it does not override (same `in` and `name`).
        // Sorted, to be searched once per path-level parameter: both lists
        // are as long as the document makes them.
        let mut own_ids: Vec<_> = own.iter().filter_map(Param::identity).collect();
        own_ids.sort_unstable();
        let mut body: Option<Node<'a>> = None;
        let mut form: Vec<(&'a Object<'a>, JsonPointer)> = Vec::new();
        let inherited = shared.iter().filter(|p| match p.identity() {
            Some(id) => own_ids.binary_search(&id).is_err(),
            None => true,
        });
        let mut own_body_seen = false;
        for (p, is_own) in own.iter().map(|p| (p, true)).chain(inherited.map(|p| (p, false))) {
            match p {
                // Path-level plain parameters stay at the path level in v3;
                // the operation's own are moved out below.
                Param::Plain(_) => {}
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
                    body = self.body_of(p, &consumes, if is_own { &own_at } else { shared_at })?;
                }
                Param::Form { param, at } => form.push((*param, at.clone())),
            }
        }
        // Moved, not copied: each is a converted parameter with its schema.
        let mut plain: Vec<Node<'a>> = own
            .into_iter()
            .filter_map(|p| match p {
                Param::Plain(v) => Some(v),
                _ => None,
            })
            .collect();
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

        // At most the operation's members and a `requestBody`. Each key is
        // appended, not searched for: the input's own keys are unique, and
        // `parameters`, `requestBody`, `responses` and `servers` are each
        // put in once (the input's own go elsewhere or are dropped).
        let mut out = Object::with_capacity(op.len() + 1);
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
                    out.push_new(key.clone(), self.responses(value, &produces, &at.key(key))?);
                }
                "security" => {
                    out.push_new(key.clone(), self.security_requirements(value));
                }
                k if k.starts_with("x-") => {
                    let converted = self.extension(value, &at.key(key));
                    out.push_new(key.clone(), converted);
                }
                "tags" | "summary" | "description" | "externalDocs" | "operationId"
                | "deprecated" => {
                    out.push_new(key.clone(), value.clone());
                }
                // v3 forbids other members, so copying one would make the
                // document invalid.
                _ => self.dropped_field(key, at),
            }
        }
        insert_parameters_and_body(&mut out, &mut plain, &mut body);
        if !responses_seen {
            self.note(at, NoteKind::MissingResponses);
            out.push_new(Text::plain("responses"), Node::Object(Object::new()));
        }
        Ok(Node::Object(out))
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
        let global = match &self.schemes {
            Some(global) => global,
            None => self
                .schemes
                .insert(media_types(self.doc.get("schemes"), &Location::root().key("schemes"))?),
        };
        if schemes == *global {
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
        out.push_new(Text::plain("servers"), Node::Array(servers));
        Ok(())
    }
}

fn insert_parameters_and_body<'a>(
    out: &mut Object<'a>,
    plain: &mut Vec<Node<'a>>,
    body: &mut Option<Node<'a>>,
) {
    if !plain.is_empty() {
        out.push_new(Text::plain("parameters"), Node::Array(std::mem::take(plain)));
    }
    if let Some(b) = body.take() {
        out.push_new(Text::plain("requestBody"), b);
    }
}

//! Responses and their headers.
//!
//! A response's `schema` and `examples` become `content`, one entry per
//! media type the operation produces (examples under a media type nothing
//! produces get an entry of their own); a header's type and validation
//! fields move into its `schema`, as a simple parameter's do.

use std::collections::{BTreeMap, BTreeSet};

use crate::json::pointer::Location;
use crate::json::tree::{Node, Object, Shared, Text};

use super::media::{media_or_default, media_type};
use super::parameter::moves_into_schema;
use super::refs::ref_object_value;
use super::{Context, ConvertError, NoteKind, as_object, count_values, reuse};

impl<'a> Context<'a> {
    pub(super) fn responses(
        &mut self,
        responses: &'a Node<'a>,
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

    /// One response, shared with every equal one converted before or after
    /// for the same media types when its conversion is the same wherever
    /// it stands (see `reuse.rs`).
    pub(super) fn response(
        &mut self,
        r: &'a Node<'a>,
        produces: &[&'a str],
        at: &Location<'_>,
    ) -> Result<Node<'a>, ConvertError> {
        let r = as_object(r, at, "a response object")?;
        // The media types make `content` for a schema only: without one
        // they change nothing, and are neither hashed nor kept (a
        // document-wide `produces` as long as the document makes it would
        // otherwise be copied for each response kept).
        let media = if r.contains_key("schema") { produces } else { &[] };
        let print = reuse::fingerprint(r, media);
        if let Some(kept) = self.reused_responses.get(print, r, media) {
            let (shared, (values, times)) = (kept.shared.clone(), kept.charges);
            for _ in 0..times {
                self.charge_values(values)?;
            }
            // Placed a second time: written out once, copied after.
            self.keep_rendered(&shared);
            return Ok(Node::Shared(shared));
        }
        let before = (self.note_calls, self.charge_calls, self.copied);
        let converted = self.converted_response(r, produces, at)?;
        let times = self.charge_calls - before.1;
        let charged = self.copied.saturating_sub(before.2);
        let values = charged.checked_div(times).unwrap_or(0);
        // Kept when nothing was noted and its copies can be counted again
        // the same way (`response` counts one schema's values each time).
        if self.note_calls != before.0
            || values.checked_mul(times) != Some(charged)
            || !self.reused_responses.has_room(print)
        {
            return Ok(converted);
        }
        Ok(match Shared::new(converted) {
            Ok(shared) => {
                self.reused_responses.keep(print, r, media, shared.clone(), (values, times));
                Node::Shared(shared)
            }
            Err(converted) => converted,
        })
    }

    /// One response: schema and examples become `content` per produced
    /// media type; headers get their schema.
    fn converted_response(
        &mut self,
        r: &'a Object<'a>,
        produces: &[&'a str],
        at: &Location<'_>,
    ) -> Result<Node<'a>, ConvertError> {
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
        // Its members, and a description if it lacks one. Every key is
        // appended, not searched for: `description`, `headers` and
        // `content` once each, then the input's own `x-` keys.
        let mut out = Object::with_capacity(r.len() + 1);
        match r.get("description") {
            Some(d) => {
                out.push_new(Text::plain("description"), d.clone());
            }
            None => {
                self.note(at, NoteKind::MissingDescription);
                out.push_new(Text::plain("description"), Node::string(""));
            }
        }
        if let Some(headers) = r.get("headers") {
            let at = at.key("headers");
            let headers = as_object(headers, &at, "an object of headers")?;
            let mut converted = Object::with_capacity(headers.len());
            for (name, h) in headers {
                // The input's keys are unique: appended, not searched for.
                converted.push_new(name.clone(), self.header(h, &at.key(name))?);
            }
            out.push_new(Text::plain("headers"), Node::Object(converted));
        }
        let types = if schema.is_some() { media_or_default(produces) } else { Vec::new() };
        let mut content = Object::with_capacity(types.len() + examples.map_or(0, Object::len));
        // A copy of the schema per media type, counted as copies are; the
        // last one takes the schema itself (a third of Kubernetes' 5,400
        // copies) unless an example of another media type still needs it.
        let size = schema.as_ref().map_or(0, count_values);
        let mut schema = schema;
        // Looked up once per example: a set, as a response may declare
        // as many media types and examples as its document has bytes for.
        let declared: BTreeSet<&str> =
            if examples.is_some() { types.iter().copied().collect() } else { BTreeSet::new() };
        let needed_after =
            examples.is_some_and(|e| e.keys().any(|mt| !declared.contains(mt.as_str())));
        let example_of: BTreeMap<&str, &Node<'a>> =
            examples.map(|e| e.iter().map(|(k, v)| (k.as_str(), v)).collect()).unwrap_or_default();
        let last = types.len().saturating_sub(1);
        for (i, mt) in types.into_iter().enumerate() {
            let this = if i == last && !needed_after {
                schema.take()
            } else {
                self.charge_values(size)?;
                schema.clone()
            };
            let example = example_of.get(mt).map(|&e| e.clone());
            let mut m = media_type(this, None);
            if let (Some(ex), Node::Object(m)) = (example, &mut m) {
                m.insert("example", ex);
            }
            // `types` holds each media type once.
            content.push_new(mt.into(), m);
        }
        if let Some(examples) = examples {
            for (mt, ex) in examples {
                if !declared.contains(mt.as_str()) {
                    let mut m = Object::new();
                    if let Some(schema) = &schema {
                        self.charge_values(size)?;
                        m.insert("schema", schema.clone());
                    }
                    m.insert("example", ex.clone());
                    // Not among `types`, and the input's keys are unique.
                    content.push_new(mt.clone(), Node::Object(m));
                }
            }
        }
        if !content.is_empty() {
            out.push_new(Text::plain("content"), Node::Object(content));
        }
        for (k, v) in r {
            match k.as_str() {
                x if x.starts_with("x-") => {
                    let converted = self.extension(v, &at.key(k));
                    out.push_new(k.clone(), converted);
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
                    // Unique in the input, and no name the header gets else.
                    out.push_new(k.clone(), converted);
                }
                "description" => {}
                x if moves_into_schema(x) => {}
                _ => self.dropped_field(k, at),
            }
        }
        Ok(Node::Object(out))
    }
}

//! `openapi-proxy export`'s library side: a cluster's schemas, gathered from
//! files or a server, laid out as the offline validators read them.
//!
//! Everything here is a pure function of values; the command
//! (`cli/export.rs`) reads the files, asks the server and writes the output.
//! The steps:
//!
//! 1. each source gives OpenAPI v3 documents by key ([`source`]: a Swagger
//!    2.0 document through the proxy's own pipeline, an OpenAPI 3.0
//!    document split per key, CustomResourceDefinitions published as
//!    kube-apiserver publishes them, [`crd`]; a server's documents as it
//!    serves them);
//! 2. the sources are joined into one [`Collection`]: first source wins,
//!    per component and per path of a key, and each clash is reported once;
//!    a key only one source brings keeps that source's bytes as they were;
//! 3. a [`layout`] turns the collection into files: the documents
//!    themselves, standalone JSON Schemas per kind ([`schema`]), or one
//!    Swagger 2.0 document.

pub mod crd;
pub mod layout;
pub mod schema;
pub mod source;

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::wire::key::DocumentKey;

/// A component or path two sources both define, differently; the first
/// source's is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clash {
    /// The document key.
    pub key: DocumentKey,
    /// What clashed: `components/schemas/<name>` or `paths/<path>`.
    pub member: String,
    /// The source whose definition is kept.
    pub kept: String,
    /// The source whose definition is dropped.
    pub dropped: String,
}

/// Why a document could not be joined with the others of its key.
#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    /// The bytes kept for the key are not a JSON object.
    #[error("document {key} from {source_name} is not a JSON object")]
    NotAnObject {
        /// The key.
        key: DocumentKey,
        /// The source.
        source_name: String,
    },
}

/// One key's document: the first source's bytes, and once a second source
/// brings the same key, the documents joined.
#[derive(Debug)]
struct Entry {
    origin: String,
    bytes: Vec<u8>,
    joined: Option<Map<String, Value>>,
}

/// The documents of every source, joined by key.
#[derive(Debug, Default)]
pub struct Collection {
    entries: BTreeMap<DocumentKey, Entry>,
    clashes: Vec<Clash>,
}

impl Collection {
    /// Adds `bytes`, the document `origin` brings for `key`. A key seen
    /// before is joined: components and paths the earlier document lacks
    /// are added; one it has is kept, and if the two differ that is a
    /// [`Clash`].
    ///
    /// # Errors
    /// [`CollectError::NotAnObject`] when a document that must be joined
    /// is not a JSON object.
    pub fn add(
        &mut self,
        key: DocumentKey,
        bytes: Vec<u8>,
        origin: &str,
    ) -> Result<(), CollectError> {
        let not_object = |key: &DocumentKey, o: &str| CollectError::NotAnObject {
            key: key.clone(),
            source_name: o.to_owned(),
        };
        let Some(entry) = self.entries.get_mut(&key) else {
            self.entries.insert(key, Entry { origin: origin.to_owned(), bytes, joined: None });
            return Ok(());
        };
        let doc = match &mut entry.joined {
            Some(doc) => doc,
            None => entry
                .joined
                .insert(object_of(&entry.bytes).ok_or_else(|| not_object(&key, &entry.origin))?),
        };
        let kept = &entry.origin;
        let incoming = object_of(&bytes).ok_or_else(|| not_object(&key, origin))?;
        for (section, member) in [("components", Some("schemas")), ("paths", None)] {
            let Some(from) = lookup(&incoming, section, member) else { continue };
            let into = target(doc, section, member);
            for (name, value) in from {
                match into.get(name) {
                    None => {
                        into.insert(name.clone(), value.clone());
                    }
                    Some(existing) if existing == value => {}
                    Some(_) => self.clashes.push(Clash {
                        key: key.clone(),
                        member: member.map_or_else(
                            || format!("{section}/{name}"),
                            |m| format!("{section}/{m}/{name}"),
                        ),
                        kept: kept.clone(),
                        dropped: origin.to_owned(),
                    }),
                }
            }
        }
        Ok(())
    }

    /// The clashes met so far, in the order met.
    #[must_use]
    pub fn clashes(&self) -> &[Clash] {
        &self.clashes
    }

    /// Whether there is no document.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The documents as compact JSON, in key order: a document only one
    /// source brought is its bytes as they were (a server's, byte for
    /// byte); a joined one is rendered again.
    #[must_use]
    pub fn into_documents(self) -> BTreeMap<DocumentKey, Vec<u8>> {
        self.entries
            .into_iter()
            .map(|(key, entry)| {
                let bytes = match entry.joined {
                    None => entry.bytes,
                    Some(doc) => serde_json::to_vec(&Value::Object(doc))
                        .expect("a JSON value always serializes"),
                };
                (key, bytes)
            })
            .collect()
    }
}

fn object_of(bytes: &[u8]) -> Option<Map<String, Value>> {
    match serde_json::from_slice(bytes) {
        Ok(Value::Object(o)) => Some(o),
        _ => None,
    }
}

fn lookup<'a>(
    doc: &'a Map<String, Value>,
    section: &str,
    member: Option<&str>,
) -> Option<&'a Map<String, Value>> {
    let at = doc.get(section)?;
    match member {
        Some(m) => at.get(m)?.as_object(),
        None => at.as_object(),
    }
}

/// The map `section` (or `section/member`) of `doc`, made when missing
/// (or when not a map: the joined document must have one to add to).
fn target<'a>(
    doc: &'a mut Map<String, Value>,
    section: &str,
    member: Option<&str>,
) -> &'a mut Map<String, Value> {
    let at = map_at(doc, section);
    match member {
        Some(m) => map_at(at, m),
        None => at,
    }
}

fn map_at<'a>(parent: &'a mut Map<String, Value>, name: &str) -> &'a mut Map<String, Value> {
    let slot = parent.entry(name).or_insert_with(|| Value::Object(Map::new()));
    if !slot.is_object() {
        *slot = Value::Object(Map::new());
    }
    slot.as_object_mut().expect("made an object just above")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &str) -> DocumentKey {
        DocumentKey::parse(k).unwrap()
    }

    fn doc(schemas: Value) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "openapi": "3.0.0", "info": {}, "components": { "schemas": schemas }
        }))
        .unwrap()
    }

    #[test]
    fn a_key_one_source_brings_keeps_its_bytes() {
        let mut c = Collection::default();
        let bytes = b"{\"openapi\":\"3.0.0\",  \"paths\":{}}".to_vec();
        c.add(key("apis/a.example.com/v1"), bytes.clone(), "one").unwrap();
        assert_eq!(c.into_documents()[&key("apis/a.example.com/v1")], bytes);
    }

    #[test]
    fn documents_of_one_key_are_joined_first_wins_and_each_clash_is_said_once() {
        let mut c = Collection::default();
        let k = key("apis/a.example.com/v1");
        c.add(
            k.clone(),
            doc(serde_json::json!({ "A": {"type": "object"}, "M": {"type": "string"} })),
            "one",
        )
        .unwrap();
        c.add(
            k.clone(),
            doc(serde_json::json!({ "B": {"type": "object"}, "M": {"type": "string"}, "A": {"type": "integer"} })),
            "two",
        )
        .unwrap();
        assert_eq!(
            c.clashes(),
            [Clash {
                key: k.clone(),
                member: "components/schemas/A".into(),
                kept: "one".into(),
                dropped: "two".into()
            }]
        );
        let joined: Value = serde_json::from_slice(&c.into_documents()[&k]).unwrap();
        let schemas = &joined["components"]["schemas"];
        assert_eq!(schemas["A"]["type"], "object");
        assert_eq!(schemas["B"]["type"], "object");
    }
}

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
//! 2. the documents of one key are joined ([`KeyDocument`]): first source
//!    wins, per component and per path, and each clash is reported once;
//!    a key only one source brings keeps that source's bytes as they were;
//! 3. a [`layout`] turns each key's document into files: the document
//!    itself, or standalone JSON Schemas per kind ([`schema`]); or all
//!    documents together into one Swagger 2.0 document.
//!
//! The command takes the keys one at a time, in key order, so that what
//! it holds is one key's documents, not every source's.

pub mod crd;
pub mod layout;
pub mod schema;
pub mod source;

use std::collections::BTreeMap;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::value::RawValue;
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
    /// Holding the document would take the documents past the budget.
    #[error(
        "the documents held at once take more than the memory budget ({limit} bytes): {key} \
         from {source_name} would bring them to {would} bytes; give --memory-budget-bytes to \
         raise it"
    )]
    OverBudget {
        /// The key.
        key: DocumentKey,
        /// The source.
        source_name: String,
        /// The bytes held with it.
        would: usize,
        /// The budget.
        limit: usize,
    },
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
    joined: Option<Joined>,
}

/// Documents of one key joined. The members that are joined — each path
/// and each component schema — are kept rendered (compact), not as
/// values: a `Value` takes several times its JSON's size, and at
/// thousands of CRDs, five to a group-version, the joined documents are
/// most of what an export holds.
#[derive(Debug)]
struct Joined {
    /// The first document's other members, with `paths` and
    /// `components.schemas` left as `null` where they stood.
    top: Map<String, Value>,
    paths: BTreeMap<String, Box<RawValue>>,
    schemas: BTreeMap<String, Box<RawValue>>,
}

/// A member of a joined document, and where it comes from.
struct Member {
    section: &'static str,
    name: String,
    value: Box<RawValue>,
}

impl Joined {
    /// Takes `doc` apart: its paths and component schemas, rendered, and
    /// the rest.
    fn split(mut doc: Map<String, Value>) -> (Map<String, Value>, Vec<Member>) {
        let mut members = Vec::new();
        let mut take = |section: &'static str, slot: Option<&mut Value>| {
            if let Some(Value::Object(map)) = slot.map(std::mem::take) {
                for (name, value) in map {
                    let value = serde_json::value::to_raw_value(&value)
                        .expect("a JSON value always serializes");
                    members.push(Member { section, name, value });
                }
            }
        };
        take("paths", doc.get_mut("paths"));
        take(
            "components/schemas",
            doc.get_mut("components")
                .and_then(Value::as_object_mut)
                .and_then(|c| c.get_mut("schemas")),
        );
        (doc, members)
    }

    fn new(doc: Map<String, Value>) -> Self {
        let (top, members) = Self::split(doc);
        let mut joined = Self { top, paths: BTreeMap::new(), schemas: BTreeMap::new() };
        for m in members {
            joined.section(m.section).insert(m.name, m.value);
        }
        joined
    }

    fn section(&mut self, section: &str) -> &mut BTreeMap<String, Box<RawValue>> {
        if section == "paths" { &mut self.paths } else { &mut self.schemas }
    }

    /// Adds what `doc` defines and this does not; the names of members
    /// both define differently.
    fn join(&mut self, doc: Map<String, Value>) -> Vec<String> {
        let (_, members) = Self::split(doc);
        let mut clashes = Vec::new();
        for Member { section, name, value } in members {
            match self.section(section).get(&name) {
                None => {
                    self.section(section).insert(name, value);
                }
                Some(kept) if same(kept, &value) => {}
                Some(_) => clashes.push(format!("{section}/{name}")),
            }
        }
        clashes
    }
}

/// Whether two rendered members are the same JSON: the same bytes, or
/// the same values written another way.
fn same(a: &RawValue, b: &RawValue) -> bool {
    a.get() == b.get()
        || matches!(
            (serde_json::from_str::<Value>(a.get()), serde_json::from_str::<Value>(b.get())),
            (Ok(x), Ok(y)) if x == y
        )
}

impl Serialize for Joined {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        /// `components` with its joined `schemas` in place.
        struct Components<'a>(Option<&'a Map<String, Value>>, &'a BTreeMap<String, Box<RawValue>>);
        impl Serialize for Components<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut map = serializer.serialize_map(None)?;
                let mut schemas = false;
                for (k, v) in self.0.into_iter().flatten() {
                    if k == "schemas" {
                        map.serialize_entry(k, self.1)?;
                        schemas = true;
                    } else {
                        map.serialize_entry(k, v)?;
                    }
                }
                if !schemas && !self.1.is_empty() {
                    map.serialize_entry("schemas", self.1)?;
                }
                map.end()
            }
        }
        let mut map = serializer.serialize_map(None)?;
        let (mut paths, mut components) = (self.paths.is_empty(), self.schemas.is_empty());
        for (k, v) in &self.top {
            match k.as_str() {
                "paths" => {
                    map.serialize_entry(k, &self.paths)?;
                    paths = true;
                }
                "components" => {
                    map.serialize_entry(k, &Components(v.as_object(), &self.schemas))?;
                    components = true;
                }
                _ => map.serialize_entry(k, v)?,
            }
        }
        if !paths {
            map.serialize_entry("paths", &self.paths)?;
        }
        if !components {
            map.serialize_entry("components", &Components(None, &self.schemas))?;
        }
        map.end()
    }
}

/// The document of one key: the first source's bytes, joined with those
/// of each later source that brings the key, one at a time (the bytes
/// given are dropped once joined).
#[derive(Debug)]
pub struct KeyDocument {
    key: DocumentKey,
    entry: Entry,
}

impl KeyDocument {
    /// The document `origin` brings first for `key`.
    #[must_use]
    pub fn new(key: DocumentKey, bytes: Vec<u8>, origin: &str) -> Self {
        Self { key, entry: Entry { origin: origin.to_owned(), bytes, joined: None } }
    }

    /// Adds `bytes`, the document `origin` brings for the same key:
    /// components and paths the document lacks are added; one it has is
    /// kept, and if the two differ that is a [`Clash`], returned.
    ///
    /// # Errors
    /// [`CollectError::NotAnObject`] when a document that must be joined
    /// is not a JSON object.
    pub fn join(&mut self, bytes: Vec<u8>, origin: &str) -> Result<Vec<Clash>, CollectError> {
        let not_object = |key: &DocumentKey, o: &str| CollectError::NotAnObject {
            key: key.clone(),
            source_name: o.to_owned(),
        };
        let entry = &mut self.entry;
        let joined = match &mut entry.joined {
            Some(joined) => joined,
            None => {
                let first =
                    object_of(&entry.bytes).ok_or_else(|| not_object(&self.key, &entry.origin))?;
                entry.bytes = Vec::new();
                entry.joined.insert(Joined::new(first))
            }
        };
        let incoming = object_of(&bytes).ok_or_else(|| not_object(&self.key, origin))?;
        drop(bytes);
        Ok(joined
            .join(incoming)
            .into_iter()
            .map(|member| Clash {
                key: self.key.clone(),
                member,
                kept: entry.origin.clone(),
                dropped: origin.to_owned(),
            })
            .collect())
    }

    /// The document as compact JSON: the bytes as they were when only one
    /// source brought the key (a server's, byte for byte); joined ones
    /// rendered again.
    #[must_use]
    pub fn into_bytes(self) -> Vec<u8> {
        match self.entry.joined {
            None => self.entry.bytes,
            Some(doc) => serde_json::to_vec(&doc).expect("a JSON value always serializes"),
        }
    }
}

/// What the documents an export holds at once may take: `held` bytes of
/// them, past `limit`, stop it.
///
/// # Errors
/// [`CollectError::OverBudget`], naming the document that brought them
/// there.
pub fn within_budget(
    key: &DocumentKey,
    origin: &str,
    held: usize,
    limit: usize,
) -> Result<(), CollectError> {
    if held > limit {
        return Err(CollectError::OverBudget {
            key: key.clone(),
            source_name: origin.to_owned(),
            would: held,
            limit,
        });
    }
    Ok(())
}

fn object_of(bytes: &[u8]) -> Option<Map<String, Value>> {
    match serde_json::from_slice(bytes) {
        Ok(Value::Object(o)) => Some(o),
        _ => None,
    }
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
    fn documents_held_past_the_budget_are_refused_naming_the_flag() {
        let k = key("apis/a/v1");
        within_budget(&k, "first", 10, 10).unwrap();
        let err = within_budget(&k, "second", 11, 10).unwrap_err();
        assert!(
            matches!(err, CollectError::OverBudget { ref source_name, would: 11, .. } if source_name == "second")
        );
        assert!(err.to_string().contains("--memory-budget-bytes"), "{err}");
    }

    #[test]
    fn a_key_one_source_brings_keeps_its_bytes() {
        let bytes = b"{\"openapi\":\"3.0.0\",  \"paths\":{}}".to_vec();
        let doc = KeyDocument::new(key("apis/a.example.com/v1"), bytes.clone(), "one");
        assert_eq!(doc.into_bytes(), bytes);
    }

    #[test]
    fn documents_of_one_key_are_joined_first_wins_and_each_clash_is_said_once() {
        let k = key("apis/a.example.com/v1");
        let mut c = KeyDocument::new(
            k.clone(),
            doc(serde_json::json!({ "A": {"type": "object"}, "M": {"type": "string"} })),
            "one",
        );
        let clashes = c
            .join(
                doc(serde_json::json!({ "B": {"type": "object"}, "M": {"type": "string"}, "A": {"type": "integer"} })),
                "two",
            )
            .unwrap();
        assert_eq!(
            clashes,
            [Clash {
                key: k.clone(),
                member: "components/schemas/A".into(),
                kept: "one".into(),
                dropped: "two".into()
            }]
        );
        let joined: Value = serde_json::from_slice(&c.into_bytes()).unwrap();
        let top: Vec<&String> = joined.as_object().unwrap().keys().collect();
        assert_eq!(top, ["openapi", "info", "components"], "the first document's order");
        let schemas = &joined["components"]["schemas"];
        assert_eq!(schemas["A"]["type"], "object");
        assert_eq!(schemas["B"]["type"], "object");
    }
}

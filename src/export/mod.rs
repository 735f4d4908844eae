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
        "the documents take more than the memory budget ({limit} bytes): {key} from \
         {source_name} would bring them to {would} bytes; give --memory-budget-bytes to raise it"
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

/// The documents of every source, joined by key, within a memory budget.
#[derive(Debug)]
pub struct Collection {
    entries: BTreeMap<DocumentKey, Entry>,
    clashes: Vec<Clash>,
    /// The bytes of every document added.
    held: usize,
    /// What `held` may reach.
    limit: usize,
}

impl Collection {
    /// No document yet; the documents added may hold at most `limit`
    /// bytes together (a document joined to another counts whole: the
    /// joined one is about the sum).
    #[must_use]
    pub fn within(limit: usize) -> Self {
        Self { entries: BTreeMap::new(), clashes: Vec::new(), held: 0, limit }
    }

    /// The bytes still within the budget.
    #[must_use]
    pub fn room(&self) -> usize {
        self.limit.saturating_sub(self.held)
    }

    /// Whether `n` more bytes fit the budget, for a source that must tell
    /// before it holds them.
    ///
    /// # Errors
    /// [`CollectError::OverBudget`] when they do not.
    pub fn admit(&self, key: &DocumentKey, n: usize, origin: &str) -> Result<(), CollectError> {
        let would = self.held.saturating_add(n);
        if would > self.limit {
            return Err(CollectError::OverBudget {
                key: key.clone(),
                source_name: origin.to_owned(),
                would,
                limit: self.limit,
            });
        }
        Ok(())
    }

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
        self.admit(&key, bytes.len(), origin)?;
        self.held += bytes.len();
        let not_object = |key: &DocumentKey, o: &str| CollectError::NotAnObject {
            key: key.clone(),
            source_name: o.to_owned(),
        };
        let Some(entry) = self.entries.get_mut(&key) else {
            self.entries.insert(key, Entry { origin: origin.to_owned(), bytes, joined: None });
            return Ok(());
        };
        let joined = match &mut entry.joined {
            Some(joined) => joined,
            None => {
                let first =
                    object_of(&entry.bytes).ok_or_else(|| not_object(&key, &entry.origin))?;
                entry.bytes = Vec::new();
                entry.joined.insert(Joined::new(first))
            }
        };
        let incoming = object_of(&bytes).ok_or_else(|| not_object(&key, origin))?;
        drop(bytes);
        for member in joined.join(incoming) {
            self.clashes.push(Clash {
                key: key.clone(),
                member,
                kept: entry.origin.clone(),
                dropped: origin.to_owned(),
            });
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
                    Some(doc) => serde_json::to_vec(&doc).expect("a JSON value always serializes"),
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
    fn documents_past_the_budget_are_refused_and_not_held() {
        let one = doc(serde_json::json!({"A": {"type": "object"}}));
        let mut c = Collection::within(one.len() * 2 - 1);
        c.add(key("apis/a/v1"), one.clone(), "first").unwrap();
        let err = c.add(key("apis/b/v1"), one.clone(), "second").unwrap_err();
        assert!(
            matches!(err, CollectError::OverBudget { ref source_name, .. } if source_name == "second")
        );
        assert!(err.to_string().contains("--memory-budget-bytes"), "{err}");
        assert_eq!(c.into_documents().len(), 1);
    }

    #[test]
    fn a_key_one_source_brings_keeps_its_bytes() {
        let mut c = Collection::within(usize::MAX);
        let bytes = b"{\"openapi\":\"3.0.0\",  \"paths\":{}}".to_vec();
        c.add(key("apis/a.example.com/v1"), bytes.clone(), "one").unwrap();
        assert_eq!(c.into_documents()[&key("apis/a.example.com/v1")], bytes);
    }

    #[test]
    fn documents_of_one_key_are_joined_first_wins_and_each_clash_is_said_once() {
        let mut c = Collection::within(usize::MAX);
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
        let top: Vec<&String> = joined.as_object().unwrap().keys().collect();
        assert_eq!(top, ["openapi", "info", "components"], "the first document's order");
        let schemas = &joined["components"]["schemas"];
        assert_eq!(schemas["A"]["type"], "object");
        assert_eq!(schemas["B"]["type"], "object");
    }
}

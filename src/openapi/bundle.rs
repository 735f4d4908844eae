//! Bundling: a Swagger 2.0 document whose `$ref`s reach into other files,
//! made into one document that holds all it refers to, before conversion.
//!
//! Hand-written specifications are often split across files
//! (`$ref: './responses.yaml#/responses/BadRequest'`, Azure's
//! `../common-types/…/types.json#/parameters/ApiVersionParameter`). Left as
//! they are, such references make a converted document invalid: the file
//! they name holds Swagger 2.0 (a response with a bare `schema`, a
//! parameter with a `type`), which an OpenAPI 3.0 reader misreads, and a
//! per-key document written elsewhere cannot follow a relative path at all.
//! So `convert` copies what each such reference points at into the
//! document — a schema into `definitions`, a parameter into `parameters`, a
//! response into `responses`, chosen by where the reference stands — and
//! points the reference there; a path item is copied in place, as Swagger
//! 2.0 has no section for path items. References inside what was copied are
//! relative to the file it came from and are followed the same way. The
//! converter then sees one self-contained Swagger 2.0 document.
//!
//! Nothing here reads a file: the caller's [`Files`] does, and decides what
//! may be read. A reference that cannot be followed (a URL, a file the
//! caller refuses or cannot read, a pointer to nothing) is kept as written,
//! with a note saying why; the converter notes it as an `external-ref`.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::rc::Rc;

use serde_json::{Map, Value};

use crate::json::pointer::{
    JsonPointer, escape_token, fragment_pointer, push_fragment_token, unescape_token,
};

use super::convert::{Note, NoteKind};

/// How deep path items may be copied into path items (a path item that is
/// a reference to one that is a reference …): past this, the reference is
/// kept. Real documents go one level deep; a cycle would go forever.
const MAX_PATH_ITEM_DEPTH: usize = 16;

/// The files a document refers to, as the caller allows them to be read.
pub trait Files {
    /// The document at `path` (the part of a reference before `#`,
    /// percent-decoded), relative to the file `from` refers from (`None`:
    /// the document being bundled). Returns an identity for the file (the
    /// same for every path naming it: a canonical path) and its content.
    ///
    /// # Errors
    /// Why the file is not read, in words for a note.
    fn load(&mut self, from: Option<&str>, path: &str) -> Result<(Rc<str>, Rc<Value>), String>;

    /// The identity [`Files::load`] gives the document being bundled, if
    /// it has one (it has none when read from standard input): a
    /// reference back into it becomes a local reference.
    fn root(&self) -> Option<Rc<str>>;
}

/// Why a document could not be bundled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BundleError {
    /// Copying what references point at would make more values than
    /// allowed (a path item of a large file copied under many paths).
    #[error(
        "copying what references to other files point at would make more than {limit} values; \
         refused"
    )]
    TooLarge {
        /// The most values that may be copied.
        limit: usize,
    },
}

/// A bundled document, and what was done to make it.
#[derive(Debug)]
pub struct Bundled {
    /// The document, references to other files replaced where they could
    /// be followed.
    pub document: Value,
    /// One note per target copied in, and per reference kept as it was.
    pub notes: Vec<Note>,
    /// How many files were read.
    pub files: usize,
}

/// Whether `doc` has a `$ref` to another file that [`bundle`] would try to
/// follow: a relative or absolute path, not a URL. Most documents have none
/// and are converted as they were read.
#[must_use]
pub fn refers_to_files(doc: &crate::json::tree::Node<'_>) -> bool {
    use crate::json::tree::Node;
    match doc {
        Node::Object(members) => members.iter().any(|(k, v)| match v {
            Node::String(r) if k == "$ref" => file_path(r).is_some(),
            _ => refers_to_files(v),
        }),
        Node::Array(items) => items.iter().any(refers_to_files),
        _ => false,
    }
}

/// The file part of reference `r`, when it names a file: not empty, not a
/// URL (`https:`, `urn:` or any other scheme).
fn file_path(r: &str) -> Option<&str> {
    let path = r.split_once('#').map_or(r, |(path, _)| path);
    if path.is_empty() {
        return None;
    }
    let scheme = path.split_once(':').map(|(scheme, _)| scheme);
    let is_url = scheme.is_some_and(|s| {
        s.len() > 1
            && s.starts_with(|c: char| c.is_ascii_alphabetic())
            && s.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    });
    (!is_url).then_some(path)
}

/// Copies into `doc` what its references to other files point at (see the
/// module documentation), reading files through `files`. At most
/// `copy_limit` values are copied in all.
///
/// # Errors
/// [`BundleError::TooLarge`] past `copy_limit`.
pub fn bundle(
    mut doc: Value,
    files: &mut dyn Files,
    copy_limit: usize,
) -> Result<Bundled, BundleError> {
    let root = files.root();
    let blocked = SECTIONS
        .into_iter()
        .filter(|s| !doc.is_object() || doc.get(*s).is_some_and(|v| !v.is_object()))
        .collect();
    let mut taken = BTreeMap::new();
    for section in SECTIONS {
        let names = doc.get(section).and_then(Value::as_object);
        taken.insert(section, names.into_iter().flat_map(Map::keys).cloned().collect());
    }
    let mut b = Bundler {
        files,
        root,
        taken,
        imported: BTreeMap::new(),
        added: Vec::new(),
        notes: Vec::new(),
        unread: BTreeSet::new(),
        contents: BTreeMap::new(),
        queue: VecDeque::new(),
        copied: 0,
        copy_limit,
        blocked,
    };
    let mut at = String::new();
    b.walk(&mut doc, Place::Root, None, &mut at, 0)?;
    while let Some(Queued { section, name, mut copy, file }) = b.queue.pop_front() {
        let mut at = format!("/{section}/{}", escape_token(&name));
        b.walk(&mut copy, Place::of_section(section), Some(&file), &mut at, 0)?;
        b.added.push((section, name, copy));
    }
    let Bundler { added, notes, contents, .. } = b;
    if let Value::Object(top) = &mut doc {
        for (section, name, value) in added {
            let members = top.entry(section).or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(members) = members {
                members.insert(name, value);
            }
        }
    }
    Ok(Bundled { document: doc, notes, files: contents.len() })
}

/// The sections a copied target can go to.
const SECTIONS: [&str; 3] = ["definitions", "parameters", "responses"];

/// What stands at a place of a Swagger 2.0 document, as far as a `$ref`
/// there is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Root,
    Definitions,
    Parameters,
    Responses,
    Paths,
    PathItem,
    Operation,
    ParameterList,
    OperationResponses,
    Parameter,
    Response,
    /// A schema, an extension, anything else: a reference here is to a
    /// schema unless its pointer says otherwise.
    Other,
}

impl Place {
    /// The place of member `key` (or of an array item) of this place.
    fn child(self, key: Option<&str>) -> Self {
        let extension = key.is_some_and(|k| k.starts_with("x-"));
        match (self, key) {
            (Self::Root, Some("definitions")) => Self::Definitions,
            (Self::Root, Some("parameters")) => Self::Parameters,
            (Self::Root, Some("responses")) => Self::Responses,
            // Azure's `x-ms-paths` holds path items as `paths` does.
            (Self::Root, Some("paths" | "x-ms-paths")) => Self::Paths,
            (Self::Parameters, Some(_)) | (Self::ParameterList, None) => Self::Parameter,
            (Self::Responses, Some(_)) => Self::Response,
            (Self::Paths | Self::OperationResponses, _) if extension => Self::Other,
            (Self::Paths, Some(_)) => Self::PathItem,
            (Self::OperationResponses, Some(_)) => Self::Response,
            (Self::PathItem | Self::Operation, Some("parameters")) => Self::ParameterList,
            (
                Self::PathItem,
                Some("get" | "put" | "post" | "delete" | "options" | "head" | "patch"),
            ) => Self::Operation,
            (Self::Operation, Some("responses")) => Self::OperationResponses,
            _ => Self::Other,
        }
    }

    /// The section a reference standing here goes to, given the first
    /// token of its pointer; `None` for a path item, copied in place.
    fn section(self, first_token: Option<&str>) -> Option<&'static str> {
        match (self, first_token) {
            (Self::PathItem, _) => None,
            (Self::Parameter, _) | (_, Some("parameters")) => Some("parameters"),
            (Self::Response, _) | (_, Some("responses")) => Some("responses"),
            _ => Some("definitions"),
        }
    }

    /// The place of a target copied into `section`.
    fn of_section(section: &str) -> Self {
        match section {
            "parameters" => Self::Parameter,
            "responses" => Self::Response,
            _ => Self::Other,
        }
    }
}

/// A reference resolved to a file and a pointer in it.
struct Target {
    file: Rc<str>,
    content: Rc<Value>,
    /// The decoded JSON pointer (`""` for the whole file).
    pointer: String,
}

struct Bundler<'f> {
    files: &'f mut dyn Files,
    root: Option<Rc<str>>,
    /// Names in use per section: the document's own, then those added.
    taken: BTreeMap<&'static str, BTreeSet<String>>,
    /// (file, pointer, section) → the local reference it became.
    imported: BTreeMap<(Rc<str>, String, &'static str), String>,
    /// What to add to the sections, in the order it was found.
    added: Vec<(&'static str, String, Value)>,
    notes: Vec<Note>,
    /// References already noted as kept, so each is noted once.
    unread: BTreeSet<String>,
    /// The files read, by identity.
    contents: BTreeMap<Rc<str>, Rc<Value>>,
    /// Targets copied whose own references are still to be followed.
    queue: VecDeque<Queued>,
    copied: usize,
    copy_limit: usize,
    /// Sections nothing can be copied into: the document's is not an
    /// object (or the document is not one).
    blocked: BTreeSet<&'static str>,
}

impl Bundler<'_> {
    /// Follows the references of `node`, which stands at `place` of the
    /// file `file` (`None`: the document), at pointer `at` of the bundled
    /// document.
    fn walk(
        &mut self,
        node: &mut Value,
        place: Place,
        file: Option<&Rc<str>>,
        at: &mut String,
        depth: usize,
    ) -> Result<(), BundleError> {
        match node {
            Value::Object(members) => {
                if let Some(Value::String(r)) = members.get("$ref") {
                    let r = r.clone();
                    match self.reference(&r, place, file, at, depth)? {
                        Followed::Kept => {}
                        Followed::To(local) => {
                            members.insert("$ref".to_owned(), Value::String(local));
                        }
                        Followed::Inline(Value::Object(item)) => {
                            // The path item it named (already walked, from
                            // its own file), then what stood beside the
                            // reference that it does not have, walked here.
                            members.remove("$ref");
                            let beside = std::mem::replace(members, item);
                            let mut added = Vec::new();
                            for (k, v) in beside {
                                if !members.contains_key(&k) {
                                    added.push(k.clone());
                                    members.insert(k, v);
                                }
                            }
                            for key in added {
                                if let Some(child) = members.get_mut(&key) {
                                    self.walk_member(child, place, &key, file, at, depth)?;
                                }
                            }
                            return Ok(());
                        }
                        // Only objects are copied in place.
                        Followed::Inline(_) => {}
                    }
                }
                for (key, child) in members.iter_mut() {
                    if key == "$ref" && child.is_string() {
                        continue;
                    }
                    self.walk_member(child, place, key, file, at, depth)?;
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter_mut().enumerate() {
                    let len = at.len();
                    at.push('/');
                    at.push_str(&i.to_string());
                    self.walk(child, place.child(None), file, at, depth)?;
                    at.truncate(len);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// [`Bundler::walk`] for member `key` of an object at `place`.
    fn walk_member(
        &mut self,
        child: &mut Value,
        place: Place,
        key: &str,
        file: Option<&Rc<str>>,
        at: &mut String,
        depth: usize,
    ) -> Result<(), BundleError> {
        let len = at.len();
        at.push('/');
        at.push_str(&escape_token(key));
        let walked = self.walk(child, place.child(Some(key)), file, at, depth);
        at.truncate(len);
        walked
    }

    /// What reference `r`, standing at `place` of `file`, becomes.
    fn reference(
        &mut self,
        r: &str,
        place: Place,
        file: Option<&Rc<str>>,
        at: &str,
        depth: usize,
    ) -> Result<Followed, BundleError> {
        let (path, fragment) = r.split_once('#').unwrap_or((r, ""));
        if path.is_empty() && file.is_none() {
            // Local to the document: the converter's.
            return Ok(Followed::Kept);
        }
        if !path.is_empty() && file_path(r).is_none() {
            self.keep(r, at, "a URL; only files are read".to_owned());
            return Ok(Followed::Kept);
        }
        let Some(pointer) = fragment_pointer(fragment) else {
            self.keep(r, at, "its fragment is not percent-encoded UTF-8".to_owned());
            return Ok(Followed::Kept);
        };
        // `#definitions/x` is read as `#/definitions/x`, as the converter
        // reads it.
        let pointer = match pointer.as_ref() {
            "" => String::new(),
            p if p.starts_with('/') => p.to_owned(),
            p => format!("/{p}"),
        };
        let (id, content) = if path.is_empty() {
            // Local to the file it stands in, read before.
            let Some(id) = file.cloned() else { return Ok(Followed::Kept) };
            let Some(content) = self.contents.get(&id).cloned() else {
                return Ok(Followed::Kept);
            };
            (id, content)
        } else {
            let Some(decoded) = fragment_pointer(path) else {
                self.keep(r, at, "its path is not percent-encoded UTF-8".to_owned());
                return Ok(Followed::Kept);
            };
            match self.files.load(file.map(|f| &**f), &decoded) {
                Ok(loaded) => loaded,
                Err(why) => {
                    self.keep(r, at, why);
                    return Ok(Followed::Kept);
                }
            }
        };
        if self.root.as_ref() == Some(&id) {
            // Back into the document itself.
            let mut local = String::from("#");
            for token in pointer.split('/').skip(1) {
                local.push('/');
                push_fragment_token(&mut local, &unescape_token(token));
            }
            return Ok(Followed::To(local));
        }
        self.contents.entry(id.clone()).or_insert_with(|| content.clone());
        if content.pointer(&pointer).is_none() {
            self.keep(r, at, format!("{pointer:?} points to nothing in that file"));
            return Ok(Followed::Kept);
        }
        let target = Target { file: id, content, pointer };
        let first = target.pointer.split('/').nth(1);
        match place.section(first) {
            Some(section) if self.blocked.contains(section) => {
                self.keep(r, at, format!("the document's {section} is not an object to copy into"));
                Ok(Followed::Kept)
            }
            Some(section) => self.import(r, target, section, at).map(Followed::To),
            None if depth >= MAX_PATH_ITEM_DEPTH => {
                self.keep(r, at, format!("path items nest more than {MAX_PATH_ITEM_DEPTH} deep"));
                Ok(Followed::Kept)
            }
            None if !target.content.pointer(&target.pointer).is_some_and(Value::is_object) => {
                self.keep(r, at, "a path item must be an object".to_owned());
                Ok(Followed::Kept)
            }
            None => {
                let mut item = self.copy(&target)?;
                self.notes.push(Note {
                    at: pointer_at(at),
                    kind: NoteKind::BundledRef { reference: r.to_owned(), to: None },
                });
                let mut here = at.to_owned();
                self.walk(&mut item, Place::PathItem, Some(&target.file), &mut here, depth + 1)?;
                Ok(Followed::Inline(item))
            }
        }
    }

    /// The local reference to `target` copied into `section` (once per
    /// target), its own references followed.
    fn import(
        &mut self,
        r: &str,
        target: Target,
        section: &'static str,
        at: &str,
    ) -> Result<String, BundleError> {
        let key = (target.file.clone(), target.pointer.clone(), section);
        if let Some(local) = self.imported.get(&key) {
            return Ok(local.clone());
        }
        let base = match target.pointer.rsplit('/').next() {
            Some(last) if !target.pointer.is_empty() => unescape_token(last).into_owned(),
            // The whole file: named after it.
            _ => file_stem(&target.file),
        };
        let name = self.claim(section, &base);
        let mut local = format!("#/{section}/");
        push_fragment_token(&mut local, &name);
        // Remembered before its own references are followed: a schema of
        // another file that refers to itself comes back here.
        self.imported.insert(key, local.clone());
        self.notes.push(Note {
            at: pointer_at(at),
            kind: NoteKind::BundledRef { reference: r.to_owned(), to: Some(local.clone()) },
        });
        // Its own references are followed later, from the queue: a chain
        // of definitions each referring to the next, a hundred thousand
        // long, would otherwise recurse as deep.
        let copy = self.copy(&target)?;
        self.queue.push_back(Queued { section, name, copy, file: target.file });
        Ok(local)
    }

    /// A copy of what `target` points at, counted against the limit
    /// before it is made.
    fn copy(&mut self, target: &Target) -> Result<Value, BundleError> {
        let Some(node) = target.content.pointer(&target.pointer) else { return Ok(Value::Null) };
        self.copied = self.copied.saturating_add(values(node));
        if self.copied > self.copy_limit {
            return Err(BundleError::TooLarge { limit: self.copy_limit });
        }
        Ok(node.clone())
    }

    /// A name for `base` in `section` that no other member has: `base`,
    /// else `base_2`, `base_3`, …
    fn claim(&mut self, section: &'static str, base: &str) -> String {
        let taken = self.taken.entry(section).or_default();
        let base = if base.is_empty() { "_" } else { base };
        let mut name = base.to_owned();
        let mut n = 2;
        while taken.contains(&name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        taken.insert(name.clone());
        name
    }

    /// Notes that reference `r` at `at` is kept as written, once per
    /// reference.
    fn keep(&mut self, r: &str, at: &str, why: String) {
        if self.unread.insert(r.to_owned()) {
            self.notes.push(Note {
                at: pointer_at(at),
                kind: NoteKind::UnreadRef { reference: r.to_owned(), why },
            });
        }
    }
}

/// A target copied into `section` as `name`, from `file`.
struct Queued {
    section: &'static str,
    name: String,
    copy: Value,
    file: Rc<str>,
}

/// What a reference became.
enum Followed {
    /// Kept as written.
    Kept,
    /// A local reference to what was copied in.
    To(String),
    /// The path item it named, to stand in its place.
    Inline(Value),
}

/// The [`JsonPointer`] whose text is `at`.
fn pointer_at(at: &str) -> JsonPointer {
    let mut pointer = JsonPointer::root();
    for token in at.split('/').skip(1) {
        pointer = pointer.push(&unescape_token(token));
    }
    pointer
}

/// The last part of path `file` without its extension.
fn file_stem(file: &str) -> String {
    let name = file.rsplit(['/', '\\']).next().unwrap_or(file);
    name.split_once('.').map_or(name, |(stem, _)| stem).to_owned()
}

/// How many values `v` holds, itself included.
fn values(v: &Value) -> usize {
    match v {
        Value::Object(m) => 1 + m.values().map(values).sum::<usize>(),
        Value::Array(a) => 1 + a.iter().map(values).sum::<usize>(),
        _ => 1,
    }
}

#[cfg(test)]
mod tests;

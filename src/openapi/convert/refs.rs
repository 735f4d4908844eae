//! References and component names: every local `$ref` moves with what it
//! points at, and every component gets a name OpenAPI 3.0 allows.
//!
//! - A `$ref` into `definitions`, `parameters`, `responses` or
//!   `securityDefinitions` is rewritten to the component it became
//!   (`#/components/schemas/…`, `…/parameters/…` or `…/requestBodies/…`
//!   for a body parameter, `…/responses/…`, `…/securitySchemes/…`),
//!   wherever it stands — vendor extensions included: documents carry
//!   references in `x-ms-parameterized-host`, `x-ms-paths`,
//!   `x-amazon-apigateway-any-method`, `x-oneOf` and the like, and a v2
//!   reference left there makes the output invalid. A reference that
//!   reaches inside a response or parameter follows what it reaches: a
//!   response's or body's `schema` moved under `content/<media>`, a simple
//!   parameter's type and validation into its `schema`. What v3 has no
//!   place for (anything of a `formData` parameter, which is inlined into
//!   the form bodies using it) keeps its reference, with a note.
//! - A `$ref` to a schema that stands inside `paths` (the schema of a
//!   response or a body parameter, or a schema within one: swagger2openapi's
//!   `#/paths/~1test/get/responses/200/schema/properties/default`) has no
//!   counterpart at that spot in v3, where response schemas moved under
//!   `content`, and a split document keeps only `components`. The target is
//!   copied into `components.schemas` under a name made from its pointer
//!   (`paths._test.get.responses.200.schema.properties.default`; `_2`, `_3`,
//!   … when taken), with a note, and the reference points there. It stays
//!   inline where it stood, so nothing else changes.
//! - The fragment of a reference is a URI fragment, so it is
//!   percent-decoded before it is read as a JSON pointer (RFC 6901 §6;
//!   `#/definitions/Transaction%20Id`), and written back encoded.
//! - OpenAPI 3.0 requires component names to match
//!   `^[a-zA-Z0-9.\-_]+$`. A name that does not is renamed — each character
//!   outside the set becomes `_`, and `_2`, `_3`, … is appended when that
//!   name is taken — with a note, and every reference (and, for security
//!   schemes, every security requirement) follows. Kubernetes' names are
//!   all valid, so its documents are untouched.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use crate::json::pointer::{
    JsonPointer, Location, fragment_pointer, push_fragment_token, unescape_token,
};
use crate::json::tree::{Node, Object, Text};

use super::media::media_or_default;
use super::operation::METHODS;
use super::parameter::SIMPLE_SCHEMA_FIELDS;
use super::{Context, ConvertError, Note, NoteKind};

/// The Swagger 2.0 sections whose members become components.
const SECTIONS: [&str; 4] = ["definitions", "parameters", "responses", "securityDefinitions"];

/// Component names that had to change, per Swagger 2.0 section: original
/// name → OpenAPI 3.0 name. Empty for almost every document, which makes
/// each lookup one `is_empty` check.
#[derive(Debug, Default)]
pub(super) struct Renames {
    sections: Vec<(&'static str, BTreeMap<String, String>)>,
}

impl Renames {
    /// Finds the names of `doc`'s sections that OpenAPI 3.0 does not allow
    /// and picks their new names, in input order; one note per rename.
    pub(super) fn new(doc: &Object<'_>, notes: &mut Vec<Note>) -> Self {
        let mut sections = Vec::new();
        for section in SECTIONS {
            let Some(members) = doc.get(section).and_then(Node::as_object) else { continue };
            if members.keys().all(|k| valid_component_name(k)) {
                continue;
            }
            let mut taken = ComponentNames::new(
                members.keys().filter(|k| valid_component_name(k)).map(|k| k.as_str().to_owned()),
            );
            let mut renamed = BTreeMap::new();
            for name in members.keys().filter(|k| !valid_component_name(k)) {
                let candidate = taken.claim(sanitized(name));
                let at = Location::root().key(section);
                notes.push(Note {
                    at: at.key(name).to_pointer(),
                    kind: NoteKind::RenamedComponent {
                        from: name.to_string(),
                        to: candidate.clone(),
                    },
                });
                renamed.insert(name.to_string(), candidate);
            }
            sections.push((section, renamed));
        }
        Self { sections }
    }

    /// The OpenAPI 3.0 name of component `name` of Swagger 2.0 `section`.
    pub(super) fn name<'n>(&'n self, section: &str, name: &'n str) -> &'n str {
        if self.sections.is_empty() {
            return name;
        }
        self.sections
            .iter()
            .find(|(s, _)| *s == section)
            .and_then(|(_, renamed)| renamed.get(name))
            .map_or(name, String::as_str)
    }

    /// True when some security scheme was renamed, so security
    /// requirements must be rewritten.
    fn renames_security(&self) -> bool {
        self.sections.iter().any(|(s, _)| *s == "securityDefinitions")
    }
}

/// The names of one components section, and new ones given out without a
/// clash: `base`, else `base_2`, `base_3`, … the first that is free.
///
/// The next suffix to try is remembered per base, so that many names
/// sanitized to one base (a hostile document can have thousands: `x€`,
/// `x£`, … all become `x_`) cost one lookup each rather than a walk past
/// every suffix given before. Names are only ever added, so a remembered
/// suffix never skips a free name: the result is the first free one.
#[derive(Debug, Default)]
pub(super) struct ComponentNames {
    taken: BTreeSet<String>,
    next: BTreeMap<String, usize>,
}

impl ComponentNames {
    /// The names already in use.
    pub(super) fn new(taken: impl IntoIterator<Item = String>) -> Self {
        Self { taken: taken.into_iter().collect(), next: BTreeMap::new() }
    }

    /// A free name made from `base`, now taken.
    pub(super) fn claim(&mut self, base: String) -> String {
        if !self.taken.contains(&base) {
            self.taken.insert(base.clone());
            return base;
        }
        let mut n = self.next.get(&base).copied().unwrap_or(2);
        let mut candidate = format!("{base}_{n}");
        while self.taken.contains(&candidate) {
            n += 1;
            candidate = format!("{base}_{n}");
        }
        self.next.insert(base, n + 1);
        self.taken.insert(candidate.clone());
        candidate
    }
}

/// True when OpenAPI 3.0 allows `name` as a component key.
fn valid_component_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(valid_name_byte)
}

fn valid_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_')
}

/// `name` with each character OpenAPI 3.0 does not allow replaced by `_`.
fn sanitized(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') { c } else { '_' })
        .collect();
    if s.is_empty() { "_".to_owned() } else { s }
}

/// A schema inside `paths` that a reference points at, copied into
/// `components.schemas` once the document is converted (see the module
/// documentation).
#[derive(Debug)]
pub(super) struct Hoisted<'a> {
    /// Its name in `components.schemas`.
    name: String,
    /// The schema in the input.
    target: &'a Node<'a>,
    /// Where it stands in the input.
    at: JsonPointer,
}

/// What a local reference became.
#[derive(Debug, Clone)]
pub(super) enum Mapped {
    /// The v3 reference, made once per target: every `$ref` to it in the
    /// converted tree shares this text (Kubernetes 1.27 has 2152 `$ref`s to
    /// 492 targets, and each response repeats its schema per media type).
    To(Text<'static>),
    /// It points at something that is no component in v3; kept as written.
    Unmapped,
}

impl<'a> Context<'a> {
    /// The key component `name` of Swagger 2.0 `section` gets in v3.
    pub(super) fn component_key(&self, section: &str, name: &Text<'a>) -> Text<'a> {
        match self.renames.name(section, name) {
            new if new == name.as_str() => name.clone(),
            new => Text::from(new.to_owned()),
        }
    }

    /// What local reference `reference` points to in the input, and its
    /// decoded JSON pointer.
    pub(super) fn resolve<'r>(
        &self,
        reference: &'r str,
        at: &Location<'_>,
    ) -> Result<(&'a Node<'a>, Cow<'r, str>), ConvertError> {
        let unresolved =
            || ConvertError::UnresolvedRef { reference: reference.to_owned(), at: at.to_pointer() };
        let fragment = reference.strip_prefix('#').ok_or_else(unresolved)?;
        let pointer = fragment_pointer(fragment).ok_or_else(unresolved)?;
        let target = match self.definition(&pointer) {
            Some(target) => target,
            None => self.root.pointer(&pointer).ok_or_else(unresolved)?,
        };
        Ok((target, pointer))
    }

    /// The definition `pointer` names whole (`/definitions/<name>`, a name
    /// without `~` or `/`, which pointers escape), found by name; `None`
    /// for any other pointer, which [`Node::pointer`] then follows.
    fn definition(&self, pointer: &str) -> Option<&'a Node<'a>> {
        let name = pointer.strip_prefix("/definitions/")?;
        if name.contains(['/', '~']) {
            return None;
        }
        self.definitions.get(name).copied()
    }

    /// Rewrites a `$ref` value into its v3 form, checking that local ones
    /// resolve. Body and formData parameters in parameter lists are handled
    /// by the operation converter before they get here.
    pub(super) fn rewrite_ref(
        &mut self,
        reference: &Node<'a>,
        at: &Location<'_>,
    ) -> Result<Node<'a>, ConvertError> {
        let Node::String(r) = reference else {
            return Err(ConvertError::WrongType {
                at: at.key("$ref").to_pointer(),
                expected: "a string",
            });
        };
        if !r.starts_with('#') {
            self.note(at, NoteKind::ExternalRef { reference: r.to_string() });
            return Ok(reference.clone());
        }
        Ok(match self.local_ref(r, at)? {
            Mapped::To(to) => Node::String(to),
            Mapped::Unmapped => reference.clone(),
        })
    }

    /// The v3 form of local reference `r`, remembered: Kubernetes 1.27 has
    /// 2152 `$ref`s to 492 targets, and resolving one walks the 600
    /// definitions by name. An unmapped reference is noted at each place.
    fn local_ref(&mut self, r: &str, at: &Location<'_>) -> Result<Mapped, ConvertError> {
        if let Some(slashed) = self.slashed(r, at) {
            return self.local_ref(&slashed, at);
        }
        let mapped = match self.refs.get(r) {
            Some(m) => m.clone(),
            None => {
                let m = self.map_local_ref(r, at)?;
                self.refs.insert(r.to_owned(), m.clone());
                m
            }
        };
        if let Mapped::Unmapped = mapped {
            self.note(at, NoteKind::UnmappedRef { reference: r.to_owned() });
        }
        Ok(mapped)
    }

    /// `#definitions/x` read as `#/definitions/x`, with a note, when that
    /// resolves. A fragment that is a JSON pointer starts with `/`, but
    /// hand-written documents forget it, and swagger-parser resolves them
    /// all the same (a go-openapi fixture named `fixture-859-good`): such a
    /// document was refused here as pointing to nothing.
    pub(super) fn slashed(&mut self, r: &str, at: &Location<'_>) -> Option<String> {
        let rest = r.strip_prefix('#').filter(|f| !f.is_empty() && !f.starts_with('/'))?;
        let slashed = format!("#/{rest}");
        self.resolve(&slashed, at).ok()?;
        self.note(at, NoteKind::RefWithoutSlash { reference: r.to_owned() });
        Some(slashed)
    }

    fn map_local_ref(&mut self, r: &str, at: &Location<'_>) -> Result<Mapped, ConvertError> {
        let (target, pointer) = self.resolve(r, at)?;
        let mut tokens = pointer.split('/').skip(1).map(unescape_token);
        let (Some(section), Some(name)) = (tokens.next(), tokens.next()) else {
            return Ok(Mapped::Unmapped);
        };
        let inner: Vec<Cow<'_, str>> = tokens.collect();
        let (to, inner) = match &*section {
            "paths" => {
                let below: Vec<Cow<'_, str>> = std::iter::once(name).chain(inner).collect();
                return Ok(self.hoist(&below, target));
            }
            "definitions" => ("schemas", Some(inner)),
            "responses" => {
                let media = media_or_default(&self.produces).first().copied();
                ("responses", response_inner(inner, media))
            }
            "securityDefinitions" => ("securitySchemes", Some(inner)),
            "parameters" => {
                let param = self.doc.get("parameters").and_then(|p| p.get(&name));
                match param.and_then(|p| p.get("in")).and_then(Node::as_str) {
                    Some("body") => {
                        let media = media_or_default(&self.consumes).first().copied();
                        ("requestBodies", body_inner(inner, media))
                    }
                    // Form parameters are inlined where used: no component.
                    Some("formData") => return Ok(Mapped::Unmapped),
                    _ => ("parameters", simple_inner(inner, PARAMETER_FIELDS)),
                }
            }
            _ => return Ok(Mapped::Unmapped),
        };
        // Something inside the component that has no counterpart in v3.
        let Some(inner) = inner else { return Ok(Mapped::Unmapped) };
        let mut out = String::with_capacity(r.len() + 16);
        out.push_str("#/components/");
        out.push_str(to);
        out.push('/');
        push_fragment_token(&mut out, self.renames.name(&section, &name));
        for token in inner {
            out.push('/');
            push_fragment_token(&mut out, &token);
        }
        Ok(Mapped::To(Text::from(out)))
    }

    /// Where a reference to `target` (at `paths` then `below`, decoded)
    /// points in v3: a new `components.schemas` entry when `target` is a
    /// schema, else nowhere.
    fn hoist(&mut self, below: &[Cow<'_, str>], target: &'a Node<'a>) -> Mapped {
        let Some(paths) = self.doc.get("paths") else { return Mapped::Unmapped };
        if !schema_in_paths(paths, below) {
            return Mapped::Unmapped;
        }
        let mut base = String::from("paths");
        for token in below {
            base.push('.');
            base.push_str(token);
        }
        let (doc, renames) = (self.doc, &self.renames);
        // The names of `components.schemas` so far: the definitions' v3
        // names, then the schemas hoisted before.
        let names = self.hoisted_names.get_or_insert_with(|| {
            let defs = doc.get("definitions").and_then(Node::as_object);
            ComponentNames::new(
                defs.into_iter()
                    .flat_map(|d| d.keys())
                    .map(|k| renames.name("definitions", k).to_owned()),
            )
        });
        let name = names.claim(sanitized(&base));
        let at = below.iter().fold(JsonPointer::root().push("paths"), |p, t| p.push(t));
        let mut reference = String::from("#/components/schemas/");
        push_fragment_token(&mut reference, &name);
        self.notes
            .push(Note { at: at.clone(), kind: NoteKind::HoistedSchema { name: name.clone() } });
        self.hoisted.push(Hoisted { name, target, at });
        Mapped::To(Text::from(reference))
    }

    /// Adds the schemas references into `paths` were pointed at (see
    /// [`Context::hoist`]) to `document`'s `components.schemas`, converted.
    /// A hoisted schema may itself refer into `paths`, so this runs until
    /// no new one appears; each target is hoisted once (references are
    /// mapped once, `Context::local_ref`), so it ends.
    pub(super) fn add_hoisted(&mut self, document: &mut Node<'a>) -> Result<(), ConvertError> {
        let mut converted = Vec::new();
        let mut next = 0;
        while let Some(h) = self.hoisted.get(next) {
            let (target, at, name) = (h.target, h.at.clone(), h.name.clone());
            next += 1;
            // The schema was converted where it stands too, with its notes:
            // converting the copy must not report them twice.
            let noted = self.notes.len();
            let schema = self.schema(target, &Location::at(&at))?;
            let hoisted_here: Vec<Note> = self
                .notes
                .drain(noted..)
                .filter(|n| matches!(n.kind, NoteKind::HoistedSchema { .. }))
                .collect();
            self.notes.extend(hoisted_here);
            converted.push((Text::from(name), schema));
        }
        if converted.is_empty() {
            return Ok(());
        }
        let Node::Object(doc) = document else { return Ok(()) };
        if !doc.contains_key("components") {
            doc.insert("components", Node::Object(Object::new()));
        }
        let Some(Node::Object(components)) = doc.get_mut("components") else { return Ok(()) };
        if !components.contains_key("schemas") {
            components.insert("schemas", Node::Object(Object::new()));
        }
        if let Some(Node::Object(schemas)) = components.get_mut("schemas") {
            for (name, schema) in converted {
                schemas.push_new(name, schema);
            }
        }
        Ok(())
    }

    /// A vendor extension's value, copied as it is except for its local
    /// `$ref`s, which follow their targets like every other reference.
    ///
    /// The input is not refused for what an extension holds: a local
    /// reference there that points to nothing is kept, with a note, and
    /// references to other documents are kept silently.
    pub(super) fn extension(&mut self, value: &Node<'a>, at: &Location<'_>) -> Node<'a> {
        match value {
            Node::Object(members) => {
                let mut out = Object::with_capacity(members.len());
                for (k, v) in members {
                    let converted = match v {
                        Node::String(r) if k == "$ref" && r.starts_with('#') => {
                            match self.local_ref(r, at) {
                                Ok(Mapped::To(to)) => Node::String(to),
                                Ok(Mapped::Unmapped) => v.clone(),
                                Err(_) => {
                                    let reference = r.to_string();
                                    self.note(at, NoteKind::DanglingRef { reference });
                                    v.clone()
                                }
                            }
                        }
                        Node::Object(_) | Node::Array(_) => self.extension(v, &at.key(k)),
                        _ => v.clone(),
                    };
                    out.push_new(k.clone(), converted);
                }
                Node::Object(out)
            }
            Node::Array(items) => Node::Array(
                items.iter().enumerate().map(|(i, v)| self.extension(v, &at.index(i))).collect(),
            ),
            other => other.clone(),
        }
    }

    /// `security` (of the document or an operation): the scheme names of
    /// each requirement follow renamed security schemes.
    pub(super) fn security_requirements(&self, value: &Node<'a>) -> Node<'a> {
        if !self.renames.renames_security() {
            return value.clone();
        }
        let Node::Array(requirements) = value else { return value.clone() };
        Node::Array(
            requirements
                .iter()
                .map(|req| match req {
                    Node::Object(schemes) => Node::Object(
                        schemes
                            .iter()
                            .map(|(name, scopes)| {
                                (self.component_key("securityDefinitions", name), scopes.clone())
                            })
                            .collect(),
                    ),
                    other => other.clone(),
                })
                .collect(),
        )
    }
}

/// Members of a v2 simple parameter that stay members of the v3 parameter.
const PARAMETER_FIELDS: &[&str] =
    &["name", "in", "description", "required", "deprecated", "allowEmptyValue", "schema"];

/// Members of a v2 header that stay members of the v3 header.
const HEADER_FIELDS: &[&str] = &["description"];

/// The tokens below a v3 parameter (or header) for `inner`, the tokens
/// below a v2 simple parameter (or header): the type and validation fields
/// moved into `schema` (`x-nullable` became `nullable` there), the fields in
/// `kept` and extensions stayed. `None` for what v3 has no place for
/// (`collectionFormat` became `style`).
fn simple_inner<'t>(mut inner: Vec<Cow<'t, str>>, kept: &[&str]) -> Option<Vec<Cow<'t, str>>> {
    let Some(first) = inner.first() else { return Some(inner) };
    let (into_schema, renamed) = match &**first {
        "x-nullable" => (true, Some("nullable")),
        f if f.starts_with("x-") || kept.contains(&f) => (false, None),
        f if f == "type" || f == "items" || SIMPLE_SCHEMA_FIELDS.contains(&f) => (true, None),
        _ => return None,
    };
    if let Some(renamed) = renamed {
        inner[0] = Cow::Borrowed(renamed);
    }
    if into_schema {
        inner.insert(0, Cow::Borrowed("schema"));
    }
    Some(inner)
}

/// The tokens below a v3 request body for `inner`, the tokens below a v2
/// body parameter: its `schema` moved under `content` (the first media type
/// the document consumes, which the `requestBodies` entry was made with);
/// `description`, `required` and extensions stayed. `None` for the rest
/// (`name`, `in`).
fn body_inner<'t>(mut inner: Vec<Cow<'t, str>>, media: Option<&str>) -> Option<Vec<Cow<'t, str>>> {
    match inner.first().map(|t| &**t) {
        None => {}
        Some("schema") => {
            inner.splice(0..0, [Cow::Borrowed("content"), Cow::Owned(media?.to_owned())]);
        }
        Some(f) if f == "description" || f == "required" || f.starts_with("x-") => {}
        Some(_) => return None,
    }
    Some(inner)
}

/// The tokens below a v3 response for `inner`, the tokens below a v2
/// response: its `schema` moved under `content` (the first media type the
/// document produces, which the `responses` entry was made with), an
/// example under `content` too, and a header's type and validation into its
/// `schema`.
fn response_inner<'t>(
    mut inner: Vec<Cow<'t, str>>,
    media: Option<&str>,
) -> Option<Vec<Cow<'t, str>>> {
    match inner.first().map(|t| &**t) {
        None => {}
        Some("schema") => {
            inner.splice(0..0, [Cow::Borrowed("content"), Cow::Owned(media?.to_owned())]);
        }
        Some("examples") if inner.len() >= 2 => {
            inner[0] = Cow::Borrowed("content");
            inner.insert(2, Cow::Borrowed("example"));
        }
        Some("headers") if inner.len() >= 2 => {
            let below = simple_inner(inner.split_off(2), HEADER_FIELDS)?;
            inner.extend(below);
        }
        Some(f) if f == "description" || f.starts_with("x-") => {}
        Some(_) => return None,
    }
    Some(inner)
}

/// True when the tokens `below` `paths` lead from a path item to a schema:
/// the `schema` of a response or of a (body) parameter of an operation or a
/// path item, or a schema inside one (through `properties`, `items`,
/// `additionalProperties`, `allOf`, `anyOf`, `oneOf`, `not`). Anything else
/// there (a parameter, a list of properties, `required`) is no schema and
/// cannot be hoisted into `components.schemas`.
fn schema_in_paths(paths: &Node<'_>, below: &[Cow<'_, str>]) -> bool {
    let [path, rest @ ..] = below else { return false };
    if path.starts_with("x-") {
        return false;
    }
    let Some(item) = paths.get(path) else { return false };
    let (holder, rest) = match rest {
        [method, rest @ ..] if METHODS.contains(&&**method) => match item.get(method) {
            Some(op) => (op, rest),
            None => return false,
        },
        _ => (item, rest),
    };
    let mut node = match rest {
        [list, key, schema, rest @ ..]
            if schema == "schema"
                && ((list == "responses" && !key.starts_with("x-")) || list == "parameters") =>
        {
            match holder.get(list).and_then(|l| child(l, key)).and_then(|h| h.get("schema")) {
                Some(s) => (s, rest),
                None => return false,
            }
        }
        _ => return false,
    };
    loop {
        match node {
            (_, []) => return true,
            (s, [word, key, rest @ ..])
                if matches!(&**word, "properties" | "allOf" | "anyOf" | "oneOf")
                    || (word == "items" && s.get("items").is_some_and(Node::is_array)) =>
            {
                match s.get(word).and_then(|w| child(w, key)) {
                    Some(inner) => node = (inner, rest),
                    None => return false,
                }
            }
            (s, [word, rest @ ..])
                if matches!(&**word, "items" | "not" | "additionalProperties") =>
            {
                match s.get(word) {
                    Some(inner) if inner.is_object() => node = (inner, rest),
                    _ => return false,
                }
            }
            _ => return false,
        }
    }
}

/// Member `token` of an object, or element `token` of an array.
fn child<'n, 'a>(node: &'n Node<'a>, token: &str) -> Option<&'n Node<'a>> {
    match node {
        Node::Array(items) => token.parse::<usize>().ok().and_then(|i| items.get(i)),
        other => other.get(token),
    }
}

/// `{"$ref": reference}`: a reference object, where v3 allows one in place
/// of the object it refers to.
pub(super) fn ref_object_value<'a>(reference: Node<'a>) -> Node<'a> {
    let mut m = Object::with_capacity(1);
    m.insert("$ref", reference);
    Node::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_outside_the_v3_pattern_are_invalid() {
        assert!(valid_component_name("io.k8s.api.core.v1.Pod"));
        assert!(valid_component_name("a-b_c.D9"));
        assert!(!valid_component_name(""));
        assert!(!valid_component_name("filter[from]"));
        assert!(!valid_component_name("Error/400"));
        assert!(!valid_component_name("Transaction Id"));
        assert!(!valid_component_name("caf\u{e9}"));
    }

    #[test]
    fn sanitizing_replaces_each_invalid_character() {
        assert_eq!(sanitized("filter[from]"), "filter_from_");
        assert_eq!(sanitized("caf\u{e9}"), "caf_");
        assert_eq!(sanitized(""), "_");
    }
}

//! Schema conversion: Swagger 2.0 schema objects → OpenAPI 3.0 schema
//! objects, with the Kubernetes heuristics.
//!
//! The two schema dialects are nearly the same; the differences handled
//! here are:
//! - `$ref`s move from `#/definitions/` to `#/components/schemas/`;
//! - `x-nullable` becomes `nullable`, a string `discriminator` becomes
//!   `{propertyName}`, `type: file` becomes a binary string, `type: "null"`
//!   and lists of types holding `"null"` become `nullable`;
//! - JSON Schema keywords v3 forbids are dropped with a note;
//! - recursion goes into every place a schema can stand, including
//!   `allOf`/`anyOf`/`oneOf`/`not` (upstream skips those and leaves
//!   dangling `#/definitions/` references there, docs/upstream.md#b-8-4).
//!
//! Kubernetes heuristics (docs/wire.md#a-5):
//! - IntOrString (`format: int-or-string` or `x-kubernetes-int-or-string:
//!   true`) → `anyOf: [{type: integer}, {type: string}]`, keeping the format
//!   and setting the extension, which is how CRD structural schemas spell it;
//! - the Quantity definition → `anyOf: [{type: string}, {type: number}]`;
//! - a `$ref` with siblings → `allOf: [{$ref}]` with the siblings beside it,
//!   because OpenAPI 3.0 ignores everything next to a `$ref` and the
//!   description and default of a field would otherwise be lost
//!   (kubernetes/kubernetes#106387). An existing `allOf` is kept after it.

use crate::json::tree::{Node, Object, Text};

use super::{Context, ConvertError, NoteKind};
use crate::json::pointer::Location;

/// The definition name Kubernetes gives its resource quantity type.
pub(crate) const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";

/// The IntOrString extension, set by the heuristic.
const INT_OR_STRING_EXT: &str = "x-kubernetes-int-or-string";

/// Keywords an OpenAPI 3.0 schema object may carry as they are.
fn copied_as_is(keyword: &str) -> bool {
    matches!(
        keyword,
        "title"
            | "multipleOf"
            | "maximum"
            | "exclusiveMaximum"
            | "minimum"
            | "exclusiveMinimum"
            | "maxLength"
            | "minLength"
            | "pattern"
            | "maxItems"
            | "minItems"
            | "uniqueItems"
            | "maxProperties"
            | "minProperties"
            | "required"
            | "enum"
            | "description"
            | "format"
            | "default"
            | "nullable"
            | "readOnly"
            | "writeOnly"
            | "example"
            | "externalDocs"
            | "deprecated"
            | "xml"
    ) || keyword.starts_with("x-")
}

impl<'a> Context<'a> {
    /// Converts a definition, applying the heuristics that depend on its
    /// name (Quantity).
    pub(super) fn named_schema(
        &mut self,
        name: &str,
        s: &Node<'a>,
        at: &Location<'_>,
    ) -> Result<Node<'a>, ConvertError> {
        let mut converted = self.schema(s, at)?;
        if let (QUANTITY, Node::Object(obj)) = (name, &mut converted) {
            quantity_any_of(obj);
        }
        Ok(converted)
    }

    /// Converts one schema object and, recursively, every schema inside it.
    pub(super) fn schema(
        &mut self,
        s: &Node<'a>,
        at: &Location<'_>,
    ) -> Result<Node<'a>, ConvertError> {
        let Node::Object(obj) = s else {
            return Err(ConvertError::WrongType {
                at: at.to_pointer(),
                expected: "a schema object",
            });
        };
        // Sized from the input (only IntOrString, rare, adds members): a
        // regrown member list leaves its smaller copies behind, memory the
        // kernel zeroes for nothing.
        let mut out = Object::with_capacity(obj.len());
        for (key, value) in obj {
            match key.as_str() {
                "$ref" => {
                    out.insert(key.clone(), self.rewrite_ref(value, at)?);
                }
                "properties" => {
                    let at = at.key(key);
                    let props = value.as_object().ok_or_else(|| ConvertError::WrongType {
                        at: at.to_pointer(),
                        expected: "an object of schemas",
                    })?;
                    let mut converted = Object::with_capacity(props.len());
                    for (name, p) in props {
                        converted.push_new(name.clone(), self.schema(p, &at.key(name))?);
                    }
                    out.insert(key.clone(), Node::Object(converted));
                }
                "items" => {
                    let at = at.key(key);
                    let items = match value {
                        Node::Array(list) => {
                            self.note(&at, NoteKind::TupleItems);
                            let mut any_of = Object::new();
                            any_of.insert("anyOf", self.schema_list(list, &at)?);
                            Node::Object(any_of)
                        }
                        other => self.schema(other, &at)?,
                    };
                    out.insert(key.clone(), items);
                }
                "additionalProperties" => {
                    let converted = match value {
                        Node::Bool(_) => value.clone(),
                        other => self.schema(other, &at.key(key))?,
                    };
                    out.insert(key.clone(), converted);
                }
                "allOf" | "anyOf" | "oneOf" => {
                    let at = at.key(key);
                    let Node::Array(list) = value else {
                        return Err(ConvertError::WrongType {
                            at: at.to_pointer(),
                            expected: "a list of schemas",
                        });
                    };
                    out.insert(key.clone(), self.schema_list(list, &at)?);
                }
                "not" => {
                    out.insert(key.clone(), self.schema(value, &at.key(key))?);
                }
                "x-nullable" => match value {
                    Node::Bool(_) => {
                        out.insert("nullable", value.clone());
                    }
                    _ => {
                        out.insert(key.clone(), value.clone());
                    }
                },
                "discriminator" => {
                    let converted = match value {
                        Node::String(name) => {
                            let mut d = Object::new();
                            d.insert("propertyName", Node::String(name.clone()));
                            Node::Object(d)
                        }
                        other => other.clone(),
                    };
                    out.insert(key.clone(), converted);
                }
                "type" => self.schema_type(value, &mut out, &at.key(key))?,
                k if k.starts_with("x-") => {
                    let converted = self.extension(value, &at.key(key));
                    // Unique in the input, and no name the conversion
                    // writes (`x-nullable` is matched above).
                    out.push_new(key.clone(), converted);
                }
                // As they are, but a `$ref` inside (`description: {$ref}`
                // in a careless document) follows its target like any other.
                k if copied_as_is(k) => {
                    let converted = self.extension(value, &at.key(key));
                    out.insert(key.clone(), converted);
                }
                _ => self.note(
                    &at.key(key),
                    NoteKind::DroppedSchemaKeyword { keyword: key.to_string() },
                ),
            }
        }
        if is_int_or_string(&out) {
            int_or_string_any_of(&mut out);
        }
        Ok(Node::Object(wrap_ref(out)))
    }

    fn schema_list(
        &mut self,
        list: &[Node<'a>],
        at: &Location<'_>,
    ) -> Result<Node<'a>, ConvertError> {
        let converted: Result<Vec<Node<'a>>, ConvertError> =
            list.iter().enumerate().map(|(i, s)| self.schema(s, &at.index(i))).collect();
        Ok(Node::Array(converted?))
    }

    /// `type`: `file` becomes a binary string; `"null"` (JSON Schema's,
    /// not OpenAPI 3.0's) becomes `nullable: true`; a list of types (not
    /// valid Swagger 2.0, but common in hand-written documents) becomes
    /// `nullable` when it holds `"null"`, and `anyOf` of the others when
    /// there are several.
    fn schema_type(
        &mut self,
        value: &Node<'a>,
        out: &mut Object<'a>,
        at: &Location<'_>,
    ) -> Result<(), ConvertError> {
        match value {
            Node::String(t) if t == "file" => {
                out.insert("type", Node::String("string".into()));
                out.insert("format", Node::String("binary".into()));
            }
            // OpenAPI 3.0 has no null type: a v3 reader would reject it.
            Node::String(t) if t == "null" => {
                self.note(at, NoteKind::NullType);
                out.insert("nullable", Node::Bool(true));
            }
            Node::String(_) => {
                out.insert("type", value.clone());
            }
            Node::Array(types) => {
                self.note(at, NoteKind::TypeList);
                let mut names = Vec::with_capacity(types.len());
                for (i, t) in types.iter().enumerate() {
                    let Node::String(name) = t else {
                        return Err(ConvertError::WrongType {
                            at: at.index(i).to_pointer(),
                            expected: "a type name",
                        });
                    };
                    if name == "null" {
                        out.insert("nullable", Node::Bool(true));
                    } else {
                        names.push(name);
                    }
                }
                match names.as_slice() {
                    [] => {}
                    [one] => {
                        out.insert("type", Node::String((*one).clone()));
                    }
                    many => {
                        let any_of = many.iter().map(|t| type_schema((*t).clone())).collect();
                        out.insert("anyOf", Node::Array(any_of));
                    }
                }
            }
            _ => {
                return Err(ConvertError::WrongType {
                    at: at.to_pointer(),
                    expected: "a type name",
                });
            }
        }
        Ok(())
    }
}

/// `{"type": name}`.
pub(crate) fn type_schema<'a>(name: impl Into<Text<'a>>) -> Node<'a> {
    let mut m = Object::with_capacity(1);
    m.insert("type", Node::string(name));
    Node::Object(m)
}

fn is_int_or_string(s: &Object<'_>) -> bool {
    s.get("format").and_then(Node::as_str) == Some("int-or-string")
        || s.get(INT_OR_STRING_EXT) == Some(&Node::Bool(true))
}

/// IntOrString → `anyOf: [integer, string]`. The single `type` goes (a
/// value cannot be both `type: string` and an integer); `format` stays for
/// clients that key on it, and the extension is set for those that key on
/// that. A schema that already spells out `anyOf`/`oneOf` is left alone.
fn int_or_string_any_of(s: &mut Object<'_>) {
    if s.contains_key("anyOf") || s.contains_key("oneOf") || s.contains_key("$ref") {
        return;
    }
    let any_of = Node::Array(vec![type_schema("integer"), type_schema("string")]);
    replace_type_with_any_of(s, any_of);
    s.insert(INT_OR_STRING_EXT, Node::Bool(true));
}

/// Quantity → `anyOf: [string, number]` (a quantity is written as `"1Gi"`
/// or as a bare number).
fn quantity_any_of(s: &mut Object<'_>) {
    if s.contains_key("anyOf") || s.contains_key("oneOf") || s.contains_key("allOf") {
        return;
    }
    let any_of = Node::Array(vec![type_schema("string"), type_schema("number")]);
    replace_type_with_any_of(s, any_of);
}

/// Puts `anyOf` where `type` stood (or at the end), keeping member order
/// otherwise.
fn replace_type_with_any_of<'a>(s: &mut Object<'a>, any_of: Node<'a>) {
    if s.contains_key("type") {
        let old = std::mem::take(s);
        for (k, v) in old {
            if k == "type" {
                s.insert("anyOf", any_of.clone());
            } else {
                s.insert(k, v);
            }
        }
    } else {
        s.insert("anyOf", any_of);
    }
}

/// A schema with a `$ref` and anything else becomes `allOf: [{$ref}, …]`
/// in the `$ref`'s place, with the siblings kept and any existing `allOf`
/// items after the reference.
fn wrap_ref(s: Object<'_>) -> Object<'_> {
    if s.len() < 2 || !s.contains_key("$ref") {
        return s;
    }
    let existing =
        s.get("allOf").and_then(Node::as_array).map(<[Node<'_>]>::to_vec).unwrap_or_default();
    let mut out = Object::with_capacity(s.len());
    for (k, v) in s {
        match k.as_str() {
            "$ref" => {
                let mut r = Object::with_capacity(1);
                r.insert(k, v);
                let mut all_of = Vec::with_capacity(existing.len() + 1);
                all_of.push(Node::Object(r));
                all_of.extend(existing.iter().cloned());
                out.insert("allOf", Node::Array(all_of));
            }
            "allOf" => {}
            _ => {
                out.insert(k, v);
            }
        }
    }
    out
}

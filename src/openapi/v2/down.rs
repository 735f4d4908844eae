//! OpenAPI 3.0 → Swagger 2.0, for a downstream that publishes only v3
//! (docs/wire.md, A-13).
//!
//! Schemas follow what kube-apiserver does to a CRD's structural schema
//! before it publishes it in v2 (apiextensions-apiserver
//! `controller/openapi/v2/conversion.go`), because kubectl and client-go
//! read v2 with those limits in mind:
//!
//! - `allOf`, `oneOf`, `anyOf` and `not` are dropped — after a one-element
//!   `allOf: [{$ref}]` (how v3 puts a description or default beside a
//!   reference) is unwrapped to the `$ref` it wraps, and after a pair of
//!   `integer` and `string` alternatives became `type: string, format:
//!   int-or-string` (the built-in IntOrString's v2 form) when the schema
//!   says neither `type` nor `x-kubernetes-int-or-string`;
//! - value validations (`format`, `required`, `enum`, `pattern`, the
//!   bounds, …) are stripped (`StripValueValidation`), keeping `format:
//!   int-or-string`, which client-go reads to know an IntOrString — except
//!   in the definitions of Kubernetes' own types (`io.k8s.…`), which
//!   kube-apiserver publishes in v2 with them;
//! - `nullable: true` drops `type`, `items` and `properties`; `nullable`
//!   itself goes;
//! - `x-kubernetes-preserve-unknown-fields: true` drops `items` and
//!   `properties`, and `type: object`;
//! - `type: array` without `items` drops the type;
//! - v3-only keywords (`writeOnly`, `deprecated`, a `discriminator`
//!   object, `example`s on parameters) go.
//!
//! The document around them maps as kube-openapi's v2 → v3 converter maps
//! it, backwards: `components.schemas` → `definitions`,
//! `components.parameters` → `parameters`, `components.securitySchemes` →
//! `securityDefinitions`, every `#/components/…` reference rewritten; a
//! request body → a `body` parameter first in the list, its media types →
//! `consumes`; a response's first media type's schema → its `schema`, all
//! its media types → the operation's `produces`; a parameter's `schema` →
//! the parameter's own `type`, `format`, `items`, ….

use super::refs;
use crate::json::tree::{Node, Object, Text};

/// Why a document cannot be converted down.
#[derive(Debug, thiserror::Error)]
pub enum DownError {
    /// The document is no JSON object.
    #[error("not a JSON object")]
    NotAnObject,
    /// `openapi` is missing or not a 3.0 version.
    #[error("not an OpenAPI 3.0 document (`openapi` is not 3.0.x)")]
    NotOpenApi3,
}

const OPERATIONS: [&str; 7] = ["get", "put", "post", "delete", "options", "head", "patch"];

/// Converts the OpenAPI 3.0 document `doc` to Swagger 2.0.
///
/// # Errors
/// [`DownError`] when `doc` is not an OpenAPI 3.0 document.
pub fn down_convert(doc: Node<'_>) -> Result<Node<'_>, DownError> {
    let Node::Object(doc) = doc else { return Err(DownError::NotAnObject) };
    if !doc.get("openapi").and_then(Node::as_str).is_some_and(|v| v.starts_with("3.0")) {
        return Err(DownError::NotOpenApi3);
    }
    let mut out = Object::new();
    out.insert("swagger", Node::string("2.0"));
    let mut info = None;
    let mut paths = Object::new();
    let mut sections: Vec<(&'static str, Node<'_>)> = Vec::new();
    let mut rest: Vec<(Text<'_>, Node<'_>)> = Vec::new();
    for (key, value) in doc {
        match key.as_str() {
            "openapi" | "servers" | "webhooks" | "jsonSchemaDialect" => {}
            "info" => info = Some(value),
            "paths" => {
                if let Node::Object(o) = value {
                    for (path, item) in o {
                        paths.push_new(path, path_item(item));
                    }
                }
            }
            "components" => {
                let Node::Object(c) = value else { continue };
                for (part, members) in c {
                    let Node::Object(members) = members else { continue };
                    let name = match part.as_str() {
                        "schemas" => "definitions",
                        "parameters" => "parameters",
                        "responses" => "responses",
                        "securitySchemes" => "securityDefinitions",
                        _ => continue,
                    };
                    let converted = members
                        .into_iter()
                        .map(|(k, mut v)| {
                            let v = match name {
                                "definitions" => {
                                    convert_schema(&mut v, !k.as_str().starts_with(KUBERNETES_OWN));
                                    v
                                }
                                "parameters" => parameter(v),
                                "responses" => response(v, &mut Vec::new()),
                                _ => security_scheme(v),
                            };
                            (k, v)
                        })
                        .collect();
                    sections.push((name, Node::Object(converted)));
                }
            }
            _ => rest.push((key, value)),
        }
    }
    out.insert("info", info.unwrap_or_else(|| Node::Object(Object::new())));
    out.insert("paths", Node::Object(paths));
    for (name, section) in sections {
        out.insert(name, section);
    }
    for (key, value) in rest {
        out.insert(key, value);
    }
    let mut out = Node::Object(out);
    refs::rewrite(&mut out, &|r| {
        let (section, name) = r.strip_prefix("#/components/")?.split_once('/')?;
        let section = match section {
            "schemas" => "definitions",
            "parameters" => "parameters",
            "responses" => "responses",
            _ => return None,
        };
        Some(format!("#/{section}/{name}"))
    });
    Ok(out)
}

fn path_item(item: Node<'_>) -> Node<'_> {
    let Node::Object(item) = item else { return item };
    let mut out = Object::with_capacity(item.len());
    for (key, value) in item {
        match key.as_str() {
            "parameters" => out.push_new(key, parameters(value)),
            k if OPERATIONS.contains(&k) => out.push_new(key, operation(value)),
            // v2 has no `trace`, no summary, description or servers here.
            "trace" | "summary" | "description" | "servers" => {}
            _ => out.push_new(key, value),
        }
    }
    Node::Object(out)
}

fn parameters(list: Node<'_>) -> Node<'_> {
    match list {
        Node::Array(items) => Node::Array(items.into_iter().map(parameter).collect()),
        other => other,
    }
}

fn operation(op: Node<'_>) -> Node<'_> {
    let Node::Object(op) = op else { return op };
    let mut body = None;
    let mut consumes: Vec<String> = Vec::new();
    let mut produces: Vec<String> = Vec::new();
    let mut members: Vec<(Text<'_>, Node<'_>)> = Vec::with_capacity(op.len() + 2);
    for (key, value) in op {
        match key.as_str() {
            "requestBody" => body = request_body(value, &mut consumes),
            "responses" => {
                let Node::Object(rs) = value else {
                    members.push((key, value));
                    continue;
                };
                let rs = rs.into_iter().map(|(code, r)| (code, response(r, &mut produces)));
                members.push((key, Node::Object(rs.collect())));
            }
            "parameters" => members.push((key, parameters(value))),
            "callbacks" | "servers" => {}
            _ => members.push((key, value)),
        }
    }
    let has_parameters = members.iter().any(|(k, _)| k.as_str() == "parameters");
    let strings = |list: Vec<String>| Node::Array(list.into_iter().map(Node::string).collect());
    let mut lists = Some((consumes, produces));
    let put_lists = |out: &mut Object<'_>, lists: &mut Option<(Vec<String>, Vec<String>)>| {
        let Some((consumes, produces)) = lists.take() else { return };
        if !consumes.is_empty() {
            out.push_new(Text::from("consumes"), strings(consumes));
        }
        if !produces.is_empty() {
            out.push_new(Text::from("produces"), strings(produces));
        }
    };
    let mut out = Object::with_capacity(members.len() + 3);
    for (key, value) in members {
        // kube-apiserver's order: description, consumes, produces, …
        if key.as_str() != "description" {
            put_lists(&mut out, &mut lists);
        }
        if key.as_str() == "responses"
            && !has_parameters
            && let Some(b) = body.take()
        {
            out.push_new(Text::from("parameters"), Node::Array(vec![b]));
        }
        let value = match (key.as_str(), value) {
            ("parameters", Node::Array(mut items)) => {
                if let Some(b) = body.take() {
                    items.insert(0, b);
                }
                Node::Array(items)
            }
            (_, value) => value,
        };
        out.push_new(key, value);
    }
    put_lists(&mut out, &mut lists);
    if let Some(b) = body {
        out.push_new(Text::from("parameters"), Node::Array(vec![b]));
    }
    Node::Object(out)
}

/// The `body` parameter a request body becomes; its media types go to
/// `consumes`.
fn request_body<'a>(body: Node<'a>, consumes: &mut Vec<String>) -> Option<Node<'a>> {
    let Node::Object(body) = body else { return None };
    let mut out = Object::new();
    out.push_new(Text::from("name"), Node::string("body"));
    out.push_new(Text::from("in"), Node::string("body"));
    let mut required = None;
    let mut description = None;
    let mut found = None;
    for (key, value) in body {
        match key.as_str() {
            "required" => required = Some(value),
            "description" => description = Some(value),
            "content" => found = first_schema(value, consumes),
            _ => {}
        }
    }
    if let Some(d) = description {
        out.push_new(Text::from("description"), d);
    }
    if let Some(r) = required {
        out.push_new(Text::from("required"), r);
    }
    out.push_new(Text::from("schema"), found.unwrap_or_else(|| Node::Object(Object::new())));
    Some(Node::Object(out))
}

/// The schema of the first media type of `content` that has one,
/// converted; every media type goes to `types` once.
fn first_schema<'a>(content: Node<'a>, types: &mut Vec<String>) -> Option<Node<'a>> {
    let Node::Object(content) = content else { return None };
    let mut found = None;
    for (media, entry) in content {
        if !types.iter().any(|t| t == media.as_str()) {
            types.push(media.as_str().to_owned());
        }
        if found.is_none()
            && let Node::Object(mut entry) = entry
            && let Some(mut s) = entry.remove("schema")
        {
            schema(&mut s);
            found = Some(s);
        }
    }
    found
}

fn response<'a>(r: Node<'a>, produces: &mut Vec<String>) -> Node<'a> {
    let Node::Object(r) = r else { return r };
    if r.contains_key("$ref") {
        return Node::Object(r);
    }
    let mut out = Object::with_capacity(r.len());
    let mut has_description = false;
    for (key, value) in r {
        match key.as_str() {
            "content" => {
                if let Some(s) = first_schema(value, produces) {
                    out.insert("schema", s);
                }
            }
            "headers" => {
                let Node::Object(hs) = value else { continue };
                let hs = hs.into_iter().map(|(k, h)| (k, header(h)));
                out.insert(key, Node::Object(hs.collect()));
            }
            "links" => {}
            "description" => {
                has_description = true;
                out.insert(key, value);
            }
            _ => out.insert(key, value),
        }
    }
    if !has_description {
        // Required in v2.
        out.insert("description", Node::string(""));
    }
    Node::Object(out)
}

/// A v3 header (a parameter without `name` and `in`) → a v2 header.
fn header(h: Node<'_>) -> Node<'_> {
    let Node::Object(mut h) = h else { return h };
    let hoisted = h.remove("schema");
    h.retain(|k, _| {
        !matches!(k, "required" | "deprecated" | "style" | "explode" | "example" | "examples")
    });
    if let Some(s) = hoisted {
        hoist(&mut h, s);
    }
    Node::Object(h)
}

/// A v3 parameter → v2: a `body` stays with its schema; any other takes
/// its schema's `type`, `format`, `items`, … as its own.
fn parameter(p: Node<'_>) -> Node<'_> {
    let Node::Object(mut p) = p else { return p };
    if p.contains_key("$ref") {
        return Node::Object(p);
    }
    let s = p.remove("schema");
    let content = p.remove("content");
    p.retain(|k, _| {
        !matches!(k, "deprecated" | "style" | "explode" | "allowReserved" | "example" | "examples")
    });
    match (s, content) {
        (Some(s), _) => hoist(&mut p, s),
        (None, Some(_)) => p.insert("type", Node::string("string")),
        (None, None) => {}
    }
    Node::Object(p)
}

/// Puts the converted schema `s`'s keywords into `target` (a non-body
/// parameter or a header), where v2 keeps them. A reference cannot stand
/// there; a string is what a query or path value is.
fn hoist<'a>(target: &mut Object<'a>, mut s: Node<'a>) {
    // A parameter's own keywords, not a CRD schema's: kept as kube-apiserver
    // publishes them (`uniqueItems`, `type`, …).
    convert_schema(&mut s, false);
    let Node::Object(s) = s else { return };
    if s.contains_key("$ref") {
        target.insert("type", Node::string("string"));
        return;
    }
    for (k, v) in s {
        if k.as_str() == "description" && target.contains_key("description") {
            continue;
        }
        target.insert(k, v);
    }
}

fn security_scheme(s: Node<'_>) -> Node<'_> {
    let Node::Object(mut s) = s else { return s };
    // `http` with `bearer` has no v2 form; kube-apiserver publishes its
    // bearer token as this `apiKey` in both versions.
    if s.get("type").and_then(Node::as_str) == Some("http") {
        let mut out = Object::new();
        if let Some(d) = s.remove("description") {
            out.insert("description", d);
        }
        out.insert("type", Node::string("apiKey"));
        out.insert("name", Node::string("authorization"));
        out.insert("in", Node::string("header"));
        return Node::Object(out);
    }
    Node::Object(s)
}

/// Value validations, as apiextensions' structural schema names them:
/// kube-apiserver strips them from the CRD schemas it publishes in v2
/// (`StripValueValidation`), so that kubectl's client-side validation
/// does not refuse what the server would default or accept.
const VALUE_VALIDATIONS: [&str; 16] = [
    "format",
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
    "multipleOf",
    "enum",
    "maxProperties",
    "minProperties",
    "required",
];

/// The prefix of the definitions of Kubernetes' own Go types, whose value
/// validations kube-apiserver publishes in v2 as they are.
const KUBERNETES_OWN: &str = "io.k8s.";

/// Converts one inline schema of a body or a response in place (see the
/// module's documentation).
fn schema(node: &mut Node<'_>) {
    convert_schema(node, true);
}

fn convert_schema(node: &mut Node<'_>, strip_values: bool) {
    let Node::Object(s) = node else { return };
    // `allOf: [{$ref}]` → `$ref` beside the other keywords.
    let wrapped = match s.get("allOf").and_then(Node::as_array) {
        Some([only]) => {
            only.as_object().filter(|o| o.len() == 1).and_then(|o| o.get("$ref")).cloned()
        }
        _ => None,
    };
    if let Some(reference) = wrapped {
        s.remove("allOf");
        s.insert("$ref", reference);
    }
    if !s.contains_key("type") && !s.contains_key("x-kubernetes-int-or-string") {
        let alternatives = s.get("anyOf").or_else(|| s.get("oneOf")).and_then(Node::as_array);
        if alternatives.is_some_and(is_int_or_string) {
            s.insert("type", Node::string("string"));
            s.insert("format", Node::string("int-or-string"));
        }
    }
    if strip_values {
        let int_or_string = s.get("format").and_then(Node::as_str) == Some("int-or-string");
        for keyword in VALUE_VALIDATIONS {
            if !(keyword == "format" && int_or_string) {
                s.remove(keyword);
            }
        }
    }
    for junctor in ["allOf", "oneOf", "anyOf", "not"] {
        s.remove(junctor);
    }
    for v3_only in ["writeOnly", "deprecated"] {
        s.remove(v3_only);
    }
    if s.get("discriminator").is_some_and(Node::is_object) {
        s.remove("discriminator");
    }
    let nullable = matches!(s.remove("nullable"), Some(Node::Bool(true)));
    if nullable {
        s.remove("type");
        s.remove("items");
        s.remove("properties");
    }
    if matches!(s.get("x-kubernetes-preserve-unknown-fields"), Some(Node::Bool(true))) {
        s.remove("items");
        s.remove("properties");
        if s.get("type").and_then(Node::as_str) == Some("object") {
            s.remove("type");
        }
    }
    if !s.contains_key("items") && s.get("type").and_then(Node::as_str) == Some("array") {
        s.remove("type");
    }
    for (key, child) in s.iter_mut() {
        match key.as_str() {
            "properties" | "patternProperties" | "definitions" => {
                if let Node::Object(children) = child {
                    for (_, c) in children.iter_mut() {
                        convert_schema(c, strip_values);
                    }
                }
            }
            "items" | "additionalProperties" | "additionalItems" => match child {
                Node::Array(items) => {
                    items.iter_mut().for_each(|c| convert_schema(c, strip_values));
                }
                other => convert_schema(other, strip_values),
            },
            _ => {}
        }
    }
}

/// Whether `alternatives` are exactly an integer and a string, the v3
/// spelling of an IntOrString.
fn is_int_or_string(alternatives: &[Node<'_>]) -> bool {
    let mut types: Vec<&str> =
        alternatives.iter().filter_map(|a| a.get("type").and_then(Node::as_str)).collect();
    types.sort_unstable();
    alternatives.len() == 2 && types == ["integer", "string"]
}

#[cfg(test)]
mod tests;

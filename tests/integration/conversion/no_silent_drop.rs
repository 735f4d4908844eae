//! Issue 14: nothing of a Swagger 2.0 document is lost without a note.
//!
//! Small documents are generated with operations, parameters of every
//! location, shared parameters and responses, schemas, headers, examples,
//! vendor extensions, collection formats and a few members no version
//! defines. After conversion every node of the input that carries
//! information must be *carried* into the output or *reported* by a note.
//!
//! Carried means, for each kind of node:
//! - a vendor extension (`x-…`, outside `x-nullable`, which becomes
//!   `nullable`): some object of the output has the same member with the
//!   same value (for a value holding a `$ref`, which is rewritten, the same
//!   member name);
//! - a definition: a `components.schemas` entry of that name;
//! - a schema property: some `properties` object of the output has it;
//! - a parameter other than a body: some object of the output is named
//!   after it (`name`) or a form body has it as a property (a body
//!   parameter's name has no v3 place; docs/wire.md#a-5 says so);
//! - an operation id: an `operationId` of the same value;
//! - any other member of a parameter, header, response or schema (its
//!   description, example, default, limits, …): some object of the output
//!   has the same member with the same value (`x-nullable` as `nullable`),
//!   except the members the conversion restructures (`type`, `items`,
//!   `schema`, `properties`, …), which the rules above and the validator
//!   tests cover;
//! - a `collectionFormat` other than the default `csv`: some `style` of
//!   the output says it.
//!
//! Reported means a note at the node or at one of its ancestors, of a kind
//! that says something was dropped or changed there (a note that an
//! operation lacks `responses` excuses nothing below it).

use openapi_proxy::{Note, convert};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Note kinds that report a node as dropped or changed where it stands.
const REPORTING: &[&str] = &[
    "dropped-schema-keyword",
    "tuple-items",
    "type-list",
    "null-type",
    "tsv-collection",
    "unsupported-collection-format",
    "formdata-component",
    "unknown-parameter-location",
    "allow-empty-value-outside-query",
    "operation-schemes",
    "extra-body-parameter",
    "form-beside-body",
    "renamed-component",
    "dropped-field",
];

fn extension() -> impl Strategy<Value = (String, Value)> {
    let key = prop_oneof![Just("x-a"), Just("x-b"), Just("x-ms-c")].prop_map(str::to_owned);
    let value = prop_oneof![
        "[a-z]{0,4}".prop_map(Value::String),
        any::<i16>().prop_map(|n| json!(n)),
        any::<bool>().prop_map(Value::Bool),
        Just(json!({"k": [1, "two"]})),
        Just(json!({"$ref": "#/definitions/A"})),
        Just(json!([{"$ref": "#/parameters/shared"}])),
    ];
    (key, value)
}

fn extensions() -> impl Strategy<Value = Vec<(String, Value)>> {
    prop::collection::vec(extension(), 0..2)
}

fn insert_all(object: &mut Map<String, Value>, members: Vec<(String, Value)>) {
    for (k, v) in members {
        object.insert(k, v);
    }
}

/// A schema, up to `depth` levels of properties and items.
fn schema(depth: u32) -> BoxedStrategy<Value> {
    let leaf = (
        prop_oneof![
            Just(Some("string")),
            Just(Some("integer")),
            Just(Some("object")),
            Just(Some("null")),
            Just(Some("file")),
            Just(None),
        ],
        prop::option::of("[a-z ]{0,6}"),
        prop::option::of(any::<i8>()),
        prop::option::of(prop_oneof![Just("int32"), Just("int-or-string"), Just("uuid")]),
        prop::option::of(any::<bool>()),
        prop::option::of(prop_oneof![
            Just(("patternProperties", json!({"^x": {"type": "string"}}))),
            Just(("additionalItems", json!(false))),
            Just(("title", json!("T"))),
            Just(("readOnly", json!(true))),
            Just(("$ref", json!("#/definitions/A"))),
        ]),
        extensions(),
    )
        .prop_map(|(ty, description, example, format, nullable, other, ext)| {
            let mut s = Map::new();
            if let Some(t) = ty {
                s.insert("type".into(), json!(t));
            }
            if let Some(d) = description {
                s.insert("description".into(), json!(d));
            }
            if let Some(e) = example {
                s.insert("example".into(), json!(e));
            }
            if let Some(f) = format {
                s.insert("format".into(), json!(f));
            }
            if let Some(n) = nullable {
                s.insert("x-nullable".into(), json!(n));
            }
            if let Some((k, v)) = other {
                s.insert(k.into(), v);
            }
            insert_all(&mut s, ext);
            Value::Object(s)
        });
    if depth == 0 {
        return leaf.boxed();
    }
    (
        leaf,
        prop::collection::btree_map("[a-z]{1,6}", schema(depth - 1), 0..3),
        prop::option::of(schema(depth - 1)),
    )
        .prop_map(|(mut s, properties, items)| {
            if !properties.is_empty() {
                s["properties"] = Value::Object(properties.into_iter().collect());
            }
            if let Some(items) = items {
                s["items"] = items;
            }
            s
        })
        .boxed()
}

/// A parameter named `name` (names are unique in a document, so none
/// overrides another).
fn parameter(name: String) -> impl Strategy<Value = Value> {
    let location = prop_oneof![
        Just("query"),
        Just("header"),
        Just("path"),
        Just("formData"),
        Just("body"),
        Just("cookie"),
        Just("matrix"),
    ];
    let collection =
        prop_oneof![Just("csv"), Just("ssv"), Just("tsv"), Just("pipes"), Just("multi")];
    (
        location,
        prop_oneof![Just("string"), Just("integer"), Just("array"), Just("file")],
        prop::option::of(collection),
        prop::option::of("[a-z]{0,5}"),
        prop::option::of(any::<u8>()),
        prop::option::of(prop_oneof![
            Just(("title", json!("t"))),
            Just(("allowEmptyValue", json!(true))),
            Just(("maximum", json!(10))),
            Just(("enum", json!(["a", "b"]))),
            Just(("x-nullable", json!(true))),
        ]),
        any::<bool>(),
        extensions(),
        schema(1),
    )
        .prop_map(
            move |(location, ty, collection, description, example, other, required, ext, body)| {
                let mut p = Map::new();
                p.insert("name".into(), json!(name));
                p.insert("in".into(), json!(location));
                if location == "body" {
                    p.insert("schema".into(), body);
                } else {
                    p.insert("type".into(), json!(ty));
                    if ty == "array" {
                        p.insert("items".into(), json!({"type": "string"}));
                        if let Some(c) = collection {
                            p.insert("collectionFormat".into(), json!(c));
                        }
                    }
                    if let Some(e) = example {
                        p.insert("example".into(), json!(e));
                    }
                    if let Some((k, v)) = other {
                        p.insert(k.into(), v);
                    }
                }
                if let Some(d) = description {
                    p.insert("description".into(), json!(d));
                }
                if required || location == "path" {
                    p.insert("required".into(), json!(true));
                }
                insert_all(&mut p, ext);
                Value::Object(p)
            },
        )
}

fn response() -> impl Strategy<Value = Value> {
    (
        "[a-z]{0,5}",
        prop::option::of(schema(1)),
        prop::option::of(Just(json!({"application/json": {"ok": true}}))),
        prop::option::of((
            prop_oneof![Just("integer"), Just("string")],
            prop::option::of(any::<u8>()),
            extensions(),
        )),
        prop::option::of(Just(("title", json!("r")))),
        extensions(),
    )
        .prop_map(|(description, schema, examples, header, other, ext)| {
            let mut r = Map::new();
            r.insert("description".into(), json!(description));
            if let Some(s) = schema {
                r.insert("schema".into(), s);
            }
            if let Some(e) = examples {
                r.insert("examples".into(), e);
            }
            if let Some((ty, example, ext)) = header {
                let mut h = Map::new();
                h.insert("type".into(), json!(ty));
                if let Some(e) = example {
                    h.insert("example".into(), json!(e));
                }
                insert_all(&mut h, ext);
                r.insert("headers".into(), json!({"X-H": h}));
            }
            if let Some((k, v)) = other {
                r.insert(k.into(), v);
            }
            insert_all(&mut r, ext);
            Value::Object(r)
        })
}

/// An operation with parameters `names`, or a `$ref` to the shared
/// parameter or response.
fn operation(id: String, names: Vec<String>) -> impl Strategy<Value = Value> {
    let parameters: Vec<_> = names.into_iter().map(parameter).collect();
    (
        parameters,
        any::<bool>(),
        prop::collection::btree_map(
            prop_oneof![Just("200"), Just("404"), Just("default")],
            response(),
            0..3,
        ),
        any::<bool>(),
        prop::option::of(prop_oneof![
            Just(json!(["multipart/form-data"])),
            Just(json!(["application/json", "application/yaml"])),
        ]),
        prop::collection::vec(
            prop_oneof![
                Just(("summary", json!("s"))),
                Just(("tags", json!(["t"]))),
                Just(("deprecated", json!(true))),
                Just(("description", json!("d"))),
            ],
            0..3,
        ),
        extensions(),
    )
        .prop_map(
            move |(parameters, shared, responses, shared_response, consumes, more, ext)| {
                let mut op = Map::new();
                op.insert("operationId".into(), json!(id));
                let mut parameters = parameters;
                if shared {
                    parameters.push(json!({"$ref": "#/parameters/shared"}));
                }
                op.insert("parameters".into(), Value::Array(parameters));
                let mut responses: Map<String, Value> =
                    responses.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
                if shared_response {
                    responses.insert("500".into(), json!({"$ref": "#/responses/Shared"}));
                }
                op.insert("responses".into(), Value::Object(responses));
                if let Some(c) = consumes {
                    op.insert("consumes".into(), c);
                }
                insert_all(&mut op, more.into_iter().map(|(k, v)| (k.to_owned(), v)).collect());
                insert_all(&mut op, ext);
                Value::Object(op)
            },
        )
}

/// A Swagger 2.0 document: up to two paths of up to two operations each,
/// definitions (`A` always, since schemas refer to it; `B c` has a name v3
/// forbids), a shared parameter and response, tags, external docs and
/// extensions at the top.
fn document() -> impl Strategy<Value = Value> {
    let ops = (1usize..=2, 1usize..=2, 0usize..=2, 0usize..=2).prop_flat_map(|(a, b, pa, pb)| {
        let names = |prefix: &str, n: usize| -> Vec<String> {
            (0..n).map(|i| format!("{prefix}{i}")).collect()
        };
        let path_a: Vec<_> =
            (0..a).map(|i| operation(format!("opA{i}"), names(&format!("a{i}p"), pa))).collect();
        let path_b: Vec<_> =
            (0..b).map(|i| operation(format!("opB{i}"), names(&format!("b{i}p"), pb))).collect();
        (path_a, path_b, parameter("pathLevel".to_owned()))
    });
    (
        ops,
        schema(2),
        prop::collection::btree_map("[A-C]( c)?", schema(1), 0..3),
        parameter("shared".to_owned()),
        response(),
        extensions(),
    )
        .prop_map(|((path_a, path_b, path_level), a, more, shared, shared_response, ext)| {
            let methods = ["get", "post"];
            let mut item_a: Map<String, Value> =
                methods.iter().map(|m| m.to_string()).zip(path_a).collect();
            item_a.insert("parameters".into(), json!([path_level]));
            let item_b: Map<String, Value> =
                methods.iter().map(|m| m.to_string()).zip(path_b).collect();
            let mut definitions: Map<String, Value> = more.into_iter().collect();
            definitions.insert("A".into(), a);
            let mut doc = Map::new();
            doc.insert("swagger".into(), json!("2.0"));
            doc.insert("info".into(), json!({"title": "t", "version": "1"}));
            doc.insert("paths".into(), json!({"/a": item_a, "/b": item_b}));
            doc.insert("definitions".into(), Value::Object(definitions));
            doc.insert("parameters".into(), json!({"shared": shared}));
            doc.insert("responses".into(), json!({"Shared": shared_response}));
            doc.insert("tags".into(), json!([{"name": "t", "description": "the tag"}]));
            doc.insert("externalDocs".into(), json!({"url": "https://example.com/doc"}));
            insert_all(&mut doc, ext);
            Value::Object(doc)
        })
}

/// Every object member of the output, as (name, value).
fn members(v: &Value, out: &mut Vec<(String, Value)>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                out.push((k.clone(), v.clone()));
                members(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| members(v, out)),
        _ => {}
    }
}

fn has_ref(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.contains_key("$ref") || m.values().any(has_ref),
        Value::Array(items) => items.iter().any(has_ref),
        _ => false,
    }
}

fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// What the input holds, each with where it stands.
#[derive(Debug)]
enum Fact {
    /// A member that must reappear (same name and value; same name only
    /// when `loose`).
    Member { name: String, value: Value, loose: bool },
    /// A definition name, for `components.schemas`.
    Definition(String),
    /// A property name, for some `properties`.
    Property(String),
    /// A parameter's name, as a `name` or a form property.
    Parameter(String),
    /// A collection format, as a `style`.
    Style(&'static str),
}

struct Facts(Vec<(String, Fact)>);

impl Facts {
    fn push(&mut self, at: &str, fact: Fact) {
        self.0.push((at.to_owned(), fact));
    }

    /// The extensions and other members of `object` at `at`, except the
    /// `structural` ones.
    fn members_of(&mut self, object: &Map<String, Value>, at: &str, structural: &[&str]) {
        for (k, v) in object {
            if structural.contains(&k.as_str()) {
                continue;
            }
            let name = if k == "x-nullable" { "nullable".to_owned() } else { k.clone() };
            let fact = Fact::Member { name, value: v.clone(), loose: has_ref(v) };
            self.push(&format!("{at}/{}", escape(k)), fact);
        }
    }

    fn schema(&mut self, s: &Value, at: &str) {
        let Some(s) = s.as_object() else { return };
        self.members_of(s, at, &["type", "properties", "items", "$ref", "format"]);
        if let Some(props) = s.get("properties").and_then(Value::as_object) {
            for (name, p) in props {
                let at = format!("{at}/properties/{}", escape(name));
                self.push(&at, Fact::Property(name.clone()));
                self.schema(p, &at);
            }
        }
        if let Some(items) = s.get("items") {
            self.schema(items, &format!("{at}/items"));
        }
    }

    fn parameter(&mut self, p: &Value, at: &str) {
        let Some(p) = p.as_object() else { return };
        if p.contains_key("$ref") {
            return;
        }
        let body = p.get("in") == Some(&json!("body"));
        self.members_of(
            p,
            at,
            &["name", "in", "type", "items", "schema", "required", "collectionFormat"],
        );
        if !body && let Some(name) = p.get("name").and_then(Value::as_str) {
            self.push(at, Fact::Parameter(name.to_owned()));
        }
        let style = match p.get("collectionFormat").and_then(Value::as_str) {
            Some("ssv") => Some("spaceDelimited"),
            Some("pipes") => Some("pipeDelimited"),
            Some("multi") => Some("form"),
            _ => None,
        };
        if let Some(style) = style {
            self.push(&format!("{at}/collectionFormat"), Fact::Style(style));
        }
        if let Some(s) = p.get("schema") {
            self.schema(s, &format!("{at}/schema"));
        }
    }

    fn response(&mut self, r: &Value, at: &str) {
        let Some(r) = r.as_object() else { return };
        if r.contains_key("$ref") {
            return;
        }
        self.members_of(r, at, &["schema", "headers", "examples"]);
        if let Some(s) = r.get("schema") {
            self.schema(s, &format!("{at}/schema"));
        }
        for (name, h) in r.get("headers").and_then(Value::as_object).into_iter().flatten() {
            if let Some(h) = h.as_object() {
                self.members_of(h, &format!("{at}/headers/{}", escape(name)), &["type"]);
            }
        }
        for (media, example) in r.get("examples").and_then(Value::as_object).into_iter().flatten() {
            let fact =
                Fact::Member { name: "example".into(), value: example.clone(), loose: false };
            self.push(&format!("{at}/examples/{}", escape(media)), fact);
        }
    }

    fn document(doc: &Value) -> Self {
        let mut facts = Facts(Vec::new());
        let top = doc.as_object().expect("generated documents are objects");
        facts.members_of(
            top,
            "",
            &["swagger", "info", "paths", "definitions", "parameters", "responses"],
        );
        for (name, s) in top["definitions"].as_object().expect("definitions") {
            let at = format!("/definitions/{}", escape(name));
            facts.push(&at, Fact::Definition(name.clone()));
            facts.schema(s, &at);
        }
        for (name, p) in top["parameters"].as_object().expect("parameters") {
            facts.parameter(p, &format!("/parameters/{}", escape(name)));
        }
        for (name, r) in top["responses"].as_object().expect("responses") {
            facts.response(r, &format!("/responses/{}", escape(name)));
        }
        for (path, item) in top["paths"].as_object().expect("paths") {
            let at = format!("/paths/{}", escape(path));
            let item = item.as_object().expect("path items");
            for (key, value) in item {
                let at = format!("{at}/{key}");
                if key == "parameters" {
                    for (i, p) in value.as_array().expect("a list").iter().enumerate() {
                        // A path-level body that every operation overrides
                        // with its own applies nowhere (v2's rule).
                        if is_body(doc, p) && overridden_body(doc, item) {
                            continue;
                        }
                        facts.parameter(p, &format!("{at}/{i}"));
                    }
                    continue;
                }
                let op = value.as_object().expect("operations");
                facts.members_of(op, &at, &["parameters", "responses", "consumes"]);
                for (i, p) in op["parameters"].as_array().expect("a list").iter().enumerate() {
                    facts.parameter(p, &format!("{at}/parameters/{i}"));
                }
                for (code, r) in op["responses"].as_object().expect("responses") {
                    facts.response(r, &format!("{at}/responses/{code}"));
                }
            }
        }
        facts
    }
}

/// True when parameter `p` is a body, inline or by reference.
fn is_body(doc: &Value, p: &Value) -> bool {
    let p = match p.get("$ref").and_then(Value::as_str) {
        Some(r) => r.strip_prefix('#').and_then(|r| doc.pointer(r)).unwrap_or(&Value::Null),
        None => p,
    };
    p.get("in") == Some(&json!("body"))
}

/// True when every operation of path item `item` has a body of its own.
fn overridden_body(doc: &Value, item: &Map<String, Value>) -> bool {
    item.iter().filter(|(k, _)| *k != "parameters").all(|(_, op)| {
        op["parameters"].as_array().is_some_and(|ps| ps.iter().any(|p| is_body(doc, p)))
    })
}

/// True when a note of a reporting kind stands at `at` or above it.
fn reported(notes: &[Note], at: &str) -> bool {
    notes.iter().any(|n| {
        let note_at = n.at.to_string();
        REPORTING.contains(&n.kind.label())
            && (at == note_at || at.starts_with(&format!("{note_at}/")))
    })
}

fn carried(fact: &Fact, output: &Value, all: &[(String, Value)]) -> bool {
    match fact {
        Fact::Member { name, value, loose } => {
            all.iter().any(|(k, v)| k == name && (*loose || v == value))
        }
        Fact::Definition(name) => output["components"]["schemas"].get(name).is_some(),
        Fact::Property(name) => all.iter().any(|(k, v)| k == "properties" && v.get(name).is_some()),
        Fact::Parameter(name) => all.iter().any(|(k, v)| {
            (k == "name" && v == name) || (k == "properties" && v.get(name).is_some())
        }),
        Fact::Style(style) => all.iter().any(|(k, v)| k == "style" && v == style),
    }
}

fn check(input: &Value) -> Result<(), TestCaseError> {
    let converted = convert(input).map_err(|e| TestCaseError::fail(format!("refused: {e}")))?;
    let mut all = Vec::new();
    members(&converted.document, &mut all);
    let facts = Facts::document(input);
    prop_assert!(!facts.0.is_empty());
    for (at, fact) in &facts.0 {
        prop_assert!(
            carried(fact, &converted.document, &all) || reported(&converted.notes, at),
            "{at}: {fact:?} is neither in the output nor noted\nnotes: {:#?}\noutput: {}",
            converted.notes.iter().map(ToString::to_string).collect::<Vec<_>>(),
            serde_json::to_string(&converted.document).unwrap_or_default()
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn every_node_of_a_generated_document_is_carried_or_noted(doc in document()) {
        check(&doc)?;
    }
}

// The check is not vacuous: an output that lost a member, and one that
// lost a parameter, fail it unless a note reports the loss.
#[test]
fn a_node_missing_from_the_output_without_a_note_fails_the_check() {
    let input = json!({"swagger": "2.0", "info": {"title": "t", "version": "1"},
        "paths": {"/a": {"get": {"operationId": "o",
            "parameters": [{"name": "q", "in": "query", "type": "string", "example": "e"}],
            "responses": {"200": {"description": "OK", "x-a": 1}}}}},
        "definitions": {"A": {"type": "object", "properties": {"p": {"type": "string"}}}},
        "parameters": {}, "responses": {}});
    let converted = convert(&input).expect("converts");
    let facts = Facts::document(&input);
    let mut all = Vec::new();
    members(&converted.document, &mut all);
    assert!(facts.0.iter().all(|(_, f)| carried(f, &converted.document, &all)));
    for lost in [
        "/paths/~1a/get/parameters/0/example",
        "/paths/~1a/get/parameters/0/name",
        "/paths/~1a/get/responses/200/x-a",
        "/components/schemas/A/properties",
    ] {
        let mut output = converted.document.clone();
        let (parent, key) = lost.rsplit_once('/').expect("a pointer");
        output.pointer_mut(parent).and_then(Value::as_object_mut).expect("parent").remove(key);
        let mut all = Vec::new();
        members(&output, &mut all);
        assert!(
            facts.0.iter().any(|(_, f)| !carried(f, &output, &all)),
            "removing {lost} went unseen"
        );
    }
    assert!(!reported(&converted.notes, "/paths/~1a/get/parameters/0/example"));
    // A dropped-field note reports its member and what is below it, no
    // sibling.
    let noted = convert(&json!({"swagger": "2.0", "paths": {"/a": {"get": {
        "parameters": [{"name": "q", "in": "query", "type": "string", "title": "t"}],
        "responses": {}}}}}))
    .expect("converts");
    let labels: Vec<&str> = noted.notes.iter().map(|n| n.kind.label()).collect();
    assert_eq!(labels, ["dropped-field"]);
    assert!(reported(&noted.notes, "/paths/~1a/get/parameters/0/title"));
    assert!(reported(&noted.notes, "/paths/~1a/get/parameters/0/title/x"));
    assert!(!reported(&noted.notes, "/paths/~1a/get/parameters/0/titles"));
    // A note of a kind that reports no loss excuses nothing below it.
    assert!(!reported(&noted.notes, "/paths/~1a/get/parameters/0/name"));
}

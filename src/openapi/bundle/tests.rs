//! Bundling on documents and files held in memory.

use serde_json::{Value, json};

use super::*;

/// Files in memory, named by paths relative to the document (which is
/// `main.yaml`): `dir/a.yaml` refers to `b.yaml` as `dir/b.yaml`.
struct Memory {
    files: BTreeMap<String, Rc<Value>>,
    loads: usize,
}

impl Memory {
    fn new(files: &[(&str, Value)]) -> Self {
        let files = files.iter().map(|(k, v)| ((*k).to_owned(), Rc::new(v.clone()))).collect();
        Self { files, loads: 0 }
    }
}

impl Files for Memory {
    fn load(&mut self, from: Option<&str>, path: &str) -> Result<(Rc<str>, Rc<Value>), String> {
        self.loads += 1;
        let dir = from.and_then(|f| f.rsplit_once('/')).map_or("", |(dir, _)| dir);
        let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
        for part in path.split('/') {
            match part {
                "." | "" => {}
                ".." => {
                    parts.pop();
                }
                p => parts.push(p),
            }
        }
        let id = parts.join("/");
        let content = self.files.get(&id).cloned().ok_or_else(|| format!("no file {id}"))?;
        Ok((Rc::from(id), content))
    }

    fn root(&self) -> Option<Rc<str>> {
        Some(Rc::from("main.yaml"))
    }
}

fn bundled(doc: Value, files: &[(&str, Value)]) -> Bundled {
    bundle(doc, &mut Memory::new(files), usize::MAX).unwrap_or_else(|e| panic!("{e}"))
}

fn notes(b: &Bundled) -> Vec<String> {
    b.notes.iter().map(ToString::to_string).collect()
}

#[test]
fn a_response_in_another_file_is_copied_with_what_it_refers_to() {
    let doc = json!({"swagger": "2.0", "paths": {"/": {"get": {"responses": {
        "400": {"$ref": "./responses.yaml#/responses/BadRequest"}}}}}});
    let responses = json!({"responses": {"BadRequest": {
        "description": "bad", "schema": {"$ref": "#/definitions/Error"}}},
        "definitions": {"Error": {"type": "object"}}});
    let b = bundled(doc, &[("responses.yaml", responses)]);
    assert_eq!(
        b.document,
        json!({"swagger": "2.0",
            "paths": {"/": {"get": {"responses": {"400": {"$ref": "#/responses/BadRequest"}}}}},
            "definitions": {"Error": {"type": "object"}},
            "responses": {"BadRequest": {
                "description": "bad", "schema": {"$ref": "#/definitions/Error"}}}})
    );
    assert_eq!(b.files, 1);
    assert_eq!(
        notes(&b),
        [
            "/paths/~1/get/responses/400: reference \"./responses.yaml#/responses/BadRequest\" \
             read from its file and copied to \"#/responses/BadRequest\"",
            "/responses/BadRequest/schema: reference \"#/definitions/Error\" read from its file \
             and copied to \"#/definitions/Error\"",
        ]
    );
}

#[test]
fn the_section_follows_where_the_reference_stands() {
    // go-openapi's 1774 fixture: parameters at the top of their file, and
    // schemas that are whole files.
    let doc = json!({"swagger": "2.0", "paths": {"/users": {"get": {
        "parameters": [{"$ref": "./parameters.yaml#/filter"}],
        "responses": {"200": {"description": "ok", "schema": {"$ref": "./User.yaml"}}}}}}});
    let b = bundled(
        doc,
        &[
            (
                "parameters.yaml",
                json!({"filter": {"name": "filter", "in": "query", "type": "string"}}),
            ),
            (
                "User.yaml",
                json!({"type": "object", "properties": {"roles": {"$ref": "./Roles.yaml"}}}),
            ),
            ("Roles.yaml", json!({"type": "array", "items": {"type": "string"}})),
        ],
    );
    let op = &b.document["paths"]["/users"]["get"];
    assert_eq!(op["parameters"][0], json!({"$ref": "#/parameters/filter"}));
    assert_eq!(op["responses"]["200"]["schema"], json!({"$ref": "#/definitions/User"}));
    assert_eq!(b.document["parameters"]["filter"]["in"], "query");
    assert_eq!(
        b.document["definitions"]["User"]["properties"]["roles"],
        json!({"$ref": "#/definitions/Roles"})
    );
    assert_eq!(b.document["definitions"]["Roles"]["type"], "array");
    assert_eq!(b.files, 3);
}

#[test]
fn a_path_item_in_another_file_is_copied_in_place() {
    let doc = json!({"swagger": "2.0", "paths": {"/some/remote": {
        "$ref": "other.yaml#/pathItems/patchMethod", "x-kept": true}}});
    let other = json!({"pathItems": {"patchMethod": {"patch": {
        "parameters": [{"$ref": "#/parameters/p"}],
        "responses": {"200": {"description": "ok"}}}}},
        "parameters": {"p": {"name": "p", "in": "query", "type": "integer"}}});
    let b = bundled(doc, &[("other.yaml", other)]);
    assert_eq!(
        b.document["paths"]["/some/remote"],
        json!({"patch": {"parameters": [{"$ref": "#/parameters/p"}],
                "responses": {"200": {"description": "ok"}}},
               "x-kept": true})
    );
    assert_eq!(b.document["parameters"]["p"]["type"], "integer");
    assert_eq!(
        notes(&b)[0],
        "/paths/~1some~1remote: path item \"other.yaml#/pathItems/patchMethod\" read from its \
         file and copied here"
    );
}

#[test]
fn names_never_collide_and_each_target_is_copied_once() {
    let doc = json!({"swagger": "2.0",
        "definitions": {"Error": {"type": "string"},
            "A": {"properties": {
                "e": {"$ref": "common.json#/definitions/Error"},
                "f": {"$ref": "./common.json#/definitions/Error"},
                "g": {"$ref": "sub/../common.json#/definitions/Error"},
                "h": {"$ref": "common.json#/definitions/Self"}}}}});
    let common = json!({"definitions": {
        "Error": {"type": "object"},
        "Self": {"properties": {"next": {"$ref": "#/definitions/Self"}}}}});
    let b = bundled(doc, &[("common.json", common)]);
    let props = &b.document["definitions"]["A"]["properties"];
    for p in ["e", "f", "g"] {
        assert_eq!(props[p], json!({"$ref": "#/definitions/Error_2"}), "{p}");
    }
    assert_eq!(b.document["definitions"]["Error"], json!({"type": "string"}));
    assert_eq!(b.document["definitions"]["Error_2"], json!({"type": "object"}));
    // A schema of another file that refers to itself.
    assert_eq!(
        b.document["definitions"]["Self"],
        json!({"properties": {"next": {"$ref": "#/definitions/Self"}}})
    );
    assert_eq!(b.notes.len(), 2, "{:?}", notes(&b));
}

#[test]
fn a_reference_back_into_the_document_becomes_local() {
    let doc = json!({"swagger": "2.0",
        "definitions": {"A": {"$ref": "common.json#/definitions/B"}, "Own": {"type": "string"}}});
    let common = json!({"definitions": {"B": {"properties": {
        "own": {"$ref": "main.yaml#/definitions/Own"}}}}});
    let b = bundled(doc.clone(), &[("common.json", common), ("main.yaml", doc)]);
    assert_eq!(
        b.document["definitions"]["B"]["properties"]["own"],
        json!({"$ref": "#/definitions/Own"})
    );
}

#[test]
fn what_cannot_be_followed_is_kept_with_a_note_saying_why() {
    let doc = json!({"swagger": "2.0", "definitions": {
        "Url": {"$ref": "https://example.com/schemas.json#/definitions/X"},
        "Missing": {"$ref": "missing.yaml#/definitions/X"},
        "Again": {"$ref": "missing.yaml#/definitions/X"},
        "Nothing": {"$ref": "common.json#/definitions/Nope"},
        "Local": {"$ref": "#/definitions/Url"}}});
    let before = doc.clone();
    let b = bundled(doc, &[("common.json", json!({"definitions": {}}))]);
    assert_eq!(b.document, before);
    assert_eq!(
        notes(&b),
        [
            "/definitions/Url: reference \"https://example.com/schemas.json#/definitions/X\" not \
             followed (a URL; only files are read); kept as written",
            "/definitions/Missing: reference \"missing.yaml#/definitions/X\" not followed (no \
             file missing.yaml); kept as written",
            "/definitions/Nothing: reference \"common.json#/definitions/Nope\" not followed \
             (\"/definitions/Nope\" points to nothing in that file); kept as written",
        ]
    );
}

#[test]
fn copies_past_the_limit_are_refused() {
    // One path item of a thousand values copied under a thousand paths.
    let big: Vec<Value> = (0..1000).map(|i| json!(i)).collect();
    let item = json!({"get": {"responses": {"200": {"description": "ok"}}, "x-big": big}});
    let paths: Map<String, Value> =
        (0..1000).map(|i| (format!("/p{i}"), json!({"$ref": "item.json"}))).collect();
    let doc = json!({"swagger": "2.0", "paths": paths});
    let e = bundle(doc, &mut Memory::new(&[("item.json", item)]), 100_000).unwrap_err();
    assert_eq!(e, BundleError::TooLarge { limit: 100_000 });
}

#[test]
fn path_items_that_refer_to_each_other_stop_at_a_depth() {
    let doc = json!({"swagger": "2.0", "paths": {"/loop": {"$ref": "a.json"}}});
    let a = json!({"$ref": "b.json"});
    let b_file = json!({"$ref": "a.json"});
    let mut files = Memory::new(&[("a.json", a), ("b.json", b_file)]);
    let b = bundle(doc, &mut files, usize::MAX).expect("bundled");
    assert!(files.loads <= MAX_PATH_ITEM_DEPTH + 1, "{}", files.loads);
    assert!(
        notes(&b).last().is_some_and(|n| n.contains("path items nest more than 16 deep")),
        "{:?}",
        notes(&b)
    );
}

#[test]
fn only_references_to_files_make_a_document_need_bundling() {
    let read = |v: Value| refers_to_files(&crate::json::tree::Node::from_owned_value(v));
    assert!(!read(json!({"definitions": {"A": {"$ref": "#/definitions/B"}}})));
    assert!(!read(json!({"a": [{"$ref": "https://example.com/x.json"}, {"$ref": "urn:x"}]})));
    assert!(read(json!({"a": [{"$ref": "x.json"}]})));
    assert!(read(json!({"a": {"b": {"$ref": "../x.yaml#/definitions/A"}}})));
    // A property named `$ref` is a schema, not a reference.
    assert!(!read(json!({"properties": {"$ref": {"type": "string"}}})));
}

#[test]
fn a_long_chain_of_references_in_another_file_is_followed_without_deep_recursion() {
    // Each definition refers to the next, 20,000 of them: followed by
    // recursion, that is well past a test thread's 2 MiB of stack.
    let n = 20_000;
    let defs: Map<String, Value> = (0..n)
        .map(|i| {
            (
                format!("d{i}"),
                json!({"properties": {"next": {"$ref": format!("#/definitions/d{}", i + 1)}}}),
            )
        })
        .chain([(format!("d{n}"), json!({"type": "string"}))])
        .collect();
    let doc =
        json!({"swagger": "2.0", "definitions": {"A": {"$ref": "chain.json#/definitions/d0"}}});
    let b = bundled(doc, &[("chain.json", json!({"definitions": defs}))]);
    let definitions = b.document["definitions"].as_object().expect("definitions");
    assert_eq!(definitions.len(), n + 2);
    assert_eq!(
        definitions["d19999"]["properties"]["next"],
        json!({"$ref": "#/definitions/d20000"})
    );
}

#[test]
fn a_path_item_that_is_not_an_object_is_kept() {
    let doc = json!({"swagger": "2.0", "paths": {"/a": {"$ref": "items.json#/list"}}});
    let b = bundled(doc.clone(), &[("items.json", json!({"list": [1, 2]}))]);
    assert_eq!(b.document, doc);
    assert_eq!(
        notes(&b),
        ["/paths/~1a: reference \"items.json#/list\" not followed (a path item must be an \
          object); kept as written"]
    );
}

/// Found by the `bundle` fuzz target: a document whose `definitions` is
/// not an object cannot take a copy, so the reference is kept with a note
/// rather than made local to nothing.
#[test]
fn a_section_that_is_not_an_object_takes_no_copy() {
    let doc = json!({"swagger": "2.0", "xaths": {"definition/l": {"$ref": "f0.json"}},
        "definitions": ".json"});
    let b = bundled(doc, &[("f0.json", json!({"type": "string"}))]);
    assert_eq!(b.document["xaths"]["definition/l"]["$ref"], "f0.json");
    assert_eq!(b.document["definitions"], ".json");
    assert!(
        notes(&b).iter().any(|n| n.contains("definitions is not an object")),
        "{:?}",
        notes(&b)
    );
    let dangling = crate::json::refs::dangling_refs(&b.document);
    assert!(dangling.iter().all(|r| !r.starts_with('#')), "{dangling:?}");
}

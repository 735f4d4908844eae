//! One small test per conversion rule, on documents built inline.

use serde_json::{Value, json};

use super::*;

/// A Swagger 2.0 document around `paths` and `definitions`.
fn doc(paths: Value, definitions: Value) -> Value {
    json!({"swagger": "2.0", "info": {"title": "t", "version": "1"}, "paths": paths, "definitions": definitions})
}

fn convert_ok(v2: &Value) -> Converted {
    convert(v2).unwrap_or_else(|e| panic!("conversion failed: {e}"))
}

/// Converts a document with one definition `X` and returns it converted.
fn schema_of(x: Value, more: Value) -> (Value, Vec<Note>) {
    let mut defs = more;
    defs["X"] = x;
    let c = convert_ok(&doc(json!({}), defs));
    (c.document["components"]["schemas"]["X"].clone(), c.notes)
}

/// Converts one operation (`post /apis/g/v1/things`) and returns it.
fn operation_of(op: Value) -> (Value, Vec<Note>) {
    let v2 = doc(json!({"/apis/g/v1/things": {"post": op}}), json!({"T": {"type": "object"}}));
    let c = convert_ok(&v2);
    (c.document["paths"]["/apis/g/v1/things"]["post"].clone(), c.notes)
}

fn kinds(notes: &[Note]) -> Vec<&'static str> {
    notes.iter().map(|n| n.kind.label()).collect()
}

#[test]
fn rejects_what_is_not_swagger_2() {
    assert_eq!(convert(&json!([1])), Err(ConvertError::NotAnObject));
    let e = convert(&json!({"openapi": "3.0.0", "paths": {}})).unwrap_err();
    assert_eq!(e, ConvertError::NotSwagger2 { found: Some("openapi 3.0.0".into()) });
    assert!(e.to_string().contains("openapi 3.0.0"), "{e}");
    let e = convert(&json!({"swagger": "1.2"})).unwrap_err();
    assert_eq!(e, ConvertError::NotSwagger2 { found: Some("1.2".into()) });
    assert_eq!(convert(&json!({})), Err(ConvertError::NotSwagger2 { found: None }));
}

#[test]
fn dangling_ref_is_an_error_naming_where_it_stands() {
    let v2 = doc(json!({}), json!({"A": {"properties": {"b": {"$ref": "#/definitions/Nope"}}}}));
    let e = convert(&v2).unwrap_err();
    assert_eq!(
        e,
        ConvertError::UnresolvedRef {
            reference: "#/definitions/Nope".into(),
            at: JsonPointer::root().push("definitions").push("A").push("properties").push("b"),
        }
    );
    assert_eq!(
        e.to_string(),
        "reference #/definitions/Nope at /definitions/A/properties/b points to nothing"
    );
}

#[test]
fn wrong_json_type_is_an_error_with_a_pointer() {
    let e = convert(&json!({"swagger": "2.0", "paths": {"/a": {"get": {"parameters": {}}}}}))
        .unwrap_err();
    assert_eq!(e.to_string(), "/paths/~1a/get/parameters must be a list of parameters");
}

#[test]
fn document_members_keep_input_order_and_components_always_exist() {
    let v2 = json!({"swagger": "2.0", "info": {"title": "t", "version": "1"}, "x-top": 1,
                    "tags": [{"name": "a"}], "security": [{"k": []}], "paths": {}});
    let c = convert_ok(&v2);
    let keys: Vec<&str> = c.document.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["openapi", "info", "x-top", "tags", "security", "paths", "components"]);
    assert_eq!(c.document["openapi"], "3.0.0");
    assert_eq!(c.document["components"], json!({}));
}

#[test]
fn no_servers_without_host_or_base_path() {
    let c = convert_ok(&json!({"swagger": "2.0", "schemes": ["https"], "paths": {}}));
    assert!(c.document.get("servers").is_none());
    let c = convert_ok(&json!({"swagger": "2.0", "basePath": "/", "paths": {}}));
    assert!(c.document.get("servers").is_none());
}

#[test]
fn host_base_path_and_schemes_become_servers() {
    let c = convert_ok(
        &json!({"swagger": "2.0", "host": "api.example.com", "basePath": "/v2", "schemes": ["https", "http"]}),
    );
    assert_eq!(
        c.document["servers"],
        json!([{"url": "https://api.example.com/v2"}, {"url": "http://api.example.com/v2"}])
    );
    let c = convert_ok(&json!({"swagger": "2.0", "host": "h:8080"}));
    assert_eq!(c.document["servers"], json!([{"url": "//h:8080"}]));
    let c = convert_ok(&json!({"swagger": "2.0", "basePath": "/base"}));
    assert_eq!(c.document["servers"], json!([{"url": "/base"}]));
}

#[test]
fn definitions_become_component_schemas_with_refs_rewritten() {
    let (x, _) =
        schema_of(json!({"properties": {"b": {"$ref": "#/definitions/B"}}}), json!({"B": {}}));
    assert_eq!(x, json!({"properties": {"b": {"$ref": "#/components/schemas/B"}}}));
}

#[test]
fn ref_with_siblings_is_wrapped_in_all_of() {
    let (x, _) = schema_of(
        json!({"properties": {"m": {"description": "d", "default": {}, "$ref": "#/definitions/B"}}}),
        json!({"B": {}}),
    );
    assert_eq!(
        x["properties"]["m"],
        json!({"description": "d", "default": {}, "allOf": [{"$ref": "#/components/schemas/B"}]})
    );
}

#[test]
fn wrapping_keeps_an_existing_all_of_after_the_ref() {
    let (x, _) = schema_of(
        json!({"$ref": "#/definitions/B", "allOf": [{"$ref": "#/definitions/C"}], "description": "d"}),
        json!({"B": {}, "C": {}}),
    );
    assert_eq!(
        x,
        json!({"allOf": [{"$ref": "#/components/schemas/B"}, {"$ref": "#/components/schemas/C"}], "description": "d"})
    );
}

#[test]
fn bare_ref_is_not_wrapped() {
    let (x, _) =
        schema_of(json!({"items": {"$ref": "#/definitions/B"}, "type": "array"}), json!({"B": {}}));
    assert_eq!(x, json!({"items": {"$ref": "#/components/schemas/B"}, "type": "array"}));
}

#[test]
fn int_or_string_format_becomes_any_of_keeping_format() {
    let (x, _) = schema_of(
        json!({"description": "d", "type": "string", "format": "int-or-string"}),
        json!({}),
    );
    assert_eq!(
        x,
        json!({"description": "d", "anyOf": [{"type": "integer"}, {"type": "string"}],
               "format": "int-or-string", "x-kubernetes-int-or-string": true})
    );
}

#[test]
fn int_or_string_extension_becomes_any_of() {
    let (x, _) = schema_of(json!({"x-kubernetes-int-or-string": true}), json!({}));
    assert_eq!(
        x,
        json!({"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]})
    );
}

#[test]
fn int_or_string_with_explicit_any_of_is_left_alone() {
    let s = json!({"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string", "pattern": "^a"}]});
    let (x, _) = schema_of(s.clone(), json!({}));
    assert_eq!(x, s);
}

#[test]
fn quantity_definition_becomes_string_or_number() {
    let v2 = doc(json!({}), json!({schema::QUANTITY: {"description": "q", "type": "string"}}));
    let c = convert_ok(&v2);
    assert_eq!(
        c.document["components"]["schemas"][schema::QUANTITY],
        json!({"description": "q", "anyOf": [{"type": "string"}, {"type": "number"}]})
    );
}

#[test]
fn x_nullable_becomes_nullable() {
    let (x, _) = schema_of(json!({"type": "string", "x-nullable": true}), json!({}));
    assert_eq!(x, json!({"type": "string", "nullable": true}));
}

#[test]
fn discriminator_string_becomes_an_object() {
    let (x, _) = schema_of(
        json!({"discriminator": "kind", "properties": {"kind": {"type": "string"}}}),
        json!({}),
    );
    assert_eq!(x["discriminator"], json!({"propertyName": "kind"}));
}

#[test]
fn file_schema_becomes_binary_string() {
    let (x, _) = schema_of(json!({"type": "file"}), json!({}));
    assert_eq!(x, json!({"type": "string", "format": "binary"}));
}

#[test]
fn conversion_reaches_into_composition_keywords() {
    let (x, _) = schema_of(
        json!({"allOf": [{"$ref": "#/definitions/B"}], "anyOf": [{"x-nullable": true}],
               "oneOf": [{"type": "file"}], "not": {"$ref": "#/definitions/B"},
               "additionalProperties": {"$ref": "#/definitions/B"}}),
        json!({"B": {}}),
    );
    assert_eq!(
        x,
        json!({"allOf": [{"$ref": "#/components/schemas/B"}], "anyOf": [{"nullable": true}],
               "oneOf": [{"type": "string", "format": "binary"}], "not": {"$ref": "#/components/schemas/B"},
               "additionalProperties": {"$ref": "#/components/schemas/B"}})
    );
}

#[test]
fn keywords_v3_forbids_are_dropped_with_a_note() {
    let (x, notes) = schema_of(
        json!({"type": "object", "patternProperties": {"^a": {}}, "x-keep": 1}),
        json!({}),
    );
    assert_eq!(x, json!({"type": "object", "x-keep": 1}));
    assert_eq!(notes.len(), 1);
    assert_eq!(
        notes[0].kind,
        NoteKind::DroppedSchemaKeyword { keyword: "patternProperties".into() }
    );
    assert_eq!(notes[0].at.as_str(), "/definitions/X/patternProperties");
}

#[test]
fn tuple_items_become_any_of_with_a_note() {
    let (x, notes) = schema_of(
        json!({"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}),
        json!({}),
    );
    assert_eq!(x["items"], json!({"anyOf": [{"type": "string"}, {"type": "integer"}]}));
    assert_eq!(kinds(&notes), ["tuple-items"]);
}

#[test]
fn type_list_with_null_becomes_nullable() {
    let (x, notes) = schema_of(json!({"type": ["string", "null"]}), json!({}));
    assert_eq!(x, json!({"nullable": true, "type": "string"}));
    assert_eq!(kinds(&notes), ["type-list"]);
}

#[test]
fn body_parameter_is_found_by_location_not_name() {
    let (op, _) = operation_of(json!({
        "consumes": ["application/json", "application/yaml"],
        "parameters": [{"name": "payload", "in": "body", "required": true, "description": "d",
                        "schema": {"$ref": "#/definitions/T"}}],
        "responses": {"200": {"description": "OK"}}
    }));
    let schema = json!({"$ref": "#/components/schemas/T"});
    assert_eq!(
        op["requestBody"],
        json!({"description": "d", "content": {"application/json": {"schema": schema},
               "application/yaml": {"schema": schema}}, "required": true})
    );
    assert!(op.get("parameters").is_none());
}

#[test]
fn body_media_types_come_from_the_document_then_default_to_any() {
    let mut v2 = doc(
        json!({"/a": {"post": {"parameters": [{"name": "b", "in": "body", "schema": {}}],
                                "responses": {"200": {"description": "OK"}}}}}),
        json!({}),
    );
    let c = convert_ok(&v2);
    assert_eq!(
        c.document["paths"]["/a"]["post"]["requestBody"]["content"],
        json!({"*/*": {"schema": {}}})
    );
    v2["consumes"] = json!(["application/yaml"]);
    let c = convert_ok(&v2);
    assert_eq!(
        c.document["paths"]["/a"]["post"]["requestBody"]["content"],
        json!({"application/yaml": {"schema": {}}})
    );
}

#[test]
fn response_content_follows_operation_produces_else_document_produces() {
    let mut v2 = doc(
        json!({"/a": {"get": {"responses": {"200": {"description": "OK", "schema": {"type": "string"}}}},
                      "put": {"produces": ["text/plain"],
                              "responses": {"200": {"description": "OK", "schema": {"type": "string"}}}}}}),
        json!({}),
    );
    v2["produces"] = json!(["application/json", "application/yaml"]);
    let c = convert_ok(&v2);
    let a = &c.document["paths"]["/a"];
    let s = json!({"schema": {"type": "string"}});
    assert_eq!(
        a["get"]["responses"]["200"]["content"],
        json!({"application/json": s, "application/yaml": s})
    );
    assert_eq!(a["put"]["responses"]["200"]["content"], json!({"text/plain": s}));
}

#[test]
fn a_media_type_declared_twice_is_written_once_where_it_first_stands() {
    let keys = |v: &Value| v.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>());
    // Short lists are searched, longer ones go through a set: both.
    for filler in [0, 20] {
        let mut types = vec!["application/json", "application/yaml", "application/json"];
        let extra: Vec<String> = (0..filler).map(|i| format!("application/x-{i}")).collect();
        types.extend(extra.iter().map(String::as_str));
        types.push("application/yaml");
        let (op, _) = operation_of(json!({
            "produces": types,
            "consumes": types,
            "parameters": [{"name": "b", "in": "body", "schema": {"type": "object"}}],
            "responses": {"200": {"description": "OK", "schema": {"type": "string"},
                                  "examples": {"application/yaml": "a: 1", "text/plain": "t"}}}
        }));
        let mut expected = vec!["application/json".to_owned(), "application/yaml".to_owned()];
        expected.extend(extra.iter().cloned());
        let response = &op["responses"]["200"]["content"];
        let mut with_example = expected.clone();
        with_example.push("text/plain".to_owned());
        assert_eq!(keys(response), Some(with_example), "{filler}");
        assert_eq!(
            response["application/yaml"],
            json!({"schema": {"type": "string"}, "example": "a: 1"})
        );
        assert_eq!(response["text/plain"], json!({"schema": {"type": "string"}, "example": "t"}));
        assert_eq!(keys(&op["requestBody"]["content"]), Some(expected), "{filler}");
    }
}

#[test]
fn a_form_media_type_declared_twice_is_written_once_where_it_first_stands() {
    let keys = |v: &Value| v.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>());
    for filler in [0, 20] {
        let extra: Vec<String> =
            (0..filler).map(|i| format!("multipart/form-data; x={i}")).collect();
        let mut types =
            vec!["multipart/form-data", "application/x-www-form-urlencoded", "multipart/form-data"];
        types.extend(extra.iter().map(String::as_str));
        types.push("application/x-www-form-urlencoded");
        let (op, _) = operation_of(json!({
            "consumes": types,
            "parameters": [{"name": "f", "in": "formData", "type": "string"}],
            "responses": {"200": {"description": "OK"}}
        }));
        let mut expected =
            vec!["multipart/form-data".to_owned(), "application/x-www-form-urlencoded".to_owned()];
        expected.extend(extra.iter().cloned());
        assert_eq!(keys(&op["requestBody"]["content"]), Some(expected), "{filler}");
    }
}

#[test]
fn response_headers_examples_and_default_are_converted() {
    let (op, _) = operation_of(json!({
        "produces": ["application/json"],
        "responses": {
            "default": {"description": "err", "headers": {"X-Rate": {"type": "integer", "format": "int32", "description": "r"}},
                        "schema": {"$ref": "#/definitions/T"}, "examples": {"application/json": {"a": 1}, "text/plain": "a"},
                        "x-r": true}
        }
    }));
    assert_eq!(
        op["responses"]["default"],
        json!({"description": "err",
               "headers": {"X-Rate": {"description": "r", "schema": {"type": "integer", "format": "int32"}}},
               "content": {"application/json": {"schema": {"$ref": "#/components/schemas/T"}, "example": {"a": 1}},
                           "text/plain": {"schema": {"$ref": "#/components/schemas/T"}, "example": "a"}},
               "x-r": true})
    );
}

#[test]
fn simple_parameters_keep_their_validation_in_schema() {
    let (op, _) = operation_of(json!({
        "parameters": [{"name": "n", "in": "query", "type": "array", "collectionFormat": "multi",
                        "items": {"type": "string", "enum": ["a", "b"]}, "maxItems": 3, "default": ["a"],
                        "x-p": 1},
                       {"name": "l", "in": "header", "type": "integer", "minimum": 1, "maximum": 9,
                        "exclusiveMaximum": true, "required": true}],
        "responses": {"200": {"description": "OK"}}
    }));
    assert_eq!(
        op["parameters"],
        json!([{"name": "n", "in": "query", "x-p": 1, "style": "form", "explode": true,
                "schema": {"type": "array", "default": ["a"], "maxItems": 3,
                           "items": {"type": "string", "enum": ["a", "b"]}}},
               {"name": "l", "in": "header", "required": true,
                "schema": {"type": "integer", "maximum": 9, "exclusiveMaximum": true, "minimum": 1}}])
    );
}

#[test]
fn collection_formats_map_to_style_and_explode() {
    let param = |cf: Option<&str>, location: &str| {
        let mut p =
            json!({"name": "p", "in": location, "type": "array", "items": {"type": "string"}});
        if location == "path" {
            p["required"] = json!(true);
        }
        if let Some(cf) = cf {
            p["collectionFormat"] = json!(cf);
        }
        let (op, notes) =
            operation_of(json!({"parameters": [p], "responses": {"200": {"description": "OK"}}}));
        let p = &op["parameters"][0];
        (p.get("style").cloned(), p.get("explode").cloned(), kinds(&notes))
    };
    let s = |v: &str| Some(json!(v));
    assert_eq!(param(None, "query"), (s("form"), Some(json!(false)), vec![]));
    assert_eq!(param(Some("csv"), "query"), (s("form"), Some(json!(false)), vec![]));
    assert_eq!(param(Some("multi"), "query"), (s("form"), Some(json!(true)), vec![]));
    assert_eq!(param(Some("ssv"), "query"), (s("spaceDelimited"), Some(json!(false)), vec![]));
    assert_eq!(param(Some("pipes"), "query"), (s("pipeDelimited"), Some(json!(false)), vec![]));
    assert_eq!(param(Some("csv"), "path"), (None, None, vec![]));
    assert_eq!(param(Some("tsv"), "query"), (None, None, vec!["tsv-collection"]));
    assert_eq!(param(Some("multi"), "header"), (None, None, vec!["unsupported-collection-format"]));
}

#[test]
fn form_data_becomes_a_url_encoded_body() {
    let (op, _) = operation_of(json!({
        "parameters": [{"name": "a", "in": "formData", "type": "string", "required": true, "description": "d"},
                       {"name": "b", "in": "formData", "type": "array", "items": {"type": "integer"}},
                       {"name": "q", "in": "query", "type": "string"}],
        "responses": {"200": {"description": "OK"}}
    }));
    assert_eq!(
        op["parameters"],
        json!([{"name": "q", "in": "query", "schema": {"type": "string"}}])
    );
    assert_eq!(
        op["requestBody"],
        json!({"content": {"application/x-www-form-urlencoded": {
                  "schema": {"type": "object",
                             "properties": {"a": {"type": "string", "description": "d"},
                                            "b": {"type": "array", "items": {"type": "integer"}}},
                             "required": ["a"]},
                  "encoding": {"b": {"style": "form", "explode": false}}}},
               "required": true})
    );
}

#[test]
fn file_upload_becomes_a_multipart_binary_body() {
    let (op, _) = operation_of(json!({
        "parameters": [{"name": "f", "in": "formData", "type": "file"}],
        "responses": {"200": {"description": "OK"}}
    }));
    assert_eq!(
        op["requestBody"],
        json!({"content": {"multipart/form-data": {"schema": {"type": "object",
               "properties": {"f": {"type": "string", "format": "binary"}}}}}})
    );
}

#[test]
fn top_level_parameters_are_copied_in_place_and_responses_become_components() {
    let v2 = json!({
        "swagger": "2.0", "consumes": ["application/json"], "produces": ["application/json"],
        "parameters": {"pretty": {"name": "pretty", "in": "query", "type": "string"},
                       "payload": {"name": "body", "in": "body", "schema": {"$ref": "#/definitions/T"}},
                       "upload": {"name": "u", "in": "formData", "type": "string"}},
        "responses": {"NotFound": {"description": "nf", "schema": {"$ref": "#/definitions/T"}}},
        "definitions": {"T": {}},
        "paths": {"/a": {"post": {"parameters": [{"$ref": "#/parameters/pretty"}, {"$ref": "#/parameters/payload"}],
                                  "responses": {"404": {"$ref": "#/responses/NotFound"}}},
                         "put": {"parameters": [{"$ref": "#/parameters/upload"}],
                                 "responses": {"200": {"description": "OK"}}}}}
    });
    let c = convert_ok(&v2);
    let comp = &c.document["components"];
    // Operations take shared parameters and bodies in place, as Kubernetes'
    // v3 does; nothing else refers to them, so no component is left.
    assert!(comp.get("parameters").is_none(), "{comp}");
    assert!(comp.get("requestBodies").is_none(), "{comp}");
    assert_eq!(
        comp["responses"],
        json!({"NotFound": {"description": "nf",
               "content": {"application/json": {"schema": {"$ref": "#/components/schemas/T"}}}}})
    );
    let post = &c.document["paths"]["/a"]["post"];
    assert_eq!(
        post["parameters"],
        json!([{"name": "pretty", "in": "query", "schema": {"type": "string"}}])
    );
    assert_eq!(
        post["requestBody"],
        json!({"content": {"application/json": {"schema": {"$ref": "#/components/schemas/T"}}}})
    );
    assert_eq!(post["responses"]["404"], json!({"$ref": "#/components/responses/NotFound"}));
    let put = &c.document["paths"]["/a"]["put"];
    assert_eq!(
        put["requestBody"]["content"]["application/x-www-form-urlencoded"]["schema"]["properties"]
            ["u"],
        json!({"type": "string"})
    );
    assert_eq!(kinds(&c.notes), ["formdata-component"]);
}

#[test]
fn path_level_parameters_stay_and_path_level_body_reaches_operations() {
    let v2 = doc(
        json!({"/a/{id}": {
            "parameters": [{"name": "id", "in": "path", "required": true, "type": "string"},
                           {"name": "body", "in": "body", "schema": {"$ref": "#/definitions/T"}}],
            "put": {"responses": {"200": {"description": "OK"}}},
            "post": {"parameters": [{"name": "own", "in": "body", "schema": {"type": "string"}}],
                     "responses": {"200": {"description": "OK"}}},
            "x-item": true}}),
        json!({"T": {}}),
    );
    let c = convert_ok(&v2);
    let item = &c.document["paths"]["/a/{id}"];
    assert_eq!(
        item["parameters"],
        json!([{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}])
    );
    assert!(item["put"].get("parameters").is_none());
    assert_eq!(
        item["put"]["requestBody"]["content"]["*/*"]["schema"],
        json!({"$ref": "#/components/schemas/T"})
    );
    assert_eq!(item["post"]["requestBody"]["content"]["*/*"]["schema"], json!({"type": "string"}));
    assert_eq!(item["x-item"], json!(true));
    assert!(c.notes.is_empty(), "{:?}", c.notes);
}

#[test]
fn security_schemes_take_their_v3_forms() {
    let v2 = json!({"swagger": "2.0", "securityDefinitions": {
        "basic": {"type": "basic", "description": "b"},
        "key": {"type": "apiKey", "name": "authorization", "in": "header", "x-k": 1},
        "implicit": {"type": "oauth2", "flow": "implicit", "authorizationUrl": "https://a", "scopes": {"r": "read"}},
        "password": {"type": "oauth2", "flow": "password", "tokenUrl": "https://t", "scopes": {}},
        "app": {"type": "oauth2", "flow": "application", "tokenUrl": "https://t", "scopes": {}},
        "code": {"type": "oauth2", "flow": "accessCode", "authorizationUrl": "https://a", "tokenUrl": "https://t"}
    }});
    let c = convert_ok(&v2);
    assert_eq!(
        c.document["components"]["securitySchemes"],
        json!({
            "basic": {"type": "http", "scheme": "basic", "description": "b"},
            "key": {"type": "apiKey", "name": "authorization", "in": "header", "x-k": 1},
            "implicit": {"type": "oauth2", "flows": {"implicit": {"authorizationUrl": "https://a", "scopes": {"r": "read"}}}},
            "password": {"type": "oauth2", "flows": {"password": {"tokenUrl": "https://t", "scopes": {}}}},
            "app": {"type": "oauth2", "flows": {"clientCredentials": {"tokenUrl": "https://t", "scopes": {}}}},
            "code": {"type": "oauth2", "flows": {"authorizationCode": {"authorizationUrl": "https://a", "tokenUrl": "https://t", "scopes": {}}}}
        })
    );
}

#[test]
fn operation_without_responses_gets_an_empty_object_and_a_note() {
    let (op, notes) = operation_of(json!({"operationId": "x"}));
    assert_eq!(op, json!({"operationId": "x", "responses": {}}));
    assert_eq!(kinds(&notes), ["missing-responses"]);
}

#[test]
fn operation_fields_and_extensions_are_kept_and_schemes_dropped_without_host() {
    let (op, notes) = operation_of(json!({
        "tags": ["t"], "summary": "s", "description": "d", "operationId": "o", "deprecated": true,
        "schemes": ["https"], "security": [{"k": []}], "externalDocs": {"url": "https://e"},
        "responses": {"200": {"description": "OK"}},
        "x-kubernetes-action": "post", "x-kubernetes-group-version-kind": {"group": "g", "version": "v1", "kind": "T"}
    }));
    assert_eq!(
        op,
        json!({"tags": ["t"], "summary": "s", "description": "d", "operationId": "o", "deprecated": true,
               "security": [{"k": []}], "externalDocs": {"url": "https://e"},
               "responses": {"200": {"description": "OK"}},
               "x-kubernetes-action": "post", "x-kubernetes-group-version-kind": {"group": "g", "version": "v1", "kind": "T"}})
    );
    assert_eq!(kinds(&notes), ["operation-schemes"]);
}

#[test]
fn operation_schemes_become_servers_when_a_host_is_known() {
    let v2 = json!({"swagger": "2.0", "host": "h", "schemes": ["https"],
                    "paths": {"/a": {"get": {"schemes": ["http"], "responses": {"200": {"description": "OK"}}}}}});
    let c = convert_ok(&v2);
    assert_eq!(c.document["paths"]["/a"]["get"]["servers"], json!([{"url": "http://h"}]));
}

#[test]
fn external_refs_are_kept_with_a_note() {
    let (x, notes) = schema_of(json!({"$ref": "other.json#/definitions/B"}), json!({}));
    assert_eq!(x, json!({"$ref": "other.json#/definitions/B"}));
    assert_eq!(
        notes[0].kind,
        NoteKind::ExternalRef { reference: "other.json#/definitions/B".into() }
    );
}

#[test]
fn conversion_does_not_mutate_and_is_deterministic() {
    let v2 = doc(
        json!({"/a": {"get": {"parameters": [{"name": "q", "in": "query", "type": "string"}],
                              "responses": {"200": {"description": "OK", "schema": {"$ref": "#/definitions/T"}}}}}}),
        json!({"T": {"properties": {"z": {"type": "string"}, "a": {"format": "int-or-string"}}}}),
    );
    let before = v2.clone();
    let a = serde_json::to_vec(&convert_ok(&v2).document).unwrap();
    let b = serde_json::to_vec(&convert_ok(&v2).document).unwrap();
    assert_eq!(v2, before);
    assert_eq!(a, b);
}

// References and component names that made outputs invalid on real-world
// Swagger. The inputs are the minimal documents in `testdata/references/`,
// which tests/integration/harness/validators.rs also feeds through
// swagger-parser.

fn references_case(name: &str) -> Converted {
    let path = format!("{}/testdata/references/{name}.v2.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    convert_ok(&serde_json::from_str(&text).unwrap())
}

/// Every `$ref` of `doc`, in document order.
fn refs_in(doc: &Value) -> Vec<String> {
    crate::json::refs::all_refs(doc).into_iter().map(|(_, r)| r).collect()
}

/// What every `testdata/references/` output must be: no Swagger 2.0 reference left, no
/// reference dangling, every component name valid.
fn assert_valid_v3_refs_and_names(doc: &Value) {
    for r in refs_in(doc) {
        assert!(r.starts_with("#/components/"), "{r}");
    }
    assert_eq!(crate::json::refs::dangling_refs(doc), Vec::<String>::new());
    for (_, section) in doc["components"].as_object().unwrap() {
        for name in section.as_object().unwrap().keys() {
            assert!(
                !name.is_empty()
                    && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)),
                "{name}"
            );
        }
    }
}

#[test]
fn refs_inside_vendor_extensions_follow_their_targets() {
    let c = references_case("extension-refs");
    let d = &c.document;
    assert_eq!(
        d["x-ms-parameterized-host"]["parameters"],
        json!([{"$ref": "#/components/parameters/AccountName"}])
    );
    let any = &d["paths"]["/things"]["x-amazon-apigateway-any-method"];
    assert_eq!(any["parameters"], json!([{"$ref": "#/components/parameters/AccountName"}]));
    assert_eq!(any["responses"]["default"], json!({"$ref": "#/components/responses/Error"}));
    // A body parameter became a request body: the reference goes there.
    let create = &d["x-ms-paths"]["/things?op=create"]["post"];
    assert_eq!(create["parameters"], json!([{"$ref": "#/components/requestBodies/Payload"}]));
    assert_eq!(create["responses"]["200"]["schema"], json!({"$ref": "#/components/schemas/Thing"}));
    let thing = &d["components"]["schemas"]["Thing"];
    assert_eq!(thing["x-mapped-definition"], json!({"$ref": "#/components/schemas/Other"}));
    assert_eq!(
        thing["properties"]["kind"]["x-oneOf"],
        json!([{"$ref": "#/components/schemas/Other"}])
    );
    assert_valid_v3_refs_and_names(d);
    assert_eq!(kinds(&c.notes), Vec::<&str>::new());
}

/// A `$ref` in a keyword copied as it is (here a `description` that is
/// not a string, as the property tests generate) follows its target too:
/// left as `#/definitions/A` it would point to nothing in the output.
#[test]
fn refs_inside_keywords_copied_as_they_are_follow_their_targets() {
    let v2 = json!({"swagger": "2.0", "info": {"title": "t", "version": "1"}, "paths": {},
        "definitions": {"A": {"type": "array", "items": {"$ref": "#/definitions/A"},
                              "description": {"$ref": "#/definitions/A"}}}});
    let c = convert_ok(&v2);
    let a = &c.document["components"]["schemas"]["A"];
    assert_eq!(a["description"], json!({"$ref": "#/components/schemas/A"}));
    assert_valid_v3_refs_and_names(&c.document);
}

#[test]
fn security_definition_refs_in_extensions_become_security_scheme_refs() {
    let mut v2 = doc(json!({}), json!({}));
    v2["securityDefinitions"] = json!({"k": {"type": "apiKey", "name": "k", "in": "header"}});
    v2["x-auth"] = json!({"$ref": "#/securityDefinitions/k"});
    let c = convert_ok(&v2);
    assert_eq!(c.document["x-auth"], json!({"$ref": "#/components/securitySchemes/k"}));
}

#[test]
fn dangling_ref_in_an_extension_is_kept_with_a_note_not_refused() {
    let mut v2 = doc(json!({}), json!({}));
    v2["x-links"] = json!([{"$ref": "#/definitions/Nope"}, {"$ref": "other.json#/x"}]);
    let c = convert_ok(&v2);
    assert_eq!(
        c.document["x-links"],
        json!([{"$ref": "#/definitions/Nope"}, {"$ref": "other.json#/x"}])
    );
    assert_eq!(
        c.notes,
        [Note {
            at: JsonPointer::root().push("x-links").index(0),
            kind: NoteKind::DanglingRef { reference: "#/definitions/Nope".into() },
        }]
    );
}

#[test]
fn extension_ref_to_a_form_parameter_is_unmapped_with_a_note() {
    let mut v2 = doc(json!({}), json!({}));
    v2["parameters"] = json!({"f": {"name": "f", "in": "formData", "type": "string"}});
    v2["x-form"] = json!({"$ref": "#/parameters/f"});
    let c = convert_ok(&v2);
    assert_eq!(c.document["x-form"], json!({"$ref": "#/parameters/f"}));
    // Notes follow the input: `parameters` comes before `x-form`.
    assert_eq!(kinds(&c.notes), ["formdata-component", "unmapped-ref"]);
}

#[test]
fn percent_encoded_fragments_are_decoded_and_written_back_encoded() {
    let c = references_case("percent-encoded-refs");
    let d = &c.document;
    let get = &d["paths"]["/transactions/{id}"]["get"];
    assert_eq!(
        get["parameters"],
        json!([{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}])
    );
    let schema_of = |code: &str| get["responses"][code]["content"]["*/*"]["schema"].clone();
    assert_eq!(schema_of("200"), json!({"$ref": "#/components/schemas/Transaction"}));
    assert_eq!(
        schema_of("402"),
        json!({"$ref": "#/components/schemas/Transaction/properties/amount%20due"})
    );
    assert_eq!(schema_of("404"), json!({"$ref": "#/components/schemas/Transaction_Id"}));
    assert_eq!(
        d["components"]["schemas"]["Transaction"]["properties"]["id"],
        json!({"$ref": "#/components/schemas/Transaction_Id"})
    );
    assert_valid_v3_refs_and_names(d);
    assert_eq!(kinds(&c.notes), ["renamed-component", "renamed-component"]);
}

#[test]
fn malformed_percent_encoding_is_a_dangling_ref() {
    let v2 = doc(json!({}), json!({"A": {"$ref": "#/definitions/B%2"}, "B": {}}));
    assert_eq!(
        convert(&v2),
        Err(ConvertError::UnresolvedRef {
            reference: "#/definitions/B%2".into(),
            at: JsonPointer::root().push("definitions").push("A"),
        })
    );
}

#[test]
fn invalid_component_names_are_renamed_without_collisions() {
    let c = references_case("component-names");
    let d = &c.document;
    let comp = &d["components"];
    let keys = |section: &str| -> Vec<String> {
        comp[section].as_object().unwrap().keys().cloned().collect()
    };
    assert_eq!(keys("schemas"), ["io.k8s.api.core.v1.Pod", "Error_400"]);
    // `filter_from_` was taken by an input name, `filter_to_` by an earlier
    // rename.
    // Only the parameters an extension refers to stay components (the
    // operation takes all four in place).
    assert_eq!(keys("parameters"), ["filter_from__2", "filter_to__2"]);
    assert_eq!(
        d["x-filters"],
        json!([{"$ref": "#/components/parameters/filter_from__2"},
               {"$ref": "#/components/parameters/filter_to__2"}])
    );
    assert_eq!(keys("securitySchemes"), ["api_key"]);
    // The parameters keep their own `name`: only the component key changes.
    assert_eq!(comp["parameters"]["filter_from__2"]["name"], "filter[from]");
    let get = &d["paths"]["/items"]["get"];
    let names: Vec<&str> =
        get["parameters"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["filter[from]", "filter_from_", "filter[to]", "filter(to)"]);
    assert_eq!(
        get["responses"]["400"]["content"]["*/*"]["schema"],
        json!({"$ref": "#/components/schemas/Error_400"})
    );
    assert_eq!(d["security"], json!([{"api_key": []}]));
    assert_eq!(get["security"], json!([{"api_key": []}]));
    assert_valid_v3_refs_and_names(d);
    let renamed = |section: &str, from: &str, to: &str| Note {
        at: JsonPointer::root().push(section).push(from),
        kind: NoteKind::RenamedComponent { from: from.into(), to: to.into() },
    };
    assert_eq!(
        c.notes,
        [
            renamed("definitions", "Error/400", "Error_400"),
            renamed("parameters", "filter[from]", "filter_from__2"),
            renamed("parameters", "filter[to]", "filter_to_"),
            renamed("parameters", "filter(to)", "filter_to__2"),
            renamed("securityDefinitions", "api key", "api_key"),
        ]
    );
    assert_eq!(
        c.notes[0].to_string(),
        "/definitions/Error~1400: component name \"Error/400\" is not valid OpenAPI 3.0; \
         renamed \"Error_400\""
    );
}

#[test]
fn renamed_body_parameter_is_referenced_under_its_new_name() {
    let mut v2 = doc(
        json!({"/a": {"post": {"parameters": [{"$ref": "#/parameters/new%20item"}],
                               "responses": {"200": {"description": "OK"}}}}}),
        json!({}),
    );
    v2["parameters"] = json!({"new item": {"name": "b", "in": "body", "schema": {}}});
    v2["x-body"] = json!({"$ref": "#/parameters/new%20item"});
    let c = convert_ok(&v2);
    let comp = &c.document["components"]["requestBodies"];
    assert!(comp.get("new_item").is_some(), "{comp}");
    assert_eq!(c.document["x-body"], json!({"$ref": "#/components/requestBodies/new_item"}));
    assert_eq!(
        c.document["paths"]["/a"]["post"]["requestBody"],
        json!({"content": {"*/*": {"schema": {}}}})
    );
}

#[test]
fn split_keeps_the_targets_of_refs_in_extensions() {
    let c = references_case("extension-refs");
    let split = crate::openapi::split::split(&c.document).unwrap();
    assert!(!split.documents.is_empty());
    for (key, part) in &split.documents {
        // `x-ms-parameterized-host` is kept by every part, so is its target.
        assert_eq!(
            part["x-ms-parameterized-host"]["parameters"],
            json!([{"$ref": "#/components/parameters/AccountName"}]),
            "{key}"
        );
        assert!(part["components"]["parameters"].get("AccountName").is_some(), "{key}");
        // So are the targets of `x-ms-paths`, a top-level member too.
        assert!(part["components"]["requestBodies"].get("Payload").is_some(), "{key}");
        assert_eq!(crate::json::refs::dangling_refs(part), Vec::<String>::new(), "{key}");
    }
}

// Issue 14, cause 6: a `$ref` to a schema inside `paths` (swagger2openapi's
// issue51c/d) used to stay at its v2 place, where v3 has no schema.
#[test]
fn refs_to_schemas_inside_paths_point_to_hoisted_components() {
    let c = references_case("path-schema-refs");
    let d = &c.document;
    let response = "paths._test.get.responses.200.schema.properties.default";
    let body = "paths._test.post.parameters.0.schema";
    let schema = &d["paths"]["/test"]["get"]["responses"]["200"]["content"]["*/*"]["schema"];
    assert_eq!(
        schema["properties"]["database"],
        json!({"$ref": format!("#/components/schemas/{response}")})
    );
    // The original stays where it stood; the copy is converted too.
    assert_eq!(schema["properties"]["default"], d["components"]["schemas"][response]);
    assert_eq!(
        d["components"]["schemas"][body],
        json!({"type": "object", "properties": {"size": {"$ref": "#/components/schemas/Size"}}})
    );
    assert_eq!(
        d["components"]["schemas"]["Request"]["properties"]["payload"],
        json!({"$ref": format!("#/components/schemas/{body}")})
    );
    let names: Vec<&String> = d["components"]["schemas"].as_object().unwrap().keys().collect();
    assert_eq!(names, ["Size", "Request", response, body]);
    assert_valid_v3_refs_and_names(d);
    assert_eq!(
        c.notes,
        [
            Note {
                at: JsonPointer::root()
                    .push("paths")
                    .push("/test")
                    .push("get")
                    .push("responses")
                    .push("200")
                    .push("schema")
                    .push("properties")
                    .push("default"),
                kind: NoteKind::HoistedSchema { name: response.into() },
            },
            Note {
                at: JsonPointer::root()
                    .push("paths")
                    .push("/test")
                    .push("post")
                    .push("parameters")
                    .index(0)
                    .push("schema"),
                kind: NoteKind::HoistedSchema { name: body.into() },
            },
        ]
    );
}

#[test]
fn hoisted_names_do_not_take_a_definitions_name() {
    let taken = "paths._a.get.responses.200.schema";
    let v2 = doc(
        json!({"/a": {"get": {"responses": {"200": {"description": "OK",
            "schema": {"type": "string", "x-self": {"$ref": "#/paths/~1a/get/responses/200/schema"}}}}}}}),
        json!({taken: {"type": "integer"}, "B": {"$ref": "#/paths/~1a/get/responses/200/schema"}}),
    );
    let c = convert_ok(&v2);
    let schemas = &c.document["components"]["schemas"];
    assert_eq!(schemas[taken], json!({"type": "integer"}));
    let hoisted = format!("{taken}_2");
    assert_eq!(schemas["B"], json!({"$ref": format!("#/components/schemas/{hoisted}")}));
    // The copy refers to itself through the extension: mapped once, no loop.
    assert_eq!(
        schemas[&hoisted],
        json!({"type": "string", "x-self": {"$ref": format!("#/components/schemas/{hoisted}")}})
    );
    assert_eq!(kinds(&c.notes), ["hoisted-schema"]);
}

#[test]
fn hoisted_schemas_chain_and_get_components_when_there_were_none() {
    let v2 = json!({"swagger": "2.0", "info": {"title": "t", "version": "1"}, "paths": {"/a": {
        "parameters": [{"name": "b", "in": "body", "schema": {"type": "object",
            "properties": {"x": {"$ref": "#/paths/~1a/get/responses/200/schema/items"}}}}],
        "get": {"responses": {"200": {"description": "OK", "schema": {"type": "array",
            "items": {"type": "string"}}}}},
        "put": {"responses": {"200": {"description": "OK",
            "schema": {"$ref": "#/paths/~1a/parameters/0/schema"}}}}}}});
    let c = convert_ok(&v2);
    let d = &c.document;
    let body = "paths._a.parameters.0.schema";
    let items = "paths._a.get.responses.200.schema.items";
    assert_eq!(
        d["components"]["schemas"][body]["properties"]["x"],
        json!({"$ref": format!("#/components/schemas/{items}")})
    );
    assert_eq!(d["components"]["schemas"][items], json!({"type": "string"}));
    assert_eq!(crate::json::refs::dangling_refs(d), Vec::<String>::new());
}

#[test]
fn refs_to_what_is_no_schema_inside_paths_stay_unmapped() {
    for reference in [
        "#/paths/~1a/get/responses/200",
        "#/paths/~1a/get/responses/200/schema/properties",
        "#/paths/~1a/get/responses/200/schema/required",
        "#/paths/~1a/get/responses/200/description",
    ] {
        let v2 = doc(
            json!({"/a": {"get": {"responses": {"200": {"description": "OK",
                "schema": {"type": "object", "required": ["p"],
                    "properties": {"p": {"type": "string"}}}}}}}}),
            json!({}),
        );
        let mut v2 = v2;
        v2["x-see"] = json!({"$ref": reference});
        let c = convert_ok(&v2);
        assert_eq!(c.document["x-see"], json!({"$ref": reference}), "{reference}");
        assert_eq!(kinds(&c.notes), ["unmapped-ref"], "{reference}");
        assert!(c.document["components"]["schemas"].as_object().unwrap().is_empty());
    }
}

#[test]
fn split_keeps_hoisted_schemas() {
    let c = references_case("path-schema-refs");
    let split = crate::openapi::split::split(&c.document).unwrap();
    assert!(!split.documents.is_empty());
    for (key, part) in &split.documents {
        assert_eq!(crate::json::refs::dangling_refs(part), Vec::<String>::new(), "{key}");
    }
}

// Issue 14: a reference inside a shared parameter or response follows what
// is inside to its v3 place, rather than keeping the v2 inner path, which
// dangles (a v3 response has no `schema`, a v3 parameter no `type`).
#[test]
fn refs_inside_responses_follow_to_their_v3_inner_place() {
    let mut v2 = doc(json!({}), json!({}));
    v2["produces"] = json!(["application/yaml", "application/json"]);
    v2["responses"] = json!({"R": {"description": "d", "x-r": 1,
        "schema": {"type": "object", "properties": {"a": {"type": "string"}}},
        "examples": {"application/json": {"a": "x"}},
        "headers": {"H": {"type": "integer", "description": "h", "x-nullable": true}}}});
    let cases = [
        ("#/responses/R/schema", "#/components/responses/R/content/application~1yaml/schema"),
        (
            "#/responses/R/schema/properties/a",
            "#/components/responses/R/content/application~1yaml/schema/properties/a",
        ),
        (
            "#/responses/R/examples/application~1json",
            "#/components/responses/R/content/application~1json/example",
        ),
        ("#/responses/R/headers/H/type", "#/components/responses/R/headers/H/schema/type"),
        (
            "#/responses/R/headers/H/x-nullable",
            "#/components/responses/R/headers/H/schema/nullable",
        ),
        ("#/responses/R/headers/H/description", "#/components/responses/R/headers/H/description"),
        ("#/responses/R/description", "#/components/responses/R/description"),
        ("#/responses/R/x-r", "#/components/responses/R/x-r"),
        ("#/responses/R", "#/components/responses/R"),
    ];
    assert_extension_refs_map_to(v2, &cases);
}

#[test]
fn refs_inside_parameters_follow_to_their_v3_inner_place() {
    let mut v2 = doc(json!({}), json!({"T": {"type": "object"}}));
    v2["consumes"] = json!(["application/merge-patch+json"]);
    v2["parameters"] = json!({
        "B": {"name": "b", "in": "body", "description": "d", "required": true,
              "schema": {"type": "object", "properties": {"t": {"$ref": "#/definitions/T"}}}},
        "Q": {"name": "q", "in": "query", "type": "array", "items": {"type": "string"},
              "maxItems": 3, "x-nullable": true, "x-q": 1}
    });
    let cases = [
        (
            "#/parameters/B/schema",
            "#/components/requestBodies/B/content/application~1merge-patch+json/schema",
        ),
        (
            "#/parameters/B/schema/properties/t",
            "#/components/requestBodies/B/content/application~1merge-patch+json/schema/properties/t",
        ),
        ("#/parameters/B/description", "#/components/requestBodies/B/description"),
        ("#/parameters/Q/items", "#/components/parameters/Q/schema/items"),
        ("#/parameters/Q/items/type", "#/components/parameters/Q/schema/items/type"),
        ("#/parameters/Q/maxItems", "#/components/parameters/Q/schema/maxItems"),
        ("#/parameters/Q/x-nullable", "#/components/parameters/Q/schema/nullable"),
        ("#/parameters/Q/name", "#/components/parameters/Q/name"),
        ("#/parameters/Q/x-q", "#/components/parameters/Q/x-q"),
    ];
    assert_extension_refs_map_to(v2, &cases);
}

#[test]
fn a_schema_ref_to_a_shared_responses_schema_resolves() {
    let mut v2 = doc(
        json!({"/a": {"get": {"responses": {"200": {"description": "OK",
            "schema": {"$ref": "#/responses/R/schema"}}}}}}),
        json!({}),
    );
    v2["responses"] = json!({"R": {"description": "d", "schema": {"type": "string"}}});
    let c = convert_ok(&v2);
    let content = &c.document["paths"]["/a"]["get"]["responses"]["200"]["content"];
    assert_eq!(
        content["*/*"]["schema"],
        json!({"$ref": "#/components/responses/R/content/*~1*/schema"})
    );
    assert_eq!(crate::json::refs::dangling_refs(&c.document), Vec::<String>::new());
}

#[test]
fn inner_refs_case_has_only_v3_refs_that_resolve() {
    let c = references_case("inner-refs");
    assert_valid_v3_refs_and_names(&c.document);
    assert_eq!(
        c.document["paths"]["/things"]["get"]["x-paging"]["limit"],
        json!({"$ref": "#/components/parameters/Limit/schema/maximum"})
    );
    assert_eq!(kinds(&c.notes), Vec::<&str>::new());
}

#[test]
fn refs_inside_to_what_v3_has_no_place_for_stay_unmapped() {
    let mut v2 = doc(json!({}), json!({}));
    v2["parameters"] = json!({
        "B": {"name": "b", "in": "body", "schema": {"type": "object"}},
        "Q": {"name": "q", "in": "query", "type": "array", "items": {"type": "string"},
              "collectionFormat": "pipes"},
        "F": {"name": "f", "in": "formData", "type": "string"}
    });
    let unmapped = [
        "#/parameters/B/in",
        "#/parameters/Q/collectionFormat",
        "#/parameters/F",
        "#/parameters/F/type",
    ];
    v2["x-refs"] = unmapped.iter().map(|r| json!({"$ref": r})).collect();
    let c = convert_ok(&v2);
    let kept: Value = unmapped.iter().map(|r| json!({"$ref": r})).collect();
    assert_eq!(c.document["x-refs"], kept);
    assert_eq!(
        kinds(&c.notes),
        ["formdata-component", "unmapped-ref", "unmapped-ref", "unmapped-ref", "unmapped-ref"]
    );
}

// swagger2openapi's !issue79, issue35 and issue117: what a parameter
// carries besides its type reaches the output, or is noted.
#[test]
fn a_parameters_example_is_kept_as_v3_allows_it() {
    let (op, notes) = operation_of(json!({"parameters": [
        {"name": "q", "in": "query", "type": "string", "example": "abc"}],
        "responses": {"200": {"description": "OK"}}}));
    assert_eq!(op["parameters"][0]["example"], json!("abc"));
    assert_eq!(kinds(&notes), Vec::<&str>::new());
}

#[test]
fn form_fields_keep_description_example_and_extensions_in_their_schema() {
    let (op, notes) = operation_of(json!({"parameters": [
        {"name": "f", "in": "formData", "type": "string", "description": "d", "example": "e",
         "x-alternate-name": "g", "allowEmptyValue": true, "title": "t"}],
        "responses": {"200": {"description": "OK"}}}));
    let field = &op["requestBody"]["content"]["application/x-www-form-urlencoded"]["schema"]["properties"]
        ["f"];
    assert_eq!(
        field,
        &json!({"type": "string", "description": "d", "example": "e", "x-alternate-name": "g"})
    );
    assert_eq!(kinds(&notes), ["allow-empty-value-outside-query", "dropped-field"]);
    assert_eq!(
        notes[1],
        Note {
            at: JsonPointer::root()
                .push("paths")
                .push("/apis/g/v1/things")
                .push("post")
                .push("parameters")
                .index(0)
                .push("title"),
            kind: NoteKind::DroppedField { field: "title".into() },
        }
    );
}

#[test]
fn fields_no_version_defines_are_dropped_with_a_note() {
    let (op, notes) = operation_of(json!({"parameters": [
        {"name": "q", "in": "query", "type": "string", "title": "t"},
        {"name": "b", "in": "body", "schema": {"type": "object"}, "example": {}}],
        "responses": {"200": {"description": "OK", "title": "r",
            "headers": {"H": {"type": "string", "example": "h", "readOnly": true}}}}}));
    assert!(op["parameters"][0].get("title").is_none());
    assert_eq!(op["responses"]["200"]["headers"]["H"]["example"], json!("h"));
    let dropped: Vec<String> = notes
        .iter()
        .map(|n| match &n.kind {
            NoteKind::DroppedField { field } => format!("{} {field}", n.at),
            other => panic!("unexpected note {other:?}"),
        })
        .collect();
    let op_at = "/paths/~1apis~1g~1v1~1things/post";
    assert_eq!(
        dropped,
        [
            format!("{op_at}/parameters/0/title title"),
            format!("{op_at}/parameters/1/example example"),
            format!("{op_at}/responses/200/headers/H/readOnly readOnly"),
            format!("{op_at}/responses/200/title title"),
        ]
    );
}

#[test]
fn notes_inside_a_body_parameter_point_into_the_list_it_came_from() {
    // The operation's own body, and a path-level one the other operation
    // inherits: each note names the list the body parameter stands in.
    let body =
        |field: &str| json!({"name": "b", "in": "body", "schema": {"type": "object"}, field: 1});
    let v2 = doc(
        json!({"/a": {
            "parameters": [{"name": "q", "in": "query", "type": "string"}, body("title")],
            "put": {"responses": {"200": {"description": "OK"}}},
            "post": {"parameters": [{"name": "r", "in": "query", "type": "string"},
                    {"name": "s", "in": "query", "type": "string"}, body("readOnly")],
                "responses": {"200": {"description": "OK"}}}}}),
        json!({}),
    );
    let c = convert_ok(&v2);
    let at: Vec<String> = c.notes.iter().map(|n| n.at.to_string()).collect();
    assert_eq!(at, ["/paths/~1a/parameters/1/title", "/paths/~1a/post/parameters/2/readOnly"]);
    assert_eq!(kinds(&c.notes), ["dropped-field", "dropped-field"]);
}

#[test]
fn form_fields_beside_a_body_are_dropped_with_a_note() {
    let (op, notes) = operation_of(json!({"parameters": [
        {"name": "b", "in": "body", "schema": {"type": "object"}},
        {"name": "f", "in": "formData", "type": "string"}],
        "responses": {"200": {"description": "OK"}}}));
    assert_eq!(op["requestBody"]["content"]["*/*"]["schema"], json!({"type": "object"}));
    assert_eq!(kinds(&notes), ["form-beside-body"]);
    assert_eq!(notes[0].at.to_string(), "/paths/~1apis~1g~1v1~1things/post/parameters/1");
}

#[test]
fn members_v3_forbids_in_operations_path_items_and_the_document_are_dropped_with_a_note() {
    let mut v2 = doc(
        json!({"/a": {"foo": 1, "summary": "s", "trace": {"responses": {}},
            "get": {"bar": true, "summary": "g", "responses": {"200": {"description": "OK"}}}}}),
        json!({}),
    );
    v2["baz"] = json!("z");
    let c = convert_ok(&v2);
    assert_eq!(
        c.document["paths"]["/a"],
        json!({"summary": "s",
            "get": {"summary": "g", "responses": {"200": {"description": "OK"}}}})
    );
    assert!(c.document.get("baz").is_none());
    let dropped: Vec<String> = c.notes.iter().map(|n| n.at.to_string()).collect();
    assert_eq!(dropped, ["/paths/~1a/foo", "/paths/~1a/trace", "/paths/~1a/get/bar", "/baz"]);
    assert!(c.notes.iter().all(|n| n.kind.label() == "dropped-field"));
}

// swagger2openapi's issue39: a path item that is a `$ref` to another file
// was kept without a note, though that file is never converted.
#[test]
fn path_item_ref_to_another_document_is_kept_with_a_note() {
    let c = convert_ok(&doc(json!({"/test": {"$ref": "./subdir1/test.yaml"}}), json!({})));
    assert_eq!(c.document["paths"]["/test"], json!({"$ref": "./subdir1/test.yaml"}));
    assert_eq!(
        c.notes,
        [Note {
            at: JsonPointer::root().push("paths").push("/test"),
            kind: NoteKind::ExternalRef { reference: "./subdir1/test.yaml".into() },
        }]
    );
}

// Issue 14, cause 5: `swagger: 2.0` unquoted in YAML is a number.
#[test]
fn numeric_swagger_version_is_accepted_with_a_note() {
    let c = convert_ok(&json!({"swagger": 2.0, "paths": {}}));
    assert_eq!(c.document, json!({"openapi": "3.0.0", "paths": {}, "components": {}}));
    assert_eq!(kinds(&c.notes), ["numeric-swagger-version"]);
    assert_eq!(c.notes[0].at, JsonPointer::root().push("swagger"));
    assert_eq!(
        c.notes[0].to_string(),
        "/swagger: swagger version is the number 2.0, not the string \"2.0\"; read as 2.0"
    );
}

#[test]
fn numeric_swagger_version_from_yaml_is_accepted() {
    let tree = crate::json::document::parse_tree(b"swagger: 2.0\npaths: {}\n").unwrap();
    let c = convert_tree(&tree).unwrap();
    assert_eq!(c.document.to_value(), json!({"openapi": "3.0.0", "paths": {}, "components": {}}));
    assert_eq!(kinds(&c.notes), ["numeric-swagger-version"]);
}

#[test]
fn other_numeric_versions_are_still_refused() {
    let e = convert(&json!({"swagger": 2})).unwrap_err();
    assert_eq!(e, ConvertError::NotSwagger2 { found: Some("2".into()) });
    let e = convert(&json!({"swagger": 3.0})).unwrap_err();
    assert_eq!(e, ConvertError::NotSwagger2 { found: Some("3.0".into()) });
}

// Issue 14, cause 2: OpenAPI 3.0 has no null type.
#[test]
fn null_type_becomes_nullable_without_a_type() {
    let (x, notes) = schema_of(json!({"type": "null", "description": "d"}), json!({}));
    assert_eq!(x, json!({"nullable": true, "description": "d"}));
    assert_eq!(kinds(&notes), ["null-type"]);
    assert_eq!(notes[0].at, JsonPointer::root().push("definitions").push("X").push("type"));
}

#[test]
fn null_type_inside_properties_becomes_nullable() {
    let (x, notes) = schema_of(json!({"properties": {"n": {"type": "null"}}}), json!({}));
    assert_eq!(x, json!({"properties": {"n": {"nullable": true}}}));
    assert_eq!(kinds(&notes), ["null-type"]);
}

#[test]
fn type_list_of_one_type_and_null_keeps_the_type() {
    let (x, notes) = schema_of(json!({"type": ["null", "integer"], "format": "int32"}), json!({}));
    assert_eq!(x, json!({"nullable": true, "type": "integer", "format": "int32"}));
    assert_eq!(kinds(&notes), ["type-list"]);
}

#[test]
fn type_list_of_several_types_and_null_becomes_nullable_any_of() {
    let (x, notes) = schema_of(json!({"type": ["string", "integer", "null"]}), json!({}));
    assert_eq!(x, json!({"anyOf": [{"type": "string"}, {"type": "integer"}], "nullable": true}));
    assert_eq!(kinds(&notes), ["type-list"]);
}

#[test]
fn null_type_of_a_simple_parameter_becomes_nullable() {
    let (op, notes) = operation_of(json!({
        "parameters": [{"name": "q", "in": "query", "type": "null"}],
        "responses": {"200": {"description": "OK"}}
    }));
    assert_eq!(
        op["parameters"],
        json!([{"name": "q", "in": "query", "schema": {"nullable": true}}])
    );
    assert_eq!(kinds(&notes), ["null-type"]);
}

// Issue 14, cause 4: integers beyond 64 bits made YAML input refused and
// JSON input change form (`1.8446744073709552e19`).
#[test]
fn integers_beyond_64_bits_reach_the_output_as_written() {
    let yaml = b"swagger: '2.0'\npaths: {}\ndefinitions:\n  X:\n    type: integer\n    \
                 enum: [-9223372036854776000, 18446744073709551616]\n";
    let json = br#"{"swagger":"2.0","paths":{},"definitions":{"X":{"type":"integer","enum":[-9223372036854776000,18446744073709551616]}}}"#;
    for input in [&yaml[..], &json[..]] {
        let tree = crate::json::document::parse_tree(input).unwrap();
        let c = convert_tree(&tree).unwrap();
        assert_eq!(
            String::from_utf8(c.document.to_vec()).unwrap(),
            r#"{"openapi":"3.0.0","paths":{},"components":{"schemas":{"X":{"type":"integer","enum":[-9223372036854776000,18446744073709551616]}}}}"#
        );
        assert_eq!(kinds(&c.notes), Vec::<&str>::new());
    }
}

// Issue 14, cause 9: `collectionFormat` on a multipart array field vanished
// with no note.
#[test]
fn multipart_collection_formats_become_encoding_styles_with_a_note() {
    let field = |cf: &str| {
        let (op, notes) = operation_of(json!({
            "consumes": ["multipart/form-data"],
            "parameters": [{"name": "tags", "in": "formData", "type": "array",
                            "items": {"type": "string"}, "collectionFormat": cf}],
            "responses": {"200": {"description": "OK"}}
        }));
        let media = op["requestBody"]["content"]["multipart/form-data"].clone();
        (media["encoding"].clone(), notes)
    };
    for (cf, style, explode) in [
        ("pipes", "pipeDelimited", false),
        ("ssv", "spaceDelimited", false),
        ("csv", "form", false),
        ("multi", "form", true),
    ] {
        let (encoding, notes) = field(cf);
        assert_eq!(encoding, json!({"tags": {"style": style, "explode": explode}}), "{cf}");
        assert_eq!(kinds(&notes), ["multipart-collection-format"], "{cf}");
        assert_eq!(
            notes[0].at.to_string(),
            "/paths/~1apis~1g~1v1~1things/post/parameters/0/collectionFormat"
        );
    }
    let (encoding, notes) = field("tsv");
    assert_eq!(encoding, Value::Null);
    assert_eq!(kinds(&notes), ["tsv-collection"]);
}

#[test]
fn multipart_body_keeps_its_schema_beside_the_encoding() {
    let (op, _) = operation_of(json!({
        "consumes": ["multipart/form-data"],
        "parameters": [{"name": "f", "in": "formData", "type": "file"},
                       {"name": "tags", "in": "formData", "type": "array",
                        "items": {"type": "string"}, "collectionFormat": "pipes"}],
        "responses": {"200": {"description": "OK"}}
    }));
    assert_eq!(
        op["requestBody"],
        json!({"content": {"multipart/form-data": {
            "schema": {"type": "object", "properties": {
                "f": {"type": "string", "format": "binary"},
                "tags": {"type": "array", "items": {"type": "string"}}}},
            "encoding": {"tags": {"style": "pipeDelimited", "explode": false}}}}})
    );
}

#[test]
fn url_encoded_collection_formats_need_no_note() {
    let (op, notes) = operation_of(json!({
        "parameters": [{"name": "tags", "in": "formData", "type": "array",
                        "items": {"type": "string"}, "collectionFormat": "pipes"}],
        "responses": {"200": {"description": "OK"}}
    }));
    assert_eq!(
        op["requestBody"]["content"]["application/x-www-form-urlencoded"]["encoding"],
        json!({"tags": {"style": "pipeDelimited", "explode": false}})
    );
    assert_eq!(kinds(&notes), Vec::<&str>::new());
}

// Issue 14, cause 8: Kubernetes 1.35 shares its DeleteOptions body as
// `#/parameters/body-2Y1dVQaQ` among DELETE operations that consume `*/*`;
// the component's content (from the document's `consumes`) said
// `application/json` for all of them.
#[test]
fn shared_body_with_other_consumes_is_inlined_with_the_operations_media_types() {
    let v2 = json!({
        "swagger": "2.0", "consumes": ["application/json"],
        "parameters": {"body-2Y1dVQaQ": {"name": "body", "in": "body",
                                         "schema": {"$ref": "#/definitions/DeleteOptions"}}},
        "definitions": {"DeleteOptions": {"type": "object"}},
        "paths": {"/a": {
            "delete": {"consumes": ["*/*"], "parameters": [{"$ref": "#/parameters/body-2Y1dVQaQ"}],
                       "responses": {"200": {"description": "OK"}}},
            "post": {"parameters": [{"$ref": "#/parameters/body-2Y1dVQaQ"}],
                     "responses": {"200": {"description": "OK"}}}}}
    });
    let c = convert_ok(&v2);
    let a = &c.document["paths"]["/a"];
    assert_eq!(
        a["delete"]["requestBody"],
        json!({"content": {"*/*": {"schema": {"$ref": "#/components/schemas/DeleteOptions"}}}})
    );
    // An operation that consumes what the document does takes the
    // document's media types, in place too.
    assert_eq!(
        a["post"]["requestBody"],
        json!({"content": {"application/json": {"schema": {"$ref": "#/components/schemas/DeleteOptions"}}}})
    );
    assert!(c.document["components"].get("requestBodies").is_none());
    assert_eq!(kinds(&c.notes), Vec::<&str>::new());
}

#[test]
fn shared_body_inlined_keeps_description_required_and_extensions() {
    let v2 = json!({
        "swagger": "2.0", "consumes": ["application/json"],
        "parameters": {"b": {"name": "body", "in": "body", "required": true, "description": "d",
                             "x-k": 1, "schema": {"type": "object"}}},
        "paths": {"/a": {"put": {"consumes": ["application/yaml", "application/json"],
                                 "parameters": [{"$ref": "#/parameters/b"}],
                                 "responses": {"200": {"description": "OK"}}}}}
    });
    let c = convert_ok(&v2);
    assert_eq!(
        c.document["paths"]["/a"]["put"]["requestBody"],
        json!({"description": "d",
               "content": {"application/yaml": {"schema": {"type": "object"}},
                           "application/json": {"schema": {"type": "object"}}},
               "required": true, "x-k": 1})
    );
}

// Issue 14, cause 10: with no `produces` on the operation or the document,
// the response's schema is kept under `*/*` (docs/wire.md#a-5), not under
// a media type the input never named.
#[test]
fn response_without_any_produces_is_written_under_any_media_type() {
    let v2 = doc(
        json!({"/a": {"get": {"responses": {
            "200": {"description": "OK", "schema": {"type": "string"}},
            "204": {"description": "none"}}}}}),
        json!({}),
    );
    let c = convert_ok(&v2);
    let responses = &c.document["paths"]["/a"]["get"]["responses"];
    assert_eq!(responses["200"]["content"], json!({"*/*": {"schema": {"type": "string"}}}));
    assert_eq!(responses["204"], json!({"description": "none"}));
}

// A shared parameter is converted at each operation that uses it; what
// OpenAPI 3.0 cannot carry in it is one spot of the input, noted once. A
// shared parameter in a location v3 lacks is dropped where used (it used
// to stay a `$ref` to a component that was never written).
#[test]
fn shared_parameters_are_noted_once_however_many_operations_use_them() {
    let ops = json!({"parameters": [{"$ref": "#/parameters/q"}, {"$ref": "#/parameters/odd"}],
                     "responses": {"200": {"description": "OK"}}});
    let mut v2 = doc(json!({"/a": {"get": ops.clone(), "put": ops}}), json!({}));
    v2["parameters"] = json!({
        "q": {"name": "q", "in": "header", "type": "string", "allowEmptyValue": true},
        "odd": {"name": "o", "in": "somewhere", "type": "string"}});
    let c = convert_ok(&v2);
    let a = &c.document["paths"]["/a"];
    for method in ["get", "put"] {
        assert_eq!(
            a[method]["parameters"],
            json!([{"name": "q", "in": "header", "schema": {"type": "string"}}]),
            "{method}"
        );
    }
    assert!(c.document["components"].get("parameters").is_none());
    assert_eq!(kinds(&c.notes), ["allow-empty-value-outside-query", "unknown-parameter-location"]);
    assert_eq!(
        c.notes[0].at,
        JsonPointer::root().push("parameters").push("q").push("allowEmptyValue")
    );
}

// Shared parameters are copied where used; a document whose one shared
// parameter (a 2,000-value enum) is used by 300 operations would convert to
// 600,000 values from about 4,000. Refused as the copies pass the bound.
#[test]
fn copies_of_shared_parameters_are_bounded_by_the_input() {
    let big: Vec<String> = (0..2_000).map(|i| format!("v{i}")).collect();
    let paths: serde_json::Map<String, serde_json::Value> = (0..300)
        .map(|i| {
            (
                format!("/p{i}"),
                json!({"get": {"parameters": [{"$ref": "#/parameters/e"}],
                                            "responses": {"200": {"description": "OK"}}}}),
            )
        })
        .collect();
    let mut v2 = doc(serde_json::Value::Object(paths), json!({}));
    v2["parameters"] = json!({"e": {"name": "e", "in": "query", "type": "string", "enum": big}});
    match convert(&v2) {
        Err(ConvertError::CopiesOverBudget { copied, limit }) => {
            assert!(copied > limit && limit == super::COPY_FLOOR, "{copied} {limit}");
        }
        other => panic!("expected CopiesOverBudget, got {:?}", other.map(|c| c.notes)),
    }
    // Used by a few operations, the same parameter is copied to each.
    let few: serde_json::Map<String, serde_json::Value> = v2["paths"]
        .as_object()
        .unwrap()
        .iter()
        .take(3)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    v2["paths"] = serde_json::Value::Object(few);
    let c = convert_ok(&v2);
    assert_eq!(c.document["paths"]["/p0"]["get"]["parameters"][0]["schema"]["enum"][1999], "v1999");
}

// A response's or a body's schema is written once per media type the
// operation produces or consumes. A 1.4 MB document (1,000 media types, 100
// responses of a 600-value schema) converted to 60 million values: more
// than 4 GB, where the process aborted. Each copy counts against the same
// bound as the copies of shared parameters.
#[test]
fn copies_of_a_schema_per_media_type_are_bounded_by_the_input() {
    let properties: serde_json::Map<String, Value> =
        (0..300).map(|i| (format!("p{i}"), json!({"type": "string"}))).collect();
    let schema = json!({"type": "object", "properties": properties});
    let types: Vec<String> = (0..1_000).map(|i| format!("application/x-{i}")).collect();
    let responses: serde_json::Map<String, Value> = (0..100)
        .map(|i| (format!("{}", 200 + i), json!({"description": "OK", "schema": schema})))
        .collect();
    let mut v2 = doc(json!({"/x": {"get": {"responses": responses}}}), json!({}));
    v2["produces"] = json!(types);
    match convert(&v2) {
        Err(ConvertError::CopiesOverBudget { copied, limit }) => {
            assert!(copied > limit && limit == super::COPY_FLOOR, "{copied} {limit}");
        }
        other => panic!("expected CopiesOverBudget, got {:?}", other.map(|c| c.notes)),
    }
    // The same through a body parameter and `consumes`.
    let bodies: serde_json::Map<String, Value> = (0..100)
        .map(|i| {
            let op = json!({"parameters": [{"name": "b", "in": "body", "schema": schema}],
                            "responses": {"200": {"description": "OK"}}});
            (format!("/b{i}"), json!({"post": op}))
        })
        .collect();
    let mut v2 = doc(Value::Object(bodies), json!({}));
    v2["consumes"] = json!(types);
    assert!(matches!(convert(&v2), Err(ConvertError::CopiesOverBudget { .. })));
    // And through form fields, once per form media type consumed.
    let fields: Vec<Value> = (0..300)
        .map(|i| json!({"name": format!("f{i}"), "in": "formData", "type": "string"}))
        .collect();
    let forms: serde_json::Map<String, Value> = (0..100)
        .map(|i| {
            let op = json!({"parameters": fields, "responses": {"200": {"description": "OK"}}});
            (format!("/f{i}"), json!({"post": op}))
        })
        .collect();
    let mut v2 = doc(Value::Object(forms), json!({}));
    let multipart: Vec<String> =
        (0..1_000).map(|i| format!("multipart/form-data; x={i}")).collect();
    v2["consumes"] = json!(multipart);
    assert!(matches!(convert(&v2), Err(ConvertError::CopiesOverBudget { .. })));
    // And through examples of media types the operation does not produce.
    let examples: serde_json::Map<String, Value> =
        types.iter().map(|t| (t.clone(), json!({}))).collect();
    let responses: serde_json::Map<String, Value> = (0..100)
        .map(|i| {
            let r = json!({"description": "OK", "schema": schema, "examples": examples});
            (format!("{}", 200 + i), r)
        })
        .collect();
    let v2 = doc(json!({"/x": {"get": {"responses": responses}}}), json!({}));
    assert!(matches!(convert(&v2), Err(ConvertError::CopiesOverBudget { .. })));
    // A few media types, as real documents have, convert as before.
    let mut v2 = doc(
        json!({"/x": {"get": {"responses": {"200": {"description": "OK",
        "schema": schema}}}}}),
        json!({}),
    );
    v2["produces"] = json!(["application/json", "application/yaml", "application/x-protobuf"]);
    let c = convert_ok(&v2);
    let content = &c.document["paths"]["/x"]["get"]["responses"]["200"]["content"];
    assert_eq!(content.as_object().map(serde_json::Map::len), Some(3));
    assert_eq!(content["application/yaml"]["schema"], schema);
}

// Found by fuzzing (convert_split, seed 1, from a Config Connector CRD
// document): a schema `$ref` that is not local (`!/definitions/…`) is kept
// as written with an `external-ref` note, and the split document of its
// group-version keeps it too, with every local reference resolving.
#[test]
fn fuzz_convert_split_external_ref_in_a_group_version() {
    let v2 = doc(
        json!({"/apis/g.example.com/v1/things": {"get": {"produces": ["application/json"],
            "responses": {"200": {"description": "OK",
                "schema": {"$ref": "!/definitions/com.example.Thing"}}}}}}),
        json!({"com.example.Thing": {"type": "object"}}),
    );
    let c = convert_ok(&v2);
    assert_eq!(kinds(&c.notes), ["external-ref"]);
    let split = crate::openapi::split::split(&c.document).unwrap();
    let part = &split.documents[&crate::wire::DocumentKey::parse("apis/g.example.com/v1").unwrap()];
    assert_eq!(
        part["paths"]["/apis/g.example.com/v1/things"]["get"]["responses"]["200"]["content"]["application/json"]
            ["schema"],
        json!({"$ref": "!/definitions/com.example.Thing"})
    );
    assert_eq!(crate::json::refs::dangling_refs(part), Vec::<String>::new());
}

// A shared parameter no operation uses has no place to be copied to: it
// stays a component, so that nothing of the input is lost unnoted.
#[test]
fn shared_parameters_no_operation_uses_stay_components() {
    let mut v2 = doc(
        json!({"/a": {"get": {"parameters": [{"$ref": "#/parameters/used"}],
                              "responses": {"200": {"description": "OK"}}}}}),
        json!({}),
    );
    v2["parameters"] = json!({
        "used": {"name": "u", "in": "query", "type": "string"},
        "unused": {"name": "n", "in": "query", "type": "string"},
        "unusedBody": {"name": "b", "in": "body", "schema": {"type": "string"}}});
    let c = convert_ok(&v2);
    let comp = &c.document["components"];
    assert_eq!(
        comp["parameters"],
        json!({"unused": {"name": "n", "in": "query", "schema": {"type": "string"}}})
    );
    assert_eq!(
        comp["requestBodies"],
        json!({"unusedBody": {"content": {"*/*": {"schema": {"type": "string"}}}}})
    );
    assert_eq!(kinds(&c.notes), Vec::<&str>::new());
}

// Names given out for one base skip the suffixes input names hold and
// those given before, and stay the first free ones (what a walk from `_2`
// would give), however many names share the base.
#[test]
fn component_names_are_the_first_free_ones_for_each_base() {
    let mut names = super::refs::ComponentNames::new(["x_".to_owned(), "x__3".to_owned()]);
    let given: Vec<String> = (0..5).map(|_| names.claim("x_".to_owned())).collect();
    assert_eq!(given, ["x__2", "x__4", "x__5", "x__6", "x__7"]);
    assert_eq!(names.claim("y".to_owned()), "y");
    assert_eq!(names.claim("y".to_owned()), "y_2");
    // 20,000 names on one base: each is new, and the last is `_20000`.
    let many: Vec<String> = (0..20_000).map(|_| names.claim("z".to_owned())).collect();
    assert_eq!(many.first().map(String::as_str), Some("z"));
    assert_eq!(many.last().map(String::as_str), Some("z_20000"));
    let unique: std::collections::BTreeSet<&String> = many.iter().collect();
    assert_eq!(unique.len(), many.len());
}

/// Puts each `from` reference of `cases` in an extension of `v2` and
/// requires each to become its `to`, every reference to resolve, and no
/// note.
fn assert_extension_refs_map_to(mut v2: Value, cases: &[(&str, &str)]) {
    v2["x-refs"] = cases.iter().map(|(from, _)| json!({"$ref": from})).collect();
    let c = convert_ok(&v2);
    let expected: Value = cases.iter().map(|(_, to)| json!({"$ref": to})).collect();
    assert_eq!(c.document["x-refs"], expected);
    assert_eq!(crate::json::refs::dangling_refs(&c.document), Vec::<String>::new());
    assert_eq!(kinds(&c.notes), Vec::<&str>::new());
}

// A go-openapi fixture (`fixture-859-good`) writes `#definitions/x`, which
// swagger-parser resolves: read as `#/definitions/x`, with a note, and a
// body parameter referred to that way is still a request body.
#[test]
fn a_ref_without_the_slash_after_the_hash_is_read_with_it() {
    let mut v2 = doc(
        json!({"/a": {"post": {
            "parameters": [{"$ref": "#parameters/body"}],
            "responses": {"200": {"description": "OK", "schema": {"$ref": "#definitions/Out"}}},
        }}}),
        json!({"Out": {"type": "string"}}),
    );
    v2["parameters"] = json!({"body": {"name": "b", "in": "body", "schema": {"type": "object"}}});
    let c = convert_ok(&v2);
    let post = &c.document["paths"]["/a"]["post"];
    assert_eq!(
        post["responses"]["200"]["content"]["*/*"]["schema"],
        json!({"$ref": "#/components/schemas/Out"})
    );
    assert_eq!(post["requestBody"], json!({"content": {"*/*": {"schema": {"type": "object"}}}}));
    assert_eq!(kinds(&c.notes), ["ref-without-slash", "ref-without-slash"]);
    assert_eq!(
        c.notes.iter().map(ToString::to_string).collect::<Vec<_>>(),
        [
            "/paths/~1a/post/parameters/0: reference \"#parameters/body\" lacks the \"/\" after \
             \"#\"; read with it",
            "/paths/~1a/post/responses/200/schema: reference \"#definitions/Out\" lacks the \"/\" \
             after \"#\"; read with it",
        ]
    );
    // Without a target either way, it is the reference as written that
    // points to nothing.
    let e = convert(&doc(json!({}), json!({"A": {"$ref": "#definitions/Nope"}}))).unwrap_err();
    assert_eq!(e.to_string(), "reference #definitions/Nope at /definitions/A points to nothing");
}

/// Found by the no-silent-drop property test: a shared body parameter
/// referred to only as an operation's second body (dropped, with a note at
/// the operation) was counted as taken in place, so its
/// `components.requestBodies` entry was removed too and its content was
/// nowhere. It stays, as one no operation uses does.
#[test]
fn a_shared_body_dropped_as_a_second_body_keeps_its_component() {
    let mut v2 = doc(
        json!({"/b": {"post": {"parameters": [
            {"name": "own", "in": "body", "schema": {"type": "string"}},
            {"$ref": "#/parameters/shared"}],
            "responses": {"200": {"description": "ok"}}}}}),
        json!({}),
    );
    v2["parameters"] = json!({"shared": {"name": "shared", "in": "body", "description": "kept",
        "schema": {"type": "integer"}}});
    let c = convert_ok(&v2);
    let post = &c.document["paths"]["/b"]["post"];
    let media = post["requestBody"]["content"].as_object().expect("content");
    assert!(media.values().all(|m| m["schema"]["type"] == "string"), "{post}");
    assert!(!media.is_empty(), "{post}");
    let shared = &c.document["components"]["requestBodies"]["shared"];
    assert_eq!(shared["description"], "kept", "{}", c.document);
    assert!(c.notes.iter().any(|n| n.to_string().contains("more than one body parameter")));
}

#[test]
fn schemas_and_operations_are_allocated_at_their_size() {
    // A member list regrown from empty leaves its smaller copies behind and
    // ends up to twice its length: memory the kernel zeroes for nothing.
    let v2 = doc(
        json!({"/apis/g/v1/x": {"get": {"operationId": "x", "tags": ["g"], "description": "d",
            "responses": {"200": {"description": "OK", "schema": {"$ref": "#/definitions/A"}}}}}}),
        json!({"A": {"type": "object", "description": "a", "properties": {
            "b": {"type": "string", "description": "b"},
            "c": {"type": "integer", "format": "int32", "description": "c"},
            "d": {"type": "array", "items": {"type": "string"}},
            "e": {"$ref": "#/definitions/B"},
            "f": {"type": "boolean"}}},
            "B": {"type": "string"}}),
    );
    let tree = Node::from_value(&v2);
    let converted = convert_tree(&tree).unwrap().document;
    let schemas = converted.pointer("/components/schemas").unwrap().as_object().unwrap();
    let a = schemas.get("A").unwrap().as_object().unwrap();
    let mut objects = vec![a, a.get("properties").unwrap().as_object().unwrap()];
    objects.extend(["b", "c", "d", "e", "f"].map(|p| {
        converted
            .pointer(&format!("/components/schemas/A/properties/{p}"))
            .unwrap()
            .as_object()
            .unwrap()
    }));
    objects.push(converted.pointer("/paths/~1apis~1g~1v1~1x").unwrap().as_object().unwrap());
    objects.push(converted.pointer("/paths/~1apis~1g~1v1~1x/get").unwrap().as_object().unwrap());
    for o in objects {
        assert!(o.capacity() <= o.len() + 1, "{} members, room for {}", o.len(), o.capacity());
    }
}

#[test]
fn media_types_and_parameter_schemas_are_allocated_at_their_size() {
    // An operation's response is written once per media type it produces:
    // thousands of one-member objects for a whole cluster's document.
    let mut v2 = doc(
        json!({"/apis/g/v1/x": {"get": {
            "parameters": [{"name": "limit", "in": "query", "type": "integer", "uniqueItems": true},
                {"name": "f", "in": "query", "type": "file"}],
            "responses": {"200": {"description": "OK", "schema": {"$ref": "#/definitions/A"}}}}}}),
        json!({"A": {"type": "string"}}),
    );
    v2["produces"] =
        json!(["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"]);
    let tree = Node::from_value(&v2);
    let converted = convert_tree(&tree).unwrap().document;
    let op = "/paths/~1apis~1g~1v1~1x/get";
    let mut objects = vec![
        format!("{op}/responses/200"),
        format!("{op}/responses/200/content"),
        format!("{op}/parameters/0/schema"),
        format!("{op}/parameters/1/schema"),
    ];
    for mt in ["application~1json", "application~1yaml", "application~1vnd.kubernetes.protobuf"] {
        objects.push(format!("{op}/responses/200/content/{mt}"));
        objects.push(format!("{op}/responses/200/content/{mt}/schema"));
    }
    for at in objects {
        let o = converted.pointer(&at).and_then(Node::as_object).unwrap_or_else(|| panic!("{at}"));
        assert!(
            o.capacity() <= o.len() + 1,
            "{at}: {} members, room for {}",
            o.len(),
            o.capacity()
        );
    }
}

#[test]
fn references_to_one_target_share_one_string() {
    // Made once per target, not once per `$ref`: Kubernetes 1.27 has 2152
    // references to 492 targets, each an allocation and a copy before.
    let v2 = doc(
        json!({"/apis/g/v1/x": {"get": {
            "responses": {"200": {"description": "OK", "schema": {"$ref": "#/definitions/A"}}}},
            "put": {
            "responses": {"200": {"description": "OK", "schema": {"$ref": "#/definitions/A"}}}}}}),
        json!({"A": {"type": "string"}, "B": {"properties": {"a": {"$ref": "#/definitions/A"}}}}),
    );
    let tree = Node::from_value(&v2);
    let converted = convert_tree(&tree).unwrap().document;
    let get = "/paths/~1apis~1g~1v1~1x/get/responses/200/content/*~1*/schema/$ref";
    let refs = [get, &get.replace("/get/", "/put/"), "/components/schemas/B/properties/a/$ref"]
        .map(|at| converted.pointer(at).and_then(Node::as_str).unwrap_or_else(|| panic!("{at}")));
    assert_eq!(refs[0], "#/components/schemas/A");
    for r in &refs[1..] {
        assert_eq!(*r, refs[0]);
        assert_eq!(r.as_ptr(), refs[0].as_ptr(), "a second copy of {r}");
    }
}

/// The parameters of `method` at `path` (or the path item's own, for
/// `"parameters"`) in a converted tree.
fn tree_parameters<'t, 'a>(doc: &'t Node<'a>, path: &str, method: &str) -> &'t [Node<'a>] {
    let item = doc.get("paths").and_then(|p| p.get(path)).expect("the path");
    let list = if method == "parameters" {
        item.get(method)
    } else {
        item.get(method).and_then(|op| op.get("parameters"))
    };
    list.and_then(Node::as_array).expect("parameters")
}

#[test]
fn equal_parameters_are_converted_once_and_written_out_the_same_everywhere() {
    let text = br#"{"swagger":"2.0","info":{"title":"t","version":"1"},"paths":{
        "/a":{"get":{"parameters":[
            {"name":"pretty","in":"query","type":"string","description":"say \"yes\""},
            {"name":"n","in":"query","type":"number","default":0.0}],"responses":{}}},
        "/b":{"get":{"parameters":[
            {"name":"pretty","in":"query","type":"string","description":"say \"yes\""},
            {"name":"n","in":"query","type":"number","default":-0.0}],"responses":{}}},
        "/c":{"parameters":[
            {"name":"pretty","in":"query","type":"string","description":"say \"yes\""}],
            "get":{"responses":{}}}}}"#;
    let tree = crate::json::tree::parse(text).unwrap();
    let c = convert_tree(&tree).unwrap();
    let pretty = [
        &tree_parameters(&c.document, "/a", "get")[0],
        &tree_parameters(&c.document, "/b", "get")[0],
        &tree_parameters(&c.document, "/c", "parameters")[0],
    ];
    let [Node::Shared(first), rest @ ..] = pretty else {
        panic!("not shared: {pretty:?}");
    };
    for other in rest {
        let Node::Shared(other) = other else { panic!("not shared: {other:?}") };
        assert!(first.same(other));
    }
    // Written out as a parameter converted where it stands, each time, and
    // numbers equal in value but not in writing are not taken for each other.
    let expected = json!({
        "openapi": "3.0.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/a": {"get": {"parameters": [
                {"name": "pretty", "in": "query", "description": "say \"yes\"", "schema": {"type": "string"}},
                {"name": "n", "in": "query", "schema": {"type": "number", "default": 0.0}}],
                "responses": {}}},
            "/b": {"get": {"parameters": [
                {"name": "pretty", "in": "query", "description": "say \"yes\"", "schema": {"type": "string"}},
                {"name": "n", "in": "query", "schema": {"type": "number", "default": -0.0}}],
                "responses": {}}},
            "/c": {"parameters": [
                {"name": "pretty", "in": "query", "description": "say \"yes\"", "schema": {"type": "string"}}],
                "get": {"responses": {}}}},
        "components": {}
    });
    assert_eq!(c.document.to_vec(), serde_json::to_vec(&expected).unwrap());
    assert!(String::from_utf8(c.document.to_vec()).unwrap().contains(r#""default":-0.0}"#));
}

#[test]
fn a_parameter_that_takes_a_note_stands_alone_and_shared_references_are_followed() {
    let param = json!({"name": "h", "in": "header", "type": "string", "allowEmptyValue": true});
    let linked =
        json!({"name": "q", "in": "query", "type": "string", "x-see": {"$ref": "#/definitions/T"}});
    let v2 = doc(
        json!({
            "/apis/g/v1/a": {"get": {"parameters": [param, linked], "responses": {}}},
            "/apis/g/v1/b": {"get": {"parameters": [param, linked], "responses": {}}}
        }),
        json!({"T": {"type": "object"}, "U": {"type": "string"}}),
    );
    let tree = Node::from_value(&v2);
    let c = convert_tree(&tree).unwrap();
    for path in ["/apis/g/v1/a", "/apis/g/v1/b"] {
        let [noted, linked] = tree_parameters(&c.document, path, "get") else { panic!("two") };
        assert!(matches!(noted, Node::Object(_)), "shared: {noted:?}");
        let Node::Shared(linked) = linked else { panic!("not shared: {linked:?}") };
        assert!(linked.holds_refs());
    }
    // Each spot has its note, and the reference under the shared one is
    // followed by the split like any other.
    assert_eq!(
        kinds(&c.notes),
        ["allow-empty-value-outside-query", "allow-empty-value-outside-query"]
    );
    let mut documents = Vec::new();
    crate::openapi::pipeline::convert_each(&tree, 0, usize::MAX, |key, bytes| {
        documents.push((key.to_string(), serde_json::from_slice::<Value>(bytes).unwrap()));
    })
    .unwrap();
    let [(key, document)] = &documents[..] else { panic!("one document: {documents:?}") };
    assert_eq!(key, "apis/g/v1");
    assert_eq!(document["components"]["schemas"], json!({"T": {"type": "object"}}));
}

#[test]
fn equal_responses_are_shared_for_the_same_media_types_only() {
    let ok = json!({"200": {"description": "OK", "schema": {"$ref": "#/definitions/T"}}});
    let v2 = doc(
        json!({
            "/apis/g/v1/a": {"get": {"produces": ["application/json"], "responses": ok}},
            "/apis/g/v1/b": {"get": {"produces": ["application/json"], "responses": ok}},
            "/apis/g/v1/c": {"get": {"produces": ["application/yaml"], "responses": ok}}
        }),
        json!({"T": {"type": "object"}}),
    );
    let tree = Node::from_value(&v2);
    let c = convert_tree(&tree).unwrap();
    let response = |path: &str| {
        let responses =
            c.document.get("paths").and_then(|p| p.get(path)).and_then(|i| i.get("get"));
        match responses.and_then(|op| op.as_object()).and_then(|op| op.get("responses")) {
            Some(Node::Object(o)) => o.get("200").cloned().expect("200"),
            other => panic!("responses: {other:?}"),
        }
    };
    let (Node::Shared(a), Node::Shared(b), Node::Shared(other)) =
        (response("/apis/g/v1/a"), response("/apis/g/v1/b"), response("/apis/g/v1/c"))
    else {
        panic!("not shared")
    };
    assert!(a.same(&b));
    assert!(!a.same(&other));
    assert_eq!(
        other.node().to_value(),
        json!({"description": "OK", "content": {"application/yaml": {"schema": {"$ref": "#/components/schemas/T"}}}})
    );
}

#[test]
fn responses_without_a_schema_are_shared_whatever_the_operations_produce() {
    // Their media types change nothing, so they are no part of the key.
    let gone = json!({"404": {"description": "Not found"}});
    let v2 = doc(
        json!({
            "/apis/g/v1/a": {"get": {"produces": ["application/json"], "responses": gone}},
            "/apis/g/v1/b": {"get": {"produces": ["application/yaml"], "responses": gone}}
        }),
        json!({}),
    );
    let tree = Node::from_value(&v2);
    let c = convert_tree(&tree).unwrap();
    let at = |p: &str| c.document.pointer(&format!("/paths/~1apis~1g~1v1~1{p}/get/responses"));
    let (Some(Node::Object(a)), Some(Node::Object(b))) = (at("a"), at("b")) else {
        panic!("responses")
    };
    let (Some(Node::Shared(a)), Some(Node::Shared(b))) = (a.get("404"), b.get("404")) else {
        panic!("not shared")
    };
    assert!(a.same(b));
    assert_eq!(a.node().to_value(), json!({"description": "Not found"}));
}

#[test]
fn copies_in_shared_responses_count_as_they_would_unshared() {
    // A schema of some 2,000 values, copied for four of five media types
    // by each of 70 operations: past the copy floor either way, refused at
    // the same copy whether the responses are shared or each different.
    let properties: serde_json::Map<String, Value> =
        (0..1000).map(|i| (format!("p{i}"), json!({"type": "string"}))).collect();
    let produces = json!(["a/1", "a/2", "a/3", "a/4", "a/5"]);
    let refusal = |differ: bool| {
        let paths: serde_json::Map<String, Value> = (0..70)
            .map(|i| {
                let description = if differ { format!("OK {i}") } else { "OK".to_owned() };
                let schema = json!({"type": "object", "properties": properties});
                let response = json!({"description": description, "schema": schema});
                let op = json!({"produces": produces, "responses": {"200": response}});
                (format!("/apis/g/v1/p{i}"), json!({"get": op}))
            })
            .collect();
        convert(&doc(Value::Object(paths), json!({}))).unwrap_err()
    };
    let shared = refusal(false);
    assert!(matches!(shared, ConvertError::CopiesOverBudget { .. }), "{shared}");
    assert_eq!(shared, refusal(true));
}

#[test]
fn shared_nodes_keep_bounded_bytes_whatever_the_input_repeats() {
    // Each response renders to ten copies of its long description: about
    // 60 KB each, or over 64 KiB for the last; each placed twice. What
    // the conversion keeps rendered stays within its bounds, and the
    // document is the same bytes as ever.
    let media: Vec<String> = (0..10).map(|i| format!("a/{i}")).collect();
    let mut paths = serde_json::Map::new();
    for i in 0..72 {
        let description = format!("{i:02}{}", "d".repeat(if i == 71 { 7000 } else { 6000 }));
        let response =
            json!({"200": {"description": "OK", "schema": {"description": description}}});
        for copy in ["a", "b"] {
            let op = json!({"produces": media, "responses": response});
            paths.insert(format!("/apis/g/v1/r{i}{copy}"), json!({"get": op}));
        }
    }
    let v2 = doc(Value::Object(paths), json!({}));
    let tree = Node::from_value(&v2);
    let c = convert_tree(&tree).unwrap();
    let mut kept = 0;
    let mut declined = 0;
    for i in 0..72 {
        let at = format!("/paths/~1apis~1g~1v1~1r{i}a/get/responses");
        let Some(Node::Object(responses)) = c.document.pointer(&at) else { panic!("{at}") };
        let Some(Node::Shared(shared)) = responses.get("200") else { panic!("not shared") };
        match shared.rendered() {
            Some(bytes) => kept += bytes.len(),
            None => declined += 1,
        }
    }
    assert!(kept <= super::reuse::RENDERED_ALL, "{kept}");
    assert!(kept > super::reuse::RENDERED_ALL - super::reuse::RENDERED_EACH, "{kept}");
    assert!(declined >= 2, "the largest, and those past the total: {declined}");
    assert_eq!(c.document.to_vec(), serde_json::to_vec(&c.document.to_value()).unwrap());
}

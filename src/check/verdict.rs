//! Whether a body deserializes as an `openapiv3` OpenAPI 3.0 document,
//! judged one part at a time.
//!
//! Deserializing the whole document at once is the obvious way, and it costs
//! about twenty times the body: `openapiv3::OpenAPI` collects its vendor
//! extensions with `#[serde(flatten)]`, and serde buffers every member of a
//! struct with a flattened field into its generic `Content` tree before the
//! typed structs are made beside it — 665 MiB for one 29 MB document.
//! Here the top level, each path item and each component are deserialized
//! on their own from borrowed slices of the body ([`RawValue`]), and each
//! dropped before the next: the peak is the largest single part. A document
//! passes exactly when every part does, which is when the whole does; an
//! error names the part it is in.

use std::collections::BTreeMap;

use openapiv3::{
    Callback, Example, Header, Link, OpenAPI, Parameter, PathItem, ReferenceOr, RequestBody,
    Response, Schema, SecurityScheme,
};
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

/// Members of a JSON object, each a slice of the body.
type Members<'a> = BTreeMap<String, &'a RawValue>;

/// `Ok` when `body` deserializes as `openapiv3::OpenAPI`; otherwise where
/// and why not.
///
/// # Errors
/// The first part that does not deserialize, named (`paths["/x"]`,
/// `components.schemas["S"]`), with serde's message.
pub fn openapi(body: &[u8]) -> Result<(), String> {
    let top: Members<'_> = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    // Everything but the two large members, with those left empty: the
    // required fields, `info`, `servers`, `tags` and the rest as a whole.
    let mut skeleton: BTreeMap<&str, &RawValue> = BTreeMap::new();
    let empty = empty_object();
    for (name, value) in &top {
        let large = name == "paths" || (name == "components" && value.get() != "null");
        skeleton.insert(name, if large { &empty } else { value });
    }
    let text = serde_json::to_string(&skeleton).map_err(|e| e.to_string())?;
    serde_json::from_str::<OpenAPI>(&text).map_err(|e| e.to_string())?;
    if let Some(paths) = top.get("paths") {
        let paths: Members<'_> = members(paths, "paths")?;
        for (key, item) in &paths {
            if key.starts_with('/') {
                part::<ReferenceOr<PathItem>>(item, &format!("paths[{key:?}]"))?;
            }
        }
    }
    if let Some(components) = top.get("components").filter(|c| c.get() != "null") {
        let components = members(components, "components")?;
        for (field, value) in &components {
            let check = match field.as_str() {
                "schemas" => each::<Schema>,
                "responses" => each::<Response>,
                "parameters" => each::<Parameter>,
                "examples" => each::<Example>,
                "requestBodies" => each::<RequestBody>,
                "headers" => each::<Header>,
                "securitySchemes" => each::<SecurityScheme>,
                "links" => each::<Link>,
                "callbacks" => each::<Callback>,
                // Extensions (any JSON) and unknown members (ignored).
                _ => continue,
            };
            check(value, &format!("components.{field}"))?;
        }
    }
    Ok(())
}

fn empty_object() -> Box<RawValue> {
    RawValue::from_string("{}".to_owned()).unwrap_or_else(|_| unreachable!("{{}} is JSON"))
}

fn members<'a>(value: &'a RawValue, at: &str) -> Result<Members<'a>, String> {
    serde_json::from_str(value.get()).map_err(|e| format!("{at}: {e}"))
}

/// Every entry of a component map, as `ReferenceOr<T>`, one at a time.
fn each<T: DeserializeOwned>(map: &RawValue, at: &str) -> Result<(), String> {
    for (name, value) in &members(map, at)? {
        part::<ReferenceOr<T>>(value, &format!("{at}[{name:?}]"))?;
    }
    Ok(())
}

fn part<T: DeserializeOwned>(value: &RawValue, at: &str) -> Result<(), String> {
    serde_json::from_str::<T>(value.get()).map(drop).map_err(|e| format!("{at}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole-document verdict, for comparison.
    fn whole(body: &str) -> bool {
        serde_json::from_str::<OpenAPI>(body).is_ok()
    }

    #[test]
    fn agrees_with_deserializing_the_whole_document() {
        let cases = [
            r##"{"openapi":"3.0.0","info":{"title":"t","version":"v"},"paths":{}}"##,
            r##"{"openapi":"3.0.0","info":{"title":"t","version":"v"}}"##,
            r##"{"openapi":"3.0.0","paths":{}}"##,
            r##"{"openapi":"3.0.0","info":{"title":"t"},"paths":{}}"##,
            r##"{"openapi":"3.0.0","info":{"title":"t","version":"v"},"paths":{},"components":null}"##,
            r##"{"openapi":"3.0.0","info":{"title":"t","version":"v"},"paths":{},"components":[]}"##,
            r##"{"openapi":"3.0.0","info":{"title":"t","version":"v"},"paths":[]}"##,
            r##"{"openapi":"3.0.0","info":{"title":"t","version":"v"},"paths":{"/a":{"get":{"responses":{}}}}}"##,
            r##"{"openapi":"3.0.0","info":{"title":"t","version":"v"},"paths":{"/a":{"get":{"responses":7}}}}"##,
            r##"{"openapi":"3.0.0","info":{"title":"t","version":"v"},"paths":{"/a":{"$ref":"#/x"},"x-y":[1]}}"##,
            r##"{"openapi":"3.0.0","info":{"title":"t","version":"v"},"paths":{},"components":{"schemas":{"S":{"type":"object","properties":{"a":{"type":"string"}}}}}}"##,
            r##"{"openapi":"3.0.0","info":{"title":"t","version":"v"},"paths":{},"components":{"schemas":{"S":{"type":7}}}}"##,
            r##"{"openapi":"3.0.0","info":{"title":"t","version":"v"},"paths":{},"components":{"schemas":{"S":{"$ref":"#/components/schemas/T"}}}}"##,
            r##"{"openapi":"3.0.0","info":{"title":"t","version":"v"},"paths":{},"components":{"parameters":{"p":{"in":"query"}}}}"##,
            r##"{"openapi":"3.0.0","info":{"title":"t","version":"v"},"paths":{},"components":{"schemas":[]}}"##,
            r##"{"openapi":"3.0.0","info":{"title":"t","version":"v"},"paths":{},"components":{"x-a":1,"other":2}}"##,
            r##"{"openapi":"3.0.0","info":{"title":"t","version":"v"},"paths":{},"servers":[{"url":"/"}],"tags":[{"name":"a"}],"x-e":{}}"##,
            r##"{"openapi":"3.0.0","info":{"title":"t","version":"v"},"paths":{},"tags":{}}"##,
            r##"[]"##,
            r##"{"openapi":"3.0.0","info":{"title":"t","version":"v"},"paths":{},"##,
        ];
        for case in cases {
            assert_eq!(
                openapi(case.as_bytes()).is_ok(),
                whole(case),
                "{case}: {:?}",
                openapi(case.as_bytes())
            );
        }
    }

    #[test]
    fn an_error_names_the_part_it_is_in() {
        let body = r##"{"openapi":"3.0.0","info":{"title":"t","version":"v"},"paths":{},"components":{"schemas":{"Bad":{"type":7}}}}"##;
        let error = openapi(body.as_bytes()).expect_err("invalid schema");
        assert!(error.starts_with(r#"components.schemas["Bad"]: "#), "{error}");
    }
}

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

/// The top-level members `openapiv3::OpenAPI` reads; extensions (`x-…`,
/// any JSON) and unknown members are valid whatever they hold.
const TOP_LEVEL: [&str; 8] =
    ["openapi", "info", "servers", "paths", "components", "security", "tags", "externalDocs"];

/// `Ok` when `body` deserializes as `openapiv3::OpenAPI`; otherwise where
/// and why not.
///
/// # Errors
/// The first part that does not deserialize, named (`paths["/x"]`,
/// `components.schemas["S"]`), with serde's message.
pub fn openapi(body: &[u8]) -> Result<(), String> {
    let text = std::str::from_utf8(body).map_err(|e| e.to_string())?;
    // The members `OpenAPI` reads, with `paths` and `components` left
    // empty: the required fields, `info`, `servers`, `tags` and the rest
    // as a whole. Nothing else of the top level is kept.
    let empty = empty_object();
    let mut skeleton: BTreeMap<&str, &RawValue> = BTreeMap::new();
    let (mut paths, mut components) = (None, None);
    for_each_member(text, "the document", |name, value| {
        let Some(known) = TOP_LEVEL.iter().find(|k| **k == name) else { return Ok(()) };
        let large = *known == "paths" || (*known == "components" && value.get() != "null");
        match *known {
            "paths" => paths = Some(value),
            "components" if large => components = Some(value),
            _ => {}
        }
        skeleton.insert(known, if large { &empty } else { value });
        Ok(())
    })?;
    let whole = serde_json::to_string(&skeleton).map_err(|e| e.to_string())?;
    serde_json::from_str::<OpenAPI>(&whole).map_err(|e| e.to_string())?;
    if let Some(paths) = paths {
        for_each_member(paths.get(), "paths", |key, item| {
            if key.starts_with('/') {
                part::<ReferenceOr<PathItem>>(item, &format!("paths[{key:?}]"))?;
            }
            Ok(())
        })?;
    }
    if let Some(components) = components {
        for_each_member(components.get(), "components", |field, value| {
            let check = match field {
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
                _ => return Ok(()),
            };
            check(value, &format!("components.{field}"))
        })?;
    }
    Ok(())
}

fn empty_object() -> Box<RawValue> {
    RawValue::from_string("{}".to_owned()).unwrap_or_else(|_| unreachable!("{{}} is JSON"))
}

/// Calls `f` with each member of the JSON object `text`, one at a time, as
/// the object is read: nothing is collected, so an object of millions of
/// small members (`"a":{},` is 7 bytes) costs one member's key at a time,
/// not a map of them all.
///
/// # Errors
/// `f`'s first error, or why `text` is not an object (prefixed by `at`).
fn for_each_member<'a>(
    text: &'a str,
    at: &str,
    mut f: impl FnMut(&str, &'a RawValue) -> Result<(), String>,
) -> Result<(), String> {
    struct Members<'f, F>(&'f mut F, &'f mut Option<String>);
    impl<'de, F> serde::de::Visitor<'de> for Members<'_, F>
    where
        F: FnMut(&str, &'de RawValue) -> Result<(), String>,
    {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                let value: &'de RawValue = map.next_value()?;
                if let Err(e) = (self.0)(&key, value) {
                    // Kept aside, so that serde's position does not reword it.
                    *self.1 = Some(e);
                    return Err(serde::de::Error::custom("stopped"));
                }
            }
            Ok(())
        }
    }
    let mut failed = None;
    let mut de = serde_json::Deserializer::from_str(text);
    let read = serde::Deserializer::deserialize_map(&mut de, Members(&mut f, &mut failed))
        .and_then(|()| de.end());
    match (failed, read) {
        (Some(e), _) => Err(e),
        (None, Ok(())) => Ok(()),
        (None, Err(e)) => Err(format!("{at}: {e}")),
    }
}

/// Every entry of a component map, as `ReferenceOr<T>`, one at a time.
fn each<T: DeserializeOwned>(map: &RawValue, at: &str) -> Result<(), String> {
    for_each_member(map.get(), at, |name, value| {
        part::<ReferenceOr<T>>(value, &format!("{at}[{name:?}]"))
    })
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

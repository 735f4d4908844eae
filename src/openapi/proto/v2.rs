//! gnostic's `openapi.v2` messages (`OpenAPIv2.proto`) as a table: field
//! numbers from the `.proto`, JSON keys and oneof choices as gnostic's
//! `NewDocument` reads them.

use super::encode::{At, Kind, Msg, Shape, Slot};
use super::table::{CONTACT, EXTERNAL_DOCS, LICENSE, TAG, ext, key, msg, msgs};
use crate::json::tree::Node;

use Kind::{Any, Anys, Bool, Double, Int64, Str, Strs};

/// The `in` of a parameter object.
fn parameter_in<'n>(value: &'n Node<'_>) -> Option<&'n str> {
    value.get("in").and_then(Node::as_str)
}

fn has_ref(value: &Node<'_>) -> bool {
    value.get("$ref").is_some()
}

pub(super) static DOCUMENT: Msg = Msg {
    name: "Document",
    shape: Shape::Fields(&[
        key(1, "swagger", Str),
        key(2, "info", msg(&INFO)),
        key(3, "host", Str),
        key(4, "basePath", Str),
        key(5, "schemes", Strs),
        key(6, "consumes", Strs),
        key(7, "produces", Strs),
        key(8, "paths", msg(&PATHS)),
        key(9, "definitions", msg(&DEFINITIONS)),
        key(10, "parameters", msg(&PARAMETER_DEFINITIONS)),
        key(11, "responses", msg(&RESPONSE_DEFINITIONS)),
        key(12, "security", msgs(&SECURITY_REQUIREMENT)),
        key(13, "securityDefinitions", msg(&SECURITY_DEFINITIONS)),
        key(14, "tags", msgs(&TAG)),
        key(15, "externalDocs", msg(&EXTERNAL_DOCS)),
        ext(16),
    ]),
};

static INFO: Msg = Msg {
    name: "Info",
    shape: Shape::Fields(&[
        key(1, "title", Str),
        key(2, "version", Str),
        key(3, "description", Str),
        key(4, "termsOfService", Str),
        key(5, "contact", msg(&CONTACT)),
        key(6, "license", msg(&LICENSE)),
        ext(7),
    ]),
};

static PATHS: Msg = Msg {
    name: "Paths",
    shape: Shape::Fields(&[
        ext(1),
        Slot { number: 2, at: At::Pattern(|k| k.starts_with('/')), kind: msg(&PATH_ITEM) },
    ]),
};

static PATH_ITEM: Msg = Msg {
    name: "PathItem",
    shape: Shape::Fields(&[
        key(1, "$ref", Str),
        key(2, "get", msg(&OPERATION)),
        key(3, "put", msg(&OPERATION)),
        key(4, "post", msg(&OPERATION)),
        key(5, "delete", msg(&OPERATION)),
        key(6, "options", msg(&OPERATION)),
        key(7, "head", msg(&OPERATION)),
        key(8, "patch", msg(&OPERATION)),
        key(9, "parameters", msgs(&PARAMETERS_ITEM)),
        ext(10),
    ]),
};

static OPERATION: Msg = Msg {
    name: "Operation",
    shape: Shape::Fields(&[
        key(1, "tags", Strs),
        key(2, "summary", Str),
        key(3, "description", Str),
        key(4, "externalDocs", msg(&EXTERNAL_DOCS)),
        key(5, "operationId", Str),
        key(6, "produces", Strs),
        key(7, "consumes", Strs),
        key(8, "parameters", msgs(&PARAMETERS_ITEM)),
        key(9, "responses", msg(&RESPONSES)),
        key(10, "schemes", Strs),
        key(11, "deprecated", Bool),
        key(12, "security", msgs(&SECURITY_REQUIREMENT)),
        ext(13),
    ]),
};

static PARAMETERS_ITEM: Msg = Msg {
    name: "ParametersItem",
    shape: Shape::OneOf(|v| Some(if has_ref(v) { (2, &JSON_REFERENCE) } else { (1, &PARAMETER) })),
};

static JSON_REFERENCE: Msg = Msg {
    name: "JsonReference",
    shape: Shape::Fields(&[
        key(1, "$ref", Str),
        key(2, "description", Str),
        Slot { number: 0, at: At::Ignored, kind: Str },
    ]),
};

static PARAMETER: Msg = Msg {
    name: "Parameter",
    shape: Shape::OneOf(|v| match parameter_in(v) {
        Some("body") => Some((1, &BODY_PARAMETER)),
        Some(_) => Some((2, &NON_BODY_PARAMETER)),
        None => None,
    }),
};

static BODY_PARAMETER: Msg = Msg {
    name: "BodyParameter",
    shape: Shape::Fields(&[
        key(1, "description", Str),
        key(2, "name", Str),
        key(3, "in", Str),
        key(4, "required", Bool),
        key(5, "schema", msg(&SCHEMA)),
        ext(6),
    ]),
};

static NON_BODY_PARAMETER: Msg = Msg {
    name: "NonBodyParameter",
    shape: Shape::OneOf(|v| match parameter_in(v)? {
        "header" => Some((1, &HEADER_PARAMETER)),
        "formData" => Some((2, &FORM_DATA_PARAMETER)),
        "query" => Some((3, &QUERY_PARAMETER)),
        "path" => Some((4, &PATH_PARAMETER)),
        _ => None,
    }),
};

/// A message of the fields every non-body parameter and `items` share:
/// `$head`, then the primitive fields from field number `$at` on.
macro_rules! primitive {
    ($name:literal, $at:expr; $($head:expr),* $(,)?) => {
        Msg {
            name: $name,
            shape: Shape::Fields(&[
                $($head,)*
                key($at, "collectionFormat", Str),
                key($at + 1, "default", Any),
                key($at + 2, "maximum", Double),
                key($at + 3, "exclusiveMaximum", Bool),
                key($at + 4, "minimum", Double),
                key($at + 5, "exclusiveMinimum", Bool),
                key($at + 6, "maxLength", Int64),
                key($at + 7, "minLength", Int64),
                key($at + 8, "pattern", Str),
                key($at + 9, "maxItems", Int64),
                key($at + 10, "minItems", Int64),
                key($at + 11, "uniqueItems", Bool),
                key($at + 12, "enum", Anys),
                key($at + 13, "multipleOf", Double),
                ext($at + 14),
            ]),
        }
    };
}

static HEADER_PARAMETER: Msg = primitive!("HeaderParameterSubSchema", 8;
    key(1, "required", Bool),
    key(2, "in", Str),
    key(3, "description", Str),
    key(4, "name", Str),
    key(5, "type", Str),
    key(6, "format", Str),
    key(7, "items", msg(&PRIMITIVES_ITEMS)),
);

static PATH_PARAMETER: Msg = primitive!("PathParameterSubSchema", 8;
    key(1, "required", Bool),
    key(2, "in", Str),
    key(3, "description", Str),
    key(4, "name", Str),
    key(5, "type", Str),
    key(6, "format", Str),
    key(7, "items", msg(&PRIMITIVES_ITEMS)),
);

static QUERY_PARAMETER: Msg = primitive!("QueryParameterSubSchema", 9;
    key(1, "required", Bool),
    key(2, "in", Str),
    key(3, "description", Str),
    key(4, "name", Str),
    key(5, "allowEmptyValue", Bool),
    key(6, "type", Str),
    key(7, "format", Str),
    key(8, "items", msg(&PRIMITIVES_ITEMS)),
);

static FORM_DATA_PARAMETER: Msg = primitive!("FormDataParameterSubSchema", 9;
    key(1, "required", Bool),
    key(2, "in", Str),
    key(3, "description", Str),
    key(4, "name", Str),
    key(5, "allowEmptyValue", Bool),
    key(6, "type", Str),
    key(7, "format", Str),
    key(8, "items", msg(&PRIMITIVES_ITEMS)),
);

static PRIMITIVES_ITEMS: Msg = primitive!("PrimitivesItems", 4;
    key(1, "type", Str),
    key(2, "format", Str),
    key(3, "items", msg(&PRIMITIVES_ITEMS)),
);

static HEADER: Msg = Msg {
    name: "Header",
    shape: Shape::Fields(&[
        key(1, "type", Str),
        key(2, "format", Str),
        key(3, "items", msg(&PRIMITIVES_ITEMS)),
        key(4, "collectionFormat", Str),
        key(5, "default", Any),
        key(6, "maximum", Double),
        key(7, "exclusiveMaximum", Bool),
        key(8, "minimum", Double),
        key(9, "exclusiveMinimum", Bool),
        key(10, "maxLength", Int64),
        key(11, "minLength", Int64),
        key(12, "pattern", Str),
        key(13, "maxItems", Int64),
        key(14, "minItems", Int64),
        key(15, "uniqueItems", Bool),
        key(16, "enum", Anys),
        key(17, "multipleOf", Double),
        key(18, "description", Str),
        ext(19),
    ]),
};

static HEADERS: Msg = Msg { name: "Headers", shape: Shape::Map(1, msg(&HEADER)) };

static RESPONSES: Msg = Msg {
    name: "Responses",
    shape: Shape::Fields(&[
        Slot { number: 1, at: At::Pattern(is_response_code), kind: msg(&RESPONSE_VALUE) },
        ext(2),
    ]),
};

/// `^([0-9]{3})$|^(default)$`.
fn is_response_code(key: &str) -> bool {
    key == "default" || (key.len() == 3 && key.bytes().all(|b| b.is_ascii_digit()))
}

static RESPONSE_VALUE: Msg = Msg {
    name: "ResponseValue",
    shape: Shape::OneOf(|v| Some(if has_ref(v) { (2, &JSON_REFERENCE) } else { (1, &RESPONSE) })),
};

static RESPONSE: Msg = Msg {
    name: "Response",
    shape: Shape::Fields(&[
        key(1, "description", Str),
        key(2, "schema", msg(&SCHEMA_ITEM)),
        key(3, "headers", msg(&HEADERS)),
        key(4, "examples", msg(&EXAMPLES)),
        ext(5),
    ]),
};

static EXAMPLES: Msg = Msg { name: "Examples", shape: Shape::Map(1, Any) };

static SCHEMA_ITEM: Msg = Msg {
    name: "SchemaItem",
    shape: Shape::OneOf(|v| {
        Some(if v.get("type").and_then(Node::as_str) == Some("file") {
            (2, &FILE_SCHEMA)
        } else {
            (1, &SCHEMA)
        })
    }),
};

static FILE_SCHEMA: Msg = Msg {
    name: "FileSchema",
    shape: Shape::Fields(&[
        key(1, "format", Str),
        key(2, "title", Str),
        key(3, "description", Str),
        key(4, "default", Any),
        key(5, "required", Strs),
        key(6, "type", Str),
        key(7, "readOnly", Bool),
        key(8, "externalDocs", msg(&EXTERNAL_DOCS)),
        key(9, "example", Any),
        ext(10),
    ]),
};

pub(super) static SCHEMA: Msg = Msg {
    name: "Schema",
    shape: Shape::Fields(&[
        key(1, "$ref", Str),
        key(2, "format", Str),
        key(3, "title", Str),
        key(4, "description", Str),
        key(5, "default", Any),
        key(6, "multipleOf", Double),
        key(7, "maximum", Double),
        key(8, "exclusiveMaximum", Bool),
        key(9, "minimum", Double),
        key(10, "exclusiveMinimum", Bool),
        key(11, "maxLength", Int64),
        key(12, "minLength", Int64),
        key(13, "pattern", Str),
        key(14, "maxItems", Int64),
        key(15, "minItems", Int64),
        key(16, "uniqueItems", Bool),
        key(17, "maxProperties", Int64),
        key(18, "minProperties", Int64),
        key(19, "required", Strs),
        key(20, "enum", Anys),
        key(21, "additionalProperties", msg(&ADDITIONAL_PROPERTIES_ITEM)),
        key(22, "type", msg(&TYPE_ITEM)),
        key(23, "items", msg(&ITEMS_ITEM)),
        key(24, "allOf", msgs(&SCHEMA)),
        key(25, "properties", msg(&PROPERTIES)),
        key(26, "discriminator", Str),
        key(27, "readOnly", Bool),
        key(28, "xml", msg(&XML)),
        key(29, "externalDocs", msg(&EXTERNAL_DOCS)),
        key(30, "example", Any),
        ext(31),
    ]),
};

static ADDITIONAL_PROPERTIES_ITEM: Msg =
    Msg { name: "AdditionalPropertiesItem", shape: Shape::SchemaOrBool(&SCHEMA) };

static TYPE_ITEM: Msg = Msg { name: "TypeItem", shape: Shape::Strings(true) };

static ITEMS_ITEM: Msg = Msg { name: "ItemsItem", shape: Shape::Items(&SCHEMA) };

static PROPERTIES: Msg = Msg { name: "Properties", shape: Shape::Map(1, msg(&SCHEMA)) };

static XML: Msg = Msg {
    name: "Xml",
    shape: Shape::Fields(&[
        key(1, "name", Str),
        key(2, "namespace", Str),
        key(3, "prefix", Str),
        key(4, "attribute", Bool),
        key(5, "wrapped", Bool),
        ext(6),
    ]),
};

static DEFINITIONS: Msg = Msg { name: "Definitions", shape: Shape::Map(1, msg(&SCHEMA)) };

static PARAMETER_DEFINITIONS: Msg =
    Msg { name: "ParameterDefinitions", shape: Shape::Map(1, msg(&PARAMETER)) };

static RESPONSE_DEFINITIONS: Msg =
    Msg { name: "ResponseDefinitions", shape: Shape::Map(1, msg(&RESPONSE)) };

static SECURITY_REQUIREMENT: Msg =
    Msg { name: "SecurityRequirement", shape: Shape::Map(1, msg(&STRING_ARRAY)) };

static STRING_ARRAY: Msg = Msg { name: "StringArray", shape: Shape::Strings(false) };

static SECURITY_DEFINITIONS: Msg =
    Msg { name: "SecurityDefinitions", shape: Shape::Map(1, msg(&SECURITY_DEFINITIONS_ITEM)) };

static SECURITY_DEFINITIONS_ITEM: Msg = Msg {
    name: "SecurityDefinitionsItem",
    shape: Shape::OneOf(|v| {
        let flow = v.get("flow").and_then(Node::as_str);
        match (v.get("type").and_then(Node::as_str)?, flow) {
            ("basic", _) => Some((1, &BASIC_SECURITY)),
            ("apiKey", _) => Some((2, &API_KEY_SECURITY)),
            ("oauth2", Some("implicit")) => Some((3, &OAUTH2_IMPLICIT)),
            ("oauth2", Some("password")) => Some((4, &OAUTH2_PASSWORD)),
            ("oauth2", Some("application")) => Some((5, &OAUTH2_APPLICATION)),
            ("oauth2", Some("accessCode")) => Some((6, &OAUTH2_ACCESS_CODE)),
            _ => None,
        }
    }),
};

static BASIC_SECURITY: Msg = Msg {
    name: "BasicAuthenticationSecurity",
    shape: Shape::Fields(&[key(1, "type", Str), key(2, "description", Str), ext(3)]),
};

static API_KEY_SECURITY: Msg = Msg {
    name: "ApiKeySecurity",
    shape: Shape::Fields(&[
        key(1, "type", Str),
        key(2, "name", Str),
        key(3, "in", Str),
        key(4, "description", Str),
        ext(5),
    ]),
};

static OAUTH2_SCOPES: Msg = Msg { name: "Oauth2Scopes", shape: Shape::Map(1, Str) };

static OAUTH2_IMPLICIT: Msg = Msg {
    name: "Oauth2ImplicitSecurity",
    shape: Shape::Fields(&[
        key(1, "type", Str),
        key(2, "flow", Str),
        key(3, "scopes", msg(&OAUTH2_SCOPES)),
        key(4, "authorizationUrl", Str),
        key(5, "description", Str),
        ext(6),
    ]),
};

static OAUTH2_PASSWORD: Msg = Msg {
    name: "Oauth2PasswordSecurity",
    shape: Shape::Fields(&[
        key(1, "type", Str),
        key(2, "flow", Str),
        key(3, "scopes", msg(&OAUTH2_SCOPES)),
        key(4, "tokenUrl", Str),
        key(5, "description", Str),
        ext(6),
    ]),
};

static OAUTH2_APPLICATION: Msg = Msg {
    name: "Oauth2ApplicationSecurity",
    shape: Shape::Fields(&[
        key(1, "type", Str),
        key(2, "flow", Str),
        key(3, "scopes", msg(&OAUTH2_SCOPES)),
        key(4, "tokenUrl", Str),
        key(5, "description", Str),
        ext(6),
    ]),
};

static OAUTH2_ACCESS_CODE: Msg = Msg {
    name: "Oauth2AccessCodeSecurity",
    shape: Shape::Fields(&[
        key(1, "type", Str),
        key(2, "flow", Str),
        key(3, "scopes", msg(&OAUTH2_SCOPES)),
        key(4, "authorizationUrl", Str),
        key(5, "tokenUrl", Str),
        key(6, "description", Str),
        ext(7),
    ]),
};

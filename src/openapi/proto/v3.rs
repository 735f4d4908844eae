//! gnostic's `openapi.v3` messages (`OpenAPIv3.proto`) as a table: field
//! numbers from the `.proto`, JSON keys and oneof choices as gnostic's
//! `NewDocument` reads them.

use super::encode::{At, Kind, Msg, Shape, Slot};
use super::table::{CONTACT, EXTERNAL_DOCS, LICENSE, TAG, ext, key, msg, msgs};
use Kind::{Any, Anys, Bool, Double, Int64, Str, Strs};

/// A `…OrReference` oneof: a `Reference` (field 2) when the object has a
/// `$ref` (gnostic's `Schema`, `Parameter`, … refuse that key), the
/// message itself (field 1) otherwise.
macro_rules! or_reference {
    ($name:literal, $what:expr) => {
        Msg {
            name: $name,
            shape: Shape::OneOf(|v| {
                Some(if v.get("$ref").is_some() { (2, &REFERENCE) } else { (1, &$what) })
            }),
        }
    };
}

pub(super) static DOCUMENT: Msg = Msg {
    name: "Document",
    shape: Shape::Fields(&[
        key(1, "openapi", Str),
        key(2, "info", msg(&INFO)),
        key(3, "servers", msgs(&SERVER)),
        key(4, "paths", msg(&PATHS)),
        key(5, "components", msg(&COMPONENTS)),
        key(6, "security", msgs(&SECURITY_REQUIREMENT)),
        key(7, "tags", msgs(&TAG)),
        key(8, "externalDocs", msg(&EXTERNAL_DOCS)),
        ext(9),
    ]),
};

static INFO: Msg = Msg {
    name: "Info",
    shape: Shape::Fields(&[
        key(1, "title", Str),
        key(2, "description", Str),
        key(3, "termsOfService", Str),
        key(4, "contact", msg(&CONTACT)),
        key(5, "license", msg(&LICENSE)),
        key(6, "version", Str),
        ext(7),
        key(8, "summary", Str),
    ]),
};

static SERVER: Msg = Msg {
    name: "Server",
    shape: Shape::Fields(&[
        key(1, "url", Str),
        key(2, "description", Str),
        key(3, "variables", msg(&SERVER_VARIABLES)),
        ext(4),
    ]),
};

static SERVER_VARIABLES: Msg =
    Msg { name: "ServerVariables", shape: Shape::Map(1, msg(&SERVER_VARIABLE)) };

static SERVER_VARIABLE: Msg = Msg {
    name: "ServerVariable",
    shape: Shape::Fields(&[
        key(1, "enum", Strs),
        key(2, "default", Str),
        key(3, "description", Str),
        ext(4),
    ]),
};

static PATHS: Msg = Msg {
    name: "Paths",
    shape: Shape::Fields(&[
        Slot { number: 1, at: At::Pattern(|k| k.starts_with('/')), kind: msg(&PATH_ITEM) },
        ext(2),
    ]),
};

static PATH_ITEM: Msg = Msg {
    name: "PathItem",
    shape: Shape::Fields(&[
        key(1, "$ref", Str),
        key(2, "summary", Str),
        key(3, "description", Str),
        key(4, "get", msg(&OPERATION)),
        key(5, "put", msg(&OPERATION)),
        key(6, "post", msg(&OPERATION)),
        key(7, "delete", msg(&OPERATION)),
        key(8, "options", msg(&OPERATION)),
        key(9, "head", msg(&OPERATION)),
        key(10, "patch", msg(&OPERATION)),
        key(11, "trace", msg(&OPERATION)),
        key(12, "servers", msgs(&SERVER)),
        key(13, "parameters", msgs(&PARAMETER_OR_REFERENCE)),
        ext(14),
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
        key(6, "parameters", msgs(&PARAMETER_OR_REFERENCE)),
        key(7, "requestBody", msg(&REQUEST_BODY_OR_REFERENCE)),
        key(8, "responses", msg(&RESPONSES)),
        key(9, "callbacks", msg(&CALLBACKS_OR_REFERENCES)),
        key(10, "deprecated", Bool),
        key(11, "security", msgs(&SECURITY_REQUIREMENT)),
        key(12, "servers", msgs(&SERVER)),
        ext(13),
    ]),
};

static REFERENCE: Msg = Msg {
    name: "Reference",
    shape: Shape::Fields(&[
        key(1, "$ref", Str),
        key(2, "summary", Str),
        key(3, "description", Str),
        Slot { number: 0, at: At::Ignored, kind: Str },
    ]),
};

static PARAMETER_OR_REFERENCE: Msg = or_reference!("ParameterOrReference", PARAMETER);

static PARAMETER: Msg = Msg {
    name: "Parameter",
    shape: Shape::Fields(&[
        key(1, "name", Str),
        key(2, "in", Str),
        key(3, "description", Str),
        key(4, "required", Bool),
        key(5, "deprecated", Bool),
        key(6, "allowEmptyValue", Bool),
        key(7, "style", Str),
        key(8, "explode", Bool),
        key(9, "allowReserved", Bool),
        key(10, "schema", msg(&SCHEMA_OR_REFERENCE)),
        key(11, "example", Any),
        key(12, "examples", msg(&EXAMPLES_OR_REFERENCES)),
        key(13, "content", msg(&MEDIA_TYPES)),
        ext(14),
    ]),
};

static REQUEST_BODY_OR_REFERENCE: Msg = or_reference!("RequestBodyOrReference", REQUEST_BODY);

static REQUEST_BODY: Msg = Msg {
    name: "RequestBody",
    shape: Shape::Fields(&[
        key(1, "description", Str),
        key(2, "content", msg(&MEDIA_TYPES)),
        key(3, "required", Bool),
        ext(4),
    ]),
};

static MEDIA_TYPES: Msg = Msg { name: "MediaTypes", shape: Shape::Map(1, msg(&MEDIA_TYPE)) };

static MEDIA_TYPE: Msg = Msg {
    name: "MediaType",
    shape: Shape::Fields(&[
        key(1, "schema", msg(&SCHEMA_OR_REFERENCE)),
        key(2, "example", Any),
        key(3, "examples", msg(&EXAMPLES_OR_REFERENCES)),
        key(4, "encoding", msg(&ENCODINGS)),
        ext(5),
    ]),
};

static ENCODINGS: Msg = Msg { name: "Encodings", shape: Shape::Map(1, msg(&ENCODING)) };

static ENCODING: Msg = Msg {
    name: "Encoding",
    shape: Shape::Fields(&[
        key(1, "contentType", Str),
        key(2, "headers", msg(&HEADERS_OR_REFERENCES)),
        key(3, "style", Str),
        key(4, "explode", Bool),
        key(5, "allowReserved", Bool),
        ext(6),
    ]),
};

static RESPONSES: Msg = Msg {
    name: "Responses",
    shape: Shape::Fields(&[
        key(1, "default", msg(&RESPONSE_OR_REFERENCE)),
        Slot { number: 2, at: At::Pattern(is_response_code), kind: msg(&RESPONSE_OR_REFERENCE) },
        ext(3),
    ]),
};

/// `^([0-9X]{3})$`.
fn is_response_code(key: &str) -> bool {
    key.len() == 3 && key.bytes().all(|b| b.is_ascii_digit() || b == b'X')
}

static RESPONSE_OR_REFERENCE: Msg = or_reference!("ResponseOrReference", RESPONSE);

static RESPONSE: Msg = Msg {
    name: "Response",
    shape: Shape::Fields(&[
        key(1, "description", Str),
        key(2, "headers", msg(&HEADERS_OR_REFERENCES)),
        key(3, "content", msg(&MEDIA_TYPES)),
        key(4, "links", msg(&LINKS_OR_REFERENCES)),
        ext(5),
    ]),
};

static HEADERS_OR_REFERENCES: Msg =
    Msg { name: "HeadersOrReferences", shape: Shape::Map(1, msg(&HEADER_OR_REFERENCE)) };

static HEADER_OR_REFERENCE: Msg = or_reference!("HeaderOrReference", HEADER);

static HEADER: Msg = Msg {
    name: "Header",
    shape: Shape::Fields(&[
        key(1, "description", Str),
        key(2, "required", Bool),
        key(3, "deprecated", Bool),
        key(4, "allowEmptyValue", Bool),
        key(5, "style", Str),
        key(6, "explode", Bool),
        key(7, "allowReserved", Bool),
        key(8, "schema", msg(&SCHEMA_OR_REFERENCE)),
        key(9, "example", Any),
        key(10, "examples", msg(&EXAMPLES_OR_REFERENCES)),
        key(11, "content", msg(&MEDIA_TYPES)),
        ext(12),
    ]),
};

static EXAMPLES_OR_REFERENCES: Msg =
    Msg { name: "ExamplesOrReferences", shape: Shape::Map(1, msg(&EXAMPLE_OR_REFERENCE)) };

static EXAMPLE_OR_REFERENCE: Msg = or_reference!("ExampleOrReference", EXAMPLE);

static EXAMPLE: Msg = Msg {
    name: "Example",
    shape: Shape::Fields(&[
        key(1, "summary", Str),
        key(2, "description", Str),
        key(3, "value", Any),
        key(4, "externalValue", Str),
        ext(5),
    ]),
};

static LINKS_OR_REFERENCES: Msg =
    Msg { name: "LinksOrReferences", shape: Shape::Map(1, msg(&LINK_OR_REFERENCE)) };

static LINK_OR_REFERENCE: Msg = or_reference!("LinkOrReference", LINK);

static LINK: Msg = Msg {
    name: "Link",
    shape: Shape::Fields(&[
        key(1, "operationRef", Str),
        key(2, "operationId", Str),
        key(3, "parameters", msg(&ANY_OR_EXPRESSION)),
        key(4, "requestBody", msg(&ANY_OR_EXPRESSION)),
        key(5, "description", Str),
        key(6, "server", msg(&SERVER)),
        ext(7),
    ]),
};

/// gnostic tries `Any` then `Expression` on an object, and both take any
/// object: the later one stands.
static ANY_OR_EXPRESSION: Msg = Msg {
    name: "AnyOrExpression",
    shape: Shape::OneOf(|v| v.is_object().then_some((2, &EXPRESSION))),
};

static EXPRESSION: Msg = Msg { name: "Expression", shape: Shape::Map(1, Any) };

static CALLBACKS_OR_REFERENCES: Msg =
    Msg { name: "CallbacksOrReferences", shape: Shape::Map(1, msg(&CALLBACK_OR_REFERENCE)) };

static CALLBACK_OR_REFERENCE: Msg = or_reference!("CallbackOrReference", CALLBACK);

/// Every key is a path (gnostic's pattern is `^`), the `x-` ones are
/// extensions as well.
static CALLBACK: Msg = Msg {
    name: "Callback",
    shape: Shape::Fields(&[
        Slot { number: 1, at: At::Pattern(|_| true), kind: msg(&PATH_ITEM) },
        ext(2),
    ]),
};

static COMPONENTS: Msg = Msg {
    name: "Components",
    shape: Shape::Fields(&[
        key(1, "schemas", msg(&SCHEMAS_OR_REFERENCES)),
        key(2, "responses", msg(&RESPONSES_OR_REFERENCES)),
        key(3, "parameters", msg(&PARAMETERS_OR_REFERENCES)),
        key(4, "examples", msg(&EXAMPLES_OR_REFERENCES)),
        key(5, "requestBodies", msg(&REQUEST_BODIES_OR_REFERENCES)),
        key(6, "headers", msg(&HEADERS_OR_REFERENCES)),
        key(7, "securitySchemes", msg(&SECURITY_SCHEMES_OR_REFERENCES)),
        key(8, "links", msg(&LINKS_OR_REFERENCES)),
        key(9, "callbacks", msg(&CALLBACKS_OR_REFERENCES)),
        ext(10),
    ]),
};

static SCHEMAS_OR_REFERENCES: Msg =
    Msg { name: "SchemasOrReferences", shape: Shape::Map(1, msg(&SCHEMA_OR_REFERENCE)) };

static RESPONSES_OR_REFERENCES: Msg =
    Msg { name: "ResponsesOrReferences", shape: Shape::Map(1, msg(&RESPONSE_OR_REFERENCE)) };

static PARAMETERS_OR_REFERENCES: Msg =
    Msg { name: "ParametersOrReferences", shape: Shape::Map(1, msg(&PARAMETER_OR_REFERENCE)) };

static REQUEST_BODIES_OR_REFERENCES: Msg = Msg {
    name: "RequestBodiesOrReferences",
    shape: Shape::Map(1, msg(&REQUEST_BODY_OR_REFERENCE)),
};

static SECURITY_SCHEMES_OR_REFERENCES: Msg = Msg {
    name: "SecuritySchemesOrReferences",
    shape: Shape::Map(1, msg(&SECURITY_SCHEME_OR_REFERENCE)),
};

static SECURITY_SCHEME_OR_REFERENCE: Msg =
    or_reference!("SecuritySchemeOrReference", SECURITY_SCHEME);

static SECURITY_SCHEME: Msg = Msg {
    name: "SecurityScheme",
    shape: Shape::Fields(&[
        key(1, "type", Str),
        key(2, "description", Str),
        key(3, "name", Str),
        key(4, "in", Str),
        key(5, "scheme", Str),
        key(6, "bearerFormat", Str),
        key(7, "flows", msg(&OAUTH_FLOWS)),
        key(8, "openIdConnectUrl", Str),
        ext(9),
    ]),
};

static OAUTH_FLOWS: Msg = Msg {
    name: "OauthFlows",
    shape: Shape::Fields(&[
        key(1, "implicit", msg(&OAUTH_FLOW)),
        key(2, "password", msg(&OAUTH_FLOW)),
        key(3, "clientCredentials", msg(&OAUTH_FLOW)),
        key(4, "authorizationCode", msg(&OAUTH_FLOW)),
        ext(5),
    ]),
};

static OAUTH_FLOW: Msg = Msg {
    name: "OauthFlow",
    shape: Shape::Fields(&[
        key(1, "authorizationUrl", Str),
        key(2, "tokenUrl", Str),
        key(3, "refreshUrl", Str),
        key(4, "scopes", msg(&STRINGS)),
        ext(5),
    ]),
};

static STRINGS: Msg = Msg { name: "Strings", shape: Shape::Map(1, Str) };

static SECURITY_REQUIREMENT: Msg =
    Msg { name: "SecurityRequirement", shape: Shape::Map(1, msg(&STRING_ARRAY)) };

static STRING_ARRAY: Msg = Msg { name: "StringArray", shape: Shape::Strings(false) };

static SCHEMA_OR_REFERENCE: Msg = or_reference!("SchemaOrReference", SCHEMA);

pub(super) static SCHEMA: Msg = Msg {
    name: "Schema",
    shape: Shape::Fields(&[
        key(1, "nullable", Bool),
        key(2, "discriminator", msg(&DISCRIMINATOR)),
        key(3, "readOnly", Bool),
        key(4, "writeOnly", Bool),
        key(5, "xml", msg(&XML)),
        key(6, "externalDocs", msg(&EXTERNAL_DOCS)),
        key(7, "example", Any),
        key(8, "deprecated", Bool),
        key(9, "title", Str),
        key(10, "multipleOf", Double),
        key(11, "maximum", Double),
        key(12, "exclusiveMaximum", Bool),
        key(13, "minimum", Double),
        key(14, "exclusiveMinimum", Bool),
        key(15, "maxLength", Int64),
        key(16, "minLength", Int64),
        key(17, "pattern", Str),
        key(18, "maxItems", Int64),
        key(19, "minItems", Int64),
        key(20, "uniqueItems", Bool),
        key(21, "maxProperties", Int64),
        key(22, "minProperties", Int64),
        key(23, "required", Strs),
        key(24, "enum", Anys),
        key(25, "type", Str),
        key(26, "allOf", msgs(&SCHEMA_OR_REFERENCE)),
        key(27, "oneOf", msgs(&SCHEMA_OR_REFERENCE)),
        key(28, "anyOf", msgs(&SCHEMA_OR_REFERENCE)),
        key(29, "not", msg(&SCHEMA)),
        key(30, "items", msg(&ITEMS_ITEM)),
        key(31, "properties", msg(&PROPERTIES)),
        key(32, "additionalProperties", msg(&ADDITIONAL_PROPERTIES_ITEM)),
        key(33, "default", msg(&DEFAULT_TYPE)),
        key(34, "description", Str),
        key(35, "format", Str),
        ext(36),
    ]),
};

static DISCRIMINATOR: Msg = Msg {
    name: "Discriminator",
    shape: Shape::Fields(&[key(1, "propertyName", Str), key(2, "mapping", msg(&STRINGS)), ext(3)]),
};

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

static ITEMS_ITEM: Msg = Msg { name: "ItemsItem", shape: Shape::Items(&SCHEMA_OR_REFERENCE) };

static PROPERTIES: Msg =
    Msg { name: "Properties", shape: Shape::Map(1, msg(&SCHEMA_OR_REFERENCE)) };

static ADDITIONAL_PROPERTIES_ITEM: Msg =
    Msg { name: "AdditionalPropertiesItem", shape: Shape::SchemaOrBool(&SCHEMA_OR_REFERENCE) };

static DEFAULT_TYPE: Msg = Msg { name: "DefaultType", shape: Shape::Scalar };

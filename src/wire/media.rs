//! Every media type and `Accept` list the proxy serves, sends or converts
//! to, in one place, so a spelling is written once (`docs/wire.md` says
//! where each comes from).

/// The JSON media type, as served for OpenAPI documents and legacy discovery.
pub const APPLICATION_JSON: &str = "application/json";

/// `Content-Type` of a protobuf `/openapi/v2` response. Both request
/// spellings (`…spec.v2@v1.0+protobuf` and `…spec.v2.v1.0+protobuf`) are
/// answered with this one (B-2.4).
pub const OPENAPI_V2_PROTOBUF_CONTENT_TYPE: &str =
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// `Content-Type` of a protobuf `/openapi/v3/<key>` response, whichever
/// of the two request spellings asked for it (B-2.1).
pub const OPENAPI_V3_PROTOBUF_CONTENT_TYPE: &str =
    "application/com.github.proto-openapi.spec.v3.v1.0+protobuf";

/// `Content-Type` of aggregated discovery `apidiscovery.k8s.io/v2` as JSON
/// (B-4.4): parameters in this fixed order, no spaces.
pub const DISCOVERY_V2_CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// `Content-Type` of aggregated discovery `apidiscovery.k8s.io/v2beta1` as
/// JSON (B-4.4).
pub const DISCOVERY_V2BETA1_CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";

/// `Content-Type` of aggregated discovery `apidiscovery.k8s.io/v2` as YAML
/// (B-4.4).
pub const DISCOVERY_V2_YAML_CONTENT_TYPE: &str =
    "application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// `Content-Type` of aggregated discovery `apidiscovery.k8s.io/v2beta1` as
/// YAML (B-4.4).
pub const DISCOVERY_V2BETA1_YAML_CONTENT_TYPE: &str =
    "application/yaml;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";

/// `Content-Type` of aggregated discovery `apidiscovery.k8s.io/v2` as
/// Kubernetes protobuf (B-4.4).
pub const DISCOVERY_V2_PROTOBUF_CONTENT_TYPE: &str =
    "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// `Content-Type` of aggregated discovery `apidiscovery.k8s.io/v2beta1` as
/// Kubernetes protobuf (B-4.4).
pub const DISCOVERY_V2BETA1_PROTOBUF_CONTENT_TYPE: &str =
    "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";

/// The YAML media type, as served for legacy discovery (B-5).
pub const APPLICATION_YAML: &str = "application/yaml";

/// Kubernetes' protobuf media type, as served for legacy discovery (B-5).
pub const KUBERNETES_PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// `message` of the 406 `Status` body at `/api` and `/apis` (B-4.3): the
/// media types discovery serves.
pub const DISCOVERY_NOT_ACCEPTABLE_MESSAGE: &str = "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf";

/// The subtype of [`OPENAPI_V2_PROTOBUF_CONTENT_TYPE`], as `Accept` clauses
/// are matched.
pub(crate) const OPENAPI_V2_PROTOBUF_SUBTYPE: &str =
    "com.github.proto-openapi.spec.v2.v1.0+protobuf";
/// The older spelling of the same subtype, which every server version
/// accepts.
pub(crate) const OPENAPI_V2_PROTOBUF_SUBTYPE_DEPRECATED: &str =
    "com.github.proto-openapi.spec.v2@v1.0+protobuf";
/// The subtype of [`OPENAPI_V3_PROTOBUF_CONTENT_TYPE`].
pub(crate) const OPENAPI_V3_PROTOBUF_SUBTYPE: &str =
    "com.github.proto-openapi.spec.v3.v1.0+protobuf";
/// The older spelling with `@`, which handler3 still accepts.
pub(crate) const OPENAPI_V3_PROTOBUF_SUBTYPE_DEPRECATED: &str =
    "com.github.proto-openapi.spec.v3@v1.0+protobuf";
/// The `g=` parameter of aggregated discovery.
pub(crate) const DISCOVERY_GROUP: &str = "apidiscovery.k8s.io";
/// The `as=` parameter of aggregated discovery.
pub(crate) const DISCOVERY_KIND: &str = "APIGroupDiscoveryList";

/// client-go's `Accept` for `/api` and `/apis` (docs/upstream.md#b-6-1): aggregated
/// v2, then v2beta1, then the legacy JSON lists. The poller sends it too.
pub const CLIENT_GO_DISCOVERY_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,\
application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

/// A Swagger 2.0 form body of simple fields.
pub const FORM_URLENCODED: &str = "application/x-www-form-urlencoded";

/// A Swagger 2.0 form body with a `file` field.
pub const MULTIPART_FORM_DATA: &str = "multipart/form-data";

/// Any media type: the content key of a converted request body or response
/// whose Swagger 2.0 operation and document declare no `consumes` or
/// `produces` (docs/wire.md#a-5).
pub const ANY_MEDIA_TYPE: &str = "*/*";

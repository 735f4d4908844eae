//! Evidence beyond `/openapi/v3`, `/api` and `/apis`: `/openapi/v2` (JSON,
//! protobuf, revalidation, gzip, refusal), `/version`, `/`, and the
//! discovery requests clients send in less common forms (trailing slashes,
//! extra Accept parameters, an unknown group-version).
//!
//! `/openapi/v2` is a whole cluster's Swagger document (4 MB for
//! Kubernetes 1.35); like the v3 documents, each answer is reduced to what
//! the rules need as it arrives ([`V2Facts`], [`Outline`]) and dropped.

use std::io::Read as _;

use bytes::Bytes;

use super::evidence::json_ok;
use super::facts::MAX_VALUES;
use super::fetch::{Exchange, Fetcher, Request};
use super::wire_proto::{Outline, v2_outline};
use crate::body::digest::sha512_hex;
use crate::json::tree::{Node, parse_within};
use crate::wire::media::{
    DISCOVERY_V2_PROTOBUF_CONTENT_TYPE, DISCOVERY_V2_YAML_CONTENT_TYPE, KUBERNETES_PROTOBUF,
    OPENAPI_V2_PROTOBUF_CONTENT_TYPE,
};
use crate::wire::name::{is_group_name, is_version_name};

/// The `@` spelling of the v2 protobuf type (client-go's `OpenAPISchema()`).
pub const PROTOBUF_V2_AT: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
/// The `.v1.0` spelling, the one answers carry.
pub const PROTOBUF_V2: &str = OPENAPI_V2_PROTOBUF_CONTENT_TYPE;
/// A group-version no server lists (`.invalid` is reserved, RFC 2606).
pub const UNKNOWN_GROUP_VERSION: &str = "/apis/openapi-proxy-check.invalid/v0";
/// An `Accept` with a parameter no media type defines: ignored upstream.
pub const JSON_WITH_PARAMETER: &str = "application/json;foo=bar";
/// client-go 1.33's discovery `Accept`, asking first for the list
/// without peer servers' resources (`profile=nopeer`).
pub const CLIENT_GO_NOPEER_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";

/// What a Swagger 2.0 body shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct V2Facts {
    /// Upper-hex SHA-512 of the body.
    pub sha512: String,
    /// `swagger`, path names, definition names.
    pub outline: Outline,
    /// Each `(group, version, kind)` listed by a definition's
    /// `x-kubernetes-group-version-kind`, with the definitions listing it.
    pub kinds: Vec<((String, String, String), Vec<String>)>,
}

impl V2Facts {
    /// Examines a Swagger 2.0 body.
    ///
    /// # Errors
    /// Why it is not a JSON object (or too large to examine).
    pub fn of(body: &[u8]) -> Result<Self, String> {
        let tree = parse_within(body, MAX_VALUES).map_err(|e| format!("body is not JSON: {e}"))?;
        let mut kinds: Vec<((String, String, String), Vec<String>)> = Vec::new();
        if let Some(defs) = tree.get("definitions").and_then(Node::as_object) {
            for (name, schema) in defs.iter() {
                let Some(gvks) =
                    schema.get("x-kubernetes-group-version-kind").and_then(Node::as_array)
                else {
                    continue;
                };
                for x in gvks {
                    let field = |k: &str| x.get(k).and_then(Node::as_str).unwrap_or_default();
                    let gvk = (
                        field("group").to_owned(),
                        field("version").to_owned(),
                        field("kind").to_owned(),
                    );
                    match kinds.iter_mut().find(|(k, _)| *k == gvk) {
                        Some((_, names)) => names.push(name.as_str().to_owned()),
                        None => kinds.push((gvk, vec![name.as_str().to_owned()])),
                    }
                }
            }
        }
        Ok(Self { sha512: sha512_hex(body), outline: outline_of(&tree, false), kinds })
    }
}

/// The outline of a JSON OpenAPI document: `swagger`, `paths` and
/// `definitions` (v2), or `openapi`, `paths` and `components.schemas` (v3).
fn outline_of(tree: &Node<'_>, v3: bool) -> Outline {
    let keys = |pointer: &str| -> Vec<String> {
        tree.pointer(pointer)
            .and_then(Node::as_object)
            .map(|o| o.keys().map(|k| k.as_str().to_owned()).collect())
            .unwrap_or_default()
    };
    let (version, schemas) =
        if v3 { ("openapi", "/components/schemas") } else { ("swagger", "/definitions") };
    Outline {
        version: tree.get(version).and_then(Node::as_str).unwrap_or_default().to_owned(),
        paths: keys("/paths"),
        schemas: keys(schemas),
    }
}

/// The outline of a JSON OpenAPI v3 document's body.
///
/// # Errors
/// Why it is not JSON (or too large to examine).
pub fn v3_json_outline(body: &[u8]) -> Result<Outline, String> {
    let tree = parse_within(body, MAX_VALUES).map_err(|e| format!("body is not JSON: {e}"))?;
    Ok(outline_of(&tree, true))
}

/// `/openapi/v2` evidence.
#[derive(Debug, Clone)]
pub struct V2Evidence {
    /// `Accept: application/json`, its body reduced to [`V2Facts`].
    pub json: Exchange,
    /// What that body showed.
    pub facts: Option<Result<V2Facts, String>>,
    /// The same with `If-None-Match` = its ETag (when it had one).
    pub revalidated: Option<Exchange>,
    /// The same with `Accept-Encoding: gzip`.
    pub gzip: Exchange,
    /// SHA-512 of that body once inflated (of the body itself when it was
    /// not gzipped), or why it does not inflate.
    pub gzip_sha512: Option<Result<String, String>>,
    /// Protobuf asked three ways: the `@` spelling, the `.v1.0` spelling,
    /// and the `@` spelling with a JSON fallback (client-go's order).
    pub protobuf: Vec<(Exchange, Option<Result<Outline, String>>)>,
    /// `Accept: text/html`.
    pub text_html: Exchange,
}

/// Fetches the `/openapi/v2` evidence.
pub async fn gather_v2(fetcher: &Fetcher) -> V2Evidence {
    let json = ("Accept", "application/json");
    let (json_ex, facts) =
        fetcher.send_digest(Request::get("/openapi/v2", &[json]), |b| V2Facts::of(b)).await;
    let facts = facts.filter(|_| json_ex.outcome.as_ref().is_ok_and(|r| r.status == 200));
    let etag = json_ex
        .outcome
        .as_ref()
        .ok()
        .filter(|r| r.status == 200)
        .and_then(|r| r.header("etag"))
        .map(str::to_owned);
    let revalidated = match etag {
        Some(etag) => Some(
            fetcher
                .send_digest(Request::get("/openapi/v2", &[json, ("If-None-Match", &etag)]), |_| ())
                .await
                .0,
        ),
        None => None,
    };
    let (gzip, gzip_sha512) = fetcher
        .send_digest(Request::get("/openapi/v2", &[json, ("Accept-Encoding", "gzip")]), |b| {
            b.clone()
        })
        .await;
    let gzip_sha512 = gzip_sha512.map(|body| {
        let gzipped = gzip.outcome.as_ref().is_ok_and(|r| {
            r.header("content-encoding").is_some_and(|v| v.eq_ignore_ascii_case("gzip"))
        });
        if gzipped { inflate(&body).map(|b| sha512_hex(&b)) } else { Ok(sha512_hex(&body)) }
    });
    let at_then_json = format!("{PROTOBUF_V2_AT}, application/json");
    let mut protobuf = Vec::new();
    for accept in [PROTOBUF_V2_AT, PROTOBUF_V2, at_then_json.as_str()] {
        let (ex, outline) = fetcher
            .send_digest(Request::get("/openapi/v2", &[("Accept", accept)]), |b| {
                v2_outline(b).map_err(|e| e.to_string())
            })
            .await;
        protobuf.push((ex, outline));
    }
    let text_html = fetcher
        .send_digest(Request::get("/openapi/v2", &[("Accept", "text/html")]), |_| ())
        .await
        .0;
    V2Evidence { json: json_ex, facts, revalidated, gzip, gzip_sha512, protobuf, text_html }
}

/// A gzip body inflated, within the limit `--max-bytes` put on bodies
/// (four times the largest JSON body Kubernetes serves here).
fn inflate(body: &Bytes) -> Result<Vec<u8>, String> {
    const LIMIT: u64 = 256 * 1024 * 1024;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&body[..])
        .take(LIMIT)
        .read_to_end(&mut out)
        .map_err(|e| format!("body does not inflate as gzip: {e}"))?;
    Ok(out)
}

/// Discovery requests in the forms fewer clients send.
#[derive(Debug, Clone)]
pub struct DiscoveryMore {
    /// `GET /version`.
    pub version: Exchange,
    /// `GET /version/`.
    pub version_slash: Exchange,
    /// `GET /`.
    pub root: Exchange,
    /// `GET /apis/openapi-proxy-check.invalid/v0`.
    pub unknown_group_version: Exchange,
    /// `GET /api/` (JSON).
    pub api_slash: Exchange,
    /// `GET /apis/<g>/` for the first group listed.
    pub group_slash: Option<(String, Exchange)>,
    /// `GET /apis/<g>/<v>/` for the first named group-version listed.
    pub group_version_slash: Option<((String, String), Exchange)>,
    /// `/apis` with `Accept: application/json;foo=bar`.
    pub apis_json_parameter: Exchange,
    /// `/apis` with client-go 1.33's `profile=nopeer` Accept.
    pub apis_nopeer: Exchange,
    /// Aggregated `/apis` in Kubernetes protobuf.
    pub apis_protobuf: Exchange,
    /// Aggregated `/apis` in YAML.
    pub apis_yaml: Exchange,
    /// Legacy `/apis` in Kubernetes protobuf.
    pub apis_legacy_protobuf: Exchange,
}

/// Fetches the discovery requests of [`DiscoveryMore`]; `group` and
/// `group_version` are the first listed (names already validated by the
/// caller's lists are validated again: a path is built from them).
pub async fn gather_discovery_more(
    fetcher: &Fetcher,
    group: Option<&str>,
    group_version: Option<(&str, &str)>,
) -> DiscoveryMore {
    let json = ("Accept", "application/json");
    let send = |path: &str, headers: &[(&str, &str)]| fetcher.send(Request::get(path, headers));
    let group_slash = match group.filter(|g| is_group_name(g)) {
        Some(g) => Some((g.to_owned(), send(&format!("/apis/{g}/"), &[json]).await)),
        None => None,
    };
    let group_version_slash = match group_version
        .filter(|(g, v)| is_group_name(g) && is_version_name(v))
    {
        Some((g, v)) => {
            Some(((g.to_owned(), v.to_owned()), send(&format!("/apis/{g}/{v}/"), &[json]).await))
        }
        None => None,
    };
    DiscoveryMore {
        version: send("/version", &[json]).await,
        version_slash: send("/version/", &[json]).await,
        root: send("/", &[json]).await,
        unknown_group_version: send(UNKNOWN_GROUP_VERSION, &[json]).await,
        api_slash: send("/api/", &[json]).await,
        group_slash,
        group_version_slash,
        apis_json_parameter: send("/apis", &[("Accept", JSON_WITH_PARAMETER)]).await,
        apis_nopeer: send("/apis", &[("Accept", CLIENT_GO_NOPEER_ACCEPT)]).await,
        apis_protobuf: send("/apis", &[("Accept", DISCOVERY_V2_PROTOBUF_CONTENT_TYPE)]).await,
        apis_yaml: send("/apis", &[("Accept", DISCOVERY_V2_YAML_CONTENT_TYPE)]).await,
        apis_legacy_protobuf: send("/apis", &[("Accept", KUBERNETES_PROTOBUF)]).await,
    }
}

/// Whether two exchanges answered the same status and, for a 200, the
/// same JSON (the slash-less and trailing-slash forms of one path).
#[must_use]
pub fn same_answer(a: &Exchange, b: &Exchange) -> bool {
    match (&a.outcome, &b.outcome) {
        (Ok(x), Ok(y)) => x.status == y.status && (x.status != 200 || json_ok(a) == json_ok(b)),
        _ => false,
    }
}

//! `Accept` parsing and media-type negotiation for what we serve: OpenAPI v3
//! documents, `/openapi/v2`, and discovery at `/api` and `/apis`; plus the two
//! `If-None-Match` comparisons those endpoints use.
//!
//! Everything here is pure (strings in, a choice out: no actix types, no I/O)
//! and never panics: every header is client-controlled. Work is bounded on
//! hostile input: at most [`MAX_HEADER_BYTES`] of an `Accept` header are
//! read and at most [`MAX_CLAUSES`] clauses are kept.
//!
//! Rules, by section of the wire reference (`docs/wire.md`):
//! - parsing: munnerz/goautoneg `ParseAccept` (B-4.2), see [`parse_accept`];
//! - OpenAPI v3 documents: kube-openapi handler3 (B-2.1), [`negotiate_openapi`];
//! - `/openapi/v2`: kube-openapi handler (B-2.4), [`negotiate_openapi_v2`];
//! - discovery: apiserver negotiation and the aggregated-discovery wrapper
//!   (B-4.3, B-4.11, B-4.12, Part A 7), [`negotiate_discovery`];
//! - `If-None-Match`: Go `http.ServeContent` (B-1.3) for OpenAPI,
//!   [`if_none_match_matches`]; exact string equality for aggregated
//!   discovery (B-4.4), [`discovery_etag_matches`].
//!
//! Deliberate differences from upstream, each also noted where it is made:
//! - The sort is a real total order; Go's comparator is not one when q and
//!   wildcards disagree (see [`parse_accept`]).
//! - An OpenAPI document whose protobuf rendition is not available (at the
//!   renditions' memory limit, or one gnostic's parse refuses) is
//!   negotiated as if protobuf were not served: its clauses never match,
//!   so negotiation falls through to the next clause or 406 (Part A 10).
//! - An OpenAPI v3 `Accept` that parses to zero clauses gets JSON instead of
//!   upstream's empty 200.
//! - Several `Accept` lines can be joined ([`parse_accept_lines`]); Go's
//!   handlers read only the first line.
//! - q-values in Go-only float syntax (hex floats such as `0x1p-1`) count as
//!   unparsable (q = 0); `NaN` counts as 0 as well.

/// At most this many clauses of an `Accept` header are kept; later ones are
/// ignored. Only clauses that parse count (empty or malformed elements do not
/// push real ones out); the byte limit bounds the work spent on those.
pub const MAX_CLAUSES: usize = 64;

/// At most this many bytes of an `Accept` header (all lines joined with `,`)
/// are read. A longer header is cut at the last `,` within the limit, so the
/// clause that straddles the limit is dropped whole rather than half-read.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;

use super::media::{
    APPLICATION_JSON, APPLICATION_YAML, DISCOVERY_GROUP, DISCOVERY_KIND, DISCOVERY_V2_CONTENT_TYPE,
    DISCOVERY_V2_PROTOBUF_CONTENT_TYPE, DISCOVERY_V2_YAML_CONTENT_TYPE,
    DISCOVERY_V2BETA1_CONTENT_TYPE, DISCOVERY_V2BETA1_PROTOBUF_CONTENT_TYPE,
    DISCOVERY_V2BETA1_YAML_CONTENT_TYPE, KUBERNETES_PROTOBUF, OPENAPI_V2_PROTOBUF_CONTENT_TYPE,
    OPENAPI_V2_PROTOBUF_SUBTYPE, OPENAPI_V2_PROTOBUF_SUBTYPE_DEPRECATED,
    OPENAPI_V3_PROTOBUF_SUBTYPE, OPENAPI_V3_PROTOBUF_SUBTYPE_DEPRECATED,
};

/// One clause of an `Accept` header, borrowing from the header text.
///
/// Mirrors goautoneg's `Accept`: type and subtype trimmed of spaces and
/// compared case-sensitively by everything in this module; `q` taken out of
/// the parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct MediaRange<'a> {
    /// The type, `*` for a wildcard (a lone `*` clause is `*/*`).
    pub type_: &'a str,
    /// The subtype, `*` for a wildcard.
    pub subtype: &'a str,
    /// The quality value: 1 when absent, 0 when unparsable. A q=0 clause is
    /// kept, as goautoneg keeps it; q only orders clauses.
    pub q: f64,
    /// The other parameters in header order, keys and values trimmed of
    /// spaces, values not unquoted. Duplicates are kept here; [`Self::param`]
    /// gives the last one, as Go's map does.
    pub params: Vec<(&'a str, &'a str)>,
}

impl<'a> MediaRange<'a> {
    /// The value of parameter `key` (case-sensitive); the last one wins when
    /// the key repeats, as in goautoneg's `map[string]string`.
    #[must_use]
    pub fn param(&self, key: &str) -> Option<&'a str> {
        self.params.iter().rev().find(|(k, _)| *k == key).map(|&(_, v)| v)
    }
}

/// Parses one `Accept` header line into clauses, best first.
///
/// Follows munnerz/goautoneg `ParseAccept` (B-4.2):
/// - split on `,`; each element trimmed of spaces (only spaces, not tabs);
/// - the media range (before the first `;`) split on `/`: a lone `*` becomes
///   `*/*`, anything else without exactly one `/` is dropped; type and
///   subtype are trimmed of spaces;
/// - each parameter split on its first `=`, key and value trimmed of spaces,
///   the value not unquoted; a parameter without `=` is ignored;
/// - `q` is parsed as a 32-bit float (its value is *not* trimmed, as in Go);
///   unparsable gives 0, absent gives 1; it is removed from the parameters.
///
/// Sorting: higher q first, then a concrete type before `*`, then a
/// concrete subtype before `*`, otherwise header order (a stable sort).
/// Deviation: Go's comparator says "a before b" whenever *any* of those
/// tests prefers a, which is not a strict order when they disagree (for
/// example `application/json;q=0.1` against `*/*`, or `*/json` against
/// `text/*`), so Go's result there depends on its sorting algorithm. Here the
/// key is the lexicographic (q descending, type is `*`, subtype is `*`,
/// header index), so q decides first. Rust's sort may panic on an
/// inconsistent comparator, so Go's is not reused as it is.
///
/// Bounds: only the first [`MAX_HEADER_BYTES`] are read (cut at a clause
/// boundary) and only the first [`MAX_CLAUSES`] parsed clauses are kept.
#[must_use]
pub fn parse_accept(header: &str) -> Vec<MediaRange<'_>> {
    parse_accept_lines(&[header])
}

/// Parses several `Accept` header lines as if they were one line joined with
/// `,` (RFC 9110 §5.3), with the same bounds as [`parse_accept`] applied to
/// the joined text.
///
/// Go's handlers read only the first line (`Header.Get`); a caller that wants
/// that behaviour passes one line.
#[must_use]
pub fn parse_accept_lines<'a>(lines: &[&'a str]) -> Vec<MediaRange<'a>> {
    let mut clauses = Vec::new();
    let mut budget = MAX_HEADER_BYTES;
    'lines: for (i, &line) in lines.iter().enumerate() {
        if i > 0 {
            // The `,` that joins this line to the previous one uses a byte.
            let Some(rest) = budget.checked_sub(1) else { break };
            budget = rest;
        }
        let (line, truncated) = truncate_at_clause_boundary(line, budget);
        budget = budget.saturating_sub(line.len());
        for part in line.split(',') {
            if clauses.len() >= MAX_CLAUSES {
                break 'lines;
            }
            clauses.extend(parse_clause(part));
        }
        if truncated {
            break;
        }
    }
    // Stable, so equal keys keep header order: the key is (q descending,
    // type is `*`, subtype is `*`, index). `q` is never NaN (see `parse_q`),
    // so `total_cmp` agrees with `>` except that it would order -0 before 0,
    // and `parse_q` never yields -0 either.
    clauses.sort_by(|a, b| {
        b.q.total_cmp(&a.q)
            .then_with(|| (a.type_ == "*").cmp(&(b.type_ == "*")))
            .then_with(|| (a.subtype == "*").cmp(&(b.subtype == "*")))
    });
    clauses
}

/// `line` cut to at most `budget` bytes at the last `,` within the limit
/// (the comma excluded), and whether it was cut. With no such comma nothing
/// of the line is kept: its first clause straddles the limit.
fn truncate_at_clause_boundary(line: &str, budget: usize) -> (&str, bool) {
    if line.len() <= budget {
        return (line, false);
    }
    // A comma at index `budget` still closes a clause that fits.
    let cut = line
        .as_bytes()
        .get(..=budget)
        .and_then(|head| head.iter().rposition(|&b| b == b','))
        .unwrap_or(0);
    // `cut` is the index of an ASCII byte or 0, always a char boundary.
    (line.get(..cut).unwrap_or(""), true)
}

/// One comma-separated element, or `None` when goautoneg drops it.
fn parse_clause(part: &str) -> Option<MediaRange<'_>> {
    let part = part.trim_matches(' ');
    let mut pieces = part.split(';');
    let media_range = pieces.next().unwrap_or("");
    let mut halves = media_range.split('/');
    let type_ = halves.next().unwrap_or("").trim_matches(' ');
    let subtype = match (halves.next(), halves.next()) {
        (None, _) if type_ == "*" => "*",
        (Some(subtype), None) => subtype.trim_matches(' '),
        _ => return None,
    };
    let mut q = 1.0;
    let mut params = Vec::new();
    for param in pieces {
        let Some((key, value)) = param.split_once('=') else { continue };
        let key = key.trim_matches(' ');
        if key == "q" {
            // Go: `a.Q, _ = strconv.ParseFloat(sp[1], 32)`, value untrimmed.
            q = parse_q(value);
        } else {
            params.push((key, value.trim_matches(' ')));
        }
    }
    Some(MediaRange { type_, subtype, q, params })
}

/// Go's `strconv.ParseFloat(value, 32)` with the error ignored: rounded to
/// `f32` precision, overflow gives ±infinity, unparsable gives 0.
///
/// Deviations, both harmless since q only orders clauses: Go-only syntax
/// (hex floats, `_` separators) is unparsable here, and NaN (which Go parses
/// and then compares as neither greater nor smaller) becomes 0 so that the
/// sort key is a total order. -0 becomes 0 for the same reason.
fn parse_q(value: &str) -> f64 {
    match value.parse::<f32>() {
        // `+ 0.0` turns -0 into 0.
        Ok(q) if !q.is_nan() => f64::from(q) + 0.0,
        _ => 0.0,
    }
}

/// The answer to an OpenAPI v3 document request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenApiChoice {
    /// Serve the document as `application/json`.
    Json,
    /// Serve the protobuf rendition as
    /// [`super::media::OPENAPI_V3_PROTOBUF_CONTENT_TYPE`].
    Protobuf,
    /// Answer 406 with an empty body.
    NotAcceptable,
}

/// Negotiates an OpenAPI v3 document (`/openapi/v3/<key>`, B-2.1) as
/// handler3 does: for each clause in sorted order, `application/json`,
/// then (only if `have_protobuf`) `…spec.v3.v1.0+protobuf` and the old
/// `…spec.v3@v1.0+protobuf`. Wildcards therefore give JSON, and q decides
/// between an explicit protobuf clause and a JSON one.
///
/// A missing or empty header is `*/*`; a header that parses to zero
/// clauses gets JSON, as in [`negotiate_openapi`].
#[must_use]
pub fn negotiate_openapi_document(accept: Option<&str>, have_protobuf: bool) -> OpenApiChoice {
    let header = match accept {
        None | Some("") => return OpenApiChoice::Json,
        Some(header) => header,
    };
    let clauses = parse_accept(header);
    // Deliberate: upstream writes nothing (an empty 200) here.
    if clauses.is_empty() {
        return OpenApiChoice::Json;
    }
    for clause in &clauses {
        if openapi_matches(clause, "json") {
            return OpenApiChoice::Json;
        }
        if have_protobuf
            && (openapi_matches(clause, OPENAPI_V3_PROTOBUF_SUBTYPE)
                || openapi_matches(clause, OPENAPI_V3_PROTOBUF_SUBTYPE_DEPRECATED))
        {
            return OpenApiChoice::Protobuf;
        }
    }
    OpenApiChoice::NotAcceptable
}

/// Negotiates an OpenAPI v3 document (`/openapi/v3/<key>`, B-2.1) that has
/// no protobuf rendition: [`negotiate_openapi_document`] without it.
///
/// A clause matches if its type is `application` or `*` and its subtype is
/// `json` or `*` (so `*/json` matches, as in handler3); parameters are
/// ignored; q only orders clauses. Protobuf clauses do not match.
///
/// A missing or empty header is `*/*`, hence JSON. A header that parses to
/// zero clauses (`Accept: foo`) also gets JSON: upstream returns an empty
/// 200 there, a quirk not worth copying.
#[must_use]
pub fn negotiate_openapi(accept: Option<&str>) -> OpenApiChoice {
    let header = match accept {
        None | Some("") => return OpenApiChoice::Json,
        Some(header) => header,
    };
    let clauses = parse_accept(header);
    // Deliberate: upstream writes nothing (an empty 200) here.
    if clauses.is_empty() {
        return OpenApiChoice::Json;
    }
    // Only one candidate, so the first matching clause is any matching one.
    if clauses.iter().any(|clause| openapi_matches(clause, "json")) {
        OpenApiChoice::Json
    } else {
        OpenApiChoice::NotAcceptable
    }
}

/// The answer to a `/openapi/v2` request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenApiV2Choice {
    /// Serve the document as `application/json`.
    Json,
    /// Serve the protobuf rendition as [`OPENAPI_V2_PROTOBUF_CONTENT_TYPE`].
    Protobuf,
    /// Answer 406 with an empty body.
    NotAcceptable,
}

impl OpenApiV2Choice {
    /// The `Content-Type` to answer with, `None` for [`Self::NotAcceptable`].
    #[must_use]
    pub fn content_type(self) -> Option<&'static str> {
        match self {
            Self::Json => Some(APPLICATION_JSON),
            Self::Protobuf => Some(OPENAPI_V2_PROTOBUF_CONTENT_TYPE),
            Self::NotAcceptable => None,
        }
    }
}

/// Negotiates `/openapi/v2` (B-2.4), matching like [`negotiate_openapi`].
///
/// For each clause in sorted order the candidates are tried in upstream's
/// order: `application/json`, then, only if `have_protobuf`,
/// `application/com.github.proto-openapi.spec.v2@v1.0+protobuf` and
/// `application/com.github.proto-openapi.spec.v2.v1.0+protobuf` (both give
/// [`OpenApiV2Choice::Protobuf`]). So wildcards give JSON, and q decides
/// between an explicit protobuf clause and a JSON one.
///
/// A missing or empty header is `*/*`. Unlike [`negotiate_openapi`], a
/// header that parses to zero clauses is not acceptable: that is upstream's
/// v2 handler (it has no early return), and it is not a quirk.
#[must_use]
pub fn negotiate_openapi_v2(accept: Option<&str>, have_protobuf: bool) -> OpenApiV2Choice {
    let header = match accept {
        None | Some("") => "*/*",
        Some(header) => header,
    };
    for clause in parse_accept(header) {
        if openapi_matches(&clause, "json") {
            return OpenApiV2Choice::Json;
        }
        if have_protobuf
            && (openapi_matches(&clause, OPENAPI_V2_PROTOBUF_SUBTYPE_DEPRECATED)
                || openapi_matches(&clause, OPENAPI_V2_PROTOBUF_SUBTYPE))
        {
            return OpenApiV2Choice::Protobuf;
        }
    }
    OpenApiV2Choice::NotAcceptable
}

/// kube-openapi's test: type `application` or `*`, subtype equal or `*`.
fn openapi_matches(clause: &MediaRange<'_>, subtype: &str) -> bool {
    (clause.type_ == "application" || clause.type_ == "*")
        && (clause.subtype == subtype || clause.subtype == "*")
}

/// Which `apidiscovery.k8s.io` version an aggregated answer uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiscoveryVersion {
    /// `apidiscovery.k8s.io/v2`.
    V2,
    /// `apidiscovery.k8s.io/v2beta1`, field-for-field identical to v2.
    V2beta1,
}

impl DiscoveryVersion {
    /// The exact `Content-Type` of the aggregated JSON answer (B-4.4).
    #[must_use]
    pub fn content_type(self) -> &'static str {
        self.content_type_as(DiscoveryFormat::Json)
    }

    /// The exact `Content-Type` of the aggregated answer in `format`
    /// (B-4.4): the base type, then `g`, `v` and `as`.
    #[must_use]
    pub fn content_type_as(self, format: DiscoveryFormat) -> &'static str {
        match (self, format) {
            (Self::V2, DiscoveryFormat::Json) => DISCOVERY_V2_CONTENT_TYPE,
            (Self::V2beta1, DiscoveryFormat::Json) => DISCOVERY_V2BETA1_CONTENT_TYPE,
            (Self::V2, DiscoveryFormat::Yaml) => DISCOVERY_V2_YAML_CONTENT_TYPE,
            (Self::V2beta1, DiscoveryFormat::Yaml) => DISCOVERY_V2BETA1_YAML_CONTENT_TYPE,
            (Self::V2, DiscoveryFormat::Protobuf) => DISCOVERY_V2_PROTOBUF_CONTENT_TYPE,
            (Self::V2beta1, DiscoveryFormat::Protobuf) => DISCOVERY_V2BETA1_PROTOBUF_CONTENT_TYPE,
        }
    }

    /// The `apiVersion` of the aggregated list.
    #[must_use]
    pub fn api_version(self) -> &'static str {
        match self {
            Self::V2 => "apidiscovery.k8s.io/v2",
            Self::V2beta1 => "apidiscovery.k8s.io/v2beta1",
        }
    }
}

/// The media type a discovery answer is written in: what apiserver's
/// discovery serializer supports, in its order (B-4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DiscoveryFormat {
    /// `application/json`.
    Json,
    /// `application/yaml`.
    Yaml,
    /// `application/vnd.kubernetes.protobuf`.
    Protobuf,
}

impl DiscoveryFormat {
    /// Every format, in apiserver's order of preference.
    pub const ALL: [Self; 3] = [Self::Json, Self::Yaml, Self::Protobuf];

    /// The `Content-Type` of a legacy answer in this format (B-5).
    #[must_use]
    pub fn content_type(self) -> &'static str {
        match self {
            Self::Json => APPLICATION_JSON,
            Self::Yaml => APPLICATION_YAML,
            Self::Protobuf => KUBERNETES_PROTOBUF,
        }
    }

    /// Type and subtype, as clauses are matched.
    fn media(self) -> (&'static str, &'static str) {
        match self {
            Self::Json => ("application", "json"),
            Self::Yaml => ("application", "yaml"),
            Self::Protobuf => ("application", "vnd.kubernetes.protobuf"),
        }
    }

    /// Whether its serializer can stream (apimachinery's YAML serializer
    /// has no stream serializer; JSON and protobuf do).
    fn streams(self) -> bool {
        self != Self::Yaml
    }
}

/// The answer to a discovery request at `/api` and `/apis`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiscoveryChoice {
    /// Serve the aggregated `APIGroupDiscoveryList` in a format.
    Aggregated(DiscoveryVersion, DiscoveryFormat),
    /// Serve the legacy `APIVersions` / `APIGroupList` (or the legacy
    /// document of a legacy-only path) in a format.
    Legacy(DiscoveryFormat),
    /// Answer 406 with the `Status` body carrying
    /// [`DISCOVERY_NOT_ACCEPTABLE_MESSAGE`](crate::wire::media::DISCOVERY_NOT_ACCEPTABLE_MESSAGE).
    NotAcceptable,
}

/// Negotiates discovery at `/api` and `/apis` (B-4.3, Part A 7).
///
/// The formats are `application/json`, `application/yaml` and
/// `application/vnd.kubernetes.protobuf`, tried in that order for each
/// clause, as apiserver tries its serializers. A clause matches a format on
/// its exact type, on `application/*` or on `*/*` (not `*/json`), so a
/// wildcard gives JSON.
///
/// 1. Missing or empty header: legacy JSON.
/// 2. The first clause in sorted order, and the first format it matches,
///    that is an acceptable *aggregated* request wins, whatever plain
///    clauses come before it: `g`, `v` and `as` must all be present and be
///    `apidiscovery.k8s.io`, `v2` (or `v2beta1` when `serve_v2beta1`) and
///    `APIGroupDiscoveryList`. q only ranks aggregated clauses among
///    themselves.
/// 3. Otherwise the first clause and format that asks for no
///    transformation (none of `g`, `v`, `as` present, even empty) gives the
///    legacy document in that format, else not acceptable.
///
/// In both passes, as in apiserver's `acceptMediaTypeOptions`: a non-empty
/// `sv` makes a clause unacceptable; a non-empty `stream` must be `watch`
/// (the one stream discovery allows) and the format must stream (YAML does
/// not); `profile` (B-4.12), `pretty` and unknown parameters are ignored;
/// parameter order is irrelevant and a repeated parameter counts with its
/// last value.
#[must_use]
pub fn negotiate_discovery(accept: Option<&str>, serve_v2beta1: bool) -> DiscoveryChoice {
    let header = match accept {
        None | Some("") => return DiscoveryChoice::Legacy(DiscoveryFormat::Json),
        Some(header) => header,
    };
    let clauses = parse_accept(header);
    // The `/api` and `/apis` wrapper only looks for aggregated clauses.
    let aggregated = discovery_options(&clauses).find_map(|(format, t)| {
        t.aggregated_version(serve_v2beta1).map(|v| DiscoveryChoice::Aggregated(v, format))
    });
    // Then the legacy handler negotiates with the default restriction.
    aggregated.unwrap_or_else(|| legacy_choice(&clauses))
}

/// Negotiates a discovery endpoint that only has the legacy form
/// (`/apis/`, `/apis/<group>`, `/apis/<group>/<version>`, `/api/v1`): the
/// second pass of [`negotiate_discovery`] alone. An aggregated clause is
/// never acceptable here (B-4.1: `/apis/` is wired straight to the legacy
/// handler).
#[must_use]
pub fn negotiate_legacy_discovery(accept: Option<&str>) -> DiscoveryChoice {
    match accept {
        None | Some("") => DiscoveryChoice::Legacy(DiscoveryFormat::Json),
        Some(header) => legacy_choice(&parse_accept(header)),
    }
}

fn legacy_choice(clauses: &[MediaRange<'_>]) -> DiscoveryChoice {
    discovery_options(clauses)
        .find(|(_, t)| *t == Transform::None)
        .map_or(DiscoveryChoice::NotAcceptable, |(format, _)| DiscoveryChoice::Legacy(format))
}

/// Every (format, transformation) the clauses accept, in apiserver's
/// order: clause by clause, and within a clause format by format.
fn discovery_options<'c, 'a>(
    clauses: &'c [MediaRange<'a>],
) -> impl Iterator<Item = (DiscoveryFormat, Transform<'a>)> + 'c {
    clauses.iter().flat_map(|clause| {
        DiscoveryFormat::ALL
            .into_iter()
            .filter(move |format| discovery_matches(clause, *format))
            .filter_map(move |format| transform(clause, format).map(|t| (format, t)))
    })
}

/// apiserver's `NegotiateMediaTypeOptions` test against a format: exact,
/// `type/*`, or `*/*`.
fn discovery_matches(clause: &MediaRange<'_>, format: DiscoveryFormat) -> bool {
    let (type_, subtype) = format.media();
    (clause.type_ == type_ && (clause.subtype == subtype || clause.subtype == "*"))
        || (clause.type_ == "*" && clause.subtype == "*")
}

/// The transformation a discovery clause requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transform<'a> {
    /// None of `g`, `v`, `as`: the endpoint's own (legacy) type.
    None,
    /// Some of them, absent ones empty, as Go fills a `GroupVersionKind`.
    Convert { group: &'a str, version: &'a str, kind: &'a str },
}

impl Transform<'_> {
    fn aggregated_version(self, serve_v2beta1: bool) -> Option<DiscoveryVersion> {
        let Self::Convert { group: DISCOVERY_GROUP, version, kind: DISCOVERY_KIND } = self else {
            return None;
        };
        match version {
            "v2" => Some(DiscoveryVersion::V2),
            "v2beta1" if serve_v2beta1 => Some(DiscoveryVersion::V2beta1),
            _ => None,
        }
    }
}

/// apiserver's `acceptMediaTypeOptions` for `format`'s serializer on a
/// discovery endpoint; `None` when the clause is unacceptable whatever it
/// asks for.
fn transform<'a>(clause: &MediaRange<'a>, format: DiscoveryFormat) -> Option<Transform<'a>> {
    // A stream needs a serializer that streams, and discovery allows only
    // `watch`.
    if clause
        .param("stream")
        .is_some_and(|stream| !stream.is_empty() && (stream != "watch" || !format.streams()))
    {
        return None;
    }
    // Discovery endpoints allow no server version.
    if clause.param("sv").is_some_and(|sv| !sv.is_empty()) {
        return None;
    }
    let (group, version, kind) = (clause.param("g"), clause.param("v"), clause.param("as"));
    if group.is_none() && version.is_none() && kind.is_none() {
        return Some(Transform::None);
    }
    Some(Transform::Convert {
        group: group.unwrap_or(""),
        version: version.unwrap_or(""),
        kind: kind.unwrap_or(""),
    })
}

/// Whether `If-None-Match` matches `etag` the way Go's `http.ServeContent`
/// decides (B-1.3), for OpenAPI documents and the OpenAPI root.
///
/// `etag` is the quoted form we send (`"HEX"`). A missing or empty header
/// does not match. The header is a comma-separated list, whitespace around
/// members tolerated; `*` matches anything; comparison is weak (`W/"x"`
/// matches `"x"`). As in Go, the scan stops at the first malformed member,
/// so members after it are not considered.
#[must_use]
pub fn if_none_match_matches(header: Option<&str>, etag: &str) -> bool {
    let Some(mut rest) = header else { return false };
    // What clients send nearly always: the one ETag they were given.
    if rest == etag {
        return true;
    }
    loop {
        rest = trim_ascii_space(rest);
        match rest.as_bytes().first() {
            None => return false,
            Some(b',') => {
                rest = rest.get(1..).unwrap_or("");
                continue;
            }
            Some(b'*') => return true,
            Some(_) => {}
        }
        let Some((tag, after)) = scan_etag(rest) else { return false };
        if weak_eq(tag, etag) {
            return true;
        }
        rest = after;
    }
}

/// Whether `If-None-Match` matches `etag` the way aggregated discovery
/// decides (B-4.4): the raw header equals the quoted ETag exactly. No `W/`,
/// no lists, no `*`.
#[must_use]
pub fn discovery_etag_matches(header: Option<&str>, etag: &str) -> bool {
    header == Some(etag)
}

/// Go's `textproto.TrimString`: ASCII space, tab, CR and LF.
fn trim_ascii_space(s: &str) -> &str {
    s.trim_matches([' ', '\t', '\r', '\n'])
}

/// Go's `scanETag`: an entity tag (`"x"` or `W/"x"`) at the start of `s`,
/// and what follows it; `None` if `s` does not start with a valid one.
fn scan_etag(s: &str) -> Option<(&str, &str)> {
    let start = if s.starts_with("W/") { 2 } else { 0 };
    let bytes = s.as_bytes();
    if bytes.len() < start + 2 || bytes.get(start) != Some(&b'"') {
        return None;
    }
    for (i, &c) in bytes.iter().enumerate().skip(start + 1) {
        match c {
            b'"' => return Some((s.get(..=i)?, s.get(i + 1..)?)),
            0x21 | 0x23..=0x7e | 0x80.. => {}
            _ => return None,
        }
    }
    None
}

/// Go's `etagWeakMatch`.
fn weak_eq(a: &str, b: &str) -> bool {
    a.strip_prefix("W/").unwrap_or(a) == b.strip_prefix("W/").unwrap_or(b)
}

#[cfg(test)]
mod tests;

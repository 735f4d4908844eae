//! `Accept` parsing and media-type negotiation for what we serve: OpenAPI v3
//! documents, `/openapi/v2`, and discovery at `/api` and `/apis`; plus the two
//! `If-None-Match` comparisons those endpoints use.
//!
//! Everything here is pure (strings in, a choice out: no actix types, no I/O)
//! and never panics: every header is client-controlled. Work is bounded on
//! hostile input: at most [`MAX_HEADER_BYTES`] of an `Accept` header are
//! read and at most [`MAX_CLAUSES`] clauses are kept.
//!
//! Rules, by section of the wire reference (`BEHAVIOR.md`):
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
//! - Protobuf (OpenAPI v3, discovery) and YAML (discovery) are not served
//!   (Part A 10): such clauses never match, so negotiation falls through to
//!   the next clause, the legacy form, or 406.
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

/// The JSON media type, as served for OpenAPI documents and legacy discovery.
pub const APPLICATION_JSON: &str = "application/json";

/// `Content-Type` of a protobuf `/openapi/v2` response. Both request
/// spellings (`…spec.v2@v1.0+protobuf` and `…spec.v2.v1.0+protobuf`) are
/// answered with this one (B-2.4).
pub const OPENAPI_V2_PROTOBUF_CONTENT_TYPE: &str =
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// `Content-Type` of aggregated discovery `apidiscovery.k8s.io/v2` as JSON
/// (B-4.4): parameters in this fixed order, no spaces.
pub const DISCOVERY_V2_CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// `Content-Type` of aggregated discovery `apidiscovery.k8s.io/v2beta1` as
/// JSON (B-4.4).
pub const DISCOVERY_V2BETA1_CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";

/// `message` of the 406 `Status` body at `/api` and `/apis` (B-4.3).
///
/// It lists the media types upstream supports, including YAML and protobuf
/// which this version does not serve: the text is kept byte-for-byte.
pub const DISCOVERY_NOT_ACCEPTABLE_MESSAGE: &str = "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf";

const OPENAPI_V2_PROTOBUF_SUBTYPE: &str = "com.github.proto-openapi.spec.v2.v1.0+protobuf";
const OPENAPI_V2_PROTOBUF_SUBTYPE_DEPRECATED: &str =
    "com.github.proto-openapi.spec.v2@v1.0+protobuf";
const DISCOVERY_GROUP: &str = "apidiscovery.k8s.io";
const DISCOVERY_KIND: &str = "APIGroupDiscoveryList";

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
    /// Answer 406 with an empty body.
    NotAcceptable,
}

/// Negotiates an OpenAPI v3 document (`/openapi/v3/<key>`, B-2.1).
///
/// A clause matches if its type is `application` or `*` and its subtype is
/// `json` or `*` (so `*/json` matches, as in handler3); parameters are
/// ignored; q only orders clauses. Protobuf is not served in this version
/// (Part A 10): protobuf clauses do not match.
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
        match self {
            Self::V2 => DISCOVERY_V2_CONTENT_TYPE,
            Self::V2beta1 => DISCOVERY_V2BETA1_CONTENT_TYPE,
        }
    }
}

/// The answer to a discovery request at `/api` or `/apis`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiscoveryChoice {
    /// Serve the aggregated `APIGroupDiscoveryList` as JSON.
    Aggregated(DiscoveryVersion),
    /// Serve the legacy `APIVersions` / `APIGroupList` as `application/json`.
    Legacy,
    /// Answer 406 with the `Status` body carrying
    /// [`DISCOVERY_NOT_ACCEPTABLE_MESSAGE`].
    NotAcceptable,
}

/// Negotiates discovery at `/api` and `/apis` (B-4.3, Part A 7).
///
/// Upstream supports `application/json`, `application/yaml` and
/// `application/vnd.kubernetes.protobuf`, in that order; this version serves
/// only JSON (Part A 10), so YAML and protobuf clauses, aggregated or not,
/// never match and negotiation falls through. A clause matches JSON on
/// `application/json`, `application/*` or `*/*` (not `*/json`).
///
/// 1. Missing or empty header: legacy.
/// 2. The first clause in sorted order that is an acceptable *aggregated*
///    request wins, whatever plain clauses come before it: `g`, `v` and `as`
///    must all be present and be `apidiscovery.k8s.io`, `v2` (or `v2beta1`
///    when `serve_v2beta1`) and `APIGroupDiscoveryList`. q only ranks
///    aggregated clauses among themselves.
/// 3. Otherwise legacy if some clause asks for no transformation (none of
///    `g`, `v`, `as` present, even empty), else not acceptable.
///
/// In both passes, as in apiserver's `acceptMediaTypeOptions`: a non-empty
/// `sv` makes a clause unacceptable; `stream` must be empty or `watch` (the
/// one stream discovery allows); `profile` (B-4.12), `pretty` and unknown
/// parameters are ignored; parameter order is irrelevant and a repeated
/// parameter counts with its last value.
#[must_use]
pub fn negotiate_discovery(accept: Option<&str>, serve_v2beta1: bool) -> DiscoveryChoice {
    let header = match accept {
        None | Some("") => return DiscoveryChoice::Legacy,
        Some(header) => header,
    };
    let clauses = parse_accept(header);
    let json_options =
        || clauses.iter().filter(|clause| discovery_matches_json(clause)).filter_map(transform);
    // The `/api` and `/apis` wrapper only looks for aggregated clauses.
    if let Some(version) = json_options().find_map(|t| t.aggregated_version(serve_v2beta1)) {
        return DiscoveryChoice::Aggregated(version);
    }
    // Then the legacy handler negotiates with the default restriction.
    if json_options().any(|t| t == Transform::None) {
        DiscoveryChoice::Legacy
    } else {
        DiscoveryChoice::NotAcceptable
    }
}

/// Negotiates a discovery endpoint that only has the legacy form
/// (`/apis/`, `/apis/<group>`, `/apis/<group>/<version>`, `/api/v1`): the
/// second pass of [`negotiate_discovery`] alone. An aggregated clause is
/// never acceptable here (B-4.1: `/apis/` is wired straight to the legacy
/// handler).
#[must_use]
pub fn negotiate_legacy_discovery(accept: Option<&str>) -> DiscoveryChoice {
    let header = match accept {
        None | Some("") => return DiscoveryChoice::Legacy,
        Some(header) => header,
    };
    let clauses = parse_accept(header);
    let legacy = clauses
        .iter()
        .filter(|clause| discovery_matches_json(clause))
        .filter_map(transform)
        .any(|t| t == Transform::None);
    if legacy { DiscoveryChoice::Legacy } else { DiscoveryChoice::NotAcceptable }
}

/// apiserver's `NegotiateMediaTypeOptions` test against `application/json`:
/// exact, `type/*`, or `*/*`.
fn discovery_matches_json(clause: &MediaRange<'_>) -> bool {
    matches!((clause.type_, clause.subtype), ("application", "json" | "*") | ("*", "*"))
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

/// apiserver's `acceptMediaTypeOptions` for the JSON serializer on a
/// discovery endpoint; `None` when the clause is unacceptable whatever it
/// asks for.
fn transform<'a>(clause: &MediaRange<'a>) -> Option<Transform<'a>> {
    // The JSON serializer can stream, and discovery allows only `watch`.
    if clause.param("stream").is_some_and(|stream| !stream.is_empty() && stream != "watch") {
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
mod tests {
    #[test]
    fn legacy_only_endpoints_refuse_an_aggregated_only_accept() {
        use super::*;
        let aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
        assert_eq!(negotiate_legacy_discovery(Some(aggregated)), DiscoveryChoice::NotAcceptable);
        assert_eq!(
            negotiate_legacy_discovery(Some(&format!("{aggregated},application/json"))),
            DiscoveryChoice::Legacy
        );
        assert_eq!(negotiate_legacy_discovery(None), DiscoveryChoice::Legacy);
        assert_eq!(
            negotiate_legacy_discovery(Some("application/json, */*")),
            DiscoveryChoice::Legacy
        );
        assert_eq!(
            negotiate_legacy_discovery(Some("application/yaml")),
            DiscoveryChoice::NotAcceptable
        );
    }

    use super::*;
    use proptest::prelude::*;

    // Accept headers client-go sends for discovery (B-6.1).
    const CLIENT_GO: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
    const CLIENT_GO_NOPEER: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
    const CLIENT_GO_NEWEST: &str =
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
    const CLIENT_GO_NEWEST_NOPEER: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
    const KUBECTL: &str = "application/json, */*";
    const V2BETA1_ONLY: &str =
        "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
    const PROTO_V3: &str = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf";
    const PROTO_V3_AT: &str = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf";
    const PROTO_V2: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
    const PROTO_V2_AT: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
    const ETAG: &str = "\"ABC123\"";

    fn types(header: &str) -> Vec<String> {
        parse_accept(header).iter().map(|c| format!("{}/{}", c.type_, c.subtype)).collect()
    }

    fn one(header: &str) -> MediaRange<'_> {
        let mut clauses = parse_accept(header);
        assert_eq!(clauses.len(), 1, "{header:?} parses to {clauses:?}");
        clauses.remove(0)
    }

    fn discovery(header: &str) -> DiscoveryChoice {
        negotiate_discovery(Some(header), true)
    }

    // --- parsing (B-4.2) ---

    #[test]
    fn clauses_are_split_on_commas_and_trimmed_of_spaces() {
        assert_eq!(types("  text/html ,application/json  "), ["text/html", "application/json"]);
    }

    #[test]
    fn tabs_are_not_trimmed() {
        assert_eq!(one("\tapplication/json").type_, "\tapplication");
    }

    #[test]
    fn lone_star_becomes_star_slash_star() {
        assert_eq!(types("*;q=0.5"), ["*/*"]);
    }

    #[test]
    fn element_without_slash_is_dropped() {
        assert!(parse_accept("json").is_empty());
    }

    #[test]
    fn element_with_two_slashes_is_dropped() {
        assert!(parse_accept("application/json/x").is_empty());
    }

    #[test]
    fn empty_elements_are_dropped() {
        assert_eq!(types(",, ,application/json,"), ["application/json"]);
    }

    #[test]
    fn spaces_around_slash_are_trimmed() {
        assert_eq!(types("application / json"), ["application/json"]);
    }

    #[test]
    fn empty_type_or_subtype_is_kept() {
        assert_eq!(types("/json,application/"), ["/json", "application/"]);
    }

    #[test]
    fn parameter_is_split_on_first_equals() {
        assert_eq!(one("a/b;k=v=w").params, [("k", "v=w")]);
    }

    #[test]
    fn parameter_key_and_value_are_trimmed_of_spaces() {
        assert_eq!(one("a/b; k = v ;x=y").params, [("k", "v"), ("x", "y")]);
    }

    #[test]
    fn parameter_without_equals_is_ignored() {
        assert_eq!(one("a/b;flag;k=v").params, [("k", "v")]);
    }

    #[test]
    fn quoted_parameter_value_is_kept_verbatim() {
        assert_eq!(one("a/b;v=\"v2\"").param("v"), Some("\"v2\""));
    }

    #[test]
    fn parameter_keys_are_case_sensitive() {
        assert_eq!(one("a/b;G=x").param("g"), None);
    }

    #[test]
    fn repeated_parameter_counts_with_its_last_value() {
        assert_eq!(one("a/b;v=v1;v=v2").param("v"), Some("v2"));
    }

    #[test]
    fn q_defaults_to_one() {
        assert_eq!(one("a/b").q, 1.0);
    }

    #[test]
    fn q_is_removed_from_params() {
        let clause = one("a/b;q=0.5;k=v");
        assert_eq!((clause.q, clause.params), (0.5, vec![("k", "v")]));
    }

    #[test]
    fn q_is_parsed_with_float32_precision() {
        assert_eq!(one("a/b;q=0.1").q, f64::from(0.1_f32));
    }

    #[test]
    fn unparsable_q_is_zero() {
        assert_eq!(one("a/b;q=high").q, 0.0);
    }

    #[test]
    fn q_value_is_not_trimmed() {
        assert_eq!(one("a/b;q= 0.5;k=v").q, 0.0);
    }

    #[test]
    fn nan_q_counts_as_zero() {
        assert_eq!(one("a/b;q=NaN").q, 0.0);
    }

    #[test]
    fn uppercase_q_is_an_ordinary_parameter() {
        let clause = one("a/b;Q=0.5");
        assert_eq!((clause.q, clause.params), (1.0, vec![("Q", "0.5")]));
    }

    #[test]
    fn q_zero_clause_is_kept() {
        assert_eq!(one("application/json;q=0").q, 0.0);
    }

    #[test]
    fn higher_q_sorts_first() {
        assert_eq!(types("a/low;q=0.1,a/high;q=0.9,a/one"), ["a/one", "a/high", "a/low"]);
    }

    #[test]
    fn wildcard_type_sorts_after_concrete() {
        assert_eq!(types("*/*,text/html"), ["text/html", "*/*"]);
    }

    #[test]
    fn wildcard_subtype_sorts_after_concrete() {
        assert_eq!(types("text/*,text/html"), ["text/html", "text/*"]);
    }

    #[test]
    fn equal_clauses_keep_header_order() {
        assert_eq!(types("b/b,a/a,c/c"), ["b/b", "a/a", "c/c"]);
    }

    #[test]
    fn q_outranks_wildcards_where_go_is_ambiguous() {
        assert_eq!(types("application/json;q=0.1,*/*"), ["*/*", "application/json"]);
    }

    #[test]
    fn several_lines_parse_like_one_comma_joined_line() {
        assert_eq!(
            parse_accept_lines(&["text/html;q=0.5", "application/json"]),
            parse_accept("text/html;q=0.5,application/json")
        );
    }

    #[test]
    fn clauses_beyond_64_are_ignored() {
        let header = vec!["a/b"; MAX_CLAUSES].join(",") + ",application/json";
        let clauses = parse_accept(&header);
        assert_eq!(clauses.len(), MAX_CLAUSES);
        assert!(clauses.iter().all(|c| c.subtype == "b"));
    }

    #[test]
    fn malformed_elements_do_not_count_toward_the_clause_limit() {
        let header = vec!["junk"; 100].join(",") + ",application/json";
        assert_eq!(types(&header), ["application/json"]);
    }

    #[test]
    fn long_header_is_truncated_at_a_clause_boundary() {
        // The comma after `b/c` is the byte just past the limit.
        let head = "x".repeat(MAX_HEADER_BYTES - 6);
        let header = format!("a/{head},b/c,d/e");
        assert_eq!(header.find(",d/e"), Some(MAX_HEADER_BYTES));
        assert_eq!(types(&header), [format!("a/{head}"), "b/c".to_owned()]);
    }

    #[test]
    fn clause_straddling_the_limit_is_dropped_whole() {
        let header = format!("a/b,c/{}", "x".repeat(MAX_HEADER_BYTES));
        assert_eq!(types(&header), ["a/b"]);
    }

    #[test]
    fn long_header_without_a_comma_parses_to_nothing() {
        assert!(parse_accept(&format!("a/{}", "x".repeat(MAX_HEADER_BYTES))).is_empty());
    }

    #[test]
    fn byte_limit_spans_all_lines() {
        let first = format!("a/{}", "x".repeat(MAX_HEADER_BYTES - 4));
        assert_eq!(parse_accept_lines(&[&first, "b/c"]).len(), 1);
    }

    // --- OpenAPI v3 documents (B-2.1, Part A 10) ---

    #[test]
    fn openapi_missing_accept_gives_json() {
        assert_eq!(negotiate_openapi(None), OpenApiChoice::Json);
    }

    #[test]
    fn openapi_empty_accept_gives_json() {
        assert_eq!(negotiate_openapi(Some("")), OpenApiChoice::Json);
    }

    #[test]
    fn openapi_accept_with_zero_clauses_gives_json() {
        assert_eq!(negotiate_openapi(Some("foo")), OpenApiChoice::Json);
    }

    #[test]
    fn openapi_application_json_gives_json() {
        assert_eq!(negotiate_openapi(Some("application/json")), OpenApiChoice::Json);
    }

    #[test]
    fn openapi_star_star_gives_json() {
        assert_eq!(negotiate_openapi(Some("*/*")), OpenApiChoice::Json);
    }

    #[test]
    fn openapi_application_star_gives_json() {
        assert_eq!(negotiate_openapi(Some("application/*")), OpenApiChoice::Json);
    }

    #[test]
    fn openapi_star_json_gives_json() {
        assert_eq!(negotiate_openapi(Some("*/json")), OpenApiChoice::Json);
    }

    #[test]
    fn openapi_parameters_are_ignored() {
        assert_eq!(negotiate_openapi(Some("application/json;charset=utf-8")), OpenApiChoice::Json);
    }

    #[test]
    fn openapi_q_zero_json_still_matches() {
        assert_eq!(negotiate_openapi(Some("application/json;q=0")), OpenApiChoice::Json);
    }

    #[test]
    fn openapi_protobuf_is_not_acceptable() {
        assert_eq!(negotiate_openapi(Some(PROTO_V3)), OpenApiChoice::NotAcceptable);
    }

    #[test]
    fn openapi_deprecated_protobuf_spelling_is_not_acceptable() {
        assert_eq!(negotiate_openapi(Some(PROTO_V3_AT)), OpenApiChoice::NotAcceptable);
    }

    #[test]
    fn openapi_protobuf_falls_through_to_json() {
        let header = format!("{PROTO_V3},{PROTO_V3_AT},application/json;q=0.1");
        assert_eq!(negotiate_openapi(Some(&header)), OpenApiChoice::Json);
    }

    #[test]
    fn openapi_other_types_are_not_acceptable() {
        assert_eq!(
            negotiate_openapi(Some("text/html, application/yaml")),
            OpenApiChoice::NotAcceptable
        );
    }

    #[test]
    fn openapi_media_type_is_case_sensitive() {
        assert_eq!(negotiate_openapi(Some("Application/JSON")), OpenApiChoice::NotAcceptable);
    }

    #[test]
    fn openapi_kubectl_accept_gives_json() {
        assert_eq!(negotiate_openapi(Some(KUBECTL)), OpenApiChoice::Json);
    }

    // --- /openapi/v2 (B-2.4) ---

    #[test]
    fn v2_missing_accept_gives_json() {
        assert_eq!(negotiate_openapi_v2(None, true), OpenApiV2Choice::Json);
    }

    #[test]
    fn v2_star_star_prefers_json_over_protobuf() {
        assert_eq!(negotiate_openapi_v2(Some("*/*"), true), OpenApiV2Choice::Json);
    }

    #[test]
    fn v2_protobuf_clause_gives_protobuf() {
        assert_eq!(negotiate_openapi_v2(Some(PROTO_V2), true), OpenApiV2Choice::Protobuf);
    }

    #[test]
    fn v2_deprecated_protobuf_spelling_gives_protobuf() {
        assert_eq!(negotiate_openapi_v2(Some(PROTO_V2_AT), true), OpenApiV2Choice::Protobuf);
    }

    #[test]
    fn v2_protobuf_answers_with_the_dotted_spelling() {
        assert_eq!(OpenApiV2Choice::Protobuf.content_type(), Some(PROTO_V2));
    }

    #[test]
    fn v2_protobuf_is_not_acceptable_without_a_protobuf_rendition() {
        assert_eq!(negotiate_openapi_v2(Some(PROTO_V2), false), OpenApiV2Choice::NotAcceptable);
    }

    #[test]
    fn v2_earlier_protobuf_clause_beats_json() {
        let header = format!("{PROTO_V2}, application/json");
        assert_eq!(negotiate_openapi_v2(Some(&header), true), OpenApiV2Choice::Protobuf);
    }

    #[test]
    fn v2_lower_q_protobuf_loses_to_json() {
        let header = format!("{PROTO_V2};q=0.5, application/json");
        assert_eq!(negotiate_openapi_v2(Some(&header), true), OpenApiV2Choice::Json);
    }

    #[test]
    fn v2_accept_with_zero_clauses_is_not_acceptable() {
        assert_eq!(negotiate_openapi_v2(Some("foo"), true), OpenApiV2Choice::NotAcceptable);
    }

    // --- discovery (B-4.3, B-4.11, B-4.12, B-6.1) ---

    #[test]
    fn discovery_missing_accept_is_legacy() {
        assert_eq!(negotiate_discovery(None, true), DiscoveryChoice::Legacy);
    }

    #[test]
    fn discovery_empty_accept_is_legacy() {
        assert_eq!(discovery(""), DiscoveryChoice::Legacy);
    }

    #[test]
    fn client_go_accept_list_selects_v2() {
        assert_eq!(discovery(CLIENT_GO), DiscoveryChoice::Aggregated(DiscoveryVersion::V2));
    }

    #[test]
    fn client_go_accept_list_selects_v2_without_v2beta1() {
        let choice = negotiate_discovery(Some(CLIENT_GO), false);
        assert_eq!(choice, DiscoveryChoice::Aggregated(DiscoveryVersion::V2));
    }

    #[test]
    fn client_go_nopeer_accept_list_selects_v2() {
        assert_eq!(discovery(CLIENT_GO_NOPEER), DiscoveryChoice::Aggregated(DiscoveryVersion::V2));
    }

    #[test]
    fn newest_client_go_accept_list_selects_v2() {
        assert_eq!(discovery(CLIENT_GO_NEWEST), DiscoveryChoice::Aggregated(DiscoveryVersion::V2));
    }

    #[test]
    fn newest_client_go_nopeer_accept_list_selects_v2() {
        let choice = negotiate_discovery(Some(CLIENT_GO_NEWEST_NOPEER), false);
        assert_eq!(choice, DiscoveryChoice::Aggregated(DiscoveryVersion::V2));
    }

    #[test]
    fn client_go_with_legacy_gets_legacy() {
        assert_eq!(discovery("application/json"), DiscoveryChoice::Legacy);
    }

    #[test]
    fn kubectl_default_accept_gets_legacy() {
        assert_eq!(discovery(KUBECTL), DiscoveryChoice::Legacy);
    }

    #[test]
    fn v2beta1_only_selects_v2beta1_when_enabled() {
        assert_eq!(discovery(V2BETA1_ONLY), DiscoveryChoice::Aggregated(DiscoveryVersion::V2beta1));
    }

    #[test]
    fn v2beta1_only_is_not_acceptable_when_disabled() {
        assert_eq!(negotiate_discovery(Some(V2BETA1_ONLY), false), DiscoveryChoice::NotAcceptable);
    }

    #[test]
    fn v2beta1_with_plain_json_falls_back_to_legacy_when_disabled() {
        let header = format!("{V2BETA1_ONLY},application/json");
        assert_eq!(negotiate_discovery(Some(&header), false), DiscoveryChoice::Legacy);
    }

    #[test]
    fn aggregated_clause_wins_over_plain_json_regardless_of_q() {
        let header = "application/json, application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0.1";
        assert_eq!(discovery(header), DiscoveryChoice::Aggregated(DiscoveryVersion::V2));
    }

    #[test]
    fn q_ranks_aggregated_clauses_among_themselves() {
        let header = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0.5,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
        assert_eq!(discovery(header), DiscoveryChoice::Aggregated(DiscoveryVersion::V2beta1));
    }

    #[test]
    fn parameter_order_is_irrelevant() {
        let header = "application/json;as=APIGroupDiscoveryList;v=v2;g=apidiscovery.k8s.io";
        assert_eq!(discovery(header), DiscoveryChoice::Aggregated(DiscoveryVersion::V2));
    }

    #[test]
    fn star_star_aggregated_clause_selects_json() {
        let header = "*/*;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
        assert_eq!(discovery(header), DiscoveryChoice::Aggregated(DiscoveryVersion::V2));
    }

    #[test]
    fn application_star_aggregated_clause_selects_json() {
        let header = "application/*;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
        assert_eq!(discovery(header), DiscoveryChoice::Aggregated(DiscoveryVersion::V2));
    }

    #[test]
    fn star_json_does_not_match_discovery() {
        assert_eq!(discovery("*/json"), DiscoveryChoice::NotAcceptable);
    }

    #[test]
    fn star_star_gets_legacy() {
        assert_eq!(discovery("*/*"), DiscoveryChoice::Legacy);
    }

    #[test]
    fn profile_parameter_is_ignored() {
        let header =
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=anything";
        assert_eq!(discovery(header), DiscoveryChoice::Aggregated(DiscoveryVersion::V2));
    }

    #[test]
    fn unknown_parameter_is_ignored() {
        assert_eq!(discovery("application/json;charset=utf-8;pretty=1"), DiscoveryChoice::Legacy);
    }

    #[test]
    fn uppercase_parameter_names_are_unknown_and_ignored() {
        let header = "application/json;G=apidiscovery.k8s.io;V=v2;AS=APIGroupDiscoveryList";
        assert_eq!(discovery(header), DiscoveryChoice::Legacy);
    }

    #[test]
    fn yaml_aggregated_clause_falls_through_to_json() {
        let header = "application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
        assert_eq!(discovery(header), DiscoveryChoice::Aggregated(DiscoveryVersion::V2beta1));
    }

    #[test]
    fn protobuf_aggregated_clause_falls_through_to_legacy() {
        let header = "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
        assert_eq!(discovery(header), DiscoveryChoice::Legacy);
    }

    #[test]
    fn plain_yaml_is_not_acceptable() {
        assert_eq!(discovery("application/yaml"), DiscoveryChoice::NotAcceptable);
    }

    #[test]
    fn plain_protobuf_is_not_acceptable() {
        assert_eq!(
            discovery("application/vnd.kubernetes.protobuf"),
            DiscoveryChoice::NotAcceptable
        );
    }

    #[test]
    fn discovery_accept_with_zero_clauses_is_not_acceptable() {
        assert_eq!(discovery("foo"), DiscoveryChoice::NotAcceptable);
    }

    #[test]
    fn discovery_media_type_is_case_sensitive() {
        assert_eq!(discovery("Application/JSON"), DiscoveryChoice::NotAcceptable);
    }

    #[test]
    fn discovery_parameter_values_are_case_sensitive() {
        let header = "application/json;g=apidiscovery.k8s.io;v=V2;as=APIGroupDiscoveryList";
        assert_eq!(discovery(header), DiscoveryChoice::NotAcceptable);
    }

    #[test]
    fn quoted_parameter_value_does_not_match() {
        let header = "application/json;g=\"apidiscovery.k8s.io\";v=v2;as=APIGroupDiscoveryList";
        assert_eq!(discovery(header), DiscoveryChoice::NotAcceptable);
    }

    #[test]
    fn incomplete_aggregated_clause_is_not_legacy_either() {
        let header = "application/json;v=v2;as=APIGroupDiscoveryList";
        assert_eq!(discovery(header), DiscoveryChoice::NotAcceptable);
    }

    #[test]
    fn empty_transformation_parameter_still_requests_a_transformation() {
        assert_eq!(discovery("application/json;as="), DiscoveryChoice::NotAcceptable);
    }

    #[test]
    fn other_group_version_kind_is_not_acceptable() {
        let header = "application/json;g=meta.k8s.io;v=v1;as=Table";
        assert_eq!(discovery(header), DiscoveryChoice::NotAcceptable);
    }

    #[test]
    fn repeated_version_parameter_counts_with_its_last_value() {
        let header = "application/json;g=apidiscovery.k8s.io;v=v1;as=APIGroupDiscoveryList;v=v2";
        assert_eq!(discovery(header), DiscoveryChoice::Aggregated(DiscoveryVersion::V2));
    }

    #[test]
    fn non_empty_sv_makes_a_clause_unacceptable() {
        assert_eq!(discovery("application/json;sv=v1"), DiscoveryChoice::NotAcceptable);
    }

    #[test]
    fn empty_sv_is_ignored() {
        assert_eq!(discovery("application/json;sv="), DiscoveryChoice::Legacy);
    }

    #[test]
    fn stream_watch_is_acceptable() {
        assert_eq!(discovery("application/json;stream=watch"), DiscoveryChoice::Legacy);
    }

    #[test]
    fn other_stream_value_makes_a_clause_unacceptable() {
        assert_eq!(discovery("application/json;stream=other"), DiscoveryChoice::NotAcceptable);
    }

    #[test]
    fn unacceptable_aggregated_clause_falls_through_to_the_next() {
        let header = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;sv=v1,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
        assert_eq!(discovery(header), DiscoveryChoice::Aggregated(DiscoveryVersion::V2beta1));
    }

    #[test]
    fn discovery_content_types_are_the_wire_strings() {
        assert_eq!(
            [DiscoveryVersion::V2.content_type(), DiscoveryVersion::V2beta1.content_type()],
            [
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
                "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
            ]
        );
    }

    // --- If-None-Match (B-1.3, B-4.4) ---

    #[test]
    fn if_none_match_missing_does_not_match() {
        assert!(!if_none_match_matches(None, ETAG));
    }

    #[test]
    fn if_none_match_empty_does_not_match() {
        assert!(!if_none_match_matches(Some(""), ETAG));
    }

    #[test]
    fn if_none_match_same_tag_matches() {
        assert!(if_none_match_matches(Some(ETAG), ETAG));
    }

    #[test]
    fn if_none_match_other_tag_does_not_match() {
        assert!(!if_none_match_matches(Some("\"OTHER\""), ETAG));
    }

    #[test]
    fn if_none_match_star_matches() {
        assert!(if_none_match_matches(Some("*"), ETAG));
    }

    #[test]
    fn if_none_match_weak_tag_matches() {
        assert!(if_none_match_matches(Some("W/\"ABC123\""), ETAG));
    }

    #[test]
    fn if_none_match_list_member_matches() {
        assert!(if_none_match_matches(Some("\"A\", W/\"B\",\"ABC123\""), ETAG));
    }

    #[test]
    fn if_none_match_tolerates_whitespace() {
        assert!(if_none_match_matches(Some(" \t\"A\" ,\t \"ABC123\"  "), ETAG));
    }

    #[test]
    fn if_none_match_unquoted_tag_does_not_match() {
        assert!(!if_none_match_matches(Some("ABC123"), ETAG));
    }

    #[test]
    fn if_none_match_stops_at_a_malformed_member() {
        assert!(!if_none_match_matches(Some("junk, \"ABC123\""), ETAG));
    }

    #[test]
    fn if_none_match_is_case_sensitive() {
        assert!(!if_none_match_matches(Some("\"abc123\""), ETAG));
    }

    #[test]
    fn discovery_etag_exact_header_matches() {
        assert!(discovery_etag_matches(Some(ETAG), ETAG));
    }

    #[test]
    fn discovery_etag_missing_header_does_not_match() {
        assert!(!discovery_etag_matches(None, ETAG));
    }

    #[test]
    fn discovery_etag_weak_form_does_not_match() {
        assert!(!discovery_etag_matches(Some("W/\"ABC123\""), ETAG));
    }

    #[test]
    fn discovery_etag_list_does_not_match() {
        assert!(!discovery_etag_matches(Some("\"A\", \"ABC123\""), ETAG));
    }

    #[test]
    fn discovery_etag_star_does_not_match() {
        assert!(!discovery_etag_matches(Some("*"), ETAG));
    }

    // --- properties ---

    /// Runs every public function on `header`; returns the parse.
    fn exercise(header: &str) -> Vec<MediaRange<'_>> {
        let _ = negotiate_openapi(Some(header));
        let _ = negotiate_openapi_v2(Some(header), true);
        let _ = negotiate_discovery(Some(header), true);
        let _ = if_none_match_matches(Some(header), ETAG);
        let _ = discovery_etag_matches(Some(header), ETAG);
        parse_accept(header)
    }

    fn assert_bounded_and_sorted(clauses: &[MediaRange<'_>]) -> Result<(), TestCaseError> {
        prop_assert!(clauses.len() <= MAX_CLAUSES);
        for pair in clauses.windows(2) {
            let key = |c: &MediaRange<'_>| (-c.q, c.type_ == "*", c.subtype == "*");
            prop_assert!(key(&pair[0]) <= key(&pair[1]), "not sorted: {:?}", pair);
        }
        Ok(())
    }

    /// Text biased towards Accept syntax, sometimes well beyond the byte limit.
    fn accept_like() -> impl Strategy<Value = String> {
        let atom = prop_oneof![
            Just("application".to_owned()),
            Just("json".to_owned()),
            Just("*".to_owned()),
            Just("g=apidiscovery.k8s.io".to_owned()),
            Just("v=v2".to_owned()),
            Just("as=APIGroupDiscoveryList".to_owned()),
            "q=[-0-9.eEnaNIif]{0,6}",
            "[ ,;/=\"\t]",
            ".{0,4}",
        ];
        // Generating thousands of atoms is slow; repeating a short run
        // reaches the byte and clause limits just as well.
        (prop::collection::vec(atom, 0..48), prop_oneof![3 => 1_usize..4, 1 => 1_usize..2_000])
            .prop_map(|(atoms, times)| atoms.concat().repeat(times))
    }

    /// One of the real-world headers, with its pieces.
    fn known_header() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            CLIENT_GO,
            CLIENT_GO_NOPEER,
            CLIENT_GO_NEWEST,
            CLIENT_GO_NEWEST_NOPEER,
            KUBECTL,
            V2BETA1_ONLY,
            "application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
            "application/com.github.proto-openapi.spec.v2.v1.0+protobuf;q=0.5,application/json",
            "text/html,application/*;q=0.9,*/*;q=0.8",
        ])
    }

    /// `header` with 0–3 spaces (from `pads`, cycled) around each clause,
    /// type, subtype, and parameter key and value; q values stay unpadded,
    /// since Go does not trim them.
    fn pad(header: &str, pads: &[usize]) -> String {
        let mut pads = pads.iter().cycle().map(|&n| " ".repeat(n));
        let mut next = move || pads.next().unwrap_or_default();
        let mut clauses = Vec::new();
        for clause in header.split(',') {
            let mut pieces = clause.split(';');
            let range = pieces.next().unwrap_or("");
            let mut out = match range.split_once('/') {
                Some((t, s)) => format!("{}{t}{}/{}{s}{}", next(), next(), next(), next()),
                None => format!("{}{range}{}", next(), next()),
            };
            for param in pieces {
                match param.split_once('=') {
                    Some(("q", v)) => out.push_str(&format!(";{}q{}={v}", next(), next())),
                    Some((k, v)) => {
                        out.push_str(&format!(";{}{k}{}={}{v}{}", next(), next(), next(), next()))
                    }
                    None => out.push_str(&format!(";{param}")),
                }
            }
            clauses.push(out);
        }
        clauses.join(",")
    }

    /// `text` with the letters selected by `mask` flipped in case.
    fn flip_case(text: &str, mask: &[bool]) -> String {
        text.chars()
            .zip(mask.iter().chain(std::iter::repeat(&false)))
            .map(|(c, &flip)| match (flip, c.is_ascii_uppercase()) {
                (false, _) => c,
                (true, true) => c.to_ascii_lowercase(),
                (true, false) => c.to_ascii_uppercase(),
            })
            .collect()
    }

    proptest! {
        #[test]
        fn nothing_panics_on_arbitrary_text(header in any::<String>()) {
            assert_bounded_and_sorted(&exercise(&header))?;
        }

        #[test]
        fn nothing_panics_on_random_bytes(bytes in prop::collection::vec(any::<u8>(), 0..40_000)) {
            let header = String::from_utf8_lossy(&bytes);
            assert_bounded_and_sorted(&exercise(&header))?;
        }

        #[test]
        fn nothing_panics_on_accept_like_text(header in accept_like()) {
            assert_bounded_and_sorted(&exercise(&header))?;
        }

        #[test]
        fn long_repetitive_headers_stay_bounded(
            clause in known_header(),
            times in 1_usize..2_000,
        ) {
            let header = vec![clause; times].join(",");
            assert_bounded_and_sorted(&exercise(&header))?;
        }

        #[test]
        fn lines_parse_like_their_comma_joined_text(a in accept_like(), b in accept_like()) {
            let joined = format!("{a},{b}");
            prop_assert_eq!(parse_accept_lines(&[&a, &b]), parse_accept(&joined));
        }

        #[test]
        fn surrounding_spaces_are_ignored(
            header in known_header(),
            pads in prop::collection::vec(0_usize..4, 1..64),
        ) {
            let padded = pad(header, &pads);
            prop_assert_eq!(parse_accept(&padded), parse_accept(header));
            prop_assert_eq!(negotiate_openapi(Some(&padded)), negotiate_openapi(Some(header)));
            prop_assert_eq!(
                negotiate_openapi_v2(Some(&padded), true),
                negotiate_openapi_v2(Some(header), true)
            );
            for v2beta1 in [false, true] {
                prop_assert_eq!(
                    negotiate_discovery(Some(&padded), v2beta1),
                    negotiate_discovery(Some(header), v2beta1)
                );
            }
        }

        #[test]
        fn media_type_is_case_sensitive(mask in prop::collection::vec(any::<bool>(), 16)) {
            let media_type = flip_case("application/json", &mask);
            prop_assume!(media_type != "application/json");
            prop_assert_eq!(negotiate_openapi(Some(&media_type)), OpenApiChoice::NotAcceptable);
            prop_assert_eq!(discovery(&media_type), DiscoveryChoice::NotAcceptable);
        }

        #[test]
        fn discovery_group_is_case_sensitive(mask in prop::collection::vec(any::<bool>(), 19)) {
            let group = flip_case("apidiscovery.k8s.io", &mask);
            prop_assume!(group != "apidiscovery.k8s.io");
            let header = format!(
                "application/json;g={group};v=v2;as=APIGroupDiscoveryList,application/json"
            );
            prop_assert_eq!(discovery(&header), DiscoveryChoice::Legacy);
        }
    }
}

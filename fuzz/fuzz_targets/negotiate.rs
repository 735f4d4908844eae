//! Bytes → an `Accept` / `If-None-Match` header → every negotiation entry
//! point, checking what must hold for any header:
//!
//! - nothing panics;
//! - parsing is bounded and ordered: at most `MAX_CLAUSES` clauses, no `q`
//!   is NaN or -0, clauses come best q first, and several lines parse as
//!   one line joined with `,` would (one line parses as `parse_accept`);
//! - every answer is deterministic (the same call twice, the same answer);
//! - `/openapi/v2` never picks protobuf when there is none;
//! - discovery: with v2beta1 switched off the answer is never v2beta1, and
//!   switching it on changes nothing else; the legacy-only endpoints agree
//!   with the legacy pass of `/api` and `/apis`;
//! - `If-None-Match`: the exact quoted ETag always matches (both rules),
//!   and the exact-match rule of aggregated discovery never matches where
//!   the `http.ServeContent` rule does not.
//!
//! The input is split at its first newline: the first part is the header,
//! the rest an ETag to compare with (a fixed one is compared too).

#![no_main]

use libfuzzer_sys::fuzz_target;

use openapi_proxy::negotiate::{
    self, DiscoveryChoice, DiscoveryVersion, MAX_CLAUSES, OpenApiV2Choice,
};

/// A quoted ETag as the proxy sends it (upper-case hex).
const ETAG: &str = "\"0A1B2C3D\"";

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (header, other_etag) = text.split_once('\n').unwrap_or((&text, ""));

    check_parse(header);
    let lines: Vec<&str> = text.split('\n').collect();
    let joined = negotiate::parse_accept_lines(&lines);
    assert!(joined.len() <= MAX_CLAUSES, "{} clauses from {} lines", joined.len(), lines.len());
    assert!(
        negotiate::parse_accept_lines(&[header]) == negotiate::parse_accept(header),
        "one line parses differently through parse_accept_lines"
    );

    for accept in [Some(header), None] {
        check_negotiation(accept);
    }

    for etag in [ETAG, other_etag] {
        check_etag(Some(header), etag);
        check_etag(None, etag);
    }
    // The exact quoted ETag always matches, whatever it is.
    if is_quoted_etag(other_etag) {
        assert!(negotiate::if_none_match_matches(Some(other_etag), other_etag), "{other_etag:?}");
    }
    assert!(negotiate::discovery_etag_matches(Some(other_etag), other_etag));
});

fn check_parse(header: &str) {
    let clauses = negotiate::parse_accept(header);
    assert!(clauses.len() <= MAX_CLAUSES, "{} clauses", clauses.len());
    for c in &clauses {
        assert!(!c.q.is_nan(), "q is NaN in {c:?}");
        assert!(c.q != 0.0 || c.q.is_sign_positive(), "q is -0 in {c:?}");
    }
    for pair in clauses.windows(2) {
        assert!(pair[0].q >= pair[1].q, "clauses are not best q first: {pair:?}");
    }
    assert!(negotiate::parse_accept(header) == clauses, "parsing is not deterministic");
}

fn check_negotiation(accept: Option<&str>) {
    let openapi = negotiate::negotiate_openapi(accept);
    assert_eq!(openapi, negotiate::negotiate_openapi(accept));

    for have_protobuf in [false, true] {
        let v2 = negotiate::negotiate_openapi_v2(accept, have_protobuf);
        assert_eq!(v2, negotiate::negotiate_openapi_v2(accept, have_protobuf));
        if !have_protobuf {
            assert_ne!(v2, OpenApiV2Choice::Protobuf, "protobuf without a protobuf rendition");
        }
    }

    let without = negotiate::negotiate_discovery(accept, false);
    let with = negotiate::negotiate_discovery(accept, true);
    assert_eq!(without, negotiate::negotiate_discovery(accept, false));
    assert_eq!(with, negotiate::negotiate_discovery(accept, true));
    assert!(
        !matches!(without, DiscoveryChoice::Aggregated(DiscoveryVersion::V2beta1, _)),
        "v2beta1 served while switched off: {accept:?}"
    );
    // Switching v2beta1 on can only make a v2beta1 clause win.
    if !matches!(with, DiscoveryChoice::Aggregated(DiscoveryVersion::V2beta1, _)) {
        assert_eq!(with, without, "the v2beta1 switch changed a non-v2beta1 answer: {accept:?}");
    }

    let legacy = negotiate::negotiate_legacy_discovery(accept);
    assert_eq!(legacy, negotiate::negotiate_legacy_discovery(accept));
    assert!(
        matches!(legacy, DiscoveryChoice::Legacy(_) | DiscoveryChoice::NotAcceptable),
        "a legacy-only endpoint chose {legacy:?}"
    );
    // /api and /apis fall back to exactly the legacy-only negotiation.
    for choice in [with, without] {
        match choice {
            DiscoveryChoice::Legacy(_) | DiscoveryChoice::NotAcceptable => {
                assert_eq!(choice, legacy, "root and legacy-only endpoints disagree: {accept:?}");
            }
            DiscoveryChoice::Aggregated(..) => {}
        }
    }
}

fn check_etag(header: Option<&str>, etag: &str) {
    let loose = negotiate::if_none_match_matches(header, etag);
    let exact = negotiate::discovery_etag_matches(header, etag);
    assert_eq!(loose, negotiate::if_none_match_matches(header, etag));
    assert_eq!(exact, negotiate::discovery_etag_matches(header, etag));
    assert_eq!(exact, header == Some(etag), "discovery compares the raw header exactly");
    if exact && is_quoted_etag(etag) {
        assert!(loose, "exact match {etag:?} but no If-None-Match match");
    }
    if header.is_none() {
        assert!(!loose && !exact, "no header matched {etag:?}");
    }
}

/// `"…"` with only the characters an entity tag may hold (RFC 9110
/// `etagc`), as `http.ServeContent` accepts it.
fn is_quoted_etag(s: &str) -> bool {
    let Some(inner) = s.strip_prefix('"').and_then(|r| r.strip_suffix('"')) else {
        return false;
    };
    s.len() >= 2 && inner.bytes().all(|b| b == 0x21 || (0x23..=0x7e).contains(&b) || b >= 0x80)
}

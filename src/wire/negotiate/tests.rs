//! Unit tests of `wire/negotiate.rs`.

#[test]
fn legacy_only_endpoints_refuse_an_aggregated_only_accept() {
    use super::*;
    let aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    assert_eq!(negotiate_legacy_discovery(Some(aggregated)), DiscoveryChoice::NotAcceptable);
    assert_eq!(
        negotiate_legacy_discovery(Some(&format!("{aggregated},application/json"))),
        DiscoveryChoice::Legacy(DiscoveryFormat::Json)
    );
    assert_eq!(negotiate_legacy_discovery(None), DiscoveryChoice::Legacy(DiscoveryFormat::Json));
    assert_eq!(
        negotiate_legacy_discovery(Some("application/json, */*")),
        DiscoveryChoice::Legacy(DiscoveryFormat::Json)
    );
    assert_eq!(
        negotiate_legacy_discovery(Some("application/yaml")),
        DiscoveryChoice::Legacy(DiscoveryFormat::Yaml)
    );
    assert_eq!(negotiate_legacy_discovery(Some("text/html")), DiscoveryChoice::NotAcceptable);
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
fn openapi_protobuf_is_served_in_both_spellings_when_held() {
    for accept in [PROTO_V3, PROTO_V3_AT] {
        assert_eq!(negotiate_openapi_document(Some(accept), true), OpenApiChoice::Protobuf);
    }
}

#[test]
fn openapi_protobuf_not_held_is_not_acceptable() {
    assert_eq!(negotiate_openapi_document(Some(PROTO_V3), false), OpenApiChoice::NotAcceptable);
}

#[test]
fn openapi_q_orders_protobuf_and_json() {
    let json_first = format!("{PROTO_V3};q=0.5, application/json");
    assert_eq!(negotiate_openapi_document(Some(&json_first), true), OpenApiChoice::Json);
    let proto_first = format!("{PROTO_V3}, application/json");
    assert_eq!(negotiate_openapi_document(Some(&proto_first), true), OpenApiChoice::Protobuf);
}

#[test]
fn openapi_wildcards_give_json_even_with_protobuf() {
    for accept in ["*/*", "application/*"] {
        assert_eq!(negotiate_openapi_document(Some(accept), true), OpenApiChoice::Json);
    }
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
    assert_eq!(negotiate_discovery(None, true), DiscoveryChoice::Legacy(DiscoveryFormat::Json));
}

#[test]
fn discovery_empty_accept_is_legacy() {
    assert_eq!(discovery(""), DiscoveryChoice::Legacy(DiscoveryFormat::Json));
}

#[test]
fn client_go_accept_list_selects_v2() {
    assert_eq!(
        discovery(CLIENT_GO),
        DiscoveryChoice::Aggregated(DiscoveryVersion::V2, DiscoveryFormat::Json)
    );
}

#[test]
fn client_go_accept_list_selects_v2_without_v2beta1() {
    let choice = negotiate_discovery(Some(CLIENT_GO), false);
    assert_eq!(choice, DiscoveryChoice::Aggregated(DiscoveryVersion::V2, DiscoveryFormat::Json));
}

#[test]
fn client_go_nopeer_accept_list_selects_v2() {
    assert_eq!(
        discovery(CLIENT_GO_NOPEER),
        DiscoveryChoice::Aggregated(DiscoveryVersion::V2, DiscoveryFormat::Json)
    );
}

#[test]
fn newest_client_go_accept_list_selects_v2() {
    assert_eq!(
        discovery(CLIENT_GO_NEWEST),
        DiscoveryChoice::Aggregated(DiscoveryVersion::V2, DiscoveryFormat::Json)
    );
}

#[test]
fn newest_client_go_nopeer_accept_list_selects_v2() {
    let choice = negotiate_discovery(Some(CLIENT_GO_NEWEST_NOPEER), false);
    assert_eq!(choice, DiscoveryChoice::Aggregated(DiscoveryVersion::V2, DiscoveryFormat::Json));
}

#[test]
fn client_go_with_legacy_gets_legacy() {
    assert_eq!(discovery("application/json"), DiscoveryChoice::Legacy(DiscoveryFormat::Json));
}

#[test]
fn kubectl_default_accept_gets_legacy() {
    assert_eq!(discovery(KUBECTL), DiscoveryChoice::Legacy(DiscoveryFormat::Json));
}

#[test]
fn v2beta1_only_selects_v2beta1_when_enabled() {
    assert_eq!(
        discovery(V2BETA1_ONLY),
        DiscoveryChoice::Aggregated(DiscoveryVersion::V2beta1, DiscoveryFormat::Json)
    );
}

#[test]
fn v2beta1_only_is_not_acceptable_when_disabled() {
    assert_eq!(negotiate_discovery(Some(V2BETA1_ONLY), false), DiscoveryChoice::NotAcceptable);
}

#[test]
fn v2beta1_with_plain_json_falls_back_to_legacy_when_disabled() {
    let header = format!("{V2BETA1_ONLY},application/json");
    assert_eq!(
        negotiate_discovery(Some(&header), false),
        DiscoveryChoice::Legacy(DiscoveryFormat::Json)
    );
}

#[test]
fn aggregated_clause_wins_over_plain_json_regardless_of_q() {
    let header = "application/json, application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0.1";
    assert_eq!(
        discovery(header),
        DiscoveryChoice::Aggregated(DiscoveryVersion::V2, DiscoveryFormat::Json)
    );
}

#[test]
fn q_ranks_aggregated_clauses_among_themselves() {
    let header = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0.5,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
    assert_eq!(
        discovery(header),
        DiscoveryChoice::Aggregated(DiscoveryVersion::V2beta1, DiscoveryFormat::Json)
    );
}

#[test]
fn parameter_order_is_irrelevant() {
    let header = "application/json;as=APIGroupDiscoveryList;v=v2;g=apidiscovery.k8s.io";
    assert_eq!(
        discovery(header),
        DiscoveryChoice::Aggregated(DiscoveryVersion::V2, DiscoveryFormat::Json)
    );
}

#[test]
fn star_star_aggregated_clause_selects_json() {
    let header = "*/*;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    assert_eq!(
        discovery(header),
        DiscoveryChoice::Aggregated(DiscoveryVersion::V2, DiscoveryFormat::Json)
    );
}

#[test]
fn application_star_aggregated_clause_selects_json() {
    let header = "application/*;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    assert_eq!(
        discovery(header),
        DiscoveryChoice::Aggregated(DiscoveryVersion::V2, DiscoveryFormat::Json)
    );
}

#[test]
fn star_json_does_not_match_discovery() {
    assert_eq!(discovery("*/json"), DiscoveryChoice::NotAcceptable);
}

#[test]
fn star_star_gets_legacy() {
    assert_eq!(discovery("*/*"), DiscoveryChoice::Legacy(DiscoveryFormat::Json));
}

#[test]
fn profile_parameter_is_ignored() {
    let header =
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=anything";
    assert_eq!(
        discovery(header),
        DiscoveryChoice::Aggregated(DiscoveryVersion::V2, DiscoveryFormat::Json)
    );
}

#[test]
fn unknown_parameter_is_ignored() {
    assert_eq!(
        discovery("application/json;charset=utf-8;pretty=1"),
        DiscoveryChoice::Legacy(DiscoveryFormat::Json)
    );
}

#[test]
fn uppercase_parameter_names_are_unknown_and_ignored() {
    let header = "application/json;G=apidiscovery.k8s.io;V=v2;AS=APIGroupDiscoveryList";
    assert_eq!(discovery(header), DiscoveryChoice::Legacy(DiscoveryFormat::Json));
}

fn aggregated(version: DiscoveryVersion, format: DiscoveryFormat) -> DiscoveryChoice {
    DiscoveryChoice::Aggregated(version, format)
}

const YAML: DiscoveryChoice = DiscoveryChoice::Legacy(DiscoveryFormat::Yaml);
const PROTOBUF: DiscoveryChoice = DiscoveryChoice::Legacy(DiscoveryFormat::Protobuf);

#[test]
fn yaml_aggregated_clause_gives_aggregated_yaml() {
    let header = "application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
    assert_eq!(discovery(header), aggregated(DiscoveryVersion::V2, DiscoveryFormat::Yaml));
}

#[test]
fn protobuf_aggregated_clause_gives_aggregated_protobuf() {
    let header = "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
    assert_eq!(discovery(header), aggregated(DiscoveryVersion::V2, DiscoveryFormat::Protobuf));
    // What apiserver's own tests send, and what a client asking for
    // protobuf first with JSON as fallback sends.
    let beta = "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
    assert_eq!(discovery(beta), aggregated(DiscoveryVersion::V2beta1, DiscoveryFormat::Protobuf));
    assert_eq!(negotiate_discovery(Some(beta), false), DiscoveryChoice::NotAcceptable);
    let both = format!("{},{CLIENT_GO}", beta.replace("v2beta1", "v2"));
    assert_eq!(discovery(&both), aggregated(DiscoveryVersion::V2, DiscoveryFormat::Protobuf));
}

#[test]
fn q_ranks_aggregated_formats_among_themselves() {
    let gva = "g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    let header = format!("application/json;{gva};q=0.5,application/vnd.kubernetes.protobuf;{gva}");
    assert_eq!(discovery(&header), aggregated(DiscoveryVersion::V2, DiscoveryFormat::Protobuf));
    let header = format!("application/yaml;{gva};q=0.5,application/json;{gva}");
    assert_eq!(discovery(&header), aggregated(DiscoveryVersion::V2, DiscoveryFormat::Json));
    // A wildcard tries JSON first.
    assert_eq!(
        discovery(&format!("*/*;{gva}")),
        aggregated(DiscoveryVersion::V2, DiscoveryFormat::Json)
    );
}

#[test]
fn plain_yaml_gives_legacy_yaml() {
    assert_eq!(discovery("application/yaml"), YAML);
    assert_eq!(negotiate_legacy_discovery(Some("application/yaml")), YAML);
}

#[test]
fn plain_protobuf_gives_legacy_protobuf() {
    assert_eq!(discovery("application/vnd.kubernetes.protobuf"), PROTOBUF);
    // What client-go sends when configured for protobuf.
    let header = "application/vnd.kubernetes.protobuf, application/json";
    assert_eq!(negotiate_legacy_discovery(Some(header)), PROTOBUF);
    let header = "application/json;q=0.9, application/vnd.kubernetes.protobuf";
    assert_eq!(negotiate_legacy_discovery(Some(header)), PROTOBUF);
}

#[test]
fn yaml_cannot_stream_but_protobuf_can() {
    assert_eq!(discovery("application/yaml;stream=watch"), DiscoveryChoice::NotAcceptable);
    assert_eq!(discovery("application/vnd.kubernetes.protobuf;stream=watch"), PROTOBUF);
    assert_eq!(discovery("application/yaml;stream=watch,application/yaml"), YAML);
}

#[test]
fn the_content_types_of_every_form_are_the_wire_strings() {
    use DiscoveryFormat::{Json, Protobuf, Yaml};
    use DiscoveryVersion::{V2, V2beta1};
    let gva = |v| format!(";g=apidiscovery.k8s.io;v={v};as=APIGroupDiscoveryList");
    for (format, base) in [
        (Json, "application/json"),
        (Yaml, "application/yaml"),
        (Protobuf, "application/vnd.kubernetes.protobuf"),
    ] {
        assert_eq!(format.content_type(), base);
        assert_eq!(V2.content_type_as(format), format!("{base}{}", gva("v2")));
        assert_eq!(V2beta1.content_type_as(format), format!("{base}{}", gva("v2beta1")));
    }
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
    assert_eq!(
        discovery(header),
        DiscoveryChoice::Aggregated(DiscoveryVersion::V2, DiscoveryFormat::Json)
    );
}

#[test]
fn non_empty_sv_makes_a_clause_unacceptable() {
    assert_eq!(discovery("application/json;sv=v1"), DiscoveryChoice::NotAcceptable);
}

#[test]
fn empty_sv_is_ignored() {
    assert_eq!(discovery("application/json;sv="), DiscoveryChoice::Legacy(DiscoveryFormat::Json));
}

#[test]
fn stream_watch_is_acceptable() {
    assert_eq!(
        discovery("application/json;stream=watch"),
        DiscoveryChoice::Legacy(DiscoveryFormat::Json)
    );
}

#[test]
fn other_stream_value_makes_a_clause_unacceptable() {
    assert_eq!(discovery("application/json;stream=other"), DiscoveryChoice::NotAcceptable);
}

#[test]
fn unacceptable_aggregated_clause_falls_through_to_the_next() {
    let header = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;sv=v1,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
    assert_eq!(
        discovery(header),
        DiscoveryChoice::Aggregated(DiscoveryVersion::V2beta1, DiscoveryFormat::Json)
    );
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
        prop_assert_eq!(discovery(&header), DiscoveryChoice::Legacy(DiscoveryFormat::Json));
    }
}

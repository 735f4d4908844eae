use std::collections::BTreeMap;
use std::time::Duration;

use super::*;

/// Metrics in which every family has at least one series (a labelled
/// family without any is left out of the exposition).
fn every_family_used() -> Metrics {
    let m = Metrics::default();
    m.fetch("a", "openapi_v3_root", FetchResult::Ok);
    m.error("a", "connect");
    m.poll_outcome("a", true);
    m.downstream_documents("a", 3);
    m.downstream_memory("a", 1 << 20);
    m.memory_budget(224 << 20);
    m.conversion("a", Duration::from_millis(20));
    m.conversion_cache(3);
    m.snapshot(1, 3);
    m.rebuild(Duration::from_millis(30), true);
    m.conflict();
    m.owner_mismatch();
    m.request(RouteLabel::OpenApiDocument, 200, Duration::from_micros(30));
    m.front_door("a", "get", 200, Some(Duration::from_millis(2)));
    m.front_door_inflight(false, 1);
    m.front_door_refused("max_long_running_requests");
    m.metadata_authentication("accepted", "miss");
    m
}

/// `(name, type)` of every `# TYPE` line.
fn types(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_once(' '))
        .map(|(name, kind)| (name.to_owned(), kind.to_owned()))
        .collect()
}

/// The value of the one sample line that starts with `series` (name and
/// labels, exactly as rendered).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// `(name, type)` of every row of a Markdown metrics table in `doc`: the
/// first column is the name in backquotes, the second starts with the type.
fn listed(doc: &str) -> BTreeMap<String, String> {
    doc.lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once("` | "))
        .filter(|(name, _)| {
            ["openapi_proxy_", "aggregator_", "process_"].iter().any(|p| name.starts_with(p))
        })
        .map(|(name, rest)| (name.to_owned(), rest.split(' ').next().unwrap_or("").to_owned()))
        .collect()
}

/// The operations guide's metrics table is what operators build
/// dashboards from: it must name exactly the families `/metrics` exposes,
/// with their types.
#[test]
fn the_operations_guide_lists_exactly_the_metric_families() {
    let exposed = types(&every_family_used().render());
    assert!(exposed.contains_key("openapi_proxy_downstream_up"), "{exposed:#?}");
    let guide = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/operations.md"));
    assert_eq!(listed(guide), exposed, "docs/operations.md's metrics table and /metrics disagree");
}

#[test]
fn renders_counters_with_labels_sorted_by_name() {
    let m = Metrics::default();
    m.fetch("b", "root", FetchResult::Ok);
    m.fetch("a", "root", FetchResult::Error);
    m.fetch("a", "root", FetchResult::Error);
    m.poll_outcome("a", false);
    let text = m.render();
    let a = text
        .find("{document=\"root\",downstream=\"a\",result=\"error\"} 2")
        .unwrap_or_else(|| panic!("a counted:\n{text}"));
    let b = text
        .find("{document=\"root\",downstream=\"b\",result=\"ok\"} 1")
        .unwrap_or_else(|| panic!("b counted:\n{text}"));
    assert!(a < b, "{text}");
    assert_eq!(sample(&text, "openapi_proxy_downstream_up{downstream=\"a\"}"), Some(0.0));
    assert_eq!(
        sample(&text, "openapi_proxy_downstream_consecutive_failures{downstream=\"a\"}"),
        Some(1.0)
    );
    assert_eq!(sample(&text, "openapi_proxy_downstream_documents{downstream=\"a\"}"), Some(0.0));
}

#[test]
fn a_success_resets_the_failures_and_stamps_the_time() {
    let m = Metrics::default();
    m.poll_outcome("a", false);
    m.poll_outcome("a", false);
    m.poll_outcome("a", true);
    let text = m.render();
    let failures = "openapi_proxy_downstream_consecutive_failures{downstream=\"a\"}";
    assert_eq!(sample(&text, failures), Some(0.0), "{text}");
    let stamp =
        sample(&text, "openapi_proxy_downstream_last_success_timestamp_seconds{downstream=\"a\"}")
            .unwrap_or_else(|| panic!("a success stamped:\n{text}"));
    // Some time after 2023-11-14 (1.7e9), and not milliseconds.
    assert!((1.7e9..1e10).contains(&stamp), "{stamp}");
}

#[test]
fn rebuild_histogram_is_cumulative() {
    let m = Metrics::default();
    m.rebuild(Duration::from_millis(3), true);
    m.rebuild(Duration::from_millis(40), false);
    let text = m.render();
    let bucket = |le: &str| {
        sample(&text, &format!("openapi_proxy_rebuild_duration_seconds_bucket{{le=\"{le}\"}}"))
    };
    assert_eq!(bucket("0.0025"), Some(0.0), "{text}");
    assert_eq!(bucket("0.005"), Some(1.0), "{text}");
    assert_eq!(bucket("0.05"), Some(2.0), "{text}");
    assert_eq!(bucket("10"), Some(2.0), "{text}");
    assert_eq!(bucket("+Inf"), Some(2.0), "{text}");
    assert_eq!(sample(&text, "openapi_proxy_rebuild_duration_seconds_count"), Some(2.0));
    assert_eq!(sample(&text, "aggregator_discovery_aggregation_count_total"), Some(1.0));
}

/// One timer for a rebuild, and both timers are histograms (a summary
/// without quantiles gives only an average).
#[test]
fn conversion_and_rebuild_are_timed_by_histograms_only() {
    let text = every_family_used().render();
    let kinds = types(&text);
    assert_eq!(kinds["openapi_proxy_conversion_seconds"], "histogram");
    assert_eq!(kinds["openapi_proxy_rebuild_duration_seconds"], "histogram");
    assert!(!kinds.contains_key("openapi_proxy_snapshot_build_seconds"), "{text}");
    assert!(!kinds.values().any(|k| k == "summary"), "{kinds:#?}");
    let conversion = "openapi_proxy_conversion_seconds_bucket{downstream=\"a\",le=";
    assert_eq!(sample(&text, &format!("{conversion}\"0.01\"}}")), Some(0.0), "{text}");
    assert_eq!(sample(&text, &format!("{conversion}\"0.025\"}}")), Some(1.0), "{text}");
}

#[test]
fn a_request_shows_in_the_histogram_with_its_route_and_code() {
    let m = Metrics::default();
    m.request(RouteLabel::OpenApiDocument, 304, Duration::from_micros(30));
    m.request(RouteLabel::OpenApiDocument, 304, Duration::from_micros(300));
    m.request(RouteLabel::NotFound, 404, Duration::from_micros(5));
    let text = m.render();
    assert_eq!(types(&text)["openapi_proxy_http_request_duration_seconds"], "histogram");
    let doc = "openapi_proxy_http_request_duration_seconds_bucket{code=\"304\",route=\"openapi_v3_document\",le=";
    assert_eq!(sample(&text, &format!("{doc}\"0.000025\"}}")), Some(0.0), "{text}");
    assert_eq!(sample(&text, &format!("{doc}\"0.00005\"}}")), Some(1.0), "{text}");
    assert_eq!(sample(&text, &format!("{doc}\"0.0005\"}}")), Some(2.0), "{text}");
    assert_eq!(sample(&text, &format!("{doc}\"+Inf\"}}")), Some(2.0), "{text}");
    assert_eq!(
        sample(
            &text,
            "openapi_proxy_http_request_duration_seconds_count{code=\"304\",route=\"openapi_v3_document\"}"
        ),
        Some(2.0)
    );
    assert_eq!(
        sample(
            &text,
            "openapi_proxy_http_request_duration_seconds_count{code=\"404\",route=\"not_found\"}"
        ),
        Some(1.0)
    );
    // Every bucket, plus +Inf, for each series.
    let buckets = text
        .lines()
        .filter(|l| {
            l.starts_with("openapi_proxy_http_request_duration_seconds_bucket{code=\"404\"")
        })
        .count();
    assert_eq!(buckets, requests::REQUEST_BUCKETS.len() + 1, "{text}");
}

/// A code without a kept child is recorded all the same.
#[test]
fn an_unusual_status_code_is_recorded_too() {
    let m = Metrics::default();
    m.request(RouteLabel::Readyz, 418, Duration::from_micros(1));
    m.request(RouteLabel::Readyz, 418, Duration::from_micros(1));
    let text = m.render();
    assert_eq!(
        sample(
            &text,
            "openapi_proxy_http_request_duration_seconds_count{code=\"418\",route=\"readyz\"}"
        ),
        Some(2.0),
        "{text}"
    );
}

#[test]
fn no_request_counter_repeats_the_histogram_count() {
    let text = every_family_used().render();
    assert!(!text.contains("openapi_proxy_http_requests_total"), "{text}");
}

#[test]
fn build_info_is_one_and_names_the_version() {
    let text = Metrics::default().render();
    assert_eq!(types(&text)["openapi_proxy_build_info"], "gauge");
    let line = text
        .lines()
        .find(|l| l.starts_with("openapi_proxy_build_info{"))
        .unwrap_or_else(|| panic!("no build info:\n{text}"));
    assert!(line.ends_with("} 1"), "{line}");
    assert!(line.contains(&format!("version=\"{}\"", env!("CARGO_PKG_VERSION"))), "{line}");
    let platform = format!("platform=\"{}/{}\"", std::env::consts::OS, std::env::consts::ARCH);
    assert!(line.contains(&platform), "{line}");
    assert!(line.contains("profile=\""), "{line}");
}

#[cfg(target_os = "linux")]
#[test]
fn the_process_families_are_exposed_with_their_types() {
    let text = Metrics::default().render();
    let kinds = types(&text);
    for (name, kind) in [
        ("process_cpu_seconds_total", "counter"),
        ("process_resident_memory_bytes", "gauge"),
        ("process_virtual_memory_bytes", "gauge"),
        ("process_open_fds", "gauge"),
        ("process_max_fds", "gauge"),
        ("process_start_time_seconds", "gauge"),
        ("process_threads", "gauge"),
    ] {
        assert_eq!(kinds.get(name).map(String::as_str), Some(kind), "{name}:\n{text}");
    }
    let rss = sample(&text, "process_resident_memory_bytes").unwrap_or(0.0);
    assert!(rss > 0.0, "{text}");
    let fds = sample(&text, "process_open_fds").unwrap_or(0.0);
    assert!(fds >= 3.0, "stdin, stdout and stderr at least:\n{text}");
}

#[test]
fn label_values_are_escaped() {
    let m = Metrics::default();
    m.poll_outcome("a\"b\\c\nd", true);
    let text = m.render();
    assert!(
        text.contains("openapi_proxy_downstream_up{downstream=\"a\\\"b\\\\c\\nd\"} 1"),
        "{text}"
    );
}

/// The front door's families: a request counted by downstream, verb and
/// code, timed only when a response head came back; the gauge follows
/// places taken and given back.
#[test]
fn front_door_requests_are_counted_and_timed() {
    let m = Metrics::default();
    m.front_door("kube", "watch", 200, Some(Duration::from_millis(3)));
    m.front_door("", "get", 404, None);
    m.front_door_inflight(true, 1);
    m.front_door_inflight(true, 1);
    m.front_door_inflight(true, -1);
    let text = m.render();
    let counted = |series: &str| sample(&text, series);
    assert_eq!(
        counted(
            r#"openapi_proxy_front_door_requests_total{code="200",downstream="kube",verb="watch"}"#
        ),
        Some(1.0)
    );
    assert_eq!(
        counted(r#"openapi_proxy_front_door_requests_total{code="404",downstream="",verb="get"}"#),
        Some(1.0)
    );
    assert_eq!(
        counted(
            r#"openapi_proxy_front_door_request_duration_seconds_count{downstream="kube",verb="watch"}"#
        ),
        Some(1.0)
    );
    assert!(
        !text.contains(r#"openapi_proxy_front_door_request_duration_seconds_count{downstream="""#),
        "{text}"
    );
    assert_eq!(counted(r#"openapi_proxy_front_door_inflight{class="long_running"}"#), Some(1.0));
}

//! Metrics in the Prometheus text format.
//!
//! A dozen fixed families do not need a metrics framework: counters and
//! gauges keyed by their label values, rendered sorted so that the output
//! is stable. The request counter is on the hot path, so it is a sharded
//! map of atomics; everything else changes once per poll.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use dashmap::DashMap;

/// What a fetch from a downstream ended in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FetchResult {
    /// 200, new content.
    Ok,
    /// 304, unchanged.
    NotModified,
    /// 404 or 406: the downstream does not serve this document (no
    /// `/openapi/v3`, no aggregated discovery). A fact about the
    /// downstream, not a failure: an alert on `error` must mean errors.
    NotServed,
    /// Anything else: refused, timeout, bad status, bad body.
    Error,
}

impl FetchResult {
    fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::NotModified => "not_modified",
            Self::NotServed => "not_served",
            Self::Error => "error",
        }
    }
}

/// Per-downstream state, for gauges.
#[derive(Debug, Clone, Default)]
struct DownstreamGauges {
    up: bool,
    last_success: Option<SystemTime>,
    consecutive_failures: u64,
    conversion_seconds: f64,
    conversions: u64,
    documents: u64,
}

#[derive(Debug, Default)]
struct Slow {
    fetches: BTreeMap<(String, &'static str, FetchResult), u64>,
    errors: BTreeMap<(String, &'static str), u64>,
    downstreams: BTreeMap<String, DownstreamGauges>,
    snapshot_generation: u64,
    snapshot_documents: u64,
    snapshot_build_seconds: f64,
    snapshot_builds: u64,
    conflicts: u64,
    conversion_cache_entries: u64,
    discovery_aggregations: u64,
    rebuild: Histogram,
}

/// Upper bounds (seconds) of the rebuild-duration histogram buckets.
const REBUILD_BUCKETS: [f64; 10] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0];

#[derive(Debug, Default)]
struct Histogram {
    counts: [u64; REBUILD_BUCKETS.len()],
    sum: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, seconds: f64) {
        for (bound, c) in REBUILD_BUCKETS.iter().zip(self.counts.iter_mut()) {
            if seconds <= *bound {
                *c += 1;
            }
        }
        self.sum += seconds;
        self.count += 1;
    }
}

/// All metrics of one proxy.
#[derive(Debug, Default)]
pub struct Metrics {
    slow: Mutex<Slow>,
    requests: DashMap<(&'static str, u16), AtomicU64>,
}

impl Metrics {
    fn with<T>(&self, f: impl FnOnce(&mut Slow) -> T) -> T {
        // A panic while holding the lock leaves plain counters behind;
        // they stay usable.
        let mut guard = self.slow.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut guard)
    }

    /// Counts one fetch of `document` (`root`, `document`, `v2`, …).
    pub fn fetch(&self, downstream: &str, document: &'static str, result: FetchResult) {
        self.with(|m| {
            *m.fetches.entry((downstream.to_owned(), document, result)).or_default() += 1
        });
    }

    /// Counts one failure of a poll, by reason.
    pub fn error(&self, downstream: &str, reason: &'static str) {
        self.with(|m| *m.errors.entry((downstream.to_owned(), reason)).or_default() += 1);
    }

    /// Records the outcome of a whole poll.
    pub fn poll_outcome(&self, downstream: &str, ok: bool) {
        self.with(|m| {
            let g = m.downstreams.entry(downstream.to_owned()).or_default();
            g.up = ok;
            if ok {
                g.last_success = Some(SystemTime::now());
                g.consecutive_failures = 0;
            } else {
                g.consecutive_failures += 1;
            }
        });
    }

    /// Records the documents a downstream currently contributes.
    pub fn downstream_documents(&self, downstream: &str, documents: usize) {
        self.with(|m| {
            m.downstreams.entry(downstream.to_owned()).or_default().documents =
                u64::try_from(documents).unwrap_or(u64::MAX);
        });
    }

    /// Records time spent converting a downstream's Swagger 2.0 document.
    pub fn conversion(&self, downstream: &str, took: Duration) {
        self.with(|m| {
            let g = m.downstreams.entry(downstream.to_owned()).or_default();
            g.conversion_seconds += took.as_secs_f64();
            g.conversions += 1;
        });
    }

    /// Records how many conversions the shared cache holds after a prune:
    /// it must stay near the number of documents served, however often a
    /// downstream's content changes.
    pub fn conversion_cache(&self, entries: usize) {
        self.with(|m| m.conversion_cache_entries = u64::try_from(entries).unwrap_or(u64::MAX));
    }

    /// Records a published snapshot.
    pub fn snapshot(&self, generation: u64, documents: usize, took: Duration) {
        self.with(|m| {
            m.snapshot_generation = generation;
            m.snapshot_documents = u64::try_from(documents).unwrap_or(u64::MAX);
            m.snapshot_build_seconds += took.as_secs_f64();
            m.snapshot_builds += 1;
        });
    }

    /// Records a rebuild of the merged model (OpenAPI root and discovery):
    /// how long it took, and whether the aggregated discovery document
    /// changed (upstream's `aggregator_discovery_aggregation_count_total`
    /// counts regenerations of that document).
    pub fn rebuild(&self, took: Duration, discovery_changed: bool) {
        self.with(|m| {
            m.rebuild.observe(took.as_secs_f64());
            if discovery_changed {
                m.discovery_aggregations += 1;
            }
        });
    }

    /// Counts a document key published by two downstreams.
    pub fn conflict(&self) {
        self.with(|m| m.conflicts += 1);
    }

    /// Counts one answered request.
    pub fn request(&self, route: &'static str, status: u16) {
        if let Some(c) = self.requests.get(&(route, status)) {
            c.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.requests.entry((route, status)).or_default().fetch_add(1, Ordering::Relaxed);
    }

    /// The Prometheus text exposition of every metric.
    #[must_use]
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = self.render_into(&mut out);
        out
    }

    fn render_into(&self, out: &mut String) -> std::fmt::Result {
        let mut requests: Vec<((&'static str, u16), u64)> =
            self.requests.iter().map(|e| (*e.key(), e.value().load(Ordering::Relaxed))).collect();
        requests.sort_unstable();
        self.with(|m| -> std::fmt::Result {
            family(out, "openapi_proxy_downstream_fetches_total", "counter", "Requests made to downstream servers, by document and result.")?;
            for ((d, doc, r), n) in &m.fetches {
                writeln!(out, "openapi_proxy_downstream_fetches_total{{downstream=\"{}\",document=\"{doc}\",result=\"{}\"}} {n}", esc(d), r.as_str())?;
            }
            family(out, "openapi_proxy_downstream_errors_total", "counter", "Failed polls of downstream servers, by reason (a poll counts once per reason).")?;
            for ((d, reason), n) in &m.errors {
                writeln!(out, "openapi_proxy_downstream_errors_total{{downstream=\"{}\",reason=\"{reason}\"}} {n}", esc(d))?;
            }
            family(out, "openapi_proxy_downstream_up", "gauge", "1 when the last poll of the downstream succeeded.")?;
            for (d, g) in &m.downstreams {
                writeln!(out, "openapi_proxy_downstream_up{{downstream=\"{}\"}} {}", esc(d), u8::from(g.up))?;
            }
            family(out, "openapi_proxy_downstream_consecutive_failures", "gauge", "Failed polls since the last success.")?;
            for (d, g) in &m.downstreams {
                writeln!(out, "openapi_proxy_downstream_consecutive_failures{{downstream=\"{}\"}} {}", esc(d), g.consecutive_failures)?;
            }
            family(out, "openapi_proxy_downstream_last_success_timestamp_seconds", "gauge", "Unix time of the last successful poll.")?;
            for (d, g) in &m.downstreams {
                if let Some(t) = g.last_success {
                    let secs = t.duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
                    writeln!(out, "openapi_proxy_downstream_last_success_timestamp_seconds{{downstream=\"{}\"}} {secs:.3}", esc(d))?;
                }
            }
            family(out, "openapi_proxy_downstream_documents", "gauge", "OpenAPI v3 documents the downstream currently contributes (last good).")?;
            for (d, g) in &m.downstreams {
                writeln!(out, "openapi_proxy_downstream_documents{{downstream=\"{}\"}} {}", esc(d), g.documents)?;
            }
            family(out, "openapi_proxy_conversion_seconds", "summary", "Time spent converting Swagger 2.0 to OpenAPI 3.0.")?;
            for (d, g) in &m.downstreams {
                writeln!(out, "openapi_proxy_conversion_seconds_sum{{downstream=\"{}\"}} {:.6}", esc(d), g.conversion_seconds)?;
                writeln!(out, "openapi_proxy_conversion_seconds_count{{downstream=\"{}\"}} {}", esc(d), g.conversions)?;
            }
            family(out, "openapi_proxy_conversion_cache_entries", "gauge", "Converted documents kept for reuse (pruned to what is still served).")?;
            writeln!(out, "openapi_proxy_conversion_cache_entries {}", m.conversion_cache_entries)?;
            family(out, "openapi_proxy_snapshot_generation", "gauge", "Generation of the snapshot being served.")?;
            writeln!(out, "openapi_proxy_snapshot_generation {}", m.snapshot_generation)?;
            family(out, "openapi_proxy_snapshot_documents", "gauge", "OpenAPI v3 documents in the snapshot being served.")?;
            writeln!(out, "openapi_proxy_snapshot_documents {}", m.snapshot_documents)?;
            family(out, "openapi_proxy_snapshot_build_seconds", "summary", "Time spent building snapshots.")?;
            writeln!(out, "openapi_proxy_snapshot_build_seconds_sum {:.6}", m.snapshot_build_seconds)?;
            writeln!(out, "openapi_proxy_snapshot_build_seconds_count {}", m.snapshot_builds)?;
            family(out, "openapi_proxy_key_conflicts_total", "counter", "Document keys published by more than one downstream (the higher priority wins).")?;
            writeln!(out, "openapi_proxy_key_conflicts_total {}", m.conflicts)?;
            family(out, "aggregator_discovery_aggregation_count_total", "counter", "Times the aggregated discovery document was regenerated (kube-apiserver's name).")?;
            writeln!(out, "aggregator_discovery_aggregation_count_total {}", m.discovery_aggregations)?;
            family(out, "openapi_proxy_rebuild_duration_seconds", "histogram", "Time to rebuild the merged OpenAPI and discovery model after a downstream changed.")?;
            for (bound, c) in REBUILD_BUCKETS.iter().zip(m.rebuild.counts.iter()) {
                writeln!(out, "openapi_proxy_rebuild_duration_seconds_bucket{{le=\"{bound}\"}} {c}")?;
            }
            writeln!(out, "openapi_proxy_rebuild_duration_seconds_bucket{{le=\"+Inf\"}} {}", m.rebuild.count)?;
            writeln!(out, "openapi_proxy_rebuild_duration_seconds_sum {:.6}", m.rebuild.sum)?;
            writeln!(out, "openapi_proxy_rebuild_duration_seconds_count {}", m.rebuild.count)?;
            Ok(())
        })?;
        family(
            out,
            "openapi_proxy_http_requests_total",
            "counter",
            "Requests answered, by route and status code.",
        )?;
        for ((route, code), n) in requests {
            writeln!(
                out,
                "openapi_proxy_http_requests_total{{route=\"{route}\",code=\"{code}\"}} {n}"
            )?;
        }
        Ok(())
    }
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) -> std::fmt::Result {
    writeln!(out, "# HELP {name} {help}")?;
    writeln!(out, "# TYPE {name} {kind}")
}

/// Escapes a label value (`\`, `"` and newlines, as the format requires).
fn esc(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The README's metrics table is what operators build dashboards from:
    /// it must name exactly the families `/metrics` exposes, with their
    /// types.
    #[test]
    fn the_readme_lists_exactly_the_metric_families() {
        let rendered = Metrics::default().render();
        let mut exposed: Vec<(String, String)> = rendered
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .filter_map(|l| l.split_once(' '))
            .map(|(name, kind)| (name.to_owned(), kind.to_owned()))
            .collect();
        exposed.sort();
        let readme = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"));
        let mut listed: Vec<(String, String)> = readme
            .lines()
            .filter_map(|l| l.strip_prefix("| `"))
            .filter_map(|l| l.split_once("` | "))
            .filter(|(name, _)| {
                name.starts_with("openapi_proxy_") || name.starts_with("aggregator_")
            })
            .map(|(name, rest)| (name.to_owned(), rest.split(' ').next().unwrap_or("").to_owned()))
            .collect();
        listed.sort();
        assert!(!exposed.is_empty());
        assert_eq!(listed, exposed, "README.md's metrics table and /metrics disagree");
    }

    #[test]
    fn renders_counters_with_labels_in_order() {
        let m = Metrics::default();
        m.fetch("b", "root", FetchResult::Ok);
        m.fetch("a", "root", FetchResult::Error);
        m.fetch("a", "root", FetchResult::Error);
        m.request("openapi_v3_document", 200);
        m.request("openapi_v3_document", 200);
        m.poll_outcome("a", false);
        let text = m.render();
        let a =
            text.find("downstream=\"a\",document=\"root\",result=\"error\"} 2").expect("a counted");
        let b =
            text.find("downstream=\"b\",document=\"root\",result=\"ok\"} 1").expect("b counted");
        assert!(a < b, "{text}");
        assert!(text.contains(
            "openapi_proxy_http_requests_total{route=\"openapi_v3_document\",code=\"200\"} 2"
        ));
        assert!(text.contains("openapi_proxy_downstream_up{downstream=\"a\"} 0"));
        assert!(text.contains("openapi_proxy_downstream_consecutive_failures{downstream=\"a\"} 1"));
    }

    #[test]
    fn rebuild_histogram_is_cumulative() {
        let m = Metrics::default();
        m.rebuild(Duration::from_millis(3), true);
        m.rebuild(Duration::from_millis(40), false);
        let text = m.render();
        assert!(
            text.contains("openapi_proxy_rebuild_duration_seconds_bucket{le=\"0.0025\"} 0"),
            "{text}"
        );
        assert!(
            text.contains("openapi_proxy_rebuild_duration_seconds_bucket{le=\"0.005\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("openapi_proxy_rebuild_duration_seconds_bucket{le=\"0.05\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("openapi_proxy_rebuild_duration_seconds_bucket{le=\"+Inf\"} 2"),
            "{text}"
        );
        assert!(text.contains("aggregator_discovery_aggregation_count_total 1"), "{text}");
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(esc("a\"b\\c\n"), "a\\\"b\\\\c\\n");
    }
}

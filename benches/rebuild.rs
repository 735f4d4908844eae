//! Rebuilding the snapshot after one downstream changed, at the far end of
//! scale: 3,000 CRD-like group-versions across 50 downstreams (KEP-3352's
//! 3,000 CRDs). A rebuild merges every downstream's discovery, renders
//! every discovery body (aggregated v2 and v2beta1, legacy lists, one
//! APIGroup per group) with hashes and gzip, and the OpenAPI root index.
//!
//! Also prints the sizes of the aggregated `/apis` document, plain and
//! gzipped.
//!
//! Run: `cargo bench --bench rebuild`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, SamplingMode};
use openapi_proxy::testing::fleet;
use openapi_proxy::{Contribution, Readiness, build_snapshot};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// 50 downstreams × 30 groups × 2 versions = 3,000 group-versions.
const DOWNSTREAMS: usize = 50;
const GROUPS: usize = 30;
const VERSIONS: usize = 2;

fn main() {
    let mut contributions: Vec<Arc<Contribution>> =
        fleet::contributions(DOWNSTREAMS, GROUPS, VERSIONS);
    let (snap, _) = build_snapshot(1, &contributions, Readiness::default());
    let apis = &snap.discovery.apis_v2;
    eprintln!(
        "scale: {} group-versions, {} groups; /apis aggregated: {} bytes, {} gzipped; OpenAPI documents: {}",
        snap.discovery.resources.len(),
        snap.discovery.groups.len(),
        apis.body.len(),
        apis.gzip.as_ref().map_or(0, |g| g.len()),
        snap.openapi.len()
    );
    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("rebuild");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(20)
        .measurement_time(Duration::from_secs(8));
    // One downstream changes: its poll loop has made a new contribution
    // (outside the timing: that is the poller's work), then the whole
    // snapshot is rebuilt. Two versions of that downstream alternate, so
    // every rebuild sees a real change.
    let original = Arc::clone(&contributions[0]);
    let changed = {
        let mut c = (*fleet::contributions(1, GROUPS + 1, VERSIONS).remove(0)).clone();
        c.name = original.name.clone();
        c.priority = original.priority;
        Arc::new(c)
    };
    let mut generation = 1;
    group.bench_function("3000_group_versions_50_downstreams", |b| {
        b.iter(|| {
            generation += 1;
            contributions[0] =
                if generation % 2 == 0 { Arc::clone(&changed) } else { Arc::clone(&original) };
            black_box(build_snapshot(generation, &contributions, Readiness::default()))
        });
    });
    group.finish();
    c.final_summary();
}

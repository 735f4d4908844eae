//! Rebuilding the snapshot after one downstream changed, at the far end of
//! scale: 3,000 CRD-like group-versions across 50 downstreams (KEP-3352's
//! 3,000 CRDs). A rebuild merges every downstream's discovery, renders
//! every discovery body (aggregated v2 and v2beta1, legacy lists, one
//! APIGroup per group) with hashes and gzip, and the OpenAPI root index.
//!
//! Also prints the sizes of the aggregated `/apis` document, plain and
//! gzipped.
//!
//! The second group is issue 16's scale: 5,000 CRD kinds in 1,000
//! group-versions served by one downstream (`testkit::crd`), one
//! group-version changing between rebuilds.
//!
//! The third group (`forms_crd`) is issue 27's: at the same scale, what
//! making discovery's YAML and protobuf forms of `/apis` costs, on the
//! first request for them and after one change, and their sizes.
//!
//! Run: `cargo bench --bench rebuild`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, Criterion, SamplingMode};
use openapi_proxy::negotiate::{DiscoveryFormat, DiscoveryVersion};
use openapi_proxy::testkit::crd::CrdFleet;
use openapi_proxy::testkit::fleet;
use openapi_proxy::{Contribution, Readiness, build_snapshot, rebuild_snapshot};

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
        apis.len(),
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
    crd_one_change(&mut c);
    forms_crd(&mut c);
    c.final_summary();
}

/// Issue 16: one CRD group-version of 1,000 changes (its discovery and
/// its document), the snapshot is rebuilt: whole (`build`, what the
/// proxy did before) and from the previous snapshot (`rebuild`). The documents' size does not
/// enter a rebuild (they are shared, already prepared), so they are kept
/// small here to keep the set-up short; discovery is full size.
fn crd_one_change(c: &mut Criterion) {
    let fleet = CrdFleet { kind_bytes: 1_000, ..CrdFleet::ISSUE_16 };
    let original = Arc::new(fleet.contribution("crds", None));
    let changed = Arc::new(fleet.contribution("crds", Some((fleet.group_versions / 2, 1))));
    let (snap, _) = build_snapshot(1, std::slice::from_ref(&original), Readiness::default());
    let apis = &snap.discovery.apis_v2;
    eprintln!(
        "crd scale: {} kinds, {} group-versions, {} groups; /apis aggregated: {} bytes, {} gzipped",
        fleet.kinds,
        snap.discovery.resources.len(),
        snap.discovery.groups.len(),
        apis.len(),
        apis.gzip.as_ref().map_or(0, |g| g.len()),
    );
    let mut group = c.benchmark_group("rebuild_crd");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(20)
        .measurement_time(Duration::from_secs(8));
    let mut generation = 1;
    group.bench_function("full_5000_kinds_1000_group_versions", |b| {
        b.iter(|| {
            generation += 1;
            let input = if generation % 2 == 0 { &changed } else { &original };
            black_box(build_snapshot(generation, std::slice::from_ref(input), Readiness::default()))
        });
    });
    // What the proxy's builder does: the next snapshot from the one
    // served, reusing what did not change. Each iteration rebuilds from
    // the other state, so every one sees a real change.
    let (from_changed, _) = build_snapshot(2, std::slice::from_ref(&changed), Readiness::default());
    let states = [(&original, &from_changed), (&changed, &snap)];
    bench_rebuild(
        &mut group,
        "incremental_5000_kinds_1000_group_versions",
        states,
        &mut generation,
    );
    // As the poller hands it on: the changed contribution shares every
    // unchanged group, legacy list and document (`Arc`) with the original,
    // so a rebuild recognises them without comparing their content.
    let shared =
        Arc::new(fleet.contribution_after(&original, "crds", Some((fleet.group_versions / 2, 1))));
    let (from_shared, _) = build_snapshot(2, std::slice::from_ref(&shared), Readiness::default());
    let states = [(&original, &from_shared), (&shared, &snap)];
    bench_rebuild(
        &mut group,
        "incremental_shared_5000_kinds_1000_group_versions",
        states,
        &mut generation,
    );
    group.finish();
}

/// Benchmarks `rebuild` alternating between two (contribution, previous
/// snapshot) states, so that every iteration sees a real change.
fn bench_rebuild(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    states: [(&Arc<Contribution>, &openapi_proxy::Snapshot); 2],
    generation: &mut u64,
) {
    group.bench_function(name, |b| {
        b.iter(|| {
            *generation += 1;
            let (input, previous) = states[usize::from(generation.is_multiple_of(2))];
            black_box(rebuild_snapshot(
                *generation,
                std::slice::from_ref(input),
                Readiness::default(),
                previous,
            ))
        });
    });
}

/// Issue 27: `/apis`'s YAML and protobuf forms at issue 16's scale (5,000
/// kinds in 1,000 group-versions). They are made on the first request for
/// each (then kept): `first_*` times that request's work on a snapshot
/// just built (every group encoded, every run deflated); `*_after_one_change`
/// times it on the snapshot rebuilt after one group-version changed, from
/// one whose form was made (one run encoded again, the list joined).
/// Snapshots are made outside the timing.
fn forms_crd(c: &mut Criterion) {
    let fleet = CrdFleet { kind_bytes: 1_000, ..CrdFleet::ISSUE_16 };
    let original = Arc::new(fleet.contribution("crds", None));
    let shared =
        Arc::new(fleet.contribution_after(&original, "crds", Some((fleet.group_versions / 2, 1))));
    let built = || build_snapshot(1, std::slice::from_ref(&original), Readiness::default()).0;
    let snap = built();
    for format in [DiscoveryFormat::Json, DiscoveryFormat::Yaml, DiscoveryFormat::Protobuf] {
        let r = snap.discovery.aggregated(false, DiscoveryVersion::V2, format).expect("made");
        eprintln!(
            "crd scale, /apis v2 as {format:?}: {} bytes, {} gzipped",
            r.len(),
            r.gzip.as_ref().map_or(0, |g| g.len())
        );
    }
    let mut group = c.benchmark_group("forms_crd");
    group.sampling_mode(SamplingMode::Flat).sample_size(10);
    for (name, format) in [("protobuf", DiscoveryFormat::Protobuf), ("yaml", DiscoveryFormat::Yaml)]
    {
        group.bench_function(format!("first_{name}_apis_5000_kinds"), |b| {
            b.iter_batched(
                built,
                |s| {
                    black_box(s.discovery.aggregated(false, DiscoveryVersion::V2, format).is_ok());
                    s
                },
                BatchSize::PerIteration,
            );
        });
        group.bench_function(format!("{name}_apis_after_one_change_5000_kinds"), |b| {
            b.iter_batched(
                || {
                    let previous = built();
                    black_box(
                        previous.discovery.aggregated(false, DiscoveryVersion::V2, format).is_ok(),
                    );
                    let (next, _) = rebuild_snapshot(
                        2,
                        std::slice::from_ref(&shared),
                        Readiness::default(),
                        &previous,
                    );
                    (next, previous)
                },
                |(s, previous)| {
                    black_box(s.discovery.aggregated(false, DiscoveryVersion::V2, format).is_ok());
                    (s, previous)
                },
                BatchSize::PerIteration,
            );
        });
    }
    group.finish();
}

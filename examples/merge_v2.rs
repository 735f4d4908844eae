//! Times the merged `/openapi/v2` (docs/wire.md, A-13) at issue 16's
//! scale, in process: the CRD fleet of `openapi_proxy::testkit::crd` as a
//! downstream that publishes only OpenAPI v3 (as `benches/load/crds.sh`
//! serves it), beside Kubernetes 1.35's Swagger 2.0 as a second
//! downstream. Prints, for the median of `REPEAT` runs: the snapshot
//! build without the merge (what the cold start pays), the merge made by
//! the first `/openapi/v2` request (down-converting the fleet, merging,
//! compressing), the merged document's size plain and gzipped, its
//! protobuf rendition (made a piece at a time), and the peak RSS after
//! each.
//!
//! `cargo run --release --example merge_v2 -- [KINDS GVS KIND_BYTES REPEAT]`
//! (defaults: 5000 1000 40000 3).

use std::sync::Arc;
use std::time::{Duration, Instant};

use openapi_proxy::testkit::crd::CrdFleet;
use openapi_proxy::testkit::testdata;
use openapi_proxy::{Contribution, OpenApiV2, Readiness, Rendered, build_snapshot};
use peak_alloc::PeakAlloc;

/// Counts the heap: what making the merge holds above what was held
/// before, free of what the allocator keeps from earlier work (RSS is not).
#[global_allocator]
static HEAP: PeakAlloc = PeakAlloc;

fn peak_rss_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb / 1024)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[allow(clippy::print_stdout, reason = "the figures are this program's output")]
fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let arg = |i: usize, default: usize| args.get(i).copied().unwrap_or(default);
    let fleet = CrdFleet {
        kinds: arg(0, 5_000),
        group_versions: arg(1, 1_000),
        kind_bytes: arg(2, 40_000),
        ..CrdFleet::ISSUE_16
    };
    let repeat = arg(3, 3).max(1);
    let crds = Arc::new(fleet.contribution("crds", None));
    let swagger = std::fs::read(testdata::path("kubernetes-1.35/swagger.json")).expect("1.35");
    let kube = Arc::new(Contribution {
        name: "kube".into(),
        priority: 1,
        order: 1,
        openapi_v2: Some(OpenApiV2 { json: Arc::new(Rendered::document(swagger)) }),
        ..Contribution::default()
    });
    let inputs: usize = crds.openapi.values().map(|r| r.len()).sum();
    let inputs_gzip: usize =
        crds.openapi.values().map(|r| r.gzip.as_ref().map_or(r.len(), |g| g.len())).sum();
    println!(
        "fleet: {} kinds, {} group-versions, {} MB of v3 documents, {} MB gzipped",
        fleet.kinds,
        fleet.group_versions,
        inputs / 1_000_000,
        inputs_gzip / 1_000_000
    );
    println!("after making the inputs: peak RSS {} MiB", peak_rss_mib());
    let (mut builds, mut merges) = (Vec::new(), Vec::new());
    let (mut size, mut gzip, mut gzip_only) = (0, 0, false);
    let (mut held_peak, mut held_after, mut estimate) = (0, 0, 0);
    let (mut protobufs, mut pb_size, mut pb_gzip, mut pb_peak) = (Vec::new(), 0, 0, 0);
    for _ in 0..repeat {
        let start = Instant::now();
        let (snap, _) =
            build_snapshot(1, &[Arc::clone(&kube), Arc::clone(&crds)], Readiness::default());
        builds.push(start.elapsed());
        assert!(!snap.openapi_v2.is_made());
        estimate = snap.openapi_v2.making_cost();
        let before = HEAP.current_usage();
        HEAP.reset_peak_usage();
        let start = Instant::now();
        let v2 = snap.openapi_v2.get().expect("merged");
        merges.push(start.elapsed());
        held_peak = HEAP.peak_usage().saturating_sub(before);
        held_after = HEAP.current_usage().saturating_sub(before);
        size = v2.json.len();
        gzip = v2.json.gzip.as_ref().map_or(0, |g| g.len());
        gzip_only = v2.json.held().is_none();
        // Its protobuf, as kubectl 1.27 asks for it, within no bound.
        let before = HEAP.current_usage();
        HEAP.reset_peak_usage();
        let start = Instant::now();
        let made = snap.openapi_v2.protobuf_within(u64::MAX).expect("made").expect("a document");
        let pb = made.cell.get(&made.account).expect("encoded");
        protobufs.push(start.elapsed());
        pb_peak = HEAP.peak_usage().saturating_sub(before);
        pb_size = pb.len();
        pb_gzip = pb.gzip.as_ref().map_or(0, |g| g.len());
    }
    println!("snapshot build (no merge): median {:?}", median(builds));
    println!(
        "first /openapi/v2 (merge): median {:?}, {} MB of JSON, {} MB gzipped{}",
        median(merges),
        size / 1_000_000,
        gzip / 1_000_000,
        if gzip_only { ", held gzipped only" } else { "" }
    );
    println!(
        "  heap held while making it: peak +{} MiB, after +{} MiB; estimated beforehand {} MiB",
        held_peak >> 20,
        held_after >> 20,
        estimate >> 20
    );
    println!(
        "its protobuf: median {:?}, {} MB, {} MB gzipped; heap held while making it: peak +{} MiB",
        median(protobufs),
        pb_size / 1_000_000,
        pb_gzip / 1_000_000,
        pb_peak >> 20
    );
    println!("peak RSS {} MiB", peak_rss_mib());
}

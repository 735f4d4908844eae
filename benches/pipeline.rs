//! Times each stage of the `convert` command on the Kubernetes 1.27
//! whole-cluster Swagger 2.0 document (4 MB), and the whole command minus
//! the file writes.
//!
//! Every group reports throughput in bytes of the *input* document, so the
//! stages can be compared with one another and with the pipeline.
//!
//! The tree path (strings borrowed from the input, no `serde_json::Value`):
//! - `parse_tree`: `parse_tree` of the bytes.
//! - `convert_tree`: Swagger 2.0 → OpenAPI 3.0 of the parsed tree.
//! - `split_rendered_tree`: the converted tree split straight to bytes.
//! - `pipeline_tree`: `parse_tree` + `convert_each`, the one pipeline that
//!   `convert --out`, the demo and the proxy's poll loop run (convert the
//!   whole document, then split it): the `convert --out` command minus
//!   writing files (and minus freeing the parsed tree, which it skips).
//! - `pipeline_tree_cached`: `swagger_to_openapi` with a warm cache, as a
//!   poll loop runs it when a downstream's v2 document changed but none of
//!   its documents did (each document's bytes copied and digested, found in
//!   the cache, nothing prepared again).
//! - `pipeline_tree_cached_budget`: the same within a downstream's default
//!   memory share when two downstreams are configured (64 MiB): the parse
//!   counts values, and the split's output is sized before it is rendered.
//!
//! The `Value` API, for callers that want `serde_json::Value`s (the same
//! converter and splitter, behind a borrow into a tree and back):
//! - `parse`: `document::parse` of the bytes.
//! - `convert`: `convert::convert` of the parsed `Value`.
//! - `split`: the converted document into one `Value` per key.
//! - `serialize`: `serde_json::to_vec` of every document `split` gave.
//! - `split_rendered`: `split::split_rendered` of the converted `Value`
//!   (the same bytes as `split` + `serialize`).
//! - `pipeline`: parse + convert + split_rendered over `Value`s.
//!
//! - `proxy_value`: the pipeline's steps on `Value`s, as the poll loop ran
//!   them before the tree path.
//!
//! Every group times freeing what it builds, as a long-running server pays
//! for it, except `pipeline` and `pipeline_tree`, which return what they
//! built, as the command exits without freeing it.
//!
//! The binary runs on mimalloc, so the bench does too.
//!
//! Run: `cargo bench --bench pipeline`.

use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{Bencher, BenchmarkGroup, Criterion, SamplingMode, Throughput};
use serde_json::Value;

use openapi_proxy::{self as op, ConversionCache, Node, RenderedSplit, Split};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The Kubernetes 1.27 document, in the test data folder.
const INPUT: &str = "kube-openapi/pkg/schemaconv/testdata/swagger.json";

fn input() -> Vec<u8> {
    let path = op::testkit::testdata::path(INPUT);
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn parse(bytes: &[u8]) -> Value {
    op::parse_document(bytes).expect("the bench input parses")
}

fn convert(v2: &Value) -> Value {
    op::convert(v2).expect("the bench input converts").document
}

fn split(v3: &Value) -> Split {
    op::split(v3).expect("the converted bench input splits")
}

fn split_rendered(v3: &Value) -> RenderedSplit {
    op::split_rendered(v3).expect("the converted bench input splits")
}

fn parse_tree(bytes: &[u8]) -> Node<'_> {
    op::parse_tree(bytes).expect("the bench input parses")
}

fn convert_tree<'a>(v2: &'a Node<'a>) -> Node<'a> {
    op::convert_tree(v2).expect("the bench input converts").document
}

/// The converted tree split straight to bytes; returns the total size so
/// that nothing is optimised away.
fn split_rendered_tree(v3: &Node<'_>) -> usize {
    let parts = op::split_rendered_tree(v3).expect("the converted bench input splits");
    parts.documents.values().map(Vec::len).sum()
}

/// The pipeline as the command runs it; returns the total size of the
/// documents. The parsed tree is returned so that freeing it falls outside
/// the timing, as in the command.
fn pipeline_tree(bytes: &[u8]) -> (usize, Node<'_>) {
    let v2 = parse_tree(bytes);
    let mut total = 0;
    op::convert_each(&v2, bytes.len(), usize::MAX, |_, doc| total += doc.len())
        .expect("the bench input converts");
    (total, v2)
}

/// The pipeline as a poll loop runs it with a cache; returns the total
/// size of the documents.
fn pipeline_tree_cached(
    bytes: &[u8],
    cache: &ConversionCache<Vec<u8>>,
    budget: op::Budget,
) -> usize {
    let converted = op::swagger_to_openapi(bytes, Some(cache), budget, |b| b)
        .expect("the bench input converts");
    converted.documents.values().map(|d| d.len()).sum()
}

/// The same on `Value`s, as the poll loop did before.
fn proxy_value(bytes: &[u8]) -> usize {
    let v2 = parse(bytes);
    let parts = split(&v2);
    let mut total = 0;
    for part in parts.documents.values() {
        total += serde_json::to_vec(part).expect("a Value serializes").len();
        let converted = convert(part);
        total += serde_json::to_vec(&converted).expect("a Value serializes").len();
    }
    total
}

/// Serializes every split document as the command does (compact JSON);
/// returns the total size so nothing is optimised away.
fn serialize(parts: &Split) -> usize {
    parts
        .documents
        .values()
        .map(|doc| serde_json::to_vec(doc).expect("a Value serializes").len())
        .sum()
}

fn group<'a>(c: &'a mut Criterion, name: &str, input_len: usize) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(name);
    // Flat sampling: every iteration takes milliseconds, so the default
    // linear ramp would overrun the measurement time.
    g.sample_size(20)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .throughput(Throughput::Bytes(input_len as u64));
    g
}

/// One stage as its own group, on the 1.27 document.
fn bench(c: &mut Criterion, name: &str, input_len: usize, f: impl FnMut(&mut Bencher<'_>)) {
    let mut g = group(c, name, input_len);
    g.bench_function("kubernetes-1.27", f);
    g.finish();
}

fn stages(c: &mut Criterion) {
    let bytes = input();
    let v2 = parse(&bytes);
    let v3 = convert(&v2);
    let parts = split(&v3);
    assert!(!parts.documents.is_empty(), "the bench input splits into no documents");

    let v2_tree = parse_tree(&bytes);
    let v3_tree = convert_tree(&v2_tree);

    bench(c, "parse_tree", bytes.len(), |b| b.iter(|| parse_tree(black_box(&bytes))));

    bench(c, "convert_tree", bytes.len(), |b| b.iter(|| convert_tree(black_box(&v2_tree))));

    bench(c, "split_rendered_tree", bytes.len(), |b| {
        b.iter(|| split_rendered_tree(black_box(&v3_tree)));
    });

    bench(c, "pipeline_tree", bytes.len(), |b| {
        b.iter_with_large_drop(|| pipeline_tree(black_box(&bytes)));
    });

    let cache = ConversionCache::default();
    pipeline_tree_cached(&bytes, &cache, op::Budget::UNLIMITED);
    bench(c, "pipeline_tree_cached", bytes.len(), |b| {
        b.iter(|| pipeline_tree_cached(black_box(&bytes), &cache, op::Budget::UNLIMITED));
    });
    let share = op::DEFAULT_MEMORY_BUDGET_BYTES / 2;
    let budget = op::Budget { parse_bytes: share, output_bytes: share / 2 };
    bench(c, "pipeline_tree_cached_budget", bytes.len(), |b| {
        b.iter(|| pipeline_tree_cached(black_box(&bytes), &cache, budget));
    });

    bench(c, "proxy_value", bytes.len(), |b| b.iter(|| proxy_value(black_box(&bytes))));

    bench(c, "parse", bytes.len(), |b| b.iter(|| parse(black_box(&bytes))));

    bench(c, "convert", bytes.len(), |b| b.iter(|| convert(black_box(&v2))));

    bench(c, "split", bytes.len(), |b| b.iter(|| split(black_box(&v3))));

    bench(c, "serialize", bytes.len(), |b| b.iter(|| serialize(black_box(&parts))));

    bench(c, "split_rendered", bytes.len(), |b| b.iter(|| split_rendered(black_box(&v3))));

    bench(c, "pipeline", bytes.len(), |b| {
        // Everything the command builds is returned, so that freeing it
        // falls outside the timing, as in the command.
        b.iter_with_large_drop(|| {
            let v2 = parse(black_box(&bytes));
            let v3 = convert(&v2);
            let rendered = split_rendered(&v3);
            (v2, v3, rendered)
        });
    });
}

// A hand-written `main` rather than `criterion_group!`, whose generated
// `pub fn` would trip the crate's `missing_docs` lint.
fn main() {
    let mut c = Criterion::default().configure_from_args();
    stages(&mut c);
    c.final_summary();
}

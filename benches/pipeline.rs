//! Times each stage of the `convert` command on the Kubernetes 1.27
//! whole-cluster Swagger 2.0 document (4 MB), and the whole command minus
//! the file writes.
//!
//! Every group reports throughput in bytes of the *input* document, so the
//! stages can be compared with one another and with the pipeline.
//!
//! The tree path, what `convert --out` and the proxy run (strings borrowed
//! from the input, no `serde_json::Value`):
//! - `parse_tree`: `document::parse_tree` of the bytes.
//! - `convert_tree`: Swagger 2.0 → OpenAPI 3.0 of the parsed tree.
//! - `split_rendered_tree`: the converted tree split straight to bytes,
//!   every document handed out as it is rendered
//!   (`split::split_rendered_each`, sized from the input length as the
//!   command does).
//! - `pipeline_tree`: the three, the `convert --out` command minus reading
//!   and writing files.
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
//! What the proxy's poll loop does with a Swagger 2.0 body (split by key
//! first, then convert each part, rendering the part for the cache digest
//! and the converted part for serving), both ways:
//! - `proxy_tree`: on trees, as `downstream::poll` does now;
//! - `proxy_value`: on `Value`s, as it did before the tree path.
//!
//! The stage groups time freeing what they return, as a long-running server
//! pays for it; `pipeline` and `pipeline_tree` do not, because the command
//! exits without freeing its trees.
//!
//! The binary runs on mimalloc, so the bench does too.
//!
//! Run: `cargo bench --bench pipeline`.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{Bencher, BenchmarkGroup, Criterion, SamplingMode, Throughput};
use serde_json::Value;

use openapi_proxy::split::{RenderedSplit, Split};
use openapi_proxy::tree::Node;
use openapi_proxy::{convert, document, split};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The Kubernetes 1.27 document, relative to the crate root.
const INPUT: &str = "../shared/testdata/kube-openapi/pkg/schemaconv/testdata/swagger.json";

fn input() -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(INPUT);
    match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) => panic!(
            "cannot read the bench input {}: {e}; the pipeline bench needs the Kubernetes 1.27 \
             swagger.json from kube-openapi's testdata at that path",
            path.display()
        ),
    }
}

fn parse(bytes: &[u8]) -> Value {
    document::parse(bytes).expect("the bench input parses")
}

fn convert(v2: &Value) -> Value {
    convert::convert(v2).expect("the bench input converts").document
}

fn split(v3: &Value) -> Split {
    split::split(v3).expect("the converted bench input splits")
}

fn split_rendered(v3: &Value) -> RenderedSplit {
    split::split_rendered(v3).expect("the converted bench input splits")
}

fn parse_tree(bytes: &[u8]) -> Node<'_> {
    document::parse_tree(bytes).expect("the bench input parses")
}

fn convert_tree<'a>(v2: &'a Node<'a>) -> Node<'a> {
    convert::convert_tree(v2).expect("the bench input converts").document
}

/// Splits and renders as the command does; returns the total size so that
/// nothing is optimised away.
fn split_rendered_tree(v3: &Node<'_>, size_hint: usize) -> usize {
    let mut total = 0;
    split::split_rendered_each(v3, size_hint, |_, bytes| total += bytes.len())
        .expect("the converted bench input splits");
    total
}

/// The poll loop's conversion of a v2 body on trees; returns the total
/// size of the parts and of their conversions.
fn proxy_tree(bytes: &[u8]) -> usize {
    let v2 = parse_tree(bytes);
    let parts = split::split_tree(&v2).expect("the bench input splits");
    let mut total = 0;
    for part in parts.documents.values() {
        total += part.to_vec().len();
        let converted = convert::convert_tree(part).expect("every part converts").document;
        total += converted.to_vec().len();
    }
    total
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
        b.iter(|| split_rendered_tree(black_box(&v3_tree), bytes.len()));
    });

    bench(c, "pipeline_tree", bytes.len(), |b| {
        // Timed per iteration, so that freeing the trees (the converted
        // one borrows from the parsed one) falls outside the timing, as in
        // the command, which exits without freeing them.
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                let v2 = parse_tree(black_box(&bytes));
                let v3 = convert_tree(&v2);
                let written = split_rendered_tree(&v3, bytes.len());
                total += start.elapsed();
                black_box(written);
            }
            total
        });
    });

    bench(c, "proxy_tree", bytes.len(), |b| b.iter(|| proxy_tree(black_box(&bytes))));

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

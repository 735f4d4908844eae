//! Times the protobuf renditions of OpenAPI documents against parsing the
//! same JSON: each rendition is one encode of the served JSON, made once
//! per document, so this is what the first protobuf request for a
//! document costs.
//!
//! - `protobuf_v2`: Kubernetes 1.35's `/openapi/v2` (3.8 MB of Swagger 2.0
//!   JSON) to gnostic's `openapi.v2.Document`;
//! - `protobuf_v3`: the largest document the proxy serves for it once
//!   converted (`api/v1`, 1.5 MB) to `openapi.v3.Document`;
//! - `json_tree`: parsing each input into the borrowing JSON tree, the
//!   first step of both encodings and of every other use of a document.
//!
//! Throughput is in bytes of the JSON input.
//!
//! Run: `cargo bench --bench protobuf`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, SamplingMode, Throughput};

use openapi_proxy::{self as op, Budget};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Kubernetes 1.35's whole-cluster Swagger 2.0 document.
const INPUT: &str = "kubernetes-1.35/swagger.json";

fn inputs() -> (Vec<u8>, Vec<u8>) {
    let path = op::testkit::testdata::path(INPUT);
    let v2 = std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let docs = op::swagger_to_openapi(&v2, None, Budget::UNLIMITED, |b| b)
        .expect("the bench input converts");
    let v3 = docs
        .documents
        .into_values()
        .max_by_key(|d| d.len())
        .map(|d| (*d).clone())
        .expect("documents");
    (v2, v3)
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let (v2, v3) = inputs();
    for (name, input, encode) in [
        ("kubernetes-1.35-v2", &v2, op::proto::openapi_v2 as fn(&[u8]) -> _),
        ("kubernetes-1.35-v3-api-v1", &v3, op::proto::openapi_v3),
    ] {
        let mut g = c.benchmark_group(name);
        g.sample_size(20)
            .sampling_mode(SamplingMode::Flat)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(5))
            .throughput(Throughput::Bytes(input.len() as u64));
        g.bench_function("protobuf", |b| {
            b.iter(|| encode(black_box(input)).expect("encodes"));
        });
        g.bench_function("json_tree", |b| {
            b.iter(|| op::parse_tree(black_box(input)).map(|t| black_box(t).is_object()));
        });
        g.finish();
    }
    c.final_summary();
}

//! An independent decoder for the protobuf answers: `protoc --decode`
//! (from the pinned `grpcio-tools` in the validators' venv) with the
//! upstream `.proto` files from the test data (gnostic's OpenAPI v2/v3,
//! Kubernetes' discovery and apimachinery), never with our own message
//! definitions.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::shared::shared_testdata;
use super::validators;

/// A `.proto` file and the message to decode with it.
#[derive(Debug, Clone, Copy)]
pub enum Message {
    /// gnostic `openapi.v2.Document` (`/openapi/v2`).
    OpenApiV2,
    /// gnostic `openapi.v3.Document` (`/openapi/v3/<key>`).
    OpenApiV3,
    /// `k8s.io.apimachinery.pkg.runtime.Unknown`: the envelope of every
    /// Kubernetes protobuf object, after the 4-byte `k8s\0` magic.
    Unknown,
    /// `k8s.io.api.apidiscovery.v2.APIGroupDiscoveryList`.
    DiscoveryV2,
    /// `k8s.io.api.apidiscovery.v2beta1.APIGroupDiscoveryList`.
    DiscoveryV2beta1,
    /// A message of `k8s.io/apimachinery/pkg/apis/meta/v1` by name
    /// (`APIVersions`, `APIGroupList`, `APIGroup`, `APIResourceList`).
    MetaV1(&'static str),
}

impl Message {
    fn proto_and_type(self) -> (&'static str, String) {
        match self {
            Self::OpenApiV2 => ("gnostic/openapiv2/OpenAPIv2.proto", "openapi.v2.Document".into()),
            Self::OpenApiV3 => ("gnostic/openapiv3/OpenAPIv3.proto", "openapi.v3.Document".into()),
            Self::Unknown => (
                "k8s.io/apimachinery/pkg/runtime/generated.proto",
                "k8s.io.apimachinery.pkg.runtime.Unknown".into(),
            ),
            Self::DiscoveryV2 => (
                "k8s.io/api/apidiscovery/v2/generated.proto",
                "k8s.io.api.apidiscovery.v2.APIGroupDiscoveryList".into(),
            ),
            Self::DiscoveryV2beta1 => (
                "k8s.io/api/apidiscovery/v2beta1/generated.proto",
                "k8s.io.api.apidiscovery.v2beta1.APIGroupDiscoveryList".into(),
            ),
            Self::MetaV1(name) => (
                "k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto",
                format!("k8s.io.apimachinery.pkg.apis.meta.v1.{name}"),
            ),
        }
    }
}

/// Every `.proto` file the messages above need, so each is present
/// (fetched on first use when the test data folder lacks it).
const PROTO_FILES: [&str; 10] = [
    "gnostic/openapiv2/OpenAPIv2.proto",
    "gnostic/openapiv3/OpenAPIv3.proto",
    "gnostic/openapiv3/annotations.proto",
    "k8s.io/api/apidiscovery/v2/generated.proto",
    "k8s.io/api/apidiscovery/v2beta1/generated.proto",
    "k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto",
    "k8s.io/apimachinery/pkg/runtime/generated.proto",
    "k8s.io/apimachinery/pkg/runtime/schema/generated.proto",
    "k8s.io/apimachinery/pkg/util/intstr/generated.proto",
    "k8s.io/apimachinery/pkg/api/resource/generated.proto",
];

/// The include root of the `.proto` files.
fn proto_root() -> PathBuf {
    let mut root = None;
    for file in PROTO_FILES {
        let path = shared_testdata(&format!("protobuf/{file}"));
        root.get_or_insert_with(|| {
            path.ancestors().nth(file.split('/').count()).map(PathBuf::from).unwrap_or_default()
        });
    }
    root.unwrap_or_default()
}

/// `protoc --decode=<message>` of `bytes`: protoc's text format. gnostic's
/// `.proto` files are included from `<root>/gnostic`, the Kubernetes ones
/// from `<root>` (their imports are `k8s.io/…`).
///
/// # Panics
/// When protoc cannot run or rejects the bytes, with its output: a body
/// the independent decoder cannot read fails the test.
pub fn decode(message: Message, bytes: &[u8]) -> String {
    let root = proto_root();
    let (proto, type_name) = message.proto_and_type();
    let (include, file) = match proto.strip_prefix("gnostic/") {
        Some(file) => (root.join("gnostic"), file.to_owned()),
        None => (root.clone(), proto.to_owned()),
    };
    let mut child = Command::new(validators::python())
        .args(["-m", "grpc_tools.protoc"])
        .arg(format!("--decode={type_name}"))
        .arg(format!("-I{}", include.display()))
        .arg(&file)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("running protoc: {e}"));
    let mut stdin = child.stdin.take().expect("stdin was piped");
    let input = bytes.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap_or_else(|e| panic!("waiting for protoc: {e}"));
    writer.join().expect("the writer thread").unwrap_or_else(|e| panic!("feeding protoc: {e}"));
    assert!(
        out.status.success(),
        "protoc --decode={type_name} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap_or_else(|e| panic!("protoc printed non-UTF-8: {e}"))
}

#[test]
fn the_decoder_reads_bytes_with_the_upstream_definitions() {
    // Field 1 of openapi.v2.Document is `swagger`, a string.
    let text = decode(Message::OpenApiV2, b"\x0a\x032.0");
    assert_eq!(text.trim(), "swagger: \"2.0\"");
    // The Kubernetes files resolve their imports from the same root.
    let text = decode(Message::MetaV1("APIVersions"), b"\x0a\x02v1");
    assert_eq!(text.trim(), "versions: \"v1\"");
}

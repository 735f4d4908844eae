//! Swagger 2.0 → OpenAPI 3.0 conversion and splitting, through the library.

/// Committed fixtures and their expected conversions, byte for byte.
mod golden;
/// The converter and splitter on real Kubernetes documents (`scripts/testdata.sh`).
mod kubernetes_documents;
/// Generated Swagger 2.0 documents: every node reaches the output or is reported by a note.
mod no_silent_drop;
/// Generated documents: no panics, determinism, `$ref` closure.
mod properties;
/// swagger2openapi's conversion suite: each case valid per swagger-parser, or refused by name.
mod swagger2openapi;

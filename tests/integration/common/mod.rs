//! Support code shared by the integration tests.

/// Structural JSON comparison with allow-lists.
pub mod json_diff;
/// `$ref` closure checks.
pub mod refs;
/// Locating `../shared/testdata`.
pub mod shared;
/// openapi-spec-validator and swagger-parser, installed on first use.
pub mod validators;

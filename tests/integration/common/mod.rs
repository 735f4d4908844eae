//! Support code shared by the integration tests.

/// openapi-spec-validator and swagger-parser, installed on first use.
pub mod validators;

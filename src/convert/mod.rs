//! Swagger 2.0 → OpenAPI 3.0 conversion.

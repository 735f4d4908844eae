//! OpenAPI documents: Swagger 2.0 → OpenAPI 3.0 conversion ([`convert`]),
//! the references to other files a `convert` input holds followed into one
//! document first ([`bundle`]),
//! splitting a whole document into one self-contained document per key
//! ([`split`]), and [`pipeline`], the one way from Swagger 2.0 bytes to the
//! per-key OpenAPI 3.0 documents — used by the poller, `convert` and the
//! demo, so all three give the same bytes for the same input. The
//! conversion [`cache`] lets the poller skip parts whose input did not
//! change. [`v2`] merges Swagger 2.0 documents into the one `/openapi/v2`.

pub mod bundle;
pub mod cache;
pub mod convert;
pub mod pipeline;
pub mod proto;
pub mod split;
pub mod v2;

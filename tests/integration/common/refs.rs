//! `$ref` closure: the invariant every document we publish must keep (the
//! logic lives in the library, where `openapi-proxy check` uses it too).

pub use openapi_proxy::dangling_refs;

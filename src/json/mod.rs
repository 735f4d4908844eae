//! JSON as the pipeline needs it: a tree that borrows its strings from the
//! input ([`tree`]), parsing bytes into it or into a `serde_json::Value`
//! ([`document`]), RFC 6901 pointers with the one escape/unescape of
//! reference tokens ([`pointer`](mod@pointer)), and `$ref` helpers over `Value`s
//! ([`refs`]), and YAML read under an expansion budget ([`yaml`]).

pub mod document;
pub mod pointer;
pub mod refs;
pub mod tree;
pub mod yaml;

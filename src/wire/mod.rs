//! The Kubernetes wire vocabulary, pure: which documents exist and how they
//! are named ([`key`]), group-versions ([`GroupVersion`]) and which group
//! and version names are valid ([`name`]), every media type
//! and `Accept` list the proxy sends or serves ([`media`]), and `Accept` /
//! `If-None-Match` negotiation ([`negotiate`]).
//!
//! Nothing here does I/O or knows about actix; the layers above decide what
//! to do with a choice.

mod group_version;
pub mod key;
pub mod media;
pub mod name;
pub mod negotiate;

pub use group_version::GroupVersion;
pub use key::DocumentKey;

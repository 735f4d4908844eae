//! What is served and how it changes: the immutable [`Snapshot`](snapshot::Snapshot) of
//! prepared bodies ([`crate::body`]) and its arc-swap [`Store`]
//! ([`snapshot`]), and the
//! [`Hub`] where poll loops leave their contributions, with the single
//! writer loop that turns them into the next snapshot ([`hub`]), and
//! what makes it ready ([`readiness`]).
//!
//! The invariant that matters: one writer builds the whole next snapshot
//! aside and publishes it with one store, so a reader never sees a root
//! index that points at a document that is not there yet.

pub mod hub;
pub mod protobuf;
pub mod readiness;
pub mod snapshot;

pub use hub::Hub;
pub use snapshot::Store;

//! Response bodies prepared once: the bytes, their gzip rendition, the
//! upper-case hex SHA-512 that names them in `?hash=` URLs and ETags
//! ([`rendered`], [`digest`]).
//!
//! Requests never compute: everything a response needs is made when a
//! document arrives, is converted or is merged, and shared by reference
//! with every request and every snapshot that serves it. Discovery merging
//! and snapshot publishing both make bodies, so this layer sits below both.

pub mod digest;
pub mod identity;
pub mod rendered;

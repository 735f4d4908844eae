//! Downstream servers: one poll loop per server ([`poll`]) and the fetcher
//! of its discovery ([`discovery`]). This layer only does I/O and
//! bookkeeping: what it fetches goes through [`crate::openapi::pipeline`]
//! and [`crate::discovery`], and each round's last good documents are left
//! in the [`crate::publish::Hub`].

pub mod discovery;
mod error;
pub mod poll;

pub use error::PollError;
use error::within;

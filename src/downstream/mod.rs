//! Downstream servers: one poll loop per server ([`poll`]) and the fetcher
//! of its discovery ([`discovery`]). This layer only does I/O and
//! bookkeeping: what it fetches goes through [`crate::openapi::pipeline`]
//! and [`crate::discovery`], and each round's last good documents are left
//! in the [`crate::publish::Hub`].

pub mod discovery;
mod error;
pub mod ledger;
pub mod poll;

pub use error::PollError;

/// How many requests one poll has in flight at once when it fetches the
/// documents of a root, or the group-versions of a discovery answer.
///
/// A cluster with a thousand CRD group-versions lists a thousand documents
/// of hundreds of KB each; fetched one after another, the round trips and
/// the preparation of each (a probe parse, a hash, gzip) add up to more
/// than twenty seconds of cold start. Eight hide the round trips and keep
/// both cores of a small node busy preparing, while staying small beside
/// what an API server admits (kube-apiserver's `--max-requests-inflight`
/// is 400 read-only requests by default; client-go's discovery has every
/// group-version in flight at once). Memory stays bounded:
/// [`DownstreamClient::get_among`](crate::outbound::client::DownstreamClient::get_among)
/// lets each of them read an eighth of `maxDocumentBytes` and reads a
/// larger body again alone, so a hostile downstream's bodies in flight stay
/// under twice `maxDocumentBytes` before the memory share is checked. Not configurable: no figure here is specific to one
/// cluster.
pub(crate) const CONCURRENT_FETCHES: usize = 8;
use error::within;

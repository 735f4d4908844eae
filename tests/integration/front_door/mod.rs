//! The front door: everything that is not metadata, passed on to its owner.

/// What stays open is bounded: HTTP/2 streams per connection, long-running passes in all.
mod bounds;
/// kubectl 1.32 through the front door, against two fake clusters, as directly; a thousand watches in bounded memory.
pub mod kubectl;
/// Requests that are not metadata reach their group-version's owner, with the client's credentials.
mod requests;
/// Upgrades under attack: nothing relayed before a `101`, `CONNECT` and oversized heads refused, only WebSocket and SPDY taken as upgrades.
mod upgrades;

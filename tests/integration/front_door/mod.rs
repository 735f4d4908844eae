//! The front door: everything that is not metadata, passed on to its owner.

/// Metadata only for a bearer token the downstream authenticates (`metadataAuthentication: delegated`), on every path.
mod authentication;
/// What stays open is bounded: HTTP/2 streams per connection, long-running passes in all.
mod bounds;
/// Request heads actix-http refuses (two lengths, a length with a transfer coding, two `Host`s) refused on every raw path.
mod heads;
/// kubectl 1.32 through the front door, against two fake clusters, as directly; a thousand watches in bounded memory.
pub mod kubectl;
/// One owner per group-version: its requests, its discovery entry and its OpenAPI document.
mod owners;
/// Requests that are not metadata reach their group-version's owner, with the client's credentials.
mod requests;
/// Upgrades under attack: nothing relayed before a `101`, `CONNECT` and oversized heads refused, only WebSocket and SPDY taken as upgrades.
mod upgrades;

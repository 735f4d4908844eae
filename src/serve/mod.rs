//! The connection stack: listening, TLS, and every connection from its
//! first byte to its close, up to the point where a request is handed to
//! whoever answers it — the router (`http`) or the front door.
//!
//! Plain HTTP/1.1 goes through the direct writer ([`direct`]) while its
//! requests are ordinary, and to actix-http after; HTTPS and HTTP/2 go to
//! actix-http; every HTTP/1 connection actix-http serves is held in
//! [`lockstep`]; every connection takes a slot of its worker ([`slots`])
//! and is watched by the stall guard ([`stall`]); an HTTP/2 connection's
//! SETTINGS advertise its stream limit ([`h2`]). What an answer asks of
//! its connection (a long exchange, a held turn) comes back up through
//! the connection's data, as types of `http::connection`.

mod direct;
mod h2;
mod lockstep;
pub(crate) mod server;
mod slots;
mod stall;
mod tls;

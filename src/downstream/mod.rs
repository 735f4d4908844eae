//! Downstream servers: the HTTP client for each ([`client`]) and its poll
//! loop ([`poll`]), which leaves each round's last good documents in the
//! [`crate::snapshot::Hub`].

pub mod client;
pub mod discovery;
pub mod poll;

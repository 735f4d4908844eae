//! Each client's share of the in-flight places
//! (`maxRequestsInflightPerClient`, `maxLongRunningRequestsPerClient`), so
//! that one client cannot take every place of a class and leave the others
//! 429s.
//!
//! - **A client is its network address**: the connection's peer IP, an
//!   IPv6 one by its /64 (what one host or site is given, so a client
//!   cannot rotate through its addresses). Not the bearer token: the front
//!   door does not authenticate (the owner does, once the request is
//!   passed on), so a token is a string the client picks, and a
//!   made-up one per request would be a share per request. An address
//!   costs a TCP handshake to use. `X-Forwarded-For` is the client's to
//!   write and is not read either.
//! - **Bounded bookkeeping**: one entry per client holding a place, removed
//!   when its last place comes back; so the map never holds more entries
//!   than places are in flight, whatever the number of clients seen.
//! - **Cheap**: a sharded map ([`DashMap`]), one shard lock when a place
//!   is taken and one when it comes back.

use std::net::IpAddr;

use dashmap::DashMap;
use dashmap::mapref::entry::Entry;

/// Who a place is counted against: see the module comment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct ClientKey(IpAddr);

impl ClientKey {
    /// The client at `peer`: an IPv4-mapped IPv6 address as the IPv4 one,
    /// any other IPv6 one by its /64.
    pub(super) fn of(peer: IpAddr) -> Self {
        match peer.to_canonical() {
            IpAddr::V6(v6) => {
                let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                Self(IpAddr::V6(prefix.into()))
            }
            v4 @ IpAddr::V4(_) => Self(v4),
        }
    }
}

/// What one client holds now.
#[derive(Debug, Default)]
struct Held {
    short: usize,
    long_running: usize,
}

impl Held {
    fn of_class(&mut self, long_running: bool) -> &mut usize {
        if long_running { &mut self.long_running } else { &mut self.short }
    }
}

/// The places each client holds, per class, within its share.
#[derive(Debug)]
pub(super) struct Shares {
    max_short: usize,
    max_long_running: usize,
    held: DashMap<ClientKey, Held>,
}

impl Shares {
    /// Shares of at most `max_short` short and `max_long_running`
    /// long-running places per client.
    pub(super) fn new(max_short: usize, max_long_running: usize) -> Self {
        Self { max_short, max_long_running, held: DashMap::new() }
    }

    /// Takes one place of its class for `client`; `false` when the client
    /// already holds its share of them (nothing is taken then).
    pub(super) fn take(&self, client: ClientKey, long_running: bool) -> bool {
        let max = if long_running { self.max_long_running } else { self.max_short };
        let mut held = self.held.entry(client).or_default();
        let count = held.of_class(long_running);
        if *count >= max {
            // Never left empty: a client at its share holds `max` >= 1.
            return false;
        }
        *count += 1;
        true
    }

    /// Gives back a place [`take`](Self::take) gave `client`; the client's
    /// entry goes with its last place.
    pub(super) fn give_back(&self, client: ClientKey, long_running: bool) {
        if let Entry::Occupied(mut held) = self.held.entry(client) {
            let h = held.get_mut();
            let count = h.of_class(long_running);
            *count = count.saturating_sub(1);
            if h.short == 0 && h.long_running == 0 {
                held.remove();
            }
        }
    }

    /// Clients holding a place now.
    #[cfg(test)]
    pub(super) fn clients(&self) -> usize {
        self.held.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(ip: &str) -> ClientKey {
        ClientKey::of(ip.parse().expect("an address"))
    }

    /// A client past its share of a class is refused that class only,
    /// another client is not, and a place given back can be taken again.
    #[test]
    fn a_client_gets_its_share_of_each_class_and_no_more() {
        let shares = Shares::new(2, 1);
        let (a, b) = (key("10.0.0.1"), key("10.0.0.2"));
        assert!(shares.take(a, false) && shares.take(a, false));
        assert!(!shares.take(a, false), "a's third short place");
        assert!(shares.take(a, true), "a long-running place is of the other class");
        assert!(!shares.take(a, true));
        assert!(shares.take(b, false) && shares.take(b, true), "b has a share of its own");
        shares.give_back(a, false);
        assert!(shares.take(a, false), "a place given back");
    }

    /// The bookkeeping holds the clients holding a place, no more: empty
    /// again once every place came back, however many clients came.
    #[test]
    fn the_bookkeeping_is_empty_again_when_every_place_came_back() {
        let shares = Shares::new(3, 3);
        let clients: Vec<ClientKey> = (0..200u8).map(|i| key(&format!("10.0.1.{i}"))).collect();
        for &c in &clients {
            assert!(shares.take(c, false) && shares.take(c, true));
        }
        // Refusals leave nothing either.
        let full = key("10.0.2.1");
        for _ in 0..3 {
            assert!(shares.take(full, false));
        }
        assert!(!shares.take(full, false));
        assert_eq!(shares.clients(), 201);
        for &c in &clients {
            shares.give_back(c, false);
        }
        assert_eq!(shares.clients(), 201, "each still holds a long-running place");
        for &c in &clients {
            shares.give_back(c, true);
        }
        for _ in 0..3 {
            shares.give_back(full, false);
        }
        assert_eq!(shares.clients(), 0);
    }

    /// One host's addresses are one client: an IPv6 /64, an IPv4 address
    /// however it is written.
    #[test]
    fn a_client_is_an_ipv4_address_or_an_ipv6_64() {
        assert_eq!(key("2001:db8:1:2::1"), key("2001:db8:1:2:ffff:ffff:ffff:ffff"));
        assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
        assert_eq!(key("::ffff:192.0.2.7"), key("192.0.2.7"));
        assert_ne!(key("192.0.2.7"), key("192.0.2.8"));
    }
}

//! What an answer may ask of the connection it goes out on.
//!
//! The serving stack (`serve`) owns connections and answers to nobody
//! above it; the code that answers (the front door) finds these in the
//! connection's data and sets them, and the stack honours them. Defined
//! here, below both, so the front door never reaches into the stack:
//!
//! - [`LongExchange`]: the stall guard closes a connection whose request
//!   was read but not answered within `requestTimeout`, or whose client
//!   keeps sending; a request the front door passes on may rightly do both
//!   (a slow list, a watch, an upload, an exec session).
//! - [`AnswerTurns`]: the lockstep counts a request answered when its
//!   answer is handed back, and then calls the connection idle; an answer
//!   that streams on (a watch) holds its turn until its body ends.
//! - [`StreamPlaces`]: an HTTP/2 connection advertises
//!   `maxStreamsPerConnection` in its SETTINGS, but actix-http's server
//!   does not refuse a stream past it; the front door takes a place for
//!   each long-running pass (a downstream connection, a file descriptor),
//!   so a client that ignores SETTINGS gets 429 past the limit.

use std::cell::Cell;
use std::rc::Rc;

/// Set on a connection while an exchange on it is long by nature (one the
/// front door passes on): the stall guard then times only a client that
/// stops reading its answer. A count, not a flag: on HTTP/2 many such
/// exchanges share one connection, and the first to end must not unmark
/// the others.
#[derive(Debug, Clone, Default)]
pub(crate) struct LongExchange(Rc<Cell<usize>>);

impl LongExchange {
    /// Marks the connection until the returned mark is dropped.
    pub(crate) fn mark(&self) -> LongExchangeMark {
        self.0.set(self.0.get().saturating_add(1));
        LongExchangeMark(self.clone())
    }

    /// Whether any exchange marks the connection now.
    pub(crate) fn is_marked(&self) -> bool {
        self.0.get() > 0
    }
}

/// Ends one [`LongExchange`] mark when dropped.
#[derive(Debug)]
pub(crate) struct LongExchangeMark(LongExchange);

impl LongExchangeMark {
    /// Keeps the mark until the connection closes (an upgraded one is a
    /// tunnel, not HTTP, from now on).
    pub(crate) fn until_closed(self) {
        std::mem::forget(self);
    }
}

impl Drop for LongExchangeMark {
    fn drop(&mut self) {
        let count = &(self.0).0;
        count.set(count.get().saturating_sub(1));
    }
}

/// How a connection takes turns between requests (the lockstep's
/// bookkeeping), as an answer that streams sees it.
pub(crate) trait TakesTurns {
    /// The answer being handed back streams on: it does not count as
    /// answered when handed back.
    fn hold(&self);
    /// The held answer is done: it counts as answered now.
    fn release(&self);
}

/// A connection's turns, found in its data (HTTP/1 connections in lockstep
/// only).
#[derive(Clone)]
pub(crate) struct AnswerTurns(Rc<dyn TakesTurns>);

impl AnswerTurns {
    /// The turns of a connection, for its data.
    pub(crate) fn new(turns: Rc<dyn TakesTurns>) -> Self {
        Self(turns)
    }

    /// Holds the current request unanswered until the returned hold is
    /// dropped (with the body, when it ends): until then the connection is
    /// neither idle (a watch is not evicted for a new connection) nor given
    /// the next request. Take it only with the answer in hand, as the last
    /// step before handing it back.
    pub(crate) fn hold(&self) -> AnswerHold {
        self.0.hold();
        AnswerHold(Rc::clone(&self.0))
    }
}

impl std::fmt::Debug for AnswerTurns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnswerTurns").finish_non_exhaustive()
    }
}

/// Holds a request unanswered until dropped (see [`AnswerTurns::hold`]).
pub(crate) struct AnswerHold(Rc<dyn TakesTurns>);

impl Drop for AnswerHold {
    fn drop(&mut self) {
        self.0.release();
    }
}

impl std::fmt::Debug for AnswerHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnswerHold").finish_non_exhaustive()
    }
}

/// The long-running passes one HTTP/2 connection has open, at most the
/// streams its SETTINGS advertise.
#[derive(Debug, Clone)]
pub(crate) struct StreamPlaces {
    open: Rc<Cell<usize>>,
    limit: usize,
}

impl StreamPlaces {
    /// A connection's places, `limit` of them.
    pub(crate) fn new(limit: usize) -> Self {
        Self { open: Rc::default(), limit }
    }

    /// A place until the returned one is dropped, if one is free.
    pub(crate) fn take(&self) -> Option<StreamPlace> {
        if self.open.get() >= self.limit {
            return None;
        }
        self.open.set(self.open.get() + 1);
        Some(StreamPlace(Rc::clone(&self.open)))
    }
}

/// A place among a connection's [`StreamPlaces`], given back when dropped.
#[derive(Debug)]
pub(crate) struct StreamPlace(Rc<Cell<usize>>);

impl Drop for StreamPlace {
    fn drop(&mut self) {
        self.0.set(self.0.get().saturating_sub(1));
    }
}

#[cfg(test)]
mod stream_tests {
    use super::*;

    #[test]
    fn a_connection_has_at_most_its_limit_of_places_and_gets_them_back() {
        let places = StreamPlaces::new(2);
        let a = places.take().expect("first");
        let _b = places.take().expect("second");
        assert!(places.take().is_none(), "past the limit");
        drop(a);
        assert!(places.take().is_some(), "given back");
    }

    /// Two watches on one HTTP/2 connection: the first one ending leaves
    /// the connection marked for the other.
    #[test]
    fn a_connection_stays_long_while_any_exchange_on_it_is() {
        let long = LongExchange::default();
        assert!(!long.is_marked());
        let first = long.mark();
        let second = long.mark();
        drop(first);
        assert!(long.is_marked(), "the second exchange still runs");
        drop(second);
        assert!(!long.is_marked());
        long.mark().until_closed();
        assert!(long.is_marked(), "an upgraded connection stays marked");
    }
}

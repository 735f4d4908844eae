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
//! - [`ClientGone`]: actix-http reads nothing from an HTTP/1 client while
//!   an answer streams (the lockstep holds the next request back), so a
//!   client that closes during a quiet watch would keep the exchange, its
//!   downstream connection and its place until the downstream sends a
//!   byte; the lockstep watches for the end of the stream meanwhile, and
//!   the front door ends the exchange when it comes, as Go's server
//!   cancels a request whose client closed. On HTTP/2 each stream is
//!   answered by a task of its own, which the connection's end does not
//!   reach: the lockstep tells them all when the stream ends.
//! - [`Written`]: actix-http polls an answer's body for as long as its
//!   HTTP/1 write buffer is under 256 KiB (the size the metadata needs),
//!   so a burst from a downstream to a client that does not read would be
//!   held there, per connection; the lockstep counts the bytes written,
//!   and the front door hands the body on only as they go out.
//! - [`StreamPlaces`]: an HTTP/2 connection advertises
//!   `maxStreamsPerConnection` in its SETTINGS, but actix-http's server
//!   does not refuse a stream past it; the front door takes a place for
//!   each long-running pass (a downstream connection, a file descriptor),
//!   so a client that ignores SETTINGS gets 429 past the limit.

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};
use std::task::{Context, Poll, Waker};

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

/// Set by the connection stack when a client's stream ended (or failed)
/// while a request of it was being answered: on HTTP/1 while the front
/// door passes one on, on HTTP/2 whenever it happens (its streams are
/// answered by tasks of their own, which the connection's end does not
/// reach).
#[derive(Debug, Clone, Default)]
pub(crate) struct ClientGone(Rc<GoneState>);

#[derive(Debug, Default)]
struct GoneState {
    gone: Cell<bool>,
    /// The exchanges waiting to hear of it (one at a time on HTTP/1, one
    /// per stream on HTTP/2); an exchange's entry goes with its
    /// [`GoneWatch`].
    waiting: RefCell<Vec<Weak<RefCell<Option<Waker>>>>>,
    /// `waiting` is swept of ended exchanges when it grows to this.
    sweep_at: Cell<usize>,
    /// The stack watches the stream now (always on HTTP/2, which reads
    /// on by itself).
    watched: Cell<bool>,
    /// The connection's reading side, parked while an answer is made: it
    /// starts watching when woken once the exchange asks.
    reader: RefCell<Option<Waker>>,
}

impl ClientGone {
    /// For a stream that is always read on (HTTP/2): nothing to wake.
    pub(crate) fn always_watched() -> Self {
        let gone = Self::default();
        gone.0.watched.set(true);
        gone
    }

    /// The client's stream has ended: wakes every exchange waiting.
    pub(crate) fn close(&self) {
        if self.0.gone.replace(true) {
            return;
        }
        for waiting in self.0.waiting.take() {
            if let Some(waker) = waiting.upgrade().and_then(|w| w.take()) {
                waker.wake();
            }
        }
    }

    /// An exchange's ear for the client's end, for as long as it lives.
    pub(crate) fn watch(&self) -> GoneWatch {
        let waker = Rc::new(RefCell::new(None));
        let mut waiting = self.0.waiting.borrow_mut();
        if waiting.len() >= self.0.sweep_at.get() {
            waiting.retain(|w| w.strong_count() > 0);
            self.0.sweep_at.set((2 * waiting.len()).max(16));
        }
        waiting.push(Rc::downgrade(&waker));
        GoneWatch { conn: self.clone(), waker }
    }

    /// The stack's reading side parks here while it does not watch.
    pub(crate) fn park_reader(&self, cx: &Context<'_>) {
        *self.0.reader.borrow_mut() = Some(cx.waker().clone());
    }

    /// Whether the stack watches the stream now: it does from when it
    /// reads on during an exchange until the next request is given.
    pub(crate) fn set_watched(&self, watched: bool) {
        self.0.watched.set(watched);
    }
}

/// One exchange's ear for [`ClientGone`].
#[derive(Debug)]
pub(crate) struct GoneWatch {
    conn: ClientGone,
    waker: Rc<RefCell<Option<Waker>>>,
}

impl GoneWatch {
    /// Ready once the client has gone; until then the task is woken when
    /// it goes. The first ask of an exchange wakes the reading side, so
    /// that it starts watching.
    pub(crate) fn poll_gone(&self, cx: &Context<'_>) -> Poll<()> {
        let state = &self.conn.0;
        if state.gone.get() {
            return Poll::Ready(());
        }
        if !state.watched.get()
            && let Some(reader) = state.reader.borrow_mut().take()
        {
            reader.wake();
        }
        let mut waker = self.waker.borrow_mut();
        match &*waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => *waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    /// Resolves once the client has gone.
    pub(crate) async fn gone(&self) {
        std::future::poll_fn(|cx| self.poll_gone(cx)).await;
    }
}

/// An HTTP/2 connection's writes, as the front door's answers need them.
///
/// HTTP/2 buffers what a stream sends up to its flow-control window (up
/// to 400 KiB a stream, for a client that opens its windows wide), and
/// actix-http sends a body as fast as that allows: a client that stops
/// reading its connection would leave every burst of every stream in those
/// buffers. So an answer passed on is handed on only while the socket
/// takes bytes, and only so far ahead of the connection's writes
/// ([`StreamAhead`]): when the socket takes nothing, every stream stops,
/// as Go's server blocks the streams of a connection whose writes block.
/// Which stream's bytes went out is not known here, so any write counts
/// for every stream: a stream held back by its own window (h2 takes no
/// more of it than that) never holds the others back.
#[derive(Debug, Clone, Default)]
pub(crate) struct Progress(Rc<ProgressState>);

#[derive(Debug, Default)]
struct ProgressState {
    written: Cell<u64>,
    /// The socket refused the last write.
    full: Cell<bool>,
    /// The answers waiting for the connection to write, each once.
    waiting: RefCell<Vec<Waker>>,
}

impl Progress {
    /// The stack wrote `n` bytes (`None`: the socket took nothing and
    /// will say when it does); `Some(0)`: it flushed what it wrote. Wakes
    /// the answers waiting when there is room again.
    pub(crate) fn wrote(&self, n: Option<usize>) {
        let state = &self.0;
        let Some(n) = n else {
            state.full.set(true);
            return;
        };
        state.written.set(state.written.get().saturating_add(n as u64));
        let was_full = state.full.replace(false);
        if (n > 0 || was_full) && !state.waiting.borrow().is_empty() {
            for waker in state.waiting.take() {
                waker.wake();
            }
        }
    }

    /// An answer's account of what it handed on ahead of the writes.
    pub(crate) fn stream(&self) -> StreamAhead {
        StreamAhead { conn: self.clone(), pending: std::collections::VecDeque::new(), ahead: 0 }
    }
}

/// One answer's bytes handed on over an HTTP/2 connection and not yet
/// matched by as many bytes written (see [`Progress`]).
#[derive(Debug)]
pub(crate) struct StreamAhead {
    conn: Progress,
    /// Where the connection's writes must reach for each piece handed on
    /// to count as out, and its length, oldest first.
    pending: std::collections::VecDeque<(u64, u64)>,
    ahead: u64,
}

impl StreamAhead {
    /// The most pieces one answer keeps ahead (tiny chunks would otherwise
    /// keep a long list).
    const PIECES: usize = 64;

    /// How many bytes may be handed on now, at most `limit` ahead of the
    /// writes; when none (or the socket is full), the task is woken when
    /// the connection writes.
    pub(crate) fn poll_room(&mut self, limit: u64, cx: &Context<'_>) -> Poll<u64> {
        let state = &self.conn.0;
        let written = state.written.get();
        while let Some(&(end, len)) = self.pending.front() {
            if end > written {
                break;
            }
            self.pending.pop_front();
            self.ahead -= len;
        }
        if !state.full.get() && self.ahead < limit && self.pending.len() < Self::PIECES {
            return Poll::Ready(limit - self.ahead);
        }
        let mut waiting = state.waiting.borrow_mut();
        if !waiting.iter().any(|w| w.will_wake(cx.waker())) {
            waiting.push(cx.waker().clone());
        }
        Poll::Pending
    }

    /// `n` bytes were handed on: they count as out once the connection has
    /// written as many more, after those already ahead of this answer.
    pub(crate) fn handed(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        let n = n as u64;
        let after = self.pending.back().map_or(0, |&(end, _)| end);
        let end = after.max(self.conn.0.written.get()).saturating_add(n);
        self.pending.push_back((end, n));
        self.ahead += n;
    }
}

/// The bytes written to an HTTP/1 connection so far, counted by the
/// connection stack; an answer waiting for them to go out is woken when
/// some do.
#[derive(Debug, Clone, Default)]
pub(crate) struct Written(Rc<WrittenState>);

#[derive(Debug, Default)]
struct WrittenState {
    bytes: Cell<u64>,
    waker: RefCell<Option<Waker>>,
}

impl Written {
    /// The stack wrote `n` bytes.
    pub(crate) fn add(&self, n: usize) {
        if n == 0 {
            return;
        }
        self.0.bytes.set(self.0.bytes.get().saturating_add(n as u64));
        if let Some(waker) = self.0.waker.borrow_mut().take() {
            waker.wake();
        }
    }

    /// The bytes written so far.
    pub(crate) fn bytes(&self) -> u64 {
        self.0.bytes.get()
    }

    /// Has the task woken at the next write.
    pub(crate) fn wake_at_next(&self, cx: &Context<'_>) {
        let mut waker = self.0.waker.borrow_mut();
        match &*waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => *waker = Some(cx.waker().clone()),
        }
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

    /// An HTTP/2 answer is handed on only so far ahead of its connection's
    /// writes, and not at all while the socket is full; bytes written
    /// before it are no credit.
    #[test]
    fn an_http2_answer_goes_only_so_far_ahead_of_the_writes() {
        let count = std::sync::Arc::new(Count(std::sync::atomic::AtomicUsize::new(0)));
        let waker = Waker::from(std::sync::Arc::clone(&count));
        let cx = Context::from_waker(&waker);
        let progress = Progress::default();
        // A large answer of another stream, written whole.
        progress.wrote(Some(5_000_000));
        let mut ahead = progress.stream();
        assert_eq!(ahead.poll_room(100, &cx), Poll::Ready(100));
        ahead.handed(60);
        assert_eq!(ahead.poll_room(100, &cx), Poll::Ready(40));
        ahead.handed(40);
        assert!(ahead.poll_room(100, &cx).is_pending(), "nothing written since");
        progress.wrote(Some(59));
        assert!(ahead.poll_room(100, &cx).is_pending(), "the first piece is not out yet");
        assert_eq!(count.0.load(std::sync::atomic::Ordering::Relaxed), 1, "woken by the write");
        progress.wrote(Some(1));
        assert_eq!(ahead.poll_room(100, &cx), Poll::Ready(60));
        progress.wrote(None);
        assert!(ahead.poll_room(100, &cx).is_pending(), "the socket is full");
        progress.wrote(Some(0));
        assert_eq!(ahead.poll_room(100, &cx), Poll::Ready(60), "flushed: room again");
        progress.wrote(Some(40));
        assert_eq!(ahead.poll_room(100, &cx), Poll::Ready(100));
        // Another stream's pieces are no part of this one's.
        let mut other = progress.stream();
        other.handed(100);
        ahead.handed(10);
        progress.wrote(Some(10));
        assert_eq!(ahead.poll_room(100, &cx), Poll::Ready(100));
        assert!(other.poll_room(100, &cx).is_pending());
    }

    /// Counts its wakes.
    struct Count(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for Count {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Every stream of an HTTP/2 connection hears of its end; the streams
    /// that ended before it leave nothing behind, however many there were.
    #[test]
    fn the_end_of_a_connection_reaches_every_stream_waiting_and_ended_ones_are_forgotten() {
        let gone = ClientGone::always_watched();
        for _ in 0..10_000 {
            drop(gone.watch());
        }
        assert!(gone.0.waiting.borrow().len() <= 16, "{}", gone.0.waiting.borrow().len());
        let count = std::sync::Arc::new(Count(std::sync::atomic::AtomicUsize::new(0)));
        let waker = Waker::from(std::sync::Arc::clone(&count));
        let cx = Context::from_waker(&waker);
        let watches: Vec<GoneWatch> = (0..3).map(|_| gone.watch()).collect();
        for w in &watches {
            assert!(w.poll_gone(&cx).is_pending());
        }
        gone.close();
        assert_eq!(count.0.load(std::sync::atomic::Ordering::Relaxed), 3);
        assert!(watches.iter().all(|w| w.poll_gone(&cx).is_ready()));
        assert!(gone.watch().poll_gone(&cx).is_ready(), "a stream after the end");
    }
}

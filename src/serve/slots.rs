//! Connection slots of one worker, and the eviction of idle kept-alive
//! connections when a new one needs a slot.
//!
//! `limits.maxConnections` bounds the connections served at once (each
//! costs buffers). Enforced by actix-server alone, a worker at its limit
//! stops accepting: new clients wait in the kernel's backlog until some
//! connection closes — and a connection that is only kept alive, idle
//! between requests, closes when its keep-alive timeout (90 s) runs out.
//! A worker full of idle connections then keeps new clients waiting for
//! nothing (seconds, in a measurement at the default limit).
//!
//! nginx closes idle keep-alive connections when it runs short of
//! connections; so does this. actix-server is given room for one more
//! connection per worker than it serves: that one is accepted but waits
//! in [`Slots::enter`] until a slot is free, and while it waits, the
//! connection that has been idle longest is closed (evicted) — at once if
//! one is idle, else as soon as one becomes idle. A connection is idle
//! between requests only: after at least one response has been written
//! whole, with nothing of a next request read. One that is waiting for its
//! first request, reading a request, or writing a response is never
//! evicted (the request timeout and the stall guard bound those).
//!
//! The transports report idleness: the direct writer around its wait for a
//! next request, [`Lockstep`](super::lockstep::Lockstep) for actix-http's
//! HTTP/1 connections. HTTP/2 connections do not report it, so they are
//! never evicted; they stay bounded by the keep-alive timeout.
//!
//! One instance per worker thread: everything here is `Rc` and `Cell`,
//! touched only by that worker's tasks.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::poll_fn;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use tokio::sync::Notify;

/// The connection slots of one worker.
#[derive(Debug)]
pub(crate) struct Slots {
    /// Connections served at once.
    capacity: usize,
    state: RefCell<State>,
    /// A slot was freed.
    freed: Notify,
    /// The order connections became idle in: the lowest ticket among idle
    /// connections marks the longest idle (a count, not a clock: cheaper,
    /// and never a tie).
    tickets: Cell<u64>,
}

#[derive(Debug, Default)]
struct State {
    /// Connections holding a slot, evicted ones included until they close.
    served: usize,
    /// Connections waiting for a slot.
    waiting: usize,
    /// Evicted connections that have not closed yet.
    evicting: usize,
    next_id: u64,
    occupants: BTreeMap<u64, Rc<Occupant>>,
}

/// What [`Slots`] knows of one connection, shared with it.
#[derive(Debug, Default)]
struct Occupant {
    /// Its ticket from [`Slots::tickets`] while idle; `None` while busy.
    idle_since: Cell<Option<u64>>,
    /// Asked to close.
    evicted: Cell<bool>,
    /// The connection's task, woken when it is evicted.
    waker: RefCell<Option<Waker>>,
}

/// A connection's slot: held for the connection's whole life, freed when
/// dropped.
#[derive(Debug)]
pub(crate) struct Slot {
    slots: Rc<Slots>,
    id: u64,
    occupant: Rc<Occupant>,
}

/// Counts a waiting [`Slots::enter`] until it is done or dropped.
struct Waiting<'s>(&'s Slots);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.state.borrow_mut().waiting -= 1;
    }
}

impl Slots {
    /// A worker's slots: `capacity` connections served at once (at least
    /// one).
    pub(crate) fn new(capacity: usize) -> Rc<Self> {
        Rc::new(Self {
            capacity: capacity.max(1),
            state: RefCell::new(State::default()),
            freed: Notify::new(),
            tickets: Cell::new(0),
        })
    }

    /// A slot for a new connection: at once when one is free; otherwise
    /// after the longest-idle connection was evicted, or, when none is idle,
    /// once one has become idle and was evicted (or closed by itself).
    pub(crate) async fn enter(self: &Rc<Self>) -> Slot {
        // First come, first served: a slot freed for a waiting connection
        // is not taken by one that arrives meanwhile.
        if self.state.borrow().waiting == 0
            && let Some(slot) = self.take()
        {
            return slot;
        }
        self.state.borrow_mut().waiting += 1;
        let _waiting = Waiting(self);
        loop {
            // Registered before evicting, so that a slot freed at once is
            // not missed.
            let freed = self.freed.notified();
            self.evict_if_wanted();
            freed.await;
            if let Some(slot) = self.take() {
                return slot;
            }
        }
    }

    /// A free slot, if there is one.
    fn take(self: &Rc<Self>) -> Option<Slot> {
        let mut state = self.state.borrow_mut();
        if state.served >= self.capacity {
            return None;
        }
        state.served += 1;
        let id = state.next_id;
        state.next_id += 1;
        let occupant = Rc::new(Occupant::default());
        state.occupants.insert(id, Rc::clone(&occupant));
        Some(Slot { slots: Rc::clone(self), id, occupant })
    }

    /// Evicts the longest-idle connection when a connection waits for a
    /// slot that no eviction under way will free.
    fn evict_if_wanted(&self) {
        let mut state = self.state.borrow_mut();
        if state.waiting <= state.evicting {
            return;
        }
        // A scan, not an index: evictions happen only at the limit, while
        // idleness changes on every request.
        let longest = state
            .occupants
            .values()
            .filter(|o| !o.evicted.get())
            .filter_map(|o| o.idle_since.get().map(|since| (since, o)))
            .min_by_key(|(since, _)| *since)
            .map(|(_, o)| Rc::clone(o));
        if let Some(occupant) = longest {
            state.evicting += 1;
            drop(state);
            tracing::debug!("evicting the longest-idle connection for a waiting one");
            occupant.evicted.set(true);
            if let Some(waker) = occupant.waker.borrow_mut().take() {
                waker.wake();
            }
        }
    }
}

impl Slot {
    /// The connection is between requests: a candidate for eviction from
    /// now on (its place in line is kept from the first call of an idle
    /// period).
    pub(crate) fn idle(&self) {
        if self.occupant.idle_since.get().is_none() {
            let ticket = self.slots.tickets.get();
            self.slots.tickets.set(ticket + 1);
            self.occupant.idle_since.set(Some(ticket));
            self.slots.evict_if_wanted();
        }
    }

    /// The connection is reading a request or writing a response.
    pub(crate) fn busy(&self) {
        self.occupant.idle_since.set(None);
    }

    /// Whether the connection was asked to close.
    pub(crate) fn is_evicted(&self) -> bool {
        self.occupant.evicted.get()
    }

    /// Wakes the task of `cx` when the connection is evicted.
    pub(crate) fn wake_on_eviction(&self, cx: &Context<'_>) {
        let mut waker = self.occupant.waker.borrow_mut();
        match &*waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => *waker = Some(cx.waker().clone()),
        }
    }

    /// Completes when the connection is evicted.
    pub(crate) async fn evicted(&self) {
        poll_fn(|cx| {
            if self.is_evicted() {
                Poll::Ready(())
            } else {
                self.wake_on_eviction(cx);
                Poll::Pending
            }
        })
        .await;
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut state = self.slots.state.borrow_mut();
        state.served -= 1;
        if self.occupant.evicted.get() {
            state.evicting -= 1;
        }
        state.occupants.remove(&self.id);
        let waiting = state.waiting > 0;
        drop(state);
        if waiting {
            self.slots.freed.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::pin;
    use std::task::Waker;

    use super::*;

    fn poll_once<F: Future>(f: std::pin::Pin<&mut F>) -> Poll<F::Output> {
        f.poll(&mut Context::from_waker(Waker::noop()))
    }

    #[actix_web::test]
    async fn a_free_slot_is_taken_at_once() {
        let slots = Slots::new(2);
        let a = slots.enter().await;
        let b = slots.enter().await;
        assert!(!a.is_evicted() && !b.is_evicted());
    }

    #[actix_web::test]
    async fn at_the_limit_the_longest_idle_connection_is_evicted() {
        let slots = Slots::new(3);
        let (a, b, c) = (slots.enter().await, slots.enter().await, slots.enter().await);
        b.idle();
        a.idle();
        c.busy();
        let mut waiting = pin!(slots.enter());
        assert!(poll_once(waiting.as_mut()).is_pending());
        assert!(b.is_evicted(), "b has been idle longest");
        assert!(!a.is_evicted() && !c.is_evicted());
        // Only one is evicted for one waiting connection.
        assert!(poll_once(waiting.as_mut()).is_pending());
        assert!(!a.is_evicted());
        drop(b);
        assert!(poll_once(waiting.as_mut()).is_ready());
    }

    #[actix_web::test]
    async fn busy_connections_are_not_evicted_until_one_becomes_idle() {
        let slots = Slots::new(2);
        let (a, b) = (slots.enter().await, slots.enter().await);
        let mut waiting = pin!(slots.enter());
        assert!(poll_once(waiting.as_mut()).is_pending());
        assert!(!a.is_evicted() && !b.is_evicted());
        b.idle();
        assert!(b.is_evicted(), "evicted as soon as it is idle, for the waiting connection");
        assert!(!a.is_evicted());
        drop(b);
        assert!(poll_once(waiting.as_mut()).is_ready());
    }

    #[actix_web::test]
    async fn without_a_waiting_connection_idle_ones_stay() {
        let slots = Slots::new(2);
        let (a, b) = (slots.enter().await, slots.enter().await);
        a.idle();
        b.idle();
        assert!(!a.is_evicted() && !b.is_evicted());
        // A waiting connection that gives up evicts nobody later.
        {
            let mut waiting = pin!(slots.enter());
            a.busy();
            b.busy();
            assert!(poll_once(waiting.as_mut()).is_pending());
        }
        a.idle();
        assert!(!a.is_evicted());
    }
}

//! A connection that stalls is closed: the per-request slowloris guard
//! actix-http lacks.
//!
//! actix-http 3 arms its request-head timer once per connection, for the
//! first request only. On a kept-alive connection the next head may then
//! arrive a byte a minute, or stop half-way, and the connection is held
//! forever (its keep-alive timer is cleared by the first byte). Go's
//! net/http re-arms `ReadHeaderTimeout` for every request; this wrapper
//! does the equivalent at the byte-stream level, for HTTP/1:
//!
//! - the clock starts when bytes arrive while nothing is pending (the
//!   start of a request), or when a write cannot proceed (a client that
//!   stopped reading its response);
//! - any byte written stops it (the proxy answers every request at once,
//!   so a write means the request was read);
//! - when it runs out, reads and writes fail with `TimedOut` and actix
//!   drops the connection.
//!
//! A request the front door passes on may take long to answer and longer
//! to stream (a slow list, a watch, an upload, an exec session): while it
//! runs the connection is marked a [`LongExchange`], and only a client that stops
//! reading its answer stops the clock (the exchange has idle limits of its
//! own).
//!
//! An idle kept-alive connection has nothing pending, so the clock does not
//! run; actix's keep-alive timer closes it. HTTP/2 connections are not
//! wrapped: their control frames (SETTINGS acknowledgements, window
//! updates) are reads that no write answers, and h2 has its own flow
//! control.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

use crate::http::connection::LongExchange;

/// A byte stream closed when it makes no progress for `timeout` while a
/// request or a response is pending.
#[derive(Debug)]
pub struct StallGuard<S> {
    inner: S,
    timeout: Duration,
    /// `false` passes everything through (HTTP/2).
    enabled: bool,
    armed: bool,
    /// One timer per connection, reset per request (no allocation per
    /// request).
    sleep: Pin<Box<Sleep>>,
    /// Set while the front door passes a request on: reads neither start
    /// the clock nor are timed by it.
    long: LongExchange,
    /// The clock was started by a write that could not proceed.
    by_write: bool,
}

fn stalled() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "connection stalled with a request or response pending")
}

impl<S> StallGuard<S> {
    /// Wraps `inner`; with `enabled` false it only passes bytes through.
    pub fn new(inner: S, timeout: Duration, enabled: bool) -> Self {
        Self {
            inner,
            timeout,
            enabled,
            armed: false,
            sleep: Box::pin(tokio::time::sleep(timeout)),
            long: LongExchange::default(),
            by_write: false,
        }
    }

    /// The mark the front door sets on this connection.
    pub(crate) fn long_exchange(&self) -> LongExchange {
        self.long.clone()
    }

    /// Starts the clock unless it runs already; registers the task's waker
    /// so that it is polled when the time is up.
    fn arm(&mut self, cx: &mut Context<'_>, by_write: bool) {
        if !by_write && self.long.is_marked() {
            return;
        }
        if self.enabled && !self.armed {
            self.armed = true;
            self.by_write = by_write;
            self.sleep.as_mut().reset(Instant::now() + self.timeout);
            // Pending (the time was just set ahead): this registers the waker.
            let _ = self.sleep.as_mut().poll(cx);
        }
    }

    /// Whether the clock ran out.
    fn expired(&mut self, cx: &mut Context<'_>) -> bool {
        if self.armed && !self.by_write && self.long.is_marked() {
            // Started by the request head, before the front door took it.
            self.armed = false;
        }
        self.armed && self.sleep.as_mut().poll(cx).is_ready()
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for StallGuard<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.expired(cx) {
            return Poll::Ready(Err(stalled()));
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.arm(cx, false);
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> StallGuard<S> {
    fn after_write(&mut self, cx: &mut Context<'_>, polled: &Poll<io::Result<usize>>) {
        match polled {
            Poll::Ready(Ok(n)) if *n > 0 => self.armed = false,
            Poll::Pending => self.arm(cx, true),
            _ => {}
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for StallGuard<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.expired(cx) {
            return Poll::Ready(Err(stalled()));
        }
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.after_write(cx, &polled);
        polled
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.expired(cx) {
            return Poll::Ready(Err(stalled()));
        }
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.after_write(cx, &polled);
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.expired(cx) {
            return Poll::Ready(Err(stalled()));
        }
        let polled = Pin::new(&mut this.inner).poll_flush(cx);
        if polled.is_pending() {
            this.arm(cx, true);
        }
        polled
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

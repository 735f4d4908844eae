//! `SETTINGS_MAX_CONCURRENT_STREAMS` for actix-http's HTTP/2 connections.
//!
//! actix-http 3.20 builds its `h2` server with the window sizes only and
//! offers no way to set the streams a client may open at once, so the
//! server advertises no limit: two connections held 16,947 watches, and
//! the proxy ran out of file descriptors. Rather than fork actix-http,
//! [`MaxStreams`] rewrites the server's first frame on its way out — the
//! `h2` server always starts with its SETTINGS frame (RFC 9113 §3.4, the
//! server preface) — to carry `SETTINGS_MAX_CONCURRENT_STREAMS`, and then
//! steps aside. A client that honours SETTINGS (Go's, client-go's, the
//! `h2` crate's) opens no more than that; for one that does not, the
//! front door holds the connection's long-running passes to the same
//! number (`http::connection::StreamPlaces`, 429 past it).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio::io::AsyncWrite;

/// RFC 9113 §6.5.2.
const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
/// RFC 9113 §6.5.
const SETTINGS: u8 = 0x4;
/// RFC 9113 §4.1: length (3), type, flags, stream identifier (4).
const FRAME_HEADER: usize = 9;
/// The largest first frame taken apart; the `h2` server's is a few dozen
/// bytes, anything larger is passed on as it is.
const MOST: usize = 16 * 1024;

/// The server's side of one HTTP/2 connection's preface, on its way out.
#[derive(Debug)]
pub(crate) struct MaxStreams {
    limit: u32,
    state: State,
}

#[derive(Debug)]
enum State {
    /// The first frame, taken from the writer until whole.
    Collecting(BytesMut),
    /// The first frame (rewritten), not yet written whole to the stream.
    Writing(Bytes),
    /// Everything passes through.
    Done,
}

impl MaxStreams {
    /// A connection whose server preface will advertise `limit`.
    pub(crate) fn new(limit: u32) -> Self {
        Self { limit, state: State::Collecting(BytesMut::with_capacity(64)) }
    }

    /// Writes `buf` to `inner`: while the first frame is incomplete, takes
    /// its bytes; once it is whole, the rewritten frame goes first.
    pub(crate) fn poll_write<S: AsyncWrite + Unpin>(
        &mut self,
        inner: &mut S,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if let State::Collecting(taken) = &mut self.state {
            let want = match frame_len(taken) {
                Some(len) => len - taken.len(),
                None => FRAME_HEADER - taken.len(),
            };
            let n = want.min(buf.len());
            taken.extend_from_slice(&buf[..n]);
            if let Some(len) = frame_len(taken)
                && (taken.len() == len || len > MOST)
            {
                let first = std::mem::take(taken).freeze();
                self.state = State::Writing(with_max_streams(first, self.limit));
            }
            if n > 0 {
                // Taken: written out with the rest of the frame, and at the
                // latest by the next write or flush.
                if let Poll::Ready(Err(e)) = self.poll_pending(inner, cx) {
                    return Poll::Ready(Err(e));
                }
                return Poll::Ready(Ok(n));
            }
        }
        match self.poll_pending(inner, cx) {
            Poll::Ready(Ok(())) => Pin::new(inner).poll_write(cx, buf),
            other => other.map_ok(|()| 0),
        }
    }

    /// Writes what is held of the first frame; ready once nothing is
    /// (while the frame is still being collected, nothing can be written).
    pub(crate) fn poll_pending<S: AsyncWrite + Unpin>(
        &mut self,
        inner: &mut S,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            match &mut self.state {
                State::Collecting(_) | State::Done => return Poll::Ready(Ok(())),
                State::Writing(rest) if rest.is_empty() => self.state = State::Done,
                State::Writing(rest) => match Pin::new(&mut *inner).poll_write(cx, rest) {
                    Poll::Ready(Ok(0)) => {
                        return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
                    }
                    Poll::Ready(Ok(n)) => rest.advance(n),
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Pending => return Poll::Pending,
                },
            }
        }
    }
}

/// The whole length of the frame whose head starts `bytes`, once its
/// header is there.
fn frame_len(bytes: &[u8]) -> Option<usize> {
    let header = bytes.get(..FRAME_HEADER)?;
    let payload =
        usize::from(header[0]) << 16 | usize::from(header[1]) << 8 | usize::from(header[2]);
    Some(FRAME_HEADER + payload)
}

/// `frame` with `SETTINGS_MAX_CONCURRENT_STREAMS` at most `limit`, when
/// it is a server's first SETTINGS frame (not an acknowledgement, on
/// stream 0, whole, of six-byte parameters); anything else as it is.
fn with_max_streams(frame: Bytes, limit: u32) -> Bytes {
    let Some(len) = frame_len(&frame) else { return frame };
    let is_settings = frame[3] == SETTINGS && frame[4] & 0x1 == 0 && frame[5..9] == [0; 4];
    if !is_settings || frame.len() != len || !(len - FRAME_HEADER).is_multiple_of(6) {
        return frame;
    }
    let mut out = BytesMut::with_capacity(len + 6);
    out.extend_from_slice(&frame[..FRAME_HEADER]);
    let mut found = false;
    for param in frame[FRAME_HEADER..].chunks_exact(6) {
        let id = u16::from_be_bytes([param[0], param[1]]);
        if id == SETTINGS_MAX_CONCURRENT_STREAMS {
            let value = u32::from_be_bytes([param[2], param[3], param[4], param[5]]);
            out.put_u16(id);
            out.put_u32(value.min(limit));
            found = true;
        } else {
            out.extend_from_slice(param);
        }
    }
    if !found {
        out.put_u16(SETTINGS_MAX_CONCURRENT_STREAMS);
        out.put_u32(limit);
    }
    let payload = out.len() - FRAME_HEADER;
    // A server's SETTINGS is a few parameters; the length fits in 24 bits.
    let [_, a, b, c] = u32::try_from(payload).unwrap_or(u32::MAX).to_be_bytes();
    out[..3].copy_from_slice(&[a, b, c]);
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(params: &[(u16, u32)], flags: u8) -> Vec<u8> {
        let len = params.len() * 6;
        let mut f = vec![0, 0, u8::try_from(len).expect("small"), SETTINGS, flags, 0, 0, 0, 0];
        for (id, v) in params {
            f.extend_from_slice(&id.to_be_bytes());
            f.extend_from_slice(&v.to_be_bytes());
        }
        f
    }

    #[test]
    fn the_limit_is_added_to_the_servers_settings() {
        let first = settings(&[(0x4, 1 << 20)], 0);
        let out = with_max_streams(Bytes::from(first), 250);
        assert_eq!(&out[..], &settings(&[(0x4, 1 << 20), (0x3, 250)], 0)[..]);
    }

    #[test]
    fn a_larger_advertised_limit_is_lowered_and_a_smaller_one_kept() {
        let out = with_max_streams(Bytes::from(settings(&[(0x3, 1000)], 0)), 250);
        assert_eq!(&out[..], &settings(&[(0x3, 250)], 0)[..]);
        let out = with_max_streams(Bytes::from(settings(&[(0x3, 10)], 0)), 250);
        assert_eq!(&out[..], &settings(&[(0x3, 10)], 0)[..]);
    }

    #[test]
    fn anything_but_a_settings_frame_is_left_alone() {
        let ack = settings(&[], 0x1);
        assert_eq!(&with_max_streams(Bytes::from(ack.clone()), 250)[..], &ack[..]);
        let mut ping = settings(&[(0x4, 1)], 0);
        ping[3] = 0x6;
        assert_eq!(&with_max_streams(Bytes::from(ping.clone()), 250)[..], &ping[..]);
    }

    /// Whatever the writer's pieces, the stream gets the rewritten frame
    /// and then every byte after it.
    #[test]
    fn the_first_frame_is_rewritten_however_it_is_written() {
        let first = settings(&[(0x4, 65_535)], 0);
        let mut sent = first.clone();
        sent.extend_from_slice(b"after");
        let mut expected = settings(&[(0x4, 65_535), (0x3, 7)], 0);
        expected.extend_from_slice(b"after");
        for piece in [1, 2, 5, 9, 10, 14, 100] {
            let mut out: Vec<u8> = Vec::new();
            let mut patch = MaxStreams::new(7);
            let mut cx = Context::from_waker(std::task::Waker::noop());
            let mut rest = &sent[..];
            while !rest.is_empty() {
                let take = piece.min(rest.len());
                match patch.poll_write(&mut out, &mut cx, &rest[..take]) {
                    Poll::Ready(Ok(n)) => rest = &rest[n..],
                    other => panic!("{other:?}"),
                }
            }
            assert!(patch.poll_pending(&mut out, &mut cx).is_ready());
            assert_eq!(out, expected, "written {piece} bytes at a time");
        }
    }
}

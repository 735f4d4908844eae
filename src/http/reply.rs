//! What a request asks and what the proxy answers, independent of the
//! transport that carries them.
//!
//! Two transports carry the same answers: actix-http (HTTPS, HTTP/2, and
//! every request out of the ordinary) and the direct writer (`serve::direct`: plain
//! HTTP/1.1, writing prepared bodies to the socket without copying them).
//! Both build a [`Request`], ask [`router::answer`](super::router::answer),
//! and write the [`Reply`]; so routing, negotiation, conditional requests
//! and headers exist once, and the transports differ only in framing.

use std::borrow::Cow;
use std::cell::RefCell;
use std::thread::LocalKey;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::{HttpRequest, HttpResponse};
use bytes::Bytes;

use crate::body::rendered::ToInflate;

/// The request methods the proxy tells apart: it only reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    /// GET.
    Get,
    /// HEAD: answered as GET, without the body.
    Head,
    /// Anything else: 405 on a known route.
    Other,
}

impl Method {
    /// The method named by a request line's token (methods are
    /// case-sensitive, RFC 9110 9.1).
    pub(crate) fn from_token(token: &str) -> Self {
        match token {
            "GET" => Self::Get,
            "HEAD" => Self::Head,
            _ => Self::Other,
        }
    }

    /// Whether the method only reads.
    pub(crate) fn reads(self) -> bool {
        matches!(self, Self::Get | Self::Head)
    }
}

/// The parts of a request the answer depends on, borrowed from whatever
/// the transport parsed.
#[derive(Debug, Clone)]
pub(crate) struct Request<'a> {
    /// The method.
    pub method: Method,
    /// The path as sent (percent-encoded), without the query.
    pub path: &'a str,
    /// The query as sent, without `?`; empty when there is none.
    pub query: &'a str,
    /// Every `Accept` line joined with `,`; `None` when absent or not text.
    pub accept: Option<Cow<'a, str>>,
    /// Every `If-None-Match` line joined with `,`.
    pub if_none_match: Option<Cow<'a, str>>,
    /// Whether `Accept-Encoding` takes gzip.
    pub gzip: bool,
    /// The first `Authorization` line's value, for delegated
    /// authentication ([`access`](super::access)); never logged.
    pub authorization: Option<&'a [u8]>,
}

impl<'a> Request<'a> {
    /// The request as actix parsed it.
    pub(crate) fn from_actix(req: &'a HttpRequest) -> Self {
        Self::from_head(req.head())
    }

    /// The request of an actix-http head (also an upgrade's, which never
    /// reaches actix-web).
    pub(crate) fn from_head(head: &'a actix_web::dev::RequestHead) -> Self {
        let headers = &head.headers;
        let values = |name: HeaderName| headers.get_all(name).map(HeaderValue::as_bytes);
        Self {
            method: Method::from_token(head.method.as_str()),
            path: head.uri.path(),
            query: head.uri.query().unwrap_or(""),
            accept: joined(values(header::ACCEPT)),
            if_none_match: joined(values(header::IF_NONE_MATCH)),
            gzip: joined(values(header::ACCEPT_ENCODING)).is_some_and(|v| accepts_gzip(&v)),
            authorization: headers.get(header::AUTHORIZATION).map(HeaderValue::as_bytes),
        }
    }
}

/// An answer: status, headers, body. The transport adds what belongs to
/// framing: `Content-Length` (none on a 304), `Date`, `Connection`, and
/// drops the body of an answer to HEAD.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    /// The status.
    pub status: StatusCode,
    /// Headers, in the order they are written.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The body; prepared bodies are shared, never copied.
    pub body: Bytes,
    /// Instead of `body`: a gzip-only body answered plain, inflated as it
    /// is written.
    pub inflate: Option<ToInflate>,
}

impl Reply {
    /// A reply with `status` and no header or body yet.
    pub(crate) fn new(status: StatusCode) -> Self {
        Self { status, headers: Vec::with_capacity(8), body: Bytes::new(), inflate: None }
    }

    /// Adds a header (several of one name are several lines).
    #[must_use]
    pub(crate) fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.push((name, value));
        self
    }

    /// Sets the body.
    #[must_use]
    pub(crate) fn body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = body.into();
        self
    }

    /// Answers `plain` inflated as it is written.
    #[must_use]
    pub(crate) fn inflated(mut self, plain: ToInflate) -> Self {
        self.inflate = Some(plain);
        self
    }

    /// What `Content-Length` says.
    pub(crate) fn content_length(&self) -> usize {
        self.inflate.as_ref().map_or(self.body.len(), ToInflate::plain_len)
    }

    /// The same answer for actix-http to write.
    pub(crate) fn into_actix(self) -> HttpResponse {
        let mut resp = HttpResponse::build(self.status);
        for (name, value) in self.headers {
            resp.append_header((name, value));
        }
        if self.status == StatusCode::NOT_MODIFIED {
            // No body and no Content-Length (RFC 9110 15.4.5).
            resp.finish()
        } else if let Some(plain) = self.inflate {
            match plain.inflating() {
                Ok(inflating) => {
                    let len = u64::try_from(inflating.remaining()).unwrap_or(u64::MAX);
                    resp.body(actix_web::body::SizedStream::new(len, inflating))
                }
                Err(_) => super::status::identity_corrupt().into_actix(),
            }
        } else {
            resp.body(self.body)
        }
    }
}

/// All values of a header joined with `,`, as one list (several `Accept`
/// lines mean the same as one line with commas). `None` when absent or not
/// UTF-8 (Go passes any bytes on; a value that is not text matches nothing
/// here, so it is dropped). Borrowed in the usual case of one line, so the
/// hot paths (a 304 is a header lookup and a compare) allocate nothing for
/// it; `from_utf8` rather than `HeaderValue::to_str`, which checks byte by
/// byte and cost a tenth of a 304.
pub(crate) fn joined<'a>(values: impl Iterator<Item = &'a [u8]>) -> Option<Cow<'a, str>> {
    let mut list = None;
    for value in values {
        join_value(&mut list, value);
    }
    list
}

/// Adds one header line's value to `list`, as [`joined`] does for all of
/// them: for a transport that meets header lines one at a time.
pub(crate) fn join_value<'a>(list: &mut Option<Cow<'a, str>>, value: &'a [u8]) {
    let Ok(value) = std::str::from_utf8(value) else { return };
    match list {
        None => *list = Some(Cow::Borrowed(value)),
        Some(all) => {
            let all = all.to_mut();
            all.push(',');
            all.push_str(value);
        }
    }
}

/// A per-thread cache of one HTTP date, [`http_date`] fills it.
pub(crate) type DateCache = RefCell<(u64, Option<HeaderValue>)>;

/// The HTTP date `ahead` of now, to the second, formatted at most once a
/// second per worker thread (`cache`): formatting a date costs more than
/// the rest of a 304.
pub(crate) fn http_date(
    cache: &'static LocalKey<DateCache>,
    ahead: Duration,
) -> Option<HeaderValue> {
    let now = SystemTime::now();
    let second = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    cache.with_borrow_mut(|(cached_second, value)| {
        if *cached_second != second {
            *value = HeaderValue::from_str(&httpdate::fmt_http_date(now + ahead)).ok();
            *cached_second = second;
        }
        value.clone()
    })
}

/// Whether an `Accept-Encoding` value takes gzip: a `gzip` (or `*`) coding
/// whose q-value is not zero.
pub(crate) fn accepts_gzip(accept_encoding: &str) -> bool {
    accept_encoding.split(',').any(|coding| {
        let mut parts = coding.split(';');
        let name = parts.next().unwrap_or("").trim();
        let q_zero = parts.any(|p| {
            let p = p.trim();
            p.strip_prefix("q=")
                .or_else(|| p.strip_prefix("Q="))
                .is_some_and(|q| q.trim().parse::<f32>().is_ok_and(|q| q <= 0.0))
        });
        (name.eq_ignore_ascii_case("gzip") || name == "*") && !q_zero
    })
}

thread_local! {
    /// The `Date` value for the current second, per worker thread.
    static DATE: DateCache = const { RefCell::new((u64::MAX, None)) };
}

/// The HTTP/1.1 response head of `reply` into `out`, as the direct writer
/// and the front door's refusals of an upgrade write it: status line,
/// `content-length` (the body's, also for HEAD; none on a 304, as
/// actix-http), `connection: close` when closing, the reply's headers,
/// `date`.
pub(crate) fn write_head(out: &mut Vec<u8>, reply: &Reply, close: bool) {
    out.clear();
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(reply.status.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(reply.status.canonical_reason().unwrap_or("").as_bytes());
    out.extend_from_slice(b"\r\n");
    if reply.status != StatusCode::NOT_MODIFIED {
        out.extend_from_slice(b"content-length: ");
        out.extend_from_slice(itoa::Buffer::new().format(reply.content_length()).as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if close {
        out.extend_from_slice(b"connection: close\r\n");
    }
    for (name, value) in &reply.headers {
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if let Some(date) = http_date(&DATE, Duration::ZERO) {
        out.extend_from_slice(b"date: ");
        out.extend_from_slice(date.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_is_taken_when_listed_without_q_zero() {
        assert!(accepts_gzip("gzip"));
        assert!(accepts_gzip("br, GZIP;q=0.5"));
        assert!(accepts_gzip("*"));
        assert!(!accepts_gzip("gzip;q=0"));
        assert!(!accepts_gzip("identity"));
        assert!(!accepts_gzip("deflate, br"));
    }

    #[test]
    fn several_lines_join_with_commas_and_non_text_is_dropped() {
        let one: [&[u8]; 1] = [b"a"];
        assert_eq!(joined(one.into_iter()), Some(Cow::Borrowed("a")));
        let three: [&[u8]; 3] = [b"a", b"\xff", b"b"];
        assert_eq!(joined(three.into_iter()).as_deref(), Some("a,b"));
        assert_eq!(joined(std::iter::empty()), None);
    }

    #[test]
    fn only_get_and_head_read() {
        assert!(Method::from_token("GET").reads());
        assert!(Method::from_token("HEAD").reads());
        assert!(!Method::from_token("get").reads());
        assert!(!Method::from_token("POST").reads());
    }
}

//! The one strict check of a raw HTTP/1.x request head: the rules
//! actix-http's request parser (`h1::decoder`) applies, for the heads read
//! before actix-http sees them.
//!
//! Two readers take request heads off the wire themselves: the direct
//! writer (plain HTTP, every request of its connections) and the first
//! request reader of a connection actix-http serves (HTTPS), which looks
//! for an upgrade the front door passes on. A head actix-http would refuse
//! (two `Content-Length`s, `Content-Length` with `Transfer-Encoding`, a
//! transfer coding other than `chunked`, two `Host`s: each a way to make
//! two servers disagree on where a request ends, or on whom it is for) must
//! not be answered or passed on by them instead. So each reader checks a
//! head here first, and hands one that fails to actix-http with the bytes
//! it read; actix-http refuses it with `400 Bad Request` and closes the
//! connection, as it does any such head it reads itself. One head, one
//! answer, whichever reader saw it.
//!
//! Only a [`Checked`] head can be taken: the readers' own parsers
//! (`Plain::of` in the direct writer, [`UpgradeRequest::of_raw`] in the
//! front door) accept nothing else.
//!
//! Header names and values need no rule here: both readers parse with
//! httparse's default configuration, as actix-http does, so a name that is
//! not a token or a value with a control byte fails the parse itself
//! (and is handed over the same way).
//!
//! [`UpgradeRequest::of_raw`]: crate::front_door::UpgradeRequest::of_raw

use actix_web::http::{Method, Uri};

/// Which of actix-http's rules a request head breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Malformed {
    /// The method does not parse as one.
    #[error("the method is not a token")]
    Method,
    /// The request target does not parse as a URI.
    #[error("the request target is not a URI")]
    Target,
    /// Two `Content-Length` lines, even with the same value.
    #[error("more than one Content-Length")]
    DuplicateContentLength,
    /// A `Content-Length` that is not a plain decimal number (`+5`, `5,5`,
    /// empty, past `u64`).
    #[error("a Content-Length that is not a decimal number")]
    ContentLength,
    /// Two `Transfer-Encoding` lines.
    #[error("more than one Transfer-Encoding")]
    DuplicateTransferEncoding,
    /// A `Transfer-Encoding` other than `chunked` alone.
    #[error("a Transfer-Encoding other than chunked")]
    TransferEncoding,
    /// `Transfer-Encoding` on an HTTP/1.0 request.
    #[error("Transfer-Encoding in an HTTP/1.0 request")]
    TransferEncodingInHttp10,
    /// Both `Content-Length` and `Transfer-Encoding`.
    #[error("both Content-Length and Transfer-Encoding")]
    LengthAndTransferEncoding,
    /// Two `Host` lines.
    #[error("more than one Host")]
    DuplicateHost,
    /// An HTTP/1.1 request without `Host` (RFC 9112 §3.2).
    #[error("no Host in an HTTP/1.1 request")]
    MissingHost,
    /// An HTTP/1.0 `POST` whose body has no length (RFC 1945 §7.2.2).
    #[error("an HTTP/1.0 POST without Content-Length")]
    Http10PostWithoutLength,
}

/// A complete request head that passed [`check`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Checked<'r, 'h, 'b> {
    raw: &'r httparse::Request<'h, 'b>,
}

impl<'r, 'h, 'b> Checked<'r, 'h, 'b> {
    /// The head as httparse read it.
    pub(crate) fn raw(&self) -> &'r httparse::Request<'h, 'b> {
        self.raw
    }
}

/// Checks a complete request head against actix-http 3's request parser:
/// the head is taken when actix-http would take it, and refused (with the
/// first rule it breaks) when actix-http would answer it with 400.
///
/// # Errors
/// [`Malformed`], naming the rule.
pub(crate) fn check<'r, 'h, 'b>(
    raw: &'r httparse::Request<'h, 'b>,
) -> Result<Checked<'r, 'h, 'b>, Malformed> {
    let method = raw.method.ok_or(Malformed::Method)?;
    let target = raw.path.ok_or(Malformed::Target)?;
    let http10 = raw.version != Some(1);
    if Method::from_bytes(method.as_bytes()).is_err() {
        return Err(Malformed::Method);
    }
    if !target_is_uri(target) {
        return Err(Malformed::Target);
    }
    let mut content_length = false;
    let mut transfer_encoding = None;
    let mut host = false;
    let mut websocket = false;
    for h in raw.headers.iter() {
        let name = h.name;
        if name.eq_ignore_ascii_case("content-length") {
            if content_length {
                return Err(Malformed::DuplicateContentLength);
            }
            content_length = true;
            let value = text(h.value).ok_or(Malformed::ContentLength)?;
            // `u64::from_str` takes a leading `+`; actix-http does not.
            if value.starts_with('+') || value.parse::<u64>().is_err() {
                return Err(Malformed::ContentLength);
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            if transfer_encoding.is_some() {
                return Err(Malformed::DuplicateTransferEncoding);
            }
            if http10 {
                return Err(Malformed::TransferEncodingInHttp10);
            }
            let value = text(h.value).ok_or(Malformed::TransferEncoding)?;
            // `identity` passes this line in actix-http, then fails its
            // "must end in chunked" rule: only `chunked` is taken.
            transfer_encoding = Some(value.eq_ignore_ascii_case("chunked"));
        } else if name.eq_ignore_ascii_case("host") {
            if host {
                return Err(Malformed::DuplicateHost);
            }
            host = true;
        } else if name.eq_ignore_ascii_case("upgrade") {
            websocket |= text(h.value).is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
        }
    }
    if !http10 && !host {
        return Err(Malformed::MissingHost);
    }
    match transfer_encoding {
        Some(false) => return Err(Malformed::TransferEncoding),
        Some(true) if content_length => return Err(Malformed::LengthAndTransferEncoding),
        _ => {}
    }
    // An HTTP/1.0 WebSocket upgrade is read to the connection's end, so it
    // has a length of sorts.
    if http10 && method == "POST" && !content_length && !websocket {
        return Err(Malformed::Http10PostWithoutLength);
    }
    Ok(Checked { raw })
}

/// A header value as actix-http's `HeaderValue::to_str` gives it (visible
/// ASCII and tabs only), trimmed; `None` for anything else.
fn text(value: &[u8]) -> Option<&str> {
    let visible = value.iter().all(|b| *b == b'\t' || (0x20..0x7f).contains(b));
    visible.then(|| std::str::from_utf8(value).ok()).flatten().map(str::trim)
}

/// Whether `target` parses as a URI, as actix-http parses it. An
/// origin-form target of [`plain_target_byte`]s always does (the common
/// case, told without copying it); anything else is parsed.
fn target_is_uri(target: &str) -> bool {
    let plain = target.starts_with('/')
        && target.len() < usize::from(u16::MAX - 1)
        && target.bytes().all(plain_target_byte);
    plain || Uri::try_from(target).is_ok()
}

/// Bytes of an origin-form target every reader takes as they are: RFC 3986
/// unreserved, sub-delims, `:`, `@`, `/`, `?` and `%` (all of them allowed
/// anywhere in a path or query by the URI parser actix-http uses). A
/// table: a target with a `?hash=` is 150 bytes, each checked.
static PLAIN_TARGET: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric();
        b += 1;
    }
    let others = b"-._~!$&'()*+,;=:@/?%";
    let mut i = 0;
    while i < others.len() {
        table[others[i] as usize] = true;
        i += 1;
    }
    table
};

/// Whether `b` is one of [`PLAIN_TARGET`]'s bytes.
pub(crate) fn plain_target_byte(b: u8) -> bool {
    PLAIN_TARGET[usize::from(b)]
}

#[cfg(test)]
mod tests {
    use actix_codec::Decoder;
    use bytes::BytesMut;

    use super::*;

    /// The check's verdict on `raw`, a whole head.
    fn verdict(raw: &str) -> Result<(), Malformed> {
        let mut lines = [httparse::EMPTY_HEADER; 32];
        let mut head = httparse::Request::new(&mut lines);
        assert!(head.parse(raw.as_bytes()).expect("parses").is_complete(), "{raw}");
        check(&head).map(|_| ())
    }

    /// actix-http's verdict on `raw`: whether its request decoder takes it.
    fn actix_takes(raw: &str) -> bool {
        // The codec's date service needs actix's runtime.
        actix_web::rt::System::new().block_on(async {
            let mut codec = actix_http::h1::Codec::default();
            matches!(codec.decode(&mut BytesMut::from(raw)), Ok(Some(_)))
        })
    }

    fn get_with(headers: &str) -> String {
        format!("GET /api/v1/pods HTTP/1.1\r\n{headers}\r\n")
    }

    #[test]
    fn an_ordinary_head_is_taken() {
        assert_eq!(verdict(&get_with("Host: x\r\n")), Ok(()));
        assert_eq!(verdict(&get_with("Host: x\r\nContent-Length: 0\r\n")), Ok(()));
        assert_eq!(verdict(&get_with("Host: x\r\nContent-Length: 007\r\n")), Ok(()));
        assert_eq!(verdict(&get_with("Host: x\r\nTransfer-Encoding: Chunked\r\n")), Ok(()));
        assert_eq!(verdict("GET / HTTP/1.0\r\n\r\n"), Ok(()), "HTTP/1.0 needs no Host");
    }

    #[test]
    fn two_content_lengths_are_refused_even_when_equal() {
        let two = get_with("Host: x\r\nContent-Length: 0\r\nContent-Length: 5\r\n");
        assert_eq!(verdict(&two), Err(Malformed::DuplicateContentLength));
        let same = get_with("Host: x\r\nContent-Length: 5\r\ncontent-length: 5\r\n");
        assert_eq!(verdict(&same), Err(Malformed::DuplicateContentLength));
    }

    #[test]
    fn a_content_length_is_a_plain_decimal_number() {
        for value in ["+5", "-1", "5,5", "0x5", "", "18446744073709551616", "5 5"] {
            let head = get_with(&format!("Host: x\r\nContent-Length: {value}\r\n"));
            assert_eq!(verdict(&head), Err(Malformed::ContentLength), "{value:?}");
        }
    }

    #[test]
    fn content_length_with_transfer_encoding_is_refused() {
        for order in [
            "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
            "Transfer-Encoding: chunked\r\nContent-Length: 0\r\n",
        ] {
            let head = get_with(&format!("Host: x\r\n{order}"));
            assert_eq!(verdict(&head), Err(Malformed::LengthAndTransferEncoding), "{order}");
        }
    }

    #[test]
    fn only_chunked_alone_is_a_transfer_encoding() {
        for value in ["gzip", "identity", "gzip, chunked", "chunked, gzip", "xchunked", ""] {
            let head = get_with(&format!("Host: x\r\nTransfer-Encoding: {value}\r\n"));
            assert_eq!(verdict(&head), Err(Malformed::TransferEncoding), "{value:?}");
        }
        let two =
            get_with("Host: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n");
        assert_eq!(verdict(&two), Err(Malformed::DuplicateTransferEncoding));
        let old = "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert_eq!(verdict(old), Err(Malformed::TransferEncodingInHttp10));
    }

    #[test]
    fn one_host_and_only_one() {
        let two = get_with("Host: proxy\r\nHost: other\r\n");
        assert_eq!(verdict(&two), Err(Malformed::DuplicateHost));
        assert_eq!(verdict(&get_with("")), Err(Malformed::MissingHost));
    }

    #[test]
    fn an_http10_post_has_a_length() {
        assert_eq!(verdict("POST / HTTP/1.0\r\n\r\n"), Err(Malformed::Http10PostWithoutLength));
        assert_eq!(verdict("POST / HTTP/1.0\r\nContent-Length: 0\r\n\r\n"), Ok(()));
        assert_eq!(verdict("POST / HTTP/1.0\r\nUpgrade: websocket\r\n\r\n"), Ok(()));
    }

    #[test]
    fn the_target_is_a_uri() {
        for ok in ["/a?b=c%20", "*", "http://other/api/v1", "/a\"b", "/%zz", "//"] {
            let head = format!("GET {ok} HTTP/1.1\r\nHost: x\r\n\r\n");
            assert_eq!(verdict(&head), Ok(()), "{ok}");
        }
        let bad = "GET http:// HTTP/1.1\r\nHost: x\r\n\r\n";
        assert_eq!(verdict(bad), Err(Malformed::Target), "no authority");
    }

    #[test]
    fn the_target_table_is_the_listed_characters() {
        for b in 0..=255u8 {
            let listed = b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/?%".contains(&b);
            assert_eq!(plain_target_byte(b), listed, "byte {b}");
        }
    }

    /// Every rule above, and each smuggling shape of issue 30, as
    /// actix-http itself decides: the check says what its parser says.
    #[test]
    fn each_rule_is_actix_https() {
        let heads = [
            get_with("Host: x\r\n"),
            get_with("Host: x\r\nContent-Length: 0\r\nContent-Length: 0\r\n"),
            get_with("Host: x\r\nContent-Length: +5\r\n"),
            get_with("Host: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n"),
            get_with("Host: x\r\nTransfer-Encoding: identity\r\n"),
            get_with("Host: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"),
            get_with("Host: x\r\nHost: y\r\n"),
            get_with(""),
            "POST / HTTP/1.0\r\n\r\n".to_owned(),
            "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n".to_owned(),
            "GET * HTTP/1.1\r\nHost: x\r\n\r\n".to_owned(),
            "GET http:// HTTP/1.1\r\nHost: x\r\n\r\n".to_owned(),
        ];
        for head in heads {
            assert_eq!(verdict(&head).is_ok(), actix_takes(&head), "{head}");
        }
    }

    proptest::proptest! {
        /// Whatever head a client sends, the check takes it exactly when
        /// actix-http's request parser does.
        #[test]
        fn the_check_agrees_with_actix_http(
            method in proptest::sample::select(vec!["GET", "POST", "HEAD", "CONNECT", "get", "X-Y"]),
            target in proptest::sample::select(vec![
                "/api/v1/pods", "/a?b=%7A", "*", "http://h/p", "h:1", "/a\"b", "http://", "//",
                "/%zz", "/a{b}",
            ]),
            version in proptest::sample::select(vec!["HTTP/1.1", "HTTP/1.0"]),
            headers in proptest::collection::vec(proptest::sample::select(vec![
                "Host: x", "Host: y", "host:z", "Content-Length: 0", "Content-Length: 5",
                "content-length: +1", "Content-Length:  7 ", "Content-Length: 1,1",
                "Content-Length: ", "Transfer-Encoding: chunked", "transfer-encoding: Chunked ",
                "Transfer-Encoding: identity", "Transfer-Encoding: gzip, chunked",
                "Transfer-Encoding: gzip", "Upgrade: websocket", "Upgrade: SPDY/3.1",
                "Connection: Upgrade", "Connection: close", "Expect: 100-continue",
                "X-Other: \u{e9}", "Content-Length: \u{e9}", "Transfer-Encoding: \u{e9}",
            ]), 0..6),
        ) {
            let mut raw = format!("{method} {target} {version}\r\n");
            for h in &headers {
                raw.push_str(h);
                raw.push_str("\r\n");
            }
            raw.push_str("\r\n");
            let mut lines = [httparse::EMPTY_HEADER; 16];
            let mut head = httparse::Request::new(&mut lines);
            if let Ok(httparse::Status::Complete(_)) = head.parse(raw.as_bytes()) {
                proptest::prop_assert_eq!(check(&head).is_ok(), actix_takes(&raw), "{}", raw);
            }
        }
    }
}

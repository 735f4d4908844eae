//! Reading a response body within a size limit, and refusing one that ends
//! before the length it announced. Used for every body the proxy reads
//! from another server (poll loops and `check`).

use awc::http::header;
use bytes::Bytes;

/// The whole body of a response that announced `announced` bytes (its
/// `Content-Length`, when valid): [`read_body`] within `max`, and then
/// refused if shorter than announced — awc ends a body quietly when the
/// connection closes early, and a document cut short must never pass for a
/// whole one.
pub(crate) async fn read_whole_body<S>(
    stream: &mut S,
    max: usize,
    announced: Option<u64>,
) -> Result<Bytes, awc::error::PayloadError>
where
    S: futures_util::Stream<Item = Result<Bytes, awc::error::PayloadError>> + Unpin,
{
    let body = read_body(stream, max, announced).await?;
    if let Some(announced) = announced
        && u64::try_from(body.len()).ok() != Some(announced)
    {
        let message = format!("body ended after {} of {announced} bytes", body.len());
        let source = std::io::Error::new(std::io::ErrorKind::UnexpectedEof, message);
        return Err(awc::error::PayloadError::Incomplete(Some(source)));
    }
    Ok(body)
}

/// Reads a body of at most `max` bytes, failing with
/// [`PayloadError::Overflow`](awc::error::PayloadError::Overflow) as soon as
/// it is exceeded — without reading the rest, and without `announced`
/// bytes when the announced length is already too large.
///
/// Memory is what a limit is for: awc's own `body().limit()` grows one
/// buffer by doubling, so a body refused at a 64 MiB limit peaked at about
/// 180 MiB. Here a body of announced length is read into one buffer of
/// exactly that size, and one of unknown length is kept as the chunks that
/// arrived and joined once at the end, so the peak stays near the limit.
async fn read_body<S>(
    stream: &mut S,
    max: usize,
    announced: Option<u64>,
) -> Result<Bytes, awc::error::PayloadError>
where
    S: futures_util::Stream<Item = Result<Bytes, awc::error::PayloadError>> + Unpin,
{
    use futures_util::StreamExt;

    let announced = match announced.map(usize::try_from) {
        Some(Ok(n)) if n <= max => Some(n),
        Some(_) => return Err(awc::error::PayloadError::Overflow),
        None => None,
    };
    let mut total = 0usize;
    let mut exact = announced.map(bytes::BytesMut::with_capacity);
    let mut chunks: Vec<Bytes> = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        total = total.saturating_add(chunk.len());
        if total > max {
            return Err(awc::error::PayloadError::Overflow);
        }
        match &mut exact {
            Some(buf) => buf.extend_from_slice(&chunk),
            None => chunks.push(chunk),
        }
    }
    if let Some(buf) = exact {
        return Ok(buf.freeze());
    }
    if chunks.len() == 1 {
        return Ok(chunks.pop().unwrap_or_default());
    }
    let mut joined = bytes::BytesMut::with_capacity(total);
    for chunk in chunks {
        joined.extend_from_slice(&chunk);
    }
    Ok(joined.freeze())
}

/// The `Content-Length` a response announced, if it announced a valid one.
pub(crate) fn content_length(headers: &awc::http::header::HeaderMap) -> Option<u64> {
    headers.get(header::CONTENT_LENGTH)?.to_str().ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use awc::http::header::HeaderValue;

    #[test]
    fn only_a_valid_content_length_is_taken_as_announced() {
        let mut headers = awc::http::header::HeaderMap::new();
        assert_eq!(content_length(&headers), None);
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from_static("100000"));
        assert_eq!(content_length(&headers), Some(100_000));
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from_static("-1"));
        assert_eq!(content_length(&headers), None);
    }
    fn chunks(
        parts: &[&'static [u8]],
    ) -> impl futures_util::Stream<Item = Result<Bytes, awc::error::PayloadError>> + Unpin {
        futures_util::stream::iter(
            parts.iter().map(|p| Ok(Bytes::from_static(p))).collect::<Vec<_>>(),
        )
    }

    fn read(parts: &[&'static [u8]], max: usize, announced: Option<u64>) -> Result<Bytes, String> {
        futures_util::FutureExt::now_or_never(read_body(&mut chunks(parts), max, announced))
            .expect("a ready stream never waits")
            .map_err(|e| e.to_string())
    }

    #[test]
    fn bodies_are_joined_whole_and_refused_past_the_limit() {
        assert_eq!(read(&[b"ab", b"cd"], 4, None).unwrap(), Bytes::from_static(b"abcd"));
        assert_eq!(read(&[b"ab", b"cd"], 4, Some(4)).unwrap(), Bytes::from_static(b"abcd"));
        assert_eq!(read(&[b"abcd"], 4, None).unwrap(), Bytes::from_static(b"abcd"));
        assert_eq!(read(&[], 4, None).unwrap(), Bytes::new());
        assert!(read(&[b"ab", b"cde"], 4, None).is_err(), "past the limit while streaming");
        assert!(read(&[b"ab"], 4, Some(5)).is_err(), "announced past the limit");
        // A short body is returned as it came; the caller compares it with
        // the announced length.
        assert_eq!(read(&[b"ab"], 4, Some(3)).unwrap(), Bytes::from_static(b"ab"));
    }

    #[test]
    fn a_whole_body_is_refused_when_shorter_than_announced() {
        let whole = |parts: &[&'static [u8]], announced| {
            futures_util::FutureExt::now_or_never(read_whole_body(&mut chunks(parts), 8, announced))
                .expect("a ready stream never waits")
                .map_err(|e| e.to_string())
        };
        assert_eq!(whole(&[b"ab", b"c"], Some(3)), Ok(Bytes::from_static(b"abc")));
        assert_eq!(whole(&[b"ab"], None), Ok(Bytes::from_static(b"ab")));
        let short = whole(&[b"ab"], Some(3)).expect_err("cut short");
        assert!(short.contains("body ended after 2 of 3 bytes"), "{short}");
    }
}

//! The bearer token the proxy sends to a downstream: fixed (a kubeconfig's
//! inline token), read from a file and read again before every request,
//! because projected service-account tokens rotate, or issued by an exec
//! credential plugin ([`crate::outbound::credentials::exec`]) and kept
//! until it expires. A token never reaches a log line: its header value is
//! marked sensitive.

use std::io::Read;
use std::path::{Path, PathBuf};

use awc::http::header::HeaderValue;

use crate::outbound::credentials::exec::ExecLimits;
use crate::outbound::credentials::exec::cache::ExecTokenCache;
use crate::outbound::credentials::{BearerToken, TokenSource};
use crate::outbound::error::{ClientError, FetchError};

/// The `Authorization` header: from a file, read again before every
/// request (see [`TokenFile`]), fixed (a kubeconfig's inline token), or
/// from an exec plugin.
#[derive(Debug)]
pub(crate) enum Token {
    File(TokenFile),
    Fixed(HeaderValue),
    Exec(ExecTokenCache),
}

impl Token {
    /// The token of `downstream` (named in the log lines of a plugin).
    pub(crate) fn new(source: &TokenSource, downstream: &str) -> Result<Self, ClientError> {
        match source {
            TokenSource::Bearer(BearerToken::File(path)) => {
                Ok(Self::File(TokenFile { path: path.clone(), cached: None }))
            }
            TokenSource::Bearer(BearerToken::Inline { origin, value: token }) => bearer(token)
                .map(Self::Fixed)
                .map_err(|source| ClientError::Token { origin: origin.clone(), source }),
            TokenSource::Exec(plugin) => Ok(Self::Exec(ExecTokenCache::new(
                plugin.clone(),
                ExecLimits::default(),
                downstream,
            ))),
        }
    }

    /// The header for the next request. Async because an exec plugin may
    /// have to run first.
    pub(crate) async fn header(&mut self) -> Result<HeaderValue, FetchError> {
        match self {
            Self::File(file) => file.header(),
            Self::Fixed(value) => Ok(value.clone()),
            Self::Exec(cache) => cache.header().await.map_err(|source| FetchError::Exec {
                user: cache.plugin().user().to_owned(),
                command: cache.plugin().command().to_owned(),
                source: Box::new(source),
            }),
        }
    }

    /// A request that carried `sent` was answered 401: whether a new
    /// token may be had by asking again. Only a plugin's token can be
    /// renewed on demand; a file is read before every request anyway, and
    /// an inline token never changes.
    pub(crate) fn rejected(&mut self, sent: &HeaderValue) -> bool {
        match self {
            Self::Exec(cache) => cache.rejected(sent),
            Self::File(_) | Self::Fixed(_) => false,
        }
    }
}

/// `Bearer TOKEN`, marked sensitive (also what `openapi-proxy check`
/// sends).
pub(crate) fn bearer(token: &str) -> Result<HeaderValue, std::io::Error> {
    let mut value = HeaderValue::from_str(&format!("Bearer {}", token.trim())).map_err(|_| {
        std::io::Error::new(std::io::ErrorKind::InvalidData, "token is not a valid header value")
    })?;
    value.set_sensitive(true);
    Ok(value)
}

/// The largest token file read. Service-account tokens are JWTs of one to
/// two KiB; the cap keeps a mistaken path (a log, `/dev/zero`) from being
/// read whole into memory before every request.
pub(crate) const MAX_TOKEN_FILE_BYTES: u64 = 64 * 1024;

/// Reads a token file, at most [`MAX_TOKEN_FILE_BYTES`] of it: one byte
/// more is an error, without reading the rest.
pub(crate) fn read_token_file(path: &Path) -> Result<String, std::io::Error> {
    let mut text = String::new();
    std::fs::File::open(path)?.take(MAX_TOKEN_FILE_BYTES + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_TOKEN_FILE_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!("a token file is at most {MAX_TOKEN_FILE_BYTES} bytes"),
        ));
    }
    Ok(text)
}

/// The bearer token from a file, read again before every request and
/// compared by content.
///
/// The modification time is no evidence of a rotation: a token rewritten
/// within the file system's timestamp resolution, or restored with its old
/// time (`cp -p`, `rsync -t`, a volume sync), kept its mtime, and the old
/// token went on being sent. A token file is small and read with a cap, so
/// reading it per request costs a few microseconds against a network round
/// trip.
#[derive(Debug)]
pub(crate) struct TokenFile {
    path: PathBuf,
    /// The file's content when last read, and the header made from it.
    cached: Option<(String, HeaderValue)>,
}

impl TokenFile {
    fn header(&mut self) -> Result<HeaderValue, FetchError> {
        let err = |source| FetchError::Token { path: self.path.display().to_string(), source };
        let token = read_token_file(&self.path).map_err(err)?;
        if let Some((last, value)) = &self.cached
            && *last == token
        {
            return Ok(value.clone());
        }
        let value = bearer(&token).map_err(err)?;
        self.cached = Some((token, value.clone()));
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use super::*;

    fn file_token(path: &Path) -> Token {
        Token::new(&path.to_path_buf().into(), "test").expect("a file token")
    }

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("openapi-proxy-token-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch dir");
        dir.join("token")
    }

    /// A rotated token whose file kept its modification time was not read
    /// again: the old token went on being sent.
    #[actix_web::test]
    async fn a_rotated_token_is_sent_even_when_the_file_keeps_its_mtime() {
        let path = scratch("mtime");
        std::fs::write(&path, "token-one\n").expect("write");
        let mtime: SystemTime = std::fs::metadata(&path).and_then(|m| m.modified()).expect("mtime");
        let mut token = file_token(&path);
        assert_eq!(token.header().await.expect("header"), "Bearer token-one");
        std::fs::write(&path, "token-two\n").expect("rotate");
        std::fs::File::options()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_modified(mtime))
            .expect("restore the mtime");
        assert_eq!(std::fs::metadata(&path).and_then(|m| m.modified()).ok(), Some(mtime));
        for _ in 0..3 {
            assert_eq!(token.header().await.expect("header"), "Bearer token-two");
        }
        assert!(token.header().await.expect("header").is_sensitive());
    }

    #[actix_web::test]
    async fn an_oversized_token_file_is_refused_without_reading_it_whole() {
        let path = scratch("large");
        let size = usize::try_from(MAX_TOKEN_FILE_BYTES).expect("fits") + 1;
        std::fs::write(&path, "a".repeat(size)).expect("write");
        let e = file_token(&path).header().await.expect_err("too large");
        assert!(crate::error_chain(&e).contains("a token file is at most 65536 bytes"), "{e}");
        let e = read_token_file(Path::new("/dev/zero")).expect_err("endless");
        assert_eq!(e.kind(), std::io::ErrorKind::FileTooLarge);
    }
}

//! The bearer token the proxy sends to a downstream: fixed (a kubeconfig's
//! inline token) or read from a file and read again when the file changes,
//! because projected service-account tokens rotate. A token never reaches a
//! log line: its header value is marked sensitive.

use std::path::PathBuf;
use std::time::SystemTime;

use awc::http::header::HeaderValue;

use crate::outbound::credentials::BearerToken;
use crate::outbound::error::{ClientError, FetchError};

/// The `Authorization` header: from a file, re-read when the file's
/// modification time changes, or fixed (a kubeconfig's inline token).
#[derive(Debug)]
pub(crate) enum Token {
    File(TokenFile),
    Fixed(HeaderValue),
}

impl Token {
    pub(crate) fn new(token: &BearerToken) -> Result<Self, ClientError> {
        match token {
            BearerToken::File(path) => {
                Ok(Self::File(TokenFile { path: path.clone(), cached: None }))
            }
            BearerToken::Inline { origin, value: token } => bearer(token)
                .map(Self::Fixed)
                .map_err(|source| ClientError::Token { origin: origin.clone(), source }),
        }
    }

    pub(crate) fn header(&mut self) -> Result<HeaderValue, FetchError> {
        match self {
            Self::File(file) => file.header(),
            Self::Fixed(value) => Ok(value.clone()),
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

/// The bearer token from a file, re-read when the file's modification time
/// changes.
#[derive(Debug)]
pub(crate) struct TokenFile {
    path: PathBuf,
    cached: Option<(SystemTime, HeaderValue)>,
}

impl TokenFile {
    fn header(&mut self) -> Result<HeaderValue, FetchError> {
        let err = |source| FetchError::Token { path: self.path.display().to_string(), source };
        let modified = std::fs::metadata(&self.path).and_then(|m| m.modified()).map_err(err)?;
        if let Some((at, value)) = &self.cached
            && *at == modified
        {
            return Ok(value.clone());
        }
        let token = std::fs::read_to_string(&self.path).map_err(err)?;
        let value = bearer(&token).map_err(err)?;
        self.cached = Some((modified, value.clone()));
        Ok(value)
    }
}

//! The token a plugin issued, kept for the requests that follow.
//!
//! Like client-go, the plugin runs when there is no token, when the token's
//! `expirationTimestamp` has passed, and when a downstream answers 401 to
//! a request that carried it ([`ExecTokenCache::rejected`]); a token
//! without expiry is kept for the life of the process otherwise.
//!
//! One cache belongs to one downstream's client, which the downstream's
//! poll loop owns and uses one request at a time (`&mut self`): so at most
//! one run of the plugin per downstream is ever in progress, without a
//! lock.

use std::sync::Arc;
use std::time::SystemTime;

use awc::http::header::HeaderValue;

use super::run::{ExecError, run};
use super::{ExecLimits, ExecPlugin};
use crate::outbound::token::bearer;

/// One downstream's exec credential: the plugin and the token it issued
/// last, as a header marked sensitive.
#[derive(Debug)]
pub struct ExecTokenCache {
    plugin: Arc<ExecPlugin>,
    limits: ExecLimits,
    downstream: String,
    cached: Option<Issued>,
}

#[derive(Debug)]
struct Issued {
    header: HeaderValue,
    expires: Option<SystemTime>,
}

/// Why no `Authorization` header could be made.
#[derive(Debug, thiserror::Error)]
pub enum ExecTokenError {
    /// Running the plugin gave no token.
    #[error(transparent)]
    Run(#[from] ExecError),
    /// The token cannot be sent as a header (control characters).
    #[error("its status.token is not a valid header value")]
    Header,
}

impl ExecTokenCache {
    /// A cache for `downstream`'s `plugin`, which has not run yet.
    #[must_use]
    pub fn new(plugin: Arc<ExecPlugin>, limits: ExecLimits, downstream: &str) -> Self {
        Self { plugin, limits, downstream: downstream.to_owned(), cached: None }
    }

    /// The plugin this cache runs.
    #[must_use]
    pub fn plugin(&self) -> &ExecPlugin {
        &self.plugin
    }

    /// `Bearer TOKEN`: the cached token while it has not expired, else a
    /// fresh one from a run of the plugin.
    ///
    /// # Errors
    /// [`ExecTokenError`] when the run fails; nothing is cached then, so
    /// the next request runs the plugin again.
    pub async fn header(&mut self) -> Result<HeaderValue, ExecTokenError> {
        if let Some(issued) = &self.cached
            && issued.expires.is_none_or(|at| SystemTime::now() < at)
        {
            return Ok(issued.header.clone());
        }
        self.cached = None;
        let answer = run(&self.plugin, &self.limits, &self.downstream).await?;
        let header = bearer(&answer.token).map_err(|_| ExecTokenError::Header)?;
        self.cached = Some(Issued { header: header.clone(), expires: answer.expires });
        Ok(header)
    }

    /// A request that carried the cached token was answered 401: the token
    /// is dropped, and the next [`header`](Self::header) runs the plugin
    /// again. Whether there was a token to drop — that is, whether asking
    /// again with a new one may help.
    pub fn rejected(&mut self) -> bool {
        self.cached.take().is_some()
    }
}

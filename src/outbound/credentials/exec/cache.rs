//! The token a plugin issued, kept for the requests that follow.
//!
//! Like client-go, the plugin runs when there is no token, when the token's
//! `expirationTimestamp` has passed, and when a downstream answers 401 to
//! a request that carried it ([`ExecTokenCache::rejected`]); a token
//! without expiry is kept for the life of the process otherwise.
//!
//! One cache belongs to one downstream's client, which keeps it behind an
//! async mutex held across a run: so at most one run of the plugin per
//! downstream is ever in progress, though the client's requests run
//! concurrently. A 401 names the token it was answered to, so that the
//! answers to several requests sent with one token run the plugin once,
//! not once each (client-go compares the rejected token the same way).

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

    /// A request that carried `sent` was answered 401: if `sent` is the
    /// cached token, it is dropped, and the next [`header`](Self::header)
    /// runs the plugin again. Whether asking again may help: the refused
    /// token was dropped, or another request's 401 already had it replaced
    /// by a newer one. `false` when nothing is cached (the run after the
    /// drop failed, or had not happened): there is no new token to try.
    pub fn rejected(&mut self, sent: &HeaderValue) -> bool {
        match &self.cached {
            Some(issued) if issued.header == *sent => {
                self.cached = None;
                true
            }
            Some(_) => true,
            None => false,
        }
    }
}

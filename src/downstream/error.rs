//! Why a poll round failed. Shared by the poll loop and the discovery
//! fetcher, which both report through it (and count by its
//! [`PollError::reason`]).

use crate::discovery::legacy::LegacyError;
use crate::openapi::pipeline::PipelineError;
use crate::outbound::client::FetchError;

/// Why a round failed, beyond transport errors.
#[derive(Debug, thiserror::Error)]
pub enum PollError {
    /// A request failed.
    #[error(transparent)]
    Fetch(#[from] FetchError),
    /// The root index is not `{"paths":{…}}`.
    #[error("the /openapi/v3 root index is not valid")]
    BadRoot(#[source] serde_json::Error),
    /// A root entry names a key or URL we refuse to follow: a key that is
    /// not one Kubernetes could publish (`DocumentKey::parse`), or a URL
    /// that is not `/openapi/v3/<key>`. Both are quoted escaped.
    #[error(
        "root entry {key:?} (serverRelativeURL {url:?}) refused: not a valid document key, or not a URL under /openapi/v3/ for it"
    )]
    BadEntry {
        /// The key.
        key: String,
        /// The URL.
        url: String,
    },
    /// A document is not an OpenAPI 3 document.
    #[error("{path} is not an OpenAPI 3.x JSON document")]
    BadDocument {
        /// The document's path.
        path: String,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// The Swagger 2.0 document could not be parsed, split or converted.
    #[error("converting /openapi/v2")]
    Convert(#[source] PipelineError),
    /// A legacy `APIResourceList` could not be put in aggregated form.
    #[error("/{path} cannot be converted to aggregated discovery")]
    BadResourceList {
        /// The list's path, without the leading slash.
        path: String,
        /// Why.
        #[source]
        source: LegacyError,
    },
    /// The conversion gave no result: it passed its deadline (or the one
    /// before it still runs), it panicked, or the runtime is stopping.
    #[error("the conversion of /openapi/v2 did not finish: {0}")]
    Interrupted(String),
    /// The `/openapi/v2` document kept (gzipped) could not be read back
    /// to convert it again: memory corrupted, a defect.
    #[error("the kept /openapi/v2 document could not be read back")]
    Kept(#[source] std::io::Error),
    /// A fetched document's preparation gave no result: its task on the
    /// blocking pool panicked, or the runtime is stopping.
    #[error("preparing {path} did not finish")]
    Unprepared {
        /// The document's path.
        path: String,
    },
    /// The downstream publishes neither `/openapi/v3` nor `/openapi/v2`.
    #[error("the downstream serves neither /openapi/v3 nor /openapi/v2")]
    NothingPublished,
    /// What the downstream serves would take more than its share of the
    /// memory budget: refused before it is kept, the last good documents
    /// stay.
    #[error(
        "{what} needs {needed} bytes, {allowed} left (raise memoryBudgetBytes or memoryShareBytes)"
    )]
    Budget {
        /// What was refused.
        what: &'static str,
        /// Its bytes, or a bound on them.
        needed: usize,
        /// What the share left for it.
        allowed: usize,
    },
    /// The server answered 406 to a JSON request.
    #[error("{path} refuses application/json")]
    NotAcceptable {
        /// The path.
        path: String,
    },
}

/// Refuses `needed` bytes of `what` when they are more than `allowed`.
pub(crate) fn within(what: &'static str, needed: usize, allowed: usize) -> Result<(), PollError> {
    if needed > allowed {
        return Err(PollError::Budget { what, needed, allowed });
    }
    Ok(())
}

impl PollError {
    /// What `/readyz?verbose` says of a round the budget refused; `None`
    /// for every other failure.
    pub(crate) fn budget_refusal(&self) -> Option<String> {
        match self {
            Self::Budget { .. } => Some(format!("budget: {self}")),
            Self::Convert(e) if e.is_budget() => Some(format!(
                "budget: converting /openapi/v2: {} (raise memoryBudgetBytes or memoryShareBytes)",
                crate::error_chain(e)
            )),
            _ => None,
        }
    }

    pub(crate) fn reason(&self) -> &'static str {
        match self {
            Self::Fetch(e) => e.reason(),
            Self::BadRoot(_) | Self::BadEntry { .. } => "bad_root",
            Self::BadDocument { .. } | Self::BadResourceList { .. } => "bad_document",
            Self::Convert(e) if e.is_budget() => "budget",
            Self::Convert(_) | Self::Interrupted(_) | Self::Kept(_) | Self::Unprepared { .. } => {
                "conversion"
            }
            Self::Budget { .. } => "budget",
            Self::NothingPublished => "nothing_published",
            Self::NotAcceptable { .. } => "not_acceptable",
        }
    }
}

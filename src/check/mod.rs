//! `openapi-proxy check URL`: the conformance rules openapi-proxy is tested
//! by, as a tool to point at any server — a kube-apiserver (through
//! `kubectl proxy`), an aggregated API server, or openapi-proxy itself.
//!
//! The run has two phases. [`evidence`] fetches, once, everything the rules
//! need (read-only `GET`s to the given server only, bounded by [`fetch`],
//! documents reduced to their [`facts`] as they arrive so that memory stays
//! bounded however many and large they are); then every [`Rule`] of
//! [`rules::RULES`] is a pure function of that evidence, so each rule is unit-testable and one run prints evidence for
//! all of them. Each rule has a stable id and names the section of `docs/wire.md`
//! or `docs/upstream.md` it checks; a rule whose precondition is absent (a server with no
//! group-version documents, say) is *not applicable*, never counted as
//! passed.

pub mod evidence;
pub mod facts;
pub mod fetch;
pub mod more;
pub mod parse;
pub mod profile;
pub mod report;
pub mod rules;
pub mod wire_proto;

use std::fmt;

pub use evidence::Evidence;
pub use fetch::{Exchange, FetchOptions, Fetcher, Request, Response};
pub use report::Report;

/// Which documented choices the server is expected to make where Part A
/// (`docs/wire.md`) departs from Part B (`docs/upstream.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Profile {
    /// Part A: the root is handler3's (JSON, ETag, 304), v2beta1 may be
    /// served.
    OpenapiProxy,
    /// Part B as a cluster serves it: the aggregator's root (no ETag
    /// required), the core group always present, the built-in
    /// group-versions of the reported release.
    KubeApiserver,
    /// An aggregated API server (a generic apiserver) pointed at directly:
    /// an unknown OpenAPI key is 200 with an empty body, legacy `/apis`
    /// has no `apiVersion` and may carry `serverAddressByClientCIDRs`,
    /// `/api` may be 404 (no core group).
    AggregatedApiserver,
}

impl Profile {
    /// The name used on the command line and in JSON output.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::OpenapiProxy => "openapi-proxy",
            Self::KubeApiserver => "kube-apiserver",
            Self::AggregatedApiserver => "aggregated-apiserver",
        }
    }
}

/// What part of the server a rule looks at (`--only`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Area {
    /// `/openapi/v3` and its documents.
    Openapi,
    /// `/api`, `/apis` and below.
    Discovery,
    /// Both together (cross-checks): run only when neither is left out.
    Both,
}

impl Area {
    /// The name used in output.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Openapi => "openapi",
            Self::Discovery => "discovery",
            Self::Both => "openapi+discovery",
        }
    }
}

/// One departure from the expected behaviour, with what shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The request that showed it (none for findings about a whole set).
    pub request: Option<Request>,
    /// The status it got, when there was a response.
    pub status: Option<u16>,
    /// Where: `status`, `header etag`, a JSON pointer into the body, …
    pub at: String,
    /// What the wire reference expects there.
    pub expected: String,
    /// What the server sent.
    pub found: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(r) = &self.request {
            write!(f, "{r}")?;
            if let Some(s) = self.status {
                write!(f, " → {s}")?;
            }
            write!(f, ": ")?;
        }
        write!(f, "{}: expected {}, found {}", self.at, self.expected, self.found)
    }
}

/// A rule's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The server behaves as expected.
    Pass,
    /// It does not; at least one finding.
    Fail(Vec<Finding>),
    /// The rule's precondition is absent (why).
    NotApplicable(String),
}

/// One conformance rule: data plus a pure evaluation function.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    /// Stable id, `<section>/<name>` (`B-11.3/hash-matches-body`).
    pub id: &'static str,
    /// The section of the wire reference it checks (`B-11.3`, `A-1`,
    /// `B-1.1`); see [`Rule::reference`].
    pub section: &'static str,
    /// What it looks at.
    pub area: Area,
    /// One line: what must hold.
    pub title: &'static str,
    /// What a failure means for clients (docs/commands.md and `--help` text).
    pub failure_means: &'static str,
    /// The upstream test that asserts the same (`file: function`), so
    /// that a reader can hold the rule to what Kubernetes itself checks.
    pub upstream: &'static str,
    /// The evaluation.
    pub eval: fn(&Evidence, Profile) -> Outcome,
}

impl Rule {
    /// Where a reader finds the rule's section: `docs/upstream.md#b-11-3`
    /// for `B-11.3` (upstream behaviour, Part B), `docs/wire.md#a-1` for
    /// `A-1` (our decisions, Part A); each section has an anchor of that form.
    #[must_use]
    pub fn reference(&self) -> String {
        let file = if self.section.starts_with("A-") { "wire" } else { "upstream" };
        format!("docs/{file}.md#{}", self.section.to_ascii_lowercase().replace('.', "-"))
    }
}

/// What `check` does.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// How to reach the server.
    pub fetch: FetchOptions,
    /// Which choices to expect (`None`: picked from what the server
    /// shows, [`profile::pick`]).
    pub profile: Option<Profile>,
    /// Only this area (`None`: everything).
    pub only: Option<Area>,
}

/// Why `check` could not judge the server at all.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// Bad URL, TLS material or token file.
    #[error("setting up the client")]
    Setup(#[from] fetch::FetchSetupError),
    /// The very first request got no HTTP response.
    #[error("{url} is unreachable: {reason}")]
    Unreachable {
        /// The URL requested.
        url: String,
        /// Why.
        reason: String,
    },
}

/// Fetches the evidence and evaluates every selected rule.
///
/// # Errors
/// [`CheckError`] when the client cannot be set up or the server gives no
/// HTTP answer at all (a rule failing is not an error: it is in the report).
pub async fn run(options: &CheckOptions) -> Result<Report, CheckError> {
    let fetcher = Fetcher::new(options.fetch.clone())?;
    let started = std::time::SystemTime::now();
    let want = |area: Area| options.only.is_none_or(|only| only == area);
    let openapi = if want(Area::Openapi) {
        let ev = evidence::gather_openapi(&fetcher).await;
        unreachable(&fetcher, &ev.root)?;
        Some(ev)
    } else {
        None
    };
    let discovery = if want(Area::Discovery) {
        let ev = evidence::gather_discovery(&fetcher).await;
        unreachable(&fetcher, &ev.apis_no_accept)?;
        Some(ev)
    } else {
        None
    };
    let evidence = Evidence { started, openapi, discovery };
    let (profile, picked) = match options.profile {
        Some(p) => (p, None),
        None => {
            let (p, why) = profile::pick(&evidence);
            (p, Some(why))
        }
    };
    let mut report = evaluate(fetcher.base(), &evidence, profile, options.only);
    report.picked = picked;
    Ok(report)
}

fn unreachable(fetcher: &Fetcher, first: &Exchange) -> Result<(), CheckError> {
    match &first.outcome {
        Err(reason) => Err(CheckError::Unreachable {
            url: format!("{}{}", fetcher.base(), first.request.path),
            reason: reason.clone(),
        }),
        Ok(_) => Ok(()),
    }
}

/// Evaluates the rules selected by `only` over `evidence`.
#[must_use]
pub fn evaluate(server: &str, evidence: &Evidence, profile: Profile, only: Option<Area>) -> Report {
    let results = rules::RULES
        .iter()
        .filter(|r| only.is_none_or(|o| o == r.area))
        .map(|rule| (rule, (rule.eval)(evidence, profile)))
        .collect();
    Report { server: server.to_owned(), profile, picked: None, results }
}

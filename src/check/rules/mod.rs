//! The rule table and the helpers rules judge with.
//!
//! Rule ids are stable (tools and docs/commands.md refer to them); the table
//! order is the output order. Grouped by area: [`openapi`] (B-11.1–7 and
//! the root's Part A choices), [`discovery`] (B-11.8–14), [`documents`]
//! (B-11.15 and the document-level rules that span both areas).

pub mod discovery;
pub mod documents;
pub mod lists;
pub mod openapi;
pub mod v2;

use serde_json::Value;

use super::fetch::{Exchange, Response};
use super::{Area, Finding, Outcome, Rule};

/// Every rule, in output order.
pub static RULES: &[Rule] = &[
    openapi::ROOT_SHAPE,
    openapi::ROOT_HEADERS,
    openapi::DOCUMENT_HEADERS,
    openapi::HASH_MATCHES_BODY,
    openapi::HASH_REDIRECT,
    openapi::IF_NONE_MATCH,
    openapi::PROTOBUF_ACCEPT,
    openapi::NOT_ACCEPTABLE,
    discovery::AGGREGATED_APIS,
    discovery::AGGREGATED_ETAG,
    discovery::LEGACY_APIS,
    discovery::V2BETA1,
    discovery::CORE_GROUP,
    discovery::ORDERING,
    discovery::AGGREGATED_MATCHES_LEGACY,
    documents::OPENAPI_3_0_SHAPE,
    documents::URLS_RESOLVE,
    documents::VALID_OPENAPI,
    documents::REFS_CLOSED,
    documents::DISCOVERY_OPENAPI_COVERAGE,
    documents::KINDS_HAVE_SCHEMAS,
    lists::VERSION,
    v2::OPENAPI_V2,
    v2::OPENAPI_V2_PROTOBUF,
    v2::OPENAPI_V2_KINDS,
    lists::GROUP_VERSION_PATHS,
    lists::STORAGE_VERSION_HASH,
    lists::SINGULAR_NAMES,
    lists::PREFERRED_VERSION,
    lists::LISTS_AGREE,
    lists::FRESHNESS,
    lists::BUILT_INS,
    v2::DOCUMENT_ACCEPT_EDGES,
    lists::DISCOVERY_ACCEPT_EDGES,
    lists::PATHS_AND_SLASHES,
    lists::DISCOVERY_FORMS,
];

/// The rule with `id`.
#[must_use]
pub fn rule(id: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.id == id)
}

/// Collects findings while a rule looks at its evidence.
#[derive(Debug, Default)]
pub struct Judge {
    findings: Vec<Finding>,
}

impl Judge {
    /// No findings yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a finding about `ex` (or about no single request).
    pub fn fail(
        &mut self,
        ex: Option<&Exchange>,
        at: impl Into<String>,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) {
        self.findings.push(Finding {
            request: ex.map(|e| e.request.clone()),
            status: ex.and_then(|e| e.outcome.as_ref().ok()).map(|r| r.status),
            at: at.into(),
            expected: expected.into(),
            found: found.into(),
        });
    }

    /// The response of `ex`, or a finding that there was none.
    pub fn response<'a>(&mut self, ex: &'a Exchange) -> Option<&'a Response> {
        match &ex.outcome {
            Ok(r) => Some(r),
            Err(why) => {
                self.fail(Some(ex), "response", "an HTTP response", why.clone());
                None
            }
        }
    }

    /// The response of `ex` when its status is `expected`; else a finding.
    pub fn status<'a>(&mut self, ex: &'a Exchange, expected: u16) -> Option<&'a Response> {
        let resp = self.response(ex)?;
        if resp.status == expected {
            Some(resp)
        } else {
            self.fail(Some(ex), "status", expected.to_string(), resp.status.to_string());
            None
        }
    }

    /// The 200 JSON body of `ex`; when there is none, a failure at
    /// `status` saying what was `expected` and what came instead.
    pub fn json_body(&mut self, ex: &Exchange, expected: &str) -> Option<Value> {
        let body = super::evidence::json_ok(ex);
        if body.is_none() {
            let found = ex.outcome.as_ref().map_or_else(Clone::clone, |r| r.status.to_string());
            self.fail(Some(ex), "status", expected, found);
        }
        body
    }

    /// Header `name` equals `expected` exactly.
    pub fn header(&mut self, ex: &Exchange, resp: &Response, name: &str, expected: &str) -> bool {
        match resp.header(name) {
            Some(v) if v == expected => true,
            found => {
                self.fail(
                    Some(ex),
                    format!("header {name}"),
                    format!("{expected:?}"),
                    found.map_or_else(|| "no such header".to_owned(), |v| format!("{v:?}")),
                );
                false
            }
        }
    }

    /// Header `name` is absent.
    pub fn no_header(&mut self, ex: &Exchange, resp: &Response, name: &str) {
        if let Some(v) = resp.header(name) {
            self.fail(Some(ex), format!("header {name}"), "no such header", format!("{v:?}"));
        }
    }

    /// A `Vary` header line lists `token` (case-insensitive).
    pub fn vary(&mut self, ex: &Exchange, resp: &Response, token: &str) {
        let listed = resp
            .header_all("vary")
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token));
        if !listed {
            let found: Vec<&str> = resp.header_all("vary").collect();
            self.fail(
                Some(ex),
                "header vary",
                format!("a list naming {token}"),
                if found.is_empty() { "no such header".to_owned() } else { found.join(", ") },
            );
        }
    }

    /// The body is empty (judged by its length: the body itself may not
    /// have been kept).
    pub fn empty_body(&mut self, ex: &Exchange, resp: &Response) {
        if resp.length != 0 {
            self.fail(Some(ex), "body", "empty", format!("{} bytes", resp.length));
        }
    }

    /// The body as JSON, or a finding.
    pub fn json(&mut self, ex: &Exchange, resp: &Response) -> Option<Value> {
        match resp.json() {
            Ok(v) => Some(v),
            Err(why) => {
                self.fail(Some(ex), "body", "JSON", why);
                None
            }
        }
    }

    /// `value` at `pointer` equals `expected`.
    pub fn at(&mut self, ex: &Exchange, value: &Value, pointer: &str, expected: &Value) {
        match value.pointer(pointer) {
            Some(v) if v == expected => {}
            found => self.fail(
                Some(ex),
                pointer_label(pointer),
                expected.to_string(),
                found.map_or_else(|| "absent".to_owned(), Value::to_string),
            ),
        }
    }

    /// Nothing at `pointer`.
    pub fn absent(&mut self, ex: &Exchange, value: &Value, pointer: &str) {
        if let Some(v) = value.pointer(pointer) {
            self.fail(Some(ex), pointer_label(pointer), "absent", truncate(&v.to_string()));
        }
    }

    /// Whether anything was found so far.
    #[must_use]
    pub fn clean(&self) -> bool {
        self.findings.is_empty()
    }

    /// Pass when nothing was found.
    #[must_use]
    pub fn outcome(self) -> Outcome {
        if self.findings.is_empty() { Outcome::Pass } else { Outcome::Fail(self.findings) }
    }
}

/// `body <pointer>` (`body /` for the whole document).
#[must_use]
pub fn pointer_label(pointer: &str) -> String {
    format!("body {}", if pointer.is_empty() { "/" } else { pointer })
}

/// A JSON pointer token (RFC 6901 escaping).
#[must_use]
pub fn token(s: &str) -> String {
    crate::json::pointer::escape_token(s).into_owned()
}

/// Long values shortened for evidence lines.
#[must_use]
pub fn truncate(s: &str) -> String {
    const MAX: usize = 160;
    if s.len() <= MAX {
        return s.to_owned();
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Whether `s` is 128 upper-case hex digits (an upper-hex SHA-512).
#[must_use]
pub fn is_upper_hex_512(s: &str) -> bool {
    s.len() == 128 && s.bytes().all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b))
}

/// Not applicable because `--only` or a failed fetch left `area` out.
fn missing(area: Area) -> Outcome {
    Outcome::NotApplicable(format!("no {} evidence was gathered", area.name()))
}

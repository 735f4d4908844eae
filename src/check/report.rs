//! The verdicts, as text for people and as JSON for tools.
//!
//! Text: one line per rule (`PASS`, `FAIL`, `N/A`), the findings of a
//! failed rule indented below it, then `N passed, M failed, K not
//! applicable`. JSON (stable, documented in docs/commands.md):
//!
//! ```json
//! {"server": "...", "profile": "openapi-proxy", "profilePicked": "..." | null,
//!  "rules": [{"id": "B-11.3/hash-matches-body", "section": "B-11.3",
//!             "area": "openapi", "title": "...", "upstream": "...", "result": "fail",
//!             "reason": null,
//!             "findings": [{"request": {"method": "GET", "path": "...",
//!                                       "headers": [["Accept", "..."]]},
//!                           "status": 200, "at": "header etag",
//!                           "expected": "...", "found": "..."}]}],
//!  "summary": {"passed": 20, "failed": 1, "notApplicable": 0}}
//! ```

use std::io::Write;

use serde_json::{Value, json};

use super::{Finding, Outcome, Profile, Rule};

/// Findings printed per failed rule in text output (JSON has them all).
const TEXT_FINDINGS: usize = 8;

/// Every selected rule with its outcome.
#[derive(Debug, Clone)]
pub struct Report {
    /// The base URL checked.
    pub server: String,
    /// The profile used.
    pub profile: Profile,
    /// Why the profile was picked, when `--profile` did not name it.
    pub picked: Option<String>,
    /// Rules in table order with their outcomes.
    pub results: Vec<(&'static Rule, Outcome)>,
}

/// `(passed, failed, not applicable)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Rules that passed.
    pub passed: usize,
    /// Rules that failed.
    pub failed: usize,
    /// Rules whose precondition was absent.
    pub not_applicable: usize,
}

impl Report {
    /// How many rules passed, failed, did not apply.
    #[must_use]
    pub fn counts(&self) -> Counts {
        let mut c = Counts { passed: 0, failed: 0, not_applicable: 0 };
        for (_, o) in &self.results {
            match o {
                Outcome::Pass => c.passed += 1,
                Outcome::Fail(_) => c.failed += 1,
                Outcome::NotApplicable(_) => c.not_applicable += 1,
            }
        }
        c
    }

    /// The outcome of rule `id`, if it was evaluated.
    #[must_use]
    pub fn outcome(&self, id: &str) -> Option<&Outcome> {
        self.results.iter().find(|(r, _)| r.id == id).map(|(_, o)| o)
    }

    /// Writes the text report.
    ///
    /// # Errors
    /// When writing fails.
    pub fn write_text(&self, w: &mut dyn Write) -> std::io::Result<()> {
        match &self.picked {
            None => writeln!(w, "checking {} (profile {})", self.server, self.profile.name())?,
            Some(why) => writeln!(
                w,
                "checking {} (profile {}, picked: {why}; --profile chooses another)",
                self.server,
                self.profile.name()
            )?,
        }
        let prefix = crate::check::fetch::base_path(&self.server);
        if !prefix.is_empty() {
            writeln!(
                w,
                "requests are made under {prefix}: GET /openapi/v3 below is {prefix}/openapi/v3"
            )?;
        }
        for (rule, outcome) in &self.results {
            let (tag, extra) = match outcome {
                Outcome::Pass => ("PASS", String::new()),
                Outcome::Fail(_) => ("FAIL", String::new()),
                Outcome::NotApplicable(why) => ("N/A ", format!(" — {why}")),
            };
            writeln!(w, "{tag}  {}  {} ({}){extra}", rule.id, rule.title, rule.reference())?;
            if let Outcome::Fail(findings) = outcome {
                for f in findings.iter().take(TEXT_FINDINGS) {
                    writeln!(w, "      {f}")?;
                }
                if findings.len() > TEXT_FINDINGS {
                    writeln!(
                        w,
                        "      … and {} more (--output json lists all)",
                        findings.len() - TEXT_FINDINGS
                    )?;
                }
            }
        }
        let c = self.counts();
        writeln!(w, "{} passed, {} failed, {} not applicable", c.passed, c.failed, c.not_applicable)
    }

    /// The JSON report.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let rules: Vec<Value> = self
            .results
            .iter()
            .map(|(rule, outcome)| {
                let (result, reason, findings) = match outcome {
                    Outcome::Pass => ("pass", Value::Null, Vec::new()),
                    Outcome::Fail(f) => ("fail", Value::Null, f.iter().map(finding_json).collect()),
                    Outcome::NotApplicable(why) => {
                        ("not-applicable", Value::String(why.clone()), Vec::new())
                    }
                };
                json!({
                    "id": rule.id,
                    "section": rule.section,
                    "reference": rule.reference(),
                    "area": rule.area.name(),
                    "title": rule.title,
                    "upstream": rule.upstream,
                    "result": result,
                    "reason": reason,
                    "findings": findings,
                })
            })
            .collect();
        let c = self.counts();
        json!({
            "server": self.server,
            "profile": self.profile.name(),
            "profilePicked": self.picked,
            "rules": rules,
            "summary": {"passed": c.passed, "failed": c.failed, "notApplicable": c.not_applicable},
        })
    }
}

fn finding_json(f: &Finding) -> Value {
    let request = f
        .request
        .as_ref()
        .map_or(Value::Null, |r| json!({"method": r.method, "path": r.path, "headers": r.headers}));
    json!({
        "request": request,
        "status": f.status,
        "at": f.at,
        "expected": f.expected,
        "found": f.found,
    })
}

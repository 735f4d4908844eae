//! What `/readyz` says: whether the proxy has data to serve.
//!
//! A replica behind a Service that answers ready with nothing hands every
//! client an empty cluster: `kubectl` reads an empty `APIGroupList` as "the
//! server has no resources", not as "try another replica". So ready means
//! data: every downstream has delivered once — or at least one has, and
//! the rest have had the grace period to do so. The grace period keeps one
//! dead aggregated server from holding every replica out of its Service
//! forever; its documents appear when it recovers, as they would after any
//! later failure.
//!
//! Readiness only ever goes from not ready to ready: a downstream that
//! delivered once has last good documents whatever it does next, and the
//! grace period only passes.

use std::collections::BTreeSet;
use std::fmt::Write;
use std::time::Duration;

/// Where one downstream stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// It has delivered documents (which are served from now on, last good
    /// if it fails later).
    Delivered,
    /// It has not delivered yet, and readiness waits for it.
    Waiting,
    /// It has not delivered within the grace period, and another one has:
    /// readiness no longer waits for it.
    Excused,
}

/// Readiness as of one snapshot: every downstream's standing, in
/// configuration order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Readiness {
    /// Each downstream by name.
    pub downstreams: Vec<(String, Standing)>,
    /// The grace period, for the verbose answer.
    pub grace: Duration,
}

impl Readiness {
    /// Judges `names` (configuration order) given which have delivered and
    /// how long the proxy has been running.
    #[must_use]
    pub fn assess(
        names: &[String],
        delivered: &BTreeSet<String>,
        running: Duration,
        grace: Duration,
    ) -> Self {
        let any = names.iter().any(|n| delivered.contains(n));
        let downstreams = names
            .iter()
            .map(|name| {
                let standing = if delivered.contains(name) {
                    Standing::Delivered
                } else if any && running >= grace {
                    Standing::Excused
                } else {
                    Standing::Waiting
                };
                (name.clone(), standing)
            })
            .collect();
        Self { downstreams, grace }
    }

    /// Ready: at least one downstream delivered and none is waited for.
    /// With no downstream at all there is no data, so never.
    #[must_use]
    pub fn ready(&self) -> bool {
        self.downstreams.iter().any(|(_, s)| *s == Standing::Delivered)
            && self.downstreams.iter().all(|(_, s)| *s != Standing::Waiting)
    }

    /// The `?verbose` answer, in kube-apiserver's shape: a `[+]` or `[-]`
    /// line per check, then whether the whole check passed. Errors are not
    /// detailed here (the endpoint answers anyone; the log says why a
    /// downstream fails).
    #[must_use]
    pub fn verbose(&self, endpoint: &str) -> String {
        let mut out = String::from("[+]ping ok\n");
        let grace = self.grace.as_secs_f64();
        let nobody = !self.downstreams.iter().any(|(_, s)| *s == Standing::Delivered);
        for (name, standing) in &self.downstreams {
            // Writing to a String cannot fail.
            let _ = match standing {
                Standing::Delivered => writeln!(out, "[+]downstream/{name} ok"),
                Standing::Excused => writeln!(
                    out,
                    "[+]downstream/{name} ok: no documents yet, not waited for past the {grace}s grace period"
                ),
                Standing::Waiting if nobody => writeln!(
                    out,
                    "[-]downstream/{name} failed: no documents yet, and no downstream has delivered any"
                ),
                Standing::Waiting => writeln!(
                    out,
                    "[-]downstream/{name} failed: no documents yet, waited for up to the {grace}s grace period"
                ),
            };
        }
        if self.downstreams.is_empty() {
            out.push_str("[-]downstreams failed: none configured\n");
        }
        let verdict = if self.ready() { "passed" } else { "failed" };
        let _ = writeln!(out, "{endpoint} check {verdict}");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRACE: Duration = Duration::from_secs(60);

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    fn delivered(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    fn standings(r: &Readiness) -> Vec<Standing> {
        r.downstreams.iter().map(|(_, s)| *s).collect()
    }

    #[test]
    fn nothing_delivered_is_never_ready_however_long_it_runs() {
        for running in [Duration::ZERO, GRACE, GRACE * 100] {
            let r = Readiness::assess(&names(&["kube"]), &delivered(&[]), running, GRACE);
            assert!(!r.ready(), "{running:?}");
            assert_eq!(standings(&r), [Standing::Waiting]);
        }
    }

    #[test]
    fn every_downstream_delivered_is_ready_at_once() {
        let r =
            Readiness::assess(&names(&["a", "b"]), &delivered(&["a", "b"]), Duration::ZERO, GRACE);
        assert!(r.ready());
    }

    #[test]
    fn one_missing_downstream_is_waited_for_until_the_grace_period_ends() {
        let all = names(&["a", "b"]);
        let before = Readiness::assess(&all, &delivered(&["a"]), GRACE / 2, GRACE);
        assert!(!before.ready());
        assert_eq!(standings(&before), [Standing::Delivered, Standing::Waiting]);
        let after = Readiness::assess(&all, &delivered(&["a"]), GRACE, GRACE);
        assert!(after.ready());
        assert_eq!(standings(&after), [Standing::Delivered, Standing::Excused]);
    }

    #[test]
    fn no_downstream_configured_is_not_ready() {
        assert!(!Readiness::assess(&[], &delivered(&[]), GRACE, GRACE).ready());
        assert!(Readiness::default().verbose("readyz").contains("none configured"));
    }

    #[test]
    fn verbose_lists_a_line_per_downstream_as_kube_apiserver_does() {
        let all = names(&["kube", "metrics"]);
        let waiting = Readiness::assess(&all, &delivered(&["kube"]), Duration::ZERO, GRACE);
        assert_eq!(
            waiting.verbose("readyz"),
            "[+]ping ok\n[+]downstream/kube ok\n\
             [-]downstream/metrics failed: no documents yet, waited for up to the 60s grace period\n\
             readyz check failed\n"
        );
        let excused = Readiness::assess(&all, &delivered(&["kube"]), GRACE, GRACE);
        let text = excused.verbose("readyz");
        assert!(text.contains("[+]downstream/metrics ok: no documents yet"), "{text}");
        assert!(text.ends_with("readyz check passed\n"), "{text}");
        let none = Readiness::assess(&all, &delivered(&[]), GRACE, GRACE).verbose("readyz");
        assert!(none.contains("no downstream has delivered any"), "{none}");
    }
}

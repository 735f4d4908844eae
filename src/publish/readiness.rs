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
//! A downstream the memory budget refuses before it ever delivered is not
//! excused by the grace period: it is configured, it answers, and the
//! proxy chose not to serve it, so ready would hide half a cluster. It
//! fails readiness with the budget's own words until it fits.
//!
//! Otherwise readiness only goes from not ready to ready: a downstream
//! that delivered once has last good documents whatever it does next, and
//! the grace period only passes. Such a downstream whose polls now fail
//! stays `[+]` in the verbose answer, marked stale with the age of its
//! last failed poll and, when the budget refused it, why ([`PollFailures`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

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
    /// It has not delivered, and its last round was refused by the memory
    /// budget: readiness fails while it is.
    Refused,
}

/// When each downstream's last poll failed, while its polls fail, and
/// what the budget said when it refused the round. Read live by the
/// verbose answer: the poll loops write it every round, and a failing
/// downstream's later rounds change nothing a snapshot holds, so no
/// snapshot would carry the time of its last failure.
#[derive(Debug, Default)]
pub struct PollFailures(Mutex<BTreeMap<String, (Instant, Option<String>)>>);

impl PollFailures {
    /// Records how `name`'s poll ended, `at` that time, with the budget's
    /// refusal if it refused the round. Returns whether the downstream is
    /// refused now where it was not, or the reverse.
    pub fn record(&self, name: &str, ok: bool, refusal: Option<String>, at: Instant) -> bool {
        let mut failed = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let was_refused = failed.get(name).is_some_and(|(_, r)| r.is_some());
        let is_refused = refusal.is_some();
        if ok {
            failed.remove(name);
        } else {
            failed.insert(name.to_owned(), (at, refusal));
        }
        was_refused != is_refused
    }

    /// When `name`'s last poll failed, if its last poll did.
    #[must_use]
    pub fn last(&self, name: &str) -> Option<Instant> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).get(name).map(|(at, _)| *at)
    }

    /// The downstreams whose last round the budget refused.
    #[must_use]
    pub fn refused(&self) -> BTreeSet<String> {
        let failed = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        failed.iter().filter(|(_, (_, r))| r.is_some()).map(|(n, _)| n.clone()).collect()
    }

    /// What the budget said of `name`'s last round, if it refused it.
    #[must_use]
    pub fn refusal(&self, name: &str) -> Option<String> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).get(name).and_then(|(_, r)| r.clone())
    }
}

/// Readiness as of one snapshot: every downstream's standing, in
/// configuration order.
#[derive(Debug, Clone, Default)]
pub struct Readiness {
    /// Each downstream by name.
    pub downstreams: Vec<(String, Standing)>,
    /// The grace period, for the verbose answer.
    pub grace: Duration,
    /// Which downstreams' polls fail now, for the verbose answer.
    pub failures: Arc<PollFailures>,
}

/// Equal when the standings and the grace period are: `failures` is read
/// live, the same for every snapshot, and changes no snapshot.
impl PartialEq for Readiness {
    fn eq(&self, other: &Self) -> bool {
        self.downstreams == other.downstreams && self.grace == other.grace
    }
}

impl Eq for Readiness {}

impl Readiness {
    /// Judges `names` (configuration order) given which have delivered,
    /// which the budget refuses now, and how long the proxy has been
    /// running.
    #[must_use]
    pub fn assess(
        names: &[String],
        delivered: &BTreeSet<String>,
        refused: &BTreeSet<String>,
        running: Duration,
        grace: Duration,
    ) -> Self {
        let any = names.iter().any(|n| delivered.contains(n));
        let downstreams = names
            .iter()
            .map(|name| {
                let standing = if delivered.contains(name) {
                    Standing::Delivered
                } else if refused.contains(name) {
                    Standing::Refused
                } else if any && running >= grace {
                    Standing::Excused
                } else {
                    Standing::Waiting
                };
                (name.clone(), standing)
            })
            .collect();
        Self { downstreams, grace, failures: Arc::default() }
    }

    /// Ready: at least one downstream delivered, none is waited for and
    /// none is refused. With no downstream at all there is no data, so
    /// never.
    #[must_use]
    pub fn ready(&self) -> bool {
        self.downstreams.iter().any(|(_, s)| *s == Standing::Delivered)
            && self
                .downstreams
                .iter()
                .all(|(_, s)| !matches!(s, Standing::Waiting | Standing::Refused))
    }

    /// The `?verbose` answer, in kube-apiserver's shape: a `[+]` or `[-]`
    /// line per check, then whether the whole check passed. Errors are not
    /// detailed here (the endpoint answers anyone; the log says why a
    /// downstream fails).
    #[must_use]
    pub fn verbose(&self, endpoint: &str) -> String {
        self.verbose_at(endpoint, Instant::now())
    }

    /// [`Readiness::verbose`] as of `now`.
    #[must_use]
    pub fn verbose_at(&self, endpoint: &str, now: Instant) -> String {
        let mut out = String::from("[+]ping ok\n");
        let grace = self.grace.as_secs_f64();
        let nobody = !self.downstreams.iter().any(|(_, s)| *s == Standing::Delivered);
        for (name, standing) in &self.downstreams {
            // Writing to a String cannot fail.
            let _ = match standing {
                Standing::Delivered => {
                    match (self.failures.last(name), self.failures.refusal(name)) {
                        (Some(at), Some(refusal)) => writeln!(
                            out,
                            "[+]downstream/{name} ok (stale: {refusal}; serving its last good documents, last poll {}s ago)",
                            now.saturating_duration_since(at).as_secs()
                        ),
                        (Some(at), None) => writeln!(
                            out,
                            "[+]downstream/{name} ok (stale: last poll failed {}s ago)",
                            now.saturating_duration_since(at).as_secs()
                        ),
                        (None, _) => writeln!(out, "[+]downstream/{name} ok"),
                    }
                }
                Standing::Refused => writeln!(
                    out,
                    "[-]downstream/{name}: {}",
                    self.failures.refusal(name).unwrap_or_else(|| "budget: refused".to_owned())
                ),
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

    fn none() -> BTreeSet<String> {
        BTreeSet::new()
    }

    fn standings(r: &Readiness) -> Vec<Standing> {
        r.downstreams.iter().map(|(_, s)| *s).collect()
    }

    #[test]
    fn nothing_delivered_is_never_ready_however_long_it_runs() {
        for running in [Duration::ZERO, GRACE, GRACE * 100] {
            let r = Readiness::assess(&names(&["kube"]), &delivered(&[]), &none(), running, GRACE);
            assert!(!r.ready(), "{running:?}");
            assert_eq!(standings(&r), [Standing::Waiting]);
        }
    }

    #[test]
    fn every_downstream_delivered_is_ready_at_once() {
        let r = Readiness::assess(
            &names(&["a", "b"]),
            &delivered(&["a", "b"]),
            &none(),
            Duration::ZERO,
            GRACE,
        );
        assert!(r.ready());
    }

    #[test]
    fn one_missing_downstream_is_waited_for_until_the_grace_period_ends() {
        let all = names(&["a", "b"]);
        let before = Readiness::assess(&all, &delivered(&["a"]), &none(), GRACE / 2, GRACE);
        assert!(!before.ready());
        assert_eq!(standings(&before), [Standing::Delivered, Standing::Waiting]);
        let after = Readiness::assess(&all, &delivered(&["a"]), &none(), GRACE, GRACE);
        assert!(after.ready());
        assert_eq!(standings(&after), [Standing::Delivered, Standing::Excused]);
    }

    /// A downstream that delivered and then failed is still `[+]` (its
    /// last good documents are served), and says so.
    #[test]
    fn a_delivered_downstream_that_fails_is_ok_and_stale() {
        let all = names(&["kube", "metrics"]);
        let mut r =
            Readiness::assess(&all, &delivered(&["kube", "metrics"]), &none(), GRACE, GRACE);
        let failures = Arc::new(PollFailures::default());
        r.failures = Arc::clone(&failures);
        let start = Instant::now();
        failures.record("metrics", false, None, start);
        let text = r.verbose_at("readyz", start + Duration::from_millis(7_400));
        assert_eq!(
            text,
            "[+]ping ok\n[+]downstream/kube ok\n\
             [+]downstream/metrics ok (stale: last poll failed 7s ago)\n\
             readyz check passed\n"
        );
        failures.record("metrics", true, None, start + Duration::from_secs(8));
        assert!(r.verbose("readyz").contains("[+]downstream/metrics ok\n"));
    }

    #[test]
    fn no_downstream_configured_is_not_ready() {
        assert!(!Readiness::assess(&[], &delivered(&[]), &none(), GRACE, GRACE).ready());
        assert!(Readiness::default().verbose("readyz").contains("none configured"));
    }

    #[test]
    fn verbose_lists_a_line_per_downstream_as_kube_apiserver_does() {
        let all = names(&["kube", "metrics"]);
        let waiting =
            Readiness::assess(&all, &delivered(&["kube"]), &none(), Duration::ZERO, GRACE);
        assert_eq!(
            waiting.verbose("readyz"),
            "[+]ping ok\n[+]downstream/kube ok\n\
             [-]downstream/metrics failed: no documents yet, waited for up to the 60s grace period\n\
             readyz check failed\n"
        );
        let excused = Readiness::assess(&all, &delivered(&["kube"]), &none(), GRACE, GRACE);
        let text = excused.verbose("readyz");
        assert!(text.contains("[+]downstream/metrics ok: no documents yet"), "{text}");
        assert!(text.ends_with("readyz check passed\n"), "{text}");
        let none =
            Readiness::assess(&all, &delivered(&[]), &none(), GRACE, GRACE).verbose("readyz");
        assert!(none.contains("no downstream has delivered any"), "{none}");
    }

    const REFUSAL: &str = "budget: discovery needs 4471930 bytes, 1253020 left \
                           (raise memoryBudgetBytes or memoryShareBytes)";

    /// A downstream the budget refuses is neither waited for nor excused:
    /// readiness fails, however long the proxy has run, in the budget's
    /// own words.
    #[test]
    fn a_downstream_refused_before_it_delivered_fails_readiness() {
        let all = names(&["kube", "fleet"]);
        let failures = Arc::new(PollFailures::default());
        assert!(failures.record("fleet", false, Some(REFUSAL.to_owned()), Instant::now()));
        let refused: BTreeSet<String> = delivered(&["fleet"]);
        for running in [Duration::ZERO, GRACE * 100] {
            let mut r = Readiness::assess(&all, &delivered(&["kube"]), &refused, running, GRACE);
            r.failures = Arc::clone(&failures);
            assert!(!r.ready(), "{running:?}");
            assert_eq!(standings(&r), [Standing::Delivered, Standing::Refused]);
            let text = r.verbose("readyz");
            assert!(text.contains(&format!("[-]downstream/fleet: {REFUSAL}\n")), "{text}");
            assert!(text.ends_with("readyz check failed\n"), "{text}");
        }
        // Refused again is no change; fitting is.
        assert!(!failures.record("fleet", false, Some(REFUSAL.to_owned()), Instant::now()));
        assert!(failures.record("fleet", true, None, Instant::now()));
    }

    /// One that delivered and is refused later serves its last good
    /// documents: ready, and stale for the budget's reason.
    #[test]
    fn a_delivered_downstream_refused_later_is_stale_and_says_why() {
        let all = names(&["fleet"]);
        let failures = Arc::new(PollFailures::default());
        let start = Instant::now();
        failures.record("fleet", false, Some(REFUSAL.to_owned()), start);
        let mut r =
            Readiness::assess(&all, &delivered(&["fleet"]), &delivered(&["fleet"]), GRACE, GRACE);
        r.failures = Arc::clone(&failures);
        assert!(r.ready());
        assert_eq!(
            r.verbose_at("readyz", start + Duration::from_secs(3)),
            format!(
                "[+]ping ok\n[+]downstream/fleet ok (stale: {REFUSAL}; serving its last good \
                 documents, last poll 3s ago)\nreadyz check passed\n"
            )
        );
    }
}

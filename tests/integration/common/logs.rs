//! Capturing the proxy's log events in a test.
//!
//! [`capture`] installs a subscriber for the current thread only (a guard
//! per test, as linkerd's `trace_init` does), so tests running in parallel
//! never see each other's lines. The proxy's poll loops and snapshot
//! builder run as local tasks on the test's actix system, that is on this
//! thread, so every line they log is captured.

use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

/// One captured event.
#[derive(Debug, Clone)]
pub struct Line {
    /// Its level.
    pub level: Level,
    /// Its message.
    pub message: String,
    /// Its `downstream` field, when it has one.
    pub downstream: Option<String>,
    /// Its `reason` field, when it has one.
    pub reason: Option<String>,
    /// Its `name` field, when it has one.
    pub name: Option<String>,
    /// Every other field, by name, as it would be printed.
    pub fields: std::collections::BTreeMap<String, String>,
}

/// The events captured so far.
#[derive(Debug, Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<Line>>>);

impl Captured {
    /// Lines at `level` about `downstream` whose message starts with `prefix`.
    pub fn count(&self, level: Level, downstream: &str, prefix: &str) -> usize {
        self.lines()
            .iter()
            .filter(|l| {
                l.level == level
                    && l.downstream.as_deref() == Some(downstream)
                    && l.message.starts_with(prefix)
            })
            .count()
    }

    /// The `reason` fields of the lines at `level` about `downstream`.
    pub fn reasons(&self, level: Level, downstream: &str) -> Vec<String> {
        self.lines()
            .iter()
            .filter(|l| l.level == level && l.downstream.as_deref() == Some(downstream))
            .filter_map(|l| l.reason.clone())
            .collect()
    }

    /// The `name` fields of the lines at `level` about `downstream` whose
    /// message starts with `prefix`.
    pub fn names(&self, level: Level, downstream: &str, prefix: &str) -> Vec<String> {
        self.lines()
            .iter()
            .filter(|l| {
                l.level == level
                    && l.downstream.as_deref() == Some(downstream)
                    && l.message.starts_with(prefix)
            })
            .filter_map(|l| l.name.clone())
            .collect()
    }

    /// Every line about `downstream` at `level`, for failure messages.
    pub fn about(&self, level: Level, downstream: &str) -> Vec<String> {
        self.lines()
            .iter()
            .filter(|l| l.level == level && l.downstream.as_deref() == Some(downstream))
            .map(|l| l.message.clone())
            .collect()
    }

    /// The lines at `level` whose message starts with `prefix`.
    pub fn with_message(&self, level: Level, prefix: &str) -> Vec<Line> {
        self.lines()
            .into_iter()
            .filter(|l| l.level == level && l.message.starts_with(prefix))
            .collect()
    }

    fn lines(&self) -> Vec<Line> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

struct Recorder(Captured);

#[derive(Default)]
struct Fields {
    message: String,
    downstream: Option<String>,
    reason: Option<String>,
    name: Option<String>,
    others: std::collections::BTreeMap<String, String>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "message" => self.message = value.to_owned(),
            "downstream" => self.downstream = Some(value.to_owned()),
            "reason" => self.reason = Some(value.to_owned()),
            "name" => self.name = Some(value.to_owned()),
            other => {
                self.others.insert(other.to_owned(), value.to_owned());
            }
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "message" => self.message = format!("{value:?}"),
            // `%name` arrives as a Display wrapper, printed through Debug.
            "downstream" => self.downstream = Some(format!("{value:?}")),
            "reason" => self.reason = Some(format!("{value:?}")),
            "name" => self.name = Some(format!("{value:?}")),
            other => {
                self.others.insert(other.to_owned(), format!("{value:?}"));
            }
        }
    }
}

impl<S: Subscriber> Layer<S> for Recorder {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let line = Line {
            level: *event.metadata().level(),
            message: fields.message,
            downstream: fields.downstream,
            reason: fields.reason,
            name: fields.name,
            fields: fields.others,
        };
        (self.0).0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(line);
    }
}

/// Captures this thread's log events until the guard is dropped.
pub fn capture() -> (Captured, tracing::subscriber::DefaultGuard) {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::registry().with(Recorder(captured.clone()));
    let guard = tracing::subscriber::set_default(subscriber);
    (captured, guard)
}

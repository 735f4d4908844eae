//! Logs as Kubernetes components write them.
//!
//! `--log-format json` wrote tracing-subscriber's shape (`timestamp`,
//! `level`, `fields.message`, `target`, `spans`); log pipelines built for
//! Kubernetes read component-base's JSON format instead: one object per
//! line, `ts` (Unix seconds), `caller` (`file:line`), `msg`, `v` (the
//! verbosity; absent on errors, whose error goes in `err`), then the
//! key/value pairs. [`KubernetesJson`] writes that, with the fields of the
//! enclosing spans (`downstream` of a poll round) among the pairs.
//! Verbosity works as for Kubernetes components: `-v N` ([`filter_for`]).

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// The filter for `-v N` when `RUST_LOG` is not set: 0–3 the proxy's
/// information and everyone's warnings; 4–5 the proxy's debug lines too
/// (each poll's requests and their results); 6 and more, debug from every
/// library and the proxy's trace.
#[must_use]
pub fn filter_for(verbosity: u8) -> &'static str {
    match verbosity {
        0..=3 => "info,actix_server=warn",
        4..=5 => "info,actix_server=warn,openapi_proxy=debug",
        _ => "debug,openapi_proxy=trace",
    }
}

/// The `v` of a line at `level`, as klog's verbosity: info and warnings
/// are printed at 0, debug at 4, trace at 6. Errors have none.
fn verbosity(level: Level) -> Option<u8> {
    match level {
        Level::ERROR => None,
        Level::WARN | Level::INFO => Some(0),
        Level::DEBUG => Some(4),
        Level::TRACE => Some(6),
    }
}

/// component-base's JSON log format. Span fields must be recorded as JSON
/// (`fmt_fields(JsonFields::new())`) to be merged in.
#[derive(Debug, Clone, Copy, Default)]
pub struct KubernetesJson;

impl<S, N> FormatEvent<S, N> for KubernetesJson
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        let mut fields = Map::new();
        event.record(&mut Fields(&mut fields));
        let mut line = Map::new();
        let ts = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
        line.insert("ts".into(), ts.into());
        if let (Some(file), Some(number)) = (meta.file(), meta.line()) {
            line.insert("caller".into(), format!("{file}:{number}").into());
        }
        line.insert("msg".into(), fields.remove("message").unwrap_or_default());
        match verbosity(*meta.level()) {
            Some(v) => {
                line.insert("v".into(), v.into());
            }
            None => {
                if let Some(err) = fields.remove("error") {
                    line.insert("err".into(), err);
                }
            }
        }
        if *meta.level() == Level::WARN {
            // klog has no warning level; the pair keeps them apart.
            line.insert("severity".into(), "warning".into());
        }
        // The enclosing spans' fields, outermost first; the event's own
        // win over them.
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                let extensions = span.extensions();
                let Some(recorded) = extensions.get::<FormattedFields<N>>() else { continue };
                if let Ok(Value::Object(pairs)) = serde_json::from_str::<Value>(recorded) {
                    for (k, v) in pairs {
                        line.entry(k).or_insert(v);
                    }
                }
            }
        }
        for (k, v) in fields {
            line.insert(k, v);
        }
        let text = serde_json::to_string(&line).map_err(|_| fmt::Error)?;
        writeln!(writer, "{text}")
    }
}

/// An event's fields as JSON values.
struct Fields<'a>(&'a mut Map<String, Value>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.0.insert(field.name().into(), value.to_string().into());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().into(), format!("{value:?}").into());
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// Captures what the subscriber writes.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().map_err(|_| std::io::Error::other("poisoned"))?.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn lines(f: impl FnOnce()) -> Vec<Value> {
        let out = Captured::default();
        let sink = out.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new("trace"))
            .fmt_fields(tracing_subscriber::fmt::format::JsonFields::new())
            .event_format(KubernetesJson)
            .with_writer(move || sink.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, f);
        let bytes = out.0.lock().expect("captured").clone();
        String::from_utf8(bytes)
            .expect("UTF-8")
            .lines()
            .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
            .collect()
    }

    #[test]
    fn lines_have_component_base_s_shape() {
        let got = lines(|| {
            let span = tracing::info_span!("round", downstream = "kube");
            let _entered = span.enter();
            tracing::info!(addr = "127.0.0.1:8080", workers = 2, "listening");
            tracing::debug!("a request");
            tracing::warn!(reason = "connect", "poll failed");
            tracing::error!(error = "refused", "cannot start");
        });
        assert_eq!(got.len(), 4, "{got:#?}");
        let info = &got[0];
        assert!(info["ts"].as_f64().is_some_and(|t| t > 1.6e9), "{info}");
        assert!(info["caller"].as_str().is_some_and(|c| c.contains("logs.rs:")), "{info}");
        assert_eq!(info["msg"], "listening");
        assert_eq!(info["v"], 0);
        assert_eq!(info["addr"], "127.0.0.1:8080");
        assert_eq!(info["workers"], 2);
        assert_eq!(info["downstream"], "kube", "span fields are pairs too");
        assert_eq!(got[1]["v"], 4);
        assert_eq!(got[2]["v"], 0);
        assert_eq!(got[2]["severity"], "warning");
        let error = &got[3];
        assert!(error.get("v").is_none(), "{error}");
        assert_eq!(error["err"], "refused");
        // The key order of the format: ts, caller, msg first.
        let keys: Vec<&String> = info.as_object().expect("object").keys().collect();
        assert_eq!(&keys[..3], ["ts", "caller", "msg"]);
    }

    #[test]
    fn verbosity_widens_the_filter() {
        assert!(!filter_for(0).contains("debug"));
        assert!(filter_for(4).contains("openapi_proxy=debug"));
        assert!(filter_for(9).contains("trace"));
    }
}

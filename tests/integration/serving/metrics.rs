//! `/metrics` of the real binary, read as Prometheus reads it: the text
//! exposition format 0.0.4, line by line. Every sample line is
//! `name{labels} value`, every family has one `# HELP` and one `# TYPE`
//! before its samples, which are contiguous, and every histogram series
//! has cumulative buckets ending in `+Inf` equal to its `_count`. A
//! request made before the scrape shows in the request histogram with its
//! route and code.

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::http::StatusCode;
use serde_json::Value;

use crate::common::proxy::{WIDGETS, request, widgets_site};

/// The binary, serving on a port of its choice, killed when dropped.
struct Binary {
    child: Child,
    base: String,
}

impl Binary {
    async fn start(downstream: &str) -> Self {
        let child = Command::new(env!("CARGO_BIN_EXE_openapi-proxy"))
            .args(["--log-format", "json", "serve", "--listen", "127.0.0.1:0"])
            .args(["--poll-interval", "200ms", "--downstream", &format!("widgets={downstream}")])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary starts");
        // Killed on drop from here on, whatever fails below.
        let mut binary = Self { child, base: String::new() };
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let stderr = binary.child.stderr.take().expect("stderr");
        let sink = Arc::clone(&lines);
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                sink.lock().expect("log lines").push(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let addr = lines
                .lock()
                .expect("log lines")
                .iter()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .find_map(|l| l["addr"].as_str().map(|a| format!("http://{a}")));
            if let Some(base) = addr {
                binary.base = base;
                return binary;
            }
            assert!(Instant::now() < deadline, "the binary did not listen: {lines:#?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn get(&self, path: &str) -> crate::common::proxy::Response {
        request("GET", &format!("{}{path}", self.base), &[]).await
    }
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Label names and values, in the order written.
type Labels = Vec<(String, String)>;

/// One sample line.
#[derive(Debug)]
struct Sample {
    /// The family's name with the suffix (`_bucket`, `_sum`, `_count`).
    name: String,
    labels: Labels,
    value: f64,
}

impl Sample {
    fn label(&self, name: &str) -> Option<&str> {
        self.labels.iter().find(|(l, _)| l == name).map(|(_, v)| v.as_str())
    }
}

/// One metric family as the exposition declares it.
#[derive(Debug, Default)]
struct Family {
    kind: String,
    help: bool,
    samples: Vec<Sample>,
}

/// The families of an exposition, or the first line that Prometheus'
/// text parser (format 0.0.4) would reject or misread.
fn parse(text: &str) -> Result<BTreeMap<String, Family>, String> {
    let mut families: BTreeMap<String, Family> = BTreeMap::new();
    let mut finished: BTreeSet<String> = BTreeSet::new();
    let mut current: Option<String> = None;
    if !text.ends_with('\n') {
        return Err("the exposition does not end with a newline".into());
    }
    for (n, line) in text.lines().enumerate() {
        let at = |why: &str| format!("line {}: {why}: {line:?}", n + 1);
        if line.is_empty() {
            return Err(at("an empty line"));
        }
        if let Some(comment) = line.strip_prefix('#') {
            let mut words = comment.trim_start().splitn(3, ' ');
            let (keyword, name, rest) = (words.next(), words.next(), words.next());
            let (Some(keyword @ ("HELP" | "TYPE")), Some(name)) = (keyword, name) else {
                continue; // any other comment
            };
            if !is_metric_name(name) {
                return Err(at("not a metric name"));
            }
            if current.as_deref() != Some(name) {
                if let Some(done) = current.replace(name.to_owned()) {
                    finished.insert(done);
                }
                if finished.contains(name) {
                    return Err(at("a family declared in two places"));
                }
            }
            let family = families.entry(name.to_owned()).or_default();
            if !family.samples.is_empty() {
                return Err(at("HELP or TYPE after the family's samples"));
            }
            if keyword == "HELP" {
                if family.help || rest.is_none_or(str::is_empty) {
                    return Err(at("a second or empty HELP"));
                }
                family.help = true;
            } else {
                let kind = rest.unwrap_or("");
                if !family.kind.is_empty()
                    || !["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind)
                {
                    return Err(at("a second TYPE, or an unknown type"));
                }
                family.kind = kind.to_owned();
            }
            continue;
        }
        let sample = sample(line).map_err(|why| at(&why))?;
        let Some(family_name) = current.clone() else {
            return Err(at("a sample before any TYPE"));
        };
        let family = families.get_mut(&family_name).ok_or_else(|| at("no family"))?;
        let suffixes: &[&str] = match family.kind.as_str() {
            "histogram" => &["_bucket", "_sum", "_count"],
            "summary" => &["", "_sum", "_count"],
            _ => &[""],
        };
        if !suffixes.iter().any(|s| sample.name == format!("{family_name}{s}")) {
            return Err(at(&format!("not a sample of {family_name} ({})", family.kind)));
        }
        family.samples.push(sample);
    }
    for (name, family) in &families {
        if !family.help || family.kind.is_empty() {
            return Err(format!("{name}: HELP {} TYPE {:?}", family.help, family.kind));
        }
        if family.kind == "histogram" {
            histogram(name, family)?;
        }
    }
    Ok(families)
}

/// `name{label="value",…} value`, with the format's escapes in values.
fn sample(line: &str) -> Result<Sample, String> {
    let name_end = line.find(['{', ' ']).ok_or("no value")?;
    let name = &line[..name_end];
    if !is_metric_name(name) {
        return Err("not a metric name".into());
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(mut inner) = rest.strip_prefix('{') {
        loop {
            if let Some(after) = inner.strip_prefix('}') {
                rest = after;
                break;
            }
            let (label, after) = inner.split_once("=\"").ok_or("a label without =\"")?;
            if !is_label_name(label) || labels.iter().any(|(l, _)| l == label) {
                return Err(format!("bad or repeated label name {label:?}"));
            }
            let mut value = String::new();
            let mut chars = after.char_indices();
            let end = loop {
                match chars.next() {
                    Some((i, '"')) => break i,
                    Some((_, '\\')) => match chars.next() {
                        Some((_, '\\')) => value.push('\\'),
                        Some((_, '"')) => value.push('"'),
                        Some((_, 'n')) => value.push('\n'),
                        other => return Err(format!("a bad escape {other:?}")),
                    },
                    Some((_, c)) => value.push(c),
                    None => return Err("an unterminated label value".into()),
                }
            };
            labels.push((label.to_owned(), value));
            inner = &after[end + 1..];
            inner = inner.strip_prefix(',').unwrap_or(inner);
        }
    }
    let value = rest.strip_prefix(' ').ok_or("no space before the value")?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        "NaN" => f64::NAN,
        v => v.parse().map_err(|_| format!("not a number: {v:?}"))?,
    };
    Ok(Sample { name: name.to_owned(), labels, value })
}

/// Each series of a histogram: buckets in increasing `le`, counts never
/// decreasing, the last `+Inf` and equal to `_count`, and a `_sum`.
fn histogram(name: &str, family: &Family) -> Result<(), String> {
    /// One series: its buckets `(le, count)`, `_count`, and whether it has a `_sum`.
    #[derive(Default)]
    struct Series {
        buckets: Vec<(f64, f64)>,
        count: Option<f64>,
        sum: bool,
    }
    let mut series: BTreeMap<Labels, Series> = BTreeMap::new();
    for sample in &family.samples {
        let without_le: Labels = sample.labels.iter().filter(|(l, _)| l != "le").cloned().collect();
        let entry = series.entry(without_le).or_default();
        if sample.name.ends_with("_bucket") {
            let le = sample.label("le").ok_or(format!("{name}: no le"))?;
            let bound = if le == "+Inf" { f64::INFINITY } else { le.parse().unwrap_or(f64::NAN) };
            entry.buckets.push((bound, sample.value));
        } else if sample.name.ends_with("_count") {
            entry.count = Some(sample.value);
        } else {
            entry.sum = true;
        }
    }
    for (labels, Series { buckets, count, sum }) in series {
        let increasing = buckets.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1);
        let inf = buckets.last().filter(|(b, _)| b.is_infinite()).map(|(_, c)| *c);
        if !increasing || inf.is_none() || inf != count || !sum {
            return Err(format!("{name}{labels:?}: buckets {buckets:?}, count {count:?}"));
        }
    }
    Ok(())
}

fn is_metric_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn is_label_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The check above is not vacuous: what Prometheus would reject, it
/// rejects.
#[test]
fn the_exposition_check_rejects_malformed_text() {
    let good = "# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"q\\\"\"} 1\n";
    assert!(parse(good).is_ok(), "{:?}", parse(good));
    for bad in [
        "a_total 1\n",                                                     // no TYPE
        "# TYPE a_total counter\na_total 1\n",                             // no HELP
        "# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"q} 1\n",   // unterminated
        "# HELP a_total A.\n# TYPE a_total counter\na_total one\n",        // not a number
        "# HELP a_total A.\n# TYPE a_total counter\na_total{1x=\"\"} 1\n", // label name
        "# HELP a_total A.\n# TYPE a_total counter\nb_total 1\n",          // other family
        "# HELP a_total A.\n# TYPE a_total counter\na_total 1",            // no newline
        "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
        "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",
    ] {
        assert!(parse(bad).is_err(), "accepted: {bad:?}");
    }
}

#[actix_web::test]
async fn the_binary_serves_a_valid_exposition_with_every_family() {
    let ds = widgets_site();
    let proxy = Binary::start(&ds.url()).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let path = format!("/openapi/v3/{WIDGETS}");
    while proxy.get(&path).await.status != StatusCode::OK {
        assert!(Instant::now() < deadline, "the widgets document was never served");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let served = proxy.get("/metrics").await;
    assert_eq!(served.status, StatusCode::OK);
    assert!(
        served.header("content-type").starts_with("text/plain; version=0.0.4"),
        "{:?}",
        served.headers
    );
    let text = String::from_utf8(served.body.to_vec()).expect("UTF-8");
    let families = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));

    for (name, kind) in [
        ("openapi_proxy_build_info", "gauge"),
        ("openapi_proxy_http_request_duration_seconds", "histogram"),
        ("openapi_proxy_rebuild_duration_seconds", "histogram"),
        ("openapi_proxy_downstream_up", "gauge"),
        ("openapi_proxy_downstream_fetches_total", "counter"),
        ("openapi_proxy_snapshot_generation", "gauge"),
        ("process_cpu_seconds_total", "counter"),
        ("process_resident_memory_bytes", "gauge"),
        ("process_open_fds", "gauge"),
        ("process_max_fds", "gauge"),
        ("process_start_time_seconds", "gauge"),
    ] {
        assert_eq!(families.get(name).map(|f| f.kind.as_str()), Some(kind), "{name}\n{text}");
    }

    // The document requests above, timed under their route and code.
    let documents = |suffix: &str| {
        families["openapi_proxy_http_request_duration_seconds"]
            .samples
            .iter()
            .filter(|s| {
                s.name.ends_with(suffix)
                    && s.label("route") == Some("openapi_v3_document")
                    && s.label("code") == Some("200")
            })
            .map(|s| s.value)
            .collect::<Vec<f64>>()
    };
    assert!(documents("_count").first().is_some_and(|n| *n >= 1.0), "{text}");
    let buckets = documents("_bucket").len();
    assert!(buckets > 10, "too few request buckets ({buckets}):\n{text}");

    let started = families["process_start_time_seconds"].samples[0].value;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs_f64();
    assert!((now - 120.0..=now + 1.0).contains(&started), "started at {started}, now {now}");
}

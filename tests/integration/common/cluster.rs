//! A fake Kubernetes API server, for tests that need a real client (kubectl)
//! to do real work — list, create, apply, delete, watch, follow logs, exec —
//! against something that answers like kube-apiserver.
//!
//! Why by hand, on raw tokio TCP, and not on actix like the other fakes
//! ([`openapi_proxy::demo::start_site`]): the point of this fake is
//! the parts of HTTP that a framework hides and that the front door in
//! front of it must carry — responses streamed chunk by chunk for as long
//! as the client stays (watch, `logs -f`), and a connection upgraded to
//! WebSocket (exec, Kubernetes' `v5.channel.k8s.io` / `v4.channel.k8s.io`
//! remotecommand protocol). Written here, every byte on the wire is ours to
//! see and to change.
//!
//! The server runs on its own thread with its own current-thread tokio
//! runtime, so it works from any test (`#[actix_web::test]` or plain), and
//! stops when the [`Cluster`] is dropped. It records every request it gets
//! ([`Cluster::seen`]) before doing anything else with it.
//!
//! What it serves: `/version`, legacy and aggregated (`apidiscovery.k8s.io/v2`)
//! discovery, `/openapi/v3` as an empty index (`/openapi/v2` is a 404, so
//! kubectl must be run with `--validate=false`), and an in-memory store of
//! pods and configmaps (the core group, `/api/v1`) and widgets
//! (`example.com/v1`), with list, get, create, server-side apply, merge
//! patches, replace, delete, watch, pod logs (plain and followed) and exec.
//! Discovery and OpenAPI need no token; every other request must carry
//! `Authorization: Bearer <token>` or gets kube's 401 Status. A
//! `SelfSubjectReview` created with the token gets a 201. Mind that
//! kubectl sends `--token` only to an `https://` server (client-go drops all
//! user credentials over plain HTTP), so kubectl straight at [`Cluster::url`]
//! is always unauthenticated; `tests/integration/harness/fake_cluster.rs` puts TLS in
//! front. Serving only widgets, there is no core group: aggregated `/api`
//! lists no items and legacy `/api` and `/api/v1` are 404s.
//!
//! Lists and watches answer a server-side `meta.k8s.io/v1` `Table` when the
//! `Accept` header asks for one (as `kubectl get` does), so kubectl prints
//! kube's columns — and a proxy that dropped `Accept` would show. A watch
//! first sends one `ADDED` per existing object; given a `resourceVersion`
//! (as `kubectl get --watch` gives the one of its list), only objects newer
//! than it, as kube-apiserver does. `sendInitialEvents=true` ends the
//! initial events with the `k8s.io/initial-events-end` bookmark.
//!
//! A request the server cannot parse gets a 400 and the connection closes;
//! nothing read off the network is unwrapped. Set `FAKE_CLUSTER_TRACE=1` to
//! print every request head on standard error.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use serde_json::{Value, json};
use sha1::Digest as _;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{broadcast, oneshot};

/// Which APIs the fake serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Serves {
    /// The core group `/api/v1`: pods (with `log` and `exec`) and configmaps.
    Core,
    /// `example.com/v1`: namespaced `widgets` (kind `Widget`).
    Widgets,
    /// Both.
    Both,
}

impl Serves {
    fn core(self) -> bool {
        matches!(self, Self::Core | Self::Both)
    }

    fn widgets(self) -> bool {
        matches!(self, Self::Widgets | Self::Both)
    }
}

/// One request as the fake received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// The request method.
    pub method: String,
    /// The request target: path with query, as sent.
    pub path: String,
    /// The `Authorization` header's value, if any.
    pub authorization: Option<String>,
}

/// A running fake API server; stops its thread and listener when dropped.
pub struct Cluster {
    addr: SocketAddr,
    state: Arc<State>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Cluster {
    /// Starts a fake on a free port of 127.0.0.1.
    ///
    /// `token`: the bearer token every resource request must carry (else a
    /// 401 Status, reason `Unauthorized`). `serves`: which API to serve —
    /// the core group starts with one pod `demo`, `example.com/v1` with one
    /// widget `w1`, both in namespace `default`.
    ///
    /// # Panics
    /// When no port can be bound or the thread cannot start.
    pub fn start(token: &str, serves: Serves) -> Cluster {
        let listener =
            std::net::TcpListener::bind(("127.0.0.1", 0)).expect("fake cluster binds a port");
        listener.set_nonblocking(true).expect("non-blocking listener");
        let addr = listener.local_addr().expect("bound address");
        let state = Arc::new(State::new(token, serves, addr));
        let (stop, stopped) = oneshot::channel::<()>();
        let shared = Arc::clone(&state);
        let thread = std::thread::Builder::new()
            .name("fake-cluster".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("fake cluster runtime");
                runtime.block_on(async move {
                    let listener = TcpListener::from_std(listener).expect("tokio listener");
                    tokio::select! {
                        _ = stopped => {}
                        () = accept_loop(listener, shared) => {}
                    }
                });
                // Dropping the runtime drops every connection task: open
                // watches, followed logs and exec sessions end here.
            })
            .expect("fake cluster thread");
        Cluster { addr, state, stop: Some(stop), thread: Some(thread) }
    }

    /// `http://127.0.0.1:PORT`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request received so far, in order.
    #[must_use]
    pub fn seen(&self) -> Vec<Seen> {
        lock(&self.state.seen).clone()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Locks, ignoring poison (a panicking test must not hide behind another panic).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

// ---------------------------------------------------------------------------
// State: the store, the event feed, what was seen

/// The resources the fake knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Pods,
    ConfigMaps,
    Widgets,
}

impl Kind {
    const ALL: [Kind; 3] = [Kind::Pods, Kind::ConfigMaps, Kind::Widgets];

    fn plural(self) -> &'static str {
        match self {
            Kind::Pods => "pods",
            Kind::ConfigMaps => "configmaps",
            Kind::Widgets => "widgets",
        }
    }

    fn singular(self) -> &'static str {
        match self {
            Kind::Pods => "pod",
            Kind::ConfigMaps => "configmap",
            Kind::Widgets => "widget",
        }
    }

    fn kind(self) -> &'static str {
        match self {
            Kind::Pods => "Pod",
            Kind::ConfigMaps => "ConfigMap",
            Kind::Widgets => "Widget",
        }
    }

    fn group(self) -> &'static str {
        match self {
            Kind::Pods | Kind::ConfigMaps => "",
            Kind::Widgets => "example.com",
        }
    }

    fn api_version(self) -> &'static str {
        match self {
            Kind::Pods | Kind::ConfigMaps => "v1",
            Kind::Widgets => "example.com/v1",
        }
    }

    fn short_names(self) -> &'static [&'static str] {
        match self {
            Kind::Pods => &["po"],
            Kind::ConfigMaps => &["cm"],
            Kind::Widgets => &[],
        }
    }

    /// Subresources: name, kind, verbs.
    fn subresources(self) -> &'static [(&'static str, &'static str, &'static [&'static str])] {
        match self {
            Kind::Pods => {
                &[("log", "Pod", &["get"]), ("exec", "PodExecOptions", &["create", "get"])]
            }
            Kind::ConfigMaps | Kind::Widgets => &[],
        }
    }

    fn served(self, serves: Serves) -> bool {
        if self.group().is_empty() { serves.core() } else { serves.widgets() }
    }
}

const VERBS: [&str; 8] =
    ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

#[derive(Debug, Clone)]
struct Event {
    kind: Kind,
    kind_type: &'static str,
    object: Value,
}

#[derive(Default)]
struct Store {
    version: u64,
    uids: u64,
    /// (resource, namespace, name) → object.
    objects: BTreeMap<(Kind, String, String), Value>,
}

struct State {
    token: String,
    serves: Serves,
    addr: SocketAddr,
    trace: bool,
    seen: Mutex<Vec<Seen>>,
    store: Mutex<Store>,
    events: broadcast::Sender<Event>,
}

impl State {
    fn new(token: &str, serves: Serves, addr: SocketAddr) -> State {
        let (events, _) = broadcast::channel(1024);
        let state = State {
            token: token.to_owned(),
            serves,
            addr,
            trace: std::env::var_os("FAKE_CLUSTER_TRACE").is_some(),
            seen: Mutex::new(Vec::new()),
            store: Mutex::new(Store::default()),
            events,
        };
        {
            let mut store = lock(&state.store);
            if serves.core() {
                let pod = json!({
                    "apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": "demo", "labels": {"app": "demo"}},
                    "spec": {"containers": [{"name": "main", "image": "busybox"}]},
                    "status": {"phase": "Running"},
                });
                state.insert(&mut store, Kind::Pods, "default", "demo", pod);
            }
            if serves.widgets() {
                let widget = json!({
                    "apiVersion": "example.com/v1", "kind": "Widget",
                    "metadata": {"name": "w1"},
                    "spec": {"size": 1},
                });
                state.insert(&mut store, Kind::Widgets, "default", "w1", widget);
            }
        }
        state
    }

    /// Stores a new object, filling in its system metadata, and announces it.
    fn insert(
        &self,
        store: &mut Store,
        kind: Kind,
        ns: &str,
        name: &str,
        mut object: Value,
    ) -> Value {
        store.version += 1;
        store.uids += 1;
        let uid = format!("00000000-0000-4000-8000-{:012x}", store.uids);
        set_identity(&mut object, kind, ns, name);
        if kind == Kind::Pods && object.get("status").is_none() {
            object["status"] = json!({"phase": "Pending"});
        }
        let meta = &mut object["metadata"];
        meta["uid"] = Value::String(uid);
        meta["resourceVersion"] = Value::String(store.version.to_string());
        meta["creationTimestamp"] = Value::String(rfc3339_now());
        store.objects.insert((kind, ns.to_owned(), name.to_owned()), object.clone());
        let _ = self.events.send(Event { kind, kind_type: "ADDED", object: object.clone() });
        object
    }

    /// Replaces a stored object's content, keeping its system metadata.
    fn update(
        &self,
        store: &mut Store,
        kind: Kind,
        ns: &str,
        name: &str,
        mut object: Value,
    ) -> Value {
        let key = (kind, ns.to_owned(), name.to_owned());
        let old_meta = store.objects.get(&key).map(|o| o["metadata"].clone()).unwrap_or_default();
        store.version += 1;
        set_identity(&mut object, kind, ns, name);
        let meta = &mut object["metadata"];
        for field in ["uid", "creationTimestamp"] {
            meta[field] = old_meta[field].clone();
        }
        meta["resourceVersion"] = Value::String(store.version.to_string());
        store.objects.insert(key, object.clone());
        let _ = self.events.send(Event { kind, kind_type: "MODIFIED", object: object.clone() });
        object
    }

    fn remove(&self, store: &mut Store, kind: Kind, ns: &str, name: &str) -> Option<Value> {
        let object = store.objects.remove(&(kind, ns.to_owned(), name.to_owned()))?;
        store.version += 1;
        let mut gone = object.clone();
        gone["metadata"]["resourceVersion"] = Value::String(store.version.to_string());
        let _ = self.events.send(Event { kind, kind_type: "DELETED", object: gone });
        Some(object)
    }
}

/// Sets `apiVersion`, `kind`, `metadata.name` and `metadata.namespace`.
fn set_identity(object: &mut Value, kind: Kind, ns: &str, name: &str) {
    if !object.is_object() {
        *object = json!({});
    }
    object["apiVersion"] = Value::String(kind.api_version().into());
    object["kind"] = Value::String(kind.kind().into());
    if !object["metadata"].is_object() {
        object["metadata"] = json!({});
    }
    object["metadata"]["name"] = Value::String(name.into());
    object["metadata"]["namespace"] = Value::String(ns.into());
}

/// Now as RFC 3339 UTC, seconds precision (civil date from days since the
/// epoch, the proleptic Gregorian calendar).
fn rfc3339_now() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let z = i64::try_from(days).unwrap_or(0) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

// ---------------------------------------------------------------------------
// HTTP/1.1 by hand

/// Largest request head or body accepted.
const MAX_REQUEST: usize = 16 << 20;

struct Request {
    method: String,
    /// Path with query, as sent.
    target: String,
    path: String,
    query: Vec<(String, String)>,
    /// Lower-cased names.
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    close: bool,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// Every value of a header, split at commas.
    fn header_list(&self, name: &str) -> Vec<String> {
        self.headers
            .iter()
            .filter(|(n, _)| n == name)
            .flat_map(|(_, v)| v.split(',').map(|s| s.trim().to_owned()))
            .filter(|s| !s.is_empty())
            .collect()
    }

    fn param(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    fn flag(&self, name: &str) -> bool {
        matches!(self.param(name), Some("true" | "1"))
    }
}

async fn accept_loop(listener: TcpListener, state: Arc<State>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(connection(stream, Arc::clone(&state)));
    }
}

/// Why a request could not be read.
enum ReadError {
    /// The connection ended (cleanly between requests, or mid-request).
    Closed,
    /// Not HTTP/1.1 we accept: answer 400 and close.
    Bad(String),
}

async fn connection(mut stream: TcpStream, state: Arc<State>) {
    let mut buf = Vec::new();
    loop {
        let request = match read_request(&mut stream, &mut buf).await {
            Ok(r) => r,
            Err(ReadError::Closed) => return,
            Err(ReadError::Bad(why)) => {
                let answer = Answer::status(400, "BadRequest", &why, None);
                let _ = write_answer(&mut stream, &answer, true).await;
                return;
            }
        };
        lock(&state.seen).push(Seen {
            method: request.method.clone(),
            path: request.target.clone(),
            authorization: request.header("authorization").map(str::to_owned),
        });
        if state.trace {
            eprintln!("fake-cluster: {} {} {:?}", request.method, request.target, request.headers);
        }
        match route(&state, &request) {
            Reply::Full(answer) => {
                if write_answer(&mut stream, &answer, request.close).await.is_err() || request.close
                {
                    return;
                }
            }
            Reply::Watch(watch) => {
                // A watch that ran out its `timeoutSeconds` ended its
                // chunked body cleanly: the connection stays usable.
                match serve_watch(stream, &mut buf, &state, watch).await {
                    Some(kept) if !request.close => stream = kept,
                    _ => return,
                }
            }
            Reply::FollowLogs => return follow_logs(stream).await,
            Reply::Exec { protocol, accept, output } => {
                return exec(stream, buf, &protocol, &accept, output).await;
            }
        }
    }
}

async fn read_more(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Result<(), ReadError> {
    if buf.len() > MAX_REQUEST {
        return Err(ReadError::Bad("request too large".into()));
    }
    let mut chunk = [0u8; 16 * 1024];
    match stream.read(&mut chunk).await {
        Ok(0) | Err(_) => Err(ReadError::Closed),
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            Ok(())
        }
    }
}

/// Reads one request off `stream`; `buf` keeps what was read past it.
async fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Result<Request, ReadError> {
    let (head_len, mut request, body_framing) = loop {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut parsed = httparse::Request::new(&mut headers);
        match parsed.parse(buf) {
            Ok(httparse::Status::Complete(n)) => {
                let method = parsed.method.unwrap_or_default().to_owned();
                let target = parsed.path.unwrap_or_default().to_owned();
                let version = parsed.version.unwrap_or(1);
                let headers: Vec<(String, String)> = parsed
                    .headers
                    .iter()
                    .map(|h| {
                        (h.name.to_ascii_lowercase(), String::from_utf8_lossy(h.value).into_owned())
                    })
                    .collect();
                let (path, query) = split_target(&target);
                let connection = headers
                    .iter()
                    .filter(|(n, _)| n == "connection")
                    .map(|(_, v)| v.to_ascii_lowercase())
                    .collect::<Vec<_>>()
                    .join(",");
                let close = connection.contains("close")
                    || (version == 0 && !connection.contains("keep-alive"));
                let chunked = headers.iter().any(|(n, v)| {
                    n == "transfer-encoding" && v.to_ascii_lowercase().contains("chunked")
                });
                let length = match headers.iter().find(|(n, _)| n == "content-length") {
                    None => 0,
                    Some((_, v)) => v
                        .trim()
                        .parse::<usize>()
                        .map_err(|_| ReadError::Bad("bad Content-Length".into()))?,
                };
                if length > MAX_REQUEST {
                    return Err(ReadError::Bad("body too large".into()));
                }
                let request =
                    Request { method, target, path, query, headers, body: Vec::new(), close };
                break (n, request, if chunked { None } else { Some(length) });
            }
            Ok(httparse::Status::Partial) => read_more(stream, buf).await?,
            Err(e) => return Err(ReadError::Bad(format!("malformed request: {e}"))),
        }
    };
    match body_framing {
        Some(length) => {
            while buf.len() < head_len + length {
                read_more(stream, buf).await?;
            }
            request.body = buf[head_len..head_len + length].to_vec();
            buf.drain(..head_len + length);
        }
        None => loop {
            match decode_chunked(&buf[head_len..])? {
                Some((body, used)) => {
                    request.body = body;
                    buf.drain(..head_len + used);
                    break;
                }
                None => read_more(stream, buf).await?,
            }
        },
    }
    Ok(request)
}

/// A chunked body: `Some((body, bytes used))` once complete, `None` while
/// more is needed. Trailers are skipped.
fn decode_chunked(data: &[u8]) -> Result<Option<(Vec<u8>, usize)>, ReadError> {
    let mut body = Vec::new();
    let mut at = 0;
    loop {
        let Some(eol) = find_crlf(&data[at..]) else { return Ok(None) };
        let line = std::str::from_utf8(&data[at..at + eol])
            .map_err(|_| ReadError::Bad("bad chunk size".into()))?;
        let size = line.split(';').next().unwrap_or_default().trim();
        let size =
            usize::from_str_radix(size, 16).map_err(|_| ReadError::Bad("bad chunk size".into()))?;
        at += eol + 2;
        if size == 0 {
            // Trailers, up to an empty line.
            loop {
                let Some(eol) = find_crlf(&data[at..]) else { return Ok(None) };
                at += eol + 2;
                if eol == 0 {
                    return Ok(Some((body, at)));
                }
            }
        }
        if size > MAX_REQUEST.saturating_sub(body.len()) {
            return Err(ReadError::Bad("body too large".into()));
        }
        if data.len() < at + size + 2 {
            return Ok(None);
        }
        body.extend_from_slice(&data[at..at + size]);
        if &data[at + size..at + size + 2] != b"\r\n" {
            return Err(ReadError::Bad("chunk not followed by CRLF".into()));
        }
        at += size + 2;
    }
}

fn find_crlf(data: &[u8]) -> Option<usize> {
    data.windows(2).position(|w| w == b"\r\n")
}

/// Path and decoded query pairs (`+` is a space, as Go's `url.Values` writes it).
fn split_target(target: &str) -> (String, Vec<(String, String)>) {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(&s.replace('+', " ")).decode_utf8_lossy().into_owned()
    };
    let pairs = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect();
    (path.to_owned(), pairs)
}

/// A complete response.
struct Answer {
    status: u16,
    content_type: &'static str,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn json(status: u16, body: &Value) -> Answer {
        Answer {
            status,
            content_type: "application/json",
            headers: Vec::new(),
            body: serde_json::to_vec(body).unwrap_or_default(),
        }
    }

    /// A `Status` of failure, as kube-apiserver writes it.
    fn status(code: u16, reason: &str, message: &str, details: Option<(&str, Kind)>) -> Answer {
        let mut status = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": message, "reason": reason,
        });
        if let Some((name, kind)) = details {
            let mut d = json!({"name": name, "kind": kind.plural()});
            if !kind.group().is_empty() {
                d["group"] = Value::String(kind.group().into());
            }
            status["details"] = d;
        }
        status["code"] = json!(code);
        Answer::json(code, &status)
    }

    fn not_found(name: &str, kind: Kind) -> Answer {
        let what = qualified(kind);
        Answer::status(404, "NotFound", &format!("{what} \"{name}\" not found"), Some((name, kind)))
    }

    fn path_not_found() -> Answer {
        Answer::status(404, "NotFound", "the server could not find the requested resource", None)
    }
}

/// `pods`, `widgets.example.com`: how kube names a resource in messages.
fn qualified(kind: Kind) -> String {
    if kind.group().is_empty() {
        kind.plural().to_owned()
    } else {
        format!("{}.{}", kind.plural(), kind.group())
    }
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        101 => "Switching Protocols",
        200 => "OK",
        201 => "Created",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Entity",
        _ => "Unknown",
    }
}

async fn write_answer(stream: &mut TcpStream, answer: &Answer, close: bool) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-cache, private\r\n",
        answer.status,
        reason_phrase(answer.status),
        answer.content_type,
        answer.body.len()
    );
    for (name, value) in &answer.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if close {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    out.extend_from_slice(&answer.body);
    stream.write_all(&out).await
}

async fn write_chunk(stream: &mut TcpStream, data: &[u8]) -> std::io::Result<()> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    stream.write_all(&out).await
}

async fn write_stream_head(stream: &mut TcpStream, content_type: &str) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\nCache-Control: no-cache, private\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await
}

// ---------------------------------------------------------------------------
// Routing

enum Reply {
    Full(Answer),
    Watch(Watch),
    FollowLogs,
    Exec { protocol: String, accept: String, output: Option<String> },
}

struct Watch {
    kind: Kind,
    namespace: Option<String>,
    name: Option<String>,
    /// Only objects newer than this are sent as initial events.
    since: Option<u64>,
    bookmark: bool,
    timeout: Option<Duration>,
    /// Objects as one-row `Table`s (kubectl get's `Accept`).
    table: bool,
}

fn route(state: &State, req: &Request) -> Reply {
    if let Some(answer) = metadata(state, req) {
        return Reply::Full(answer);
    }
    let expected = format!("Bearer {}", state.token);
    if req.header("authorization") != Some(expected.as_str()) {
        return Reply::Full(Answer::status(401, "Unauthorized", "Unauthorized", None));
    }
    if req.method == "POST" && req.path == "/apis/authentication.k8s.io/v1/selfsubjectreviews" {
        return Reply::Full(self_subject_review());
    }
    resources(state, req).unwrap_or_else(|| Reply::Full(Answer::path_not_found()))
}

/// The 201 of a `SelfSubjectReview`, for a request whose token was good
/// (authentication comes first, as in kube-apiserver).
fn self_subject_review() -> Answer {
    Answer::json(
        201,
        &json!({
            "kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"creationTimestamp": null},
            "status": {"userInfo": {"username": "fake-user", "groups": ["system:authenticated"]}},
        }),
    )
}

/// Whether `Accept` asks for aggregated discovery v2.
fn wants_aggregated(req: &Request) -> bool {
    req.header_list("accept").iter().any(|range| {
        let params: Vec<String> = range.split(';').map(|p| p.trim().replace(' ', "")).collect();
        params.iter().any(|p| p == "as=APIGroupDiscoveryList")
            && params.iter().any(|p| p == "v=v2")
            && params.iter().any(|p| p == "g=apidiscovery.k8s.io")
    })
}

/// Discovery, `/version` and OpenAPI: no token needed.
fn metadata(state: &State, req: &Request) -> Option<Answer> {
    let core = state.serves.core();
    let widgets = state.serves.widgets();
    let path = req.path.trim_end_matches('/');
    let answer = match path {
        "/version" => Answer::json(
            200,
            &json!({
                "major": "1", "minor": "32", "gitVersion": "v1.32.0",
                "gitCommit": "fake-cluster", "gitTreeState": "clean",
                "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.23",
                "compiler": "gc", "platform": "linux/amd64",
            }),
        ),
        "/api" | "/apis" if wants_aggregated(req) => {
            let kinds: Vec<Kind> = Kind::ALL
                .into_iter()
                .filter(|k| k.served(state.serves) && k.group().is_empty() == (path == "/api"))
                .collect();
            let mut items = Vec::new();
            if !kinds.is_empty() {
                let group = kinds[0].group();
                let metadata = if group.is_empty() { json!({}) } else { json!({"name": group}) };
                let resources: Vec<Value> = kinds.iter().map(|k| aggregated_resource(*k)).collect();
                items.push(json!({
                    "metadata": metadata,
                    "versions": [{"version": "v1", "resources": resources, "freshness": "Current"}],
                }));
            }
            let mut answer = Answer::json(
                200,
                &json!({
                    "kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
                    "metadata": {}, "items": items,
                }),
            );
            answer.content_type =
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
            answer.headers.push(("Vary", "Accept".into()));
            answer
        }
        "/api" if core => {
            let mut answer = Answer::json(
                200,
                &json!({
                    "kind": "APIVersions", "versions": ["v1"],
                    "serverAddressByClientCIDRs": [
                        {"clientCIDR": "0.0.0.0/0", "serverAddress": state.addr.to_string()}
                    ],
                }),
            );
            answer.headers.push(("Vary", "Accept".into()));
            answer
        }
        "/apis" => {
            let groups: Vec<Value> = if widgets { vec![example_group()] } else { Vec::new() };
            let mut answer = Answer::json(
                200,
                &json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}),
            );
            answer.headers.push(("Vary", "Accept".into()));
            answer
        }
        "/apis/example.com" if widgets => {
            let mut group = example_group();
            group["kind"] = json!("APIGroup");
            group["apiVersion"] = json!("v1");
            Answer::json(200, &group)
        }
        "/api/v1" if core => resource_list("v1", &[Kind::Pods, Kind::ConfigMaps]),
        "/apis/example.com/v1" if widgets => resource_list("example.com/v1", &[Kind::Widgets]),
        "/openapi/v3" => Answer::json(200, &json!({"paths": {}})),
        "/api" | "/api/v1" | "/apis/example.com" | "/apis/example.com/v1" | "/openapi/v2" => {
            Answer::path_not_found()
        }
        p if p.starts_with("/openapi/") => Answer::path_not_found(),
        _ => return None,
    };
    Some(answer)
}

fn example_group() -> Value {
    let version = json!({"groupVersion": "example.com/v1", "version": "v1"});
    json!({"name": "example.com", "versions": [version.clone()], "preferredVersion": version})
}

fn resource_list(group_version: &str, kinds: &[Kind]) -> Answer {
    let mut resources = Vec::new();
    for kind in kinds {
        let mut r = json!({
            "name": kind.plural(), "singularName": kind.singular(), "namespaced": true,
            "kind": kind.kind(), "verbs": VERBS,
        });
        if !kind.short_names().is_empty() {
            r["shortNames"] = json!(kind.short_names());
        }
        if *kind == Kind::Pods {
            r["categories"] = json!(["all"]);
        }
        resources.push(r);
        for (sub, sub_kind, verbs) in kind.subresources() {
            resources.push(json!({
                "name": format!("{}/{sub}", kind.plural()), "singularName": "",
                "namespaced": true, "kind": sub_kind, "verbs": verbs,
            }));
        }
    }
    Answer::json(
        200,
        &json!({
            "kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": group_version, "resources": resources,
        }),
    )
}

fn aggregated_resource(kind: Kind) -> Value {
    let gvk = |k: &str| json!({"group": kind.group(), "version": "v1", "kind": k});
    let mut r = json!({
        "resource": kind.plural(), "responseKind": gvk(kind.kind()), "scope": "Namespaced",
        "singularResource": kind.singular(), "verbs": VERBS,
    });
    if !kind.short_names().is_empty() {
        r["shortNames"] = json!(kind.short_names());
    }
    if kind == Kind::Pods {
        r["categories"] = json!(["all"]);
    }
    let subs: Vec<Value> = kind
        .subresources()
        .iter()
        .map(|(sub, sub_kind, verbs)| {
            json!({"subresource": sub, "responseKind": gvk(sub_kind), "verbs": verbs})
        })
        .collect();
    if !subs.is_empty() {
        r["subresources"] = Value::Array(subs);
    }
    r
}

/// Resource requests, `None` for an unknown path.
fn resources(state: &State, req: &Request) -> Option<Reply> {
    let (rest, group) = if let Some(rest) = req.path.strip_prefix("/api/v1/") {
        if !state.serves.core() {
            return None;
        }
        (rest, "")
    } else if let Some(rest) = req.path.strip_prefix("/apis/example.com/v1/") {
        if !state.serves.widgets() {
            return None;
        }
        (rest, "example.com")
    } else {
        return None;
    };
    let mut segments: Vec<&str> = rest.trim_end_matches('/').split('/').collect();
    let old_watch = segments.first() == Some(&"watch");
    if old_watch {
        segments.remove(0);
    }
    let (namespace, segments) = match segments.as_slice() {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => {
            (Some((*ns).to_owned()), rest.to_vec())
        }
        rest => (None, rest.to_vec()),
    };
    let kind_of =
        |plural: &str| Kind::ALL.into_iter().find(|k| k.plural() == plural && k.group() == group);
    let method = req.method.as_str();
    match segments.as_slice() {
        [plural] => {
            let kind = kind_of(plural)?;
            if old_watch || (method == "GET" && req.flag("watch")) {
                return Some(Reply::Watch(watch_of(req, kind, namespace)));
            }
            Some(Reply::Full(match (method, namespace) {
                ("GET", ns) => list(state, req, kind, ns.as_deref()),
                ("POST", Some(ns)) => create(state, req, kind, &ns),
                _ => Answer::status(
                    405,
                    "MethodNotAllowed",
                    "the server does not allow this method on the requested resource",
                    None,
                ),
            }))
        }
        [plural, name] if !old_watch => {
            let kind = kind_of(plural)?;
            let ns = namespace?;
            Some(Reply::Full(item(state, req, kind, &ns, name)))
        }
        [plural, name, sub] if !old_watch => {
            let kind = kind_of(plural)?;
            let ns = namespace?;
            if kind != Kind::Pods {
                return None;
            }
            let exists =
                lock(&state.store).objects.contains_key(&(kind, ns.clone(), (*name).to_owned()));
            match *sub {
                "log" if method == "GET" => Some(if !exists {
                    Reply::Full(Answer::not_found(name, kind))
                } else if req.flag("follow") {
                    Reply::FollowLogs
                } else {
                    Reply::Full(Answer {
                        status: 200,
                        content_type: "text/plain",
                        headers: Vec::new(),
                        body: b"line 1\nline 2\nline 3\n".to_vec(),
                    })
                }),
                "exec" if method == "GET" || method == "POST" => Some(if exists {
                    exec_reply(req)
                } else {
                    Reply::Full(Answer::not_found(name, kind))
                }),
                _ => None,
            }
        }
        _ => None,
    }
}

fn watch_of(req: &Request, kind: Kind, namespace: Option<String>) -> Watch {
    let name = name_selector(req);
    let initial = req.param("sendInitialEvents") == Some("true");
    let since = match req.param("resourceVersion") {
        _ if initial => None,
        None | Some("" | "0") => None,
        Some(v) => v.parse().ok(),
    };
    Watch {
        kind,
        namespace,
        name,
        since,
        bookmark: initial && req.flag("allowWatchBookmarks"),
        timeout: req.param("timeoutSeconds").and_then(|s| s.parse().ok()).map(Duration::from_secs),
        table: wants_table(req),
    }
}

fn name_selector(req: &Request) -> Option<String> {
    req.param("fieldSelector").and_then(|s| {
        s.split(',').find_map(|term| {
            let term = term.trim();
            term.strip_prefix("metadata.name==")
                .or_else(|| term.strip_prefix("metadata.name="))
                .map(str::to_owned)
        })
    })
}

fn list(state: &State, req: &Request, kind: Kind, ns: Option<&str>) -> Answer {
    let name = name_selector(req);
    let store = lock(&state.store);
    let items: Vec<Value> = store
        .objects
        .iter()
        .filter(|((k, n, o), _)| {
            *k == kind
                && ns.is_none_or(|ns| ns == n)
                && name.as_deref().is_none_or(|name| name == o)
        })
        .map(|(_, v)| v.clone())
        .collect();
    if wants_table(req) {
        let mut answer = Answer::json(200, &table(kind, &items, &store.version.to_string()));
        answer.content_type = TABLE_CONTENT_TYPE;
        return answer;
    }
    Answer::json(
        200,
        &json!({
            "kind": format!("{}List", kind.kind()), "apiVersion": kind.api_version(),
            "metadata": {"resourceVersion": store.version.to_string()},
            "items": items,
        }),
    )
}

const TABLE_CONTENT_TYPE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

/// Whether `Accept` asks for a server-side `Table` (as `kubectl get` does).
fn wants_table(req: &Request) -> bool {
    req.header_list("accept").iter().any(|range| {
        let params: Vec<String> = range.split(';').map(|p| p.trim().replace(' ', "")).collect();
        params.iter().any(|p| p == "as=Table")
            && params.iter().any(|p| p == "g=meta.k8s.io")
            && params.iter().any(|p| p == "v=v1")
    })
}

/// `objects` as a `meta.k8s.io/v1` `Table`, with kubectl's usual columns.
fn table(kind: Kind, objects: &[Value], resource_version: &str) -> Value {
    let column = |name: &str, format: &str| json!({"name": name, "type": "string", "format": format, "description": name, "priority": 0});
    let columns: Vec<Value> = match kind {
        Kind::Pods => vec![
            column("Name", "name"),
            column("Ready", ""),
            column("Status", ""),
            column("Restarts", ""),
            column("Age", ""),
        ],
        Kind::ConfigMaps => vec![column("Name", "name"), column("Data", ""), column("Age", "")],
        Kind::Widgets => vec![column("Name", "name"), column("Age", "")],
    };
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let name = o["metadata"]["name"].clone();
            let age = Value::String(age(o["metadata"]["creationTimestamp"].as_str().unwrap_or("")));
            let cells = match kind {
                Kind::Pods => {
                    let total = o["spec"]["containers"].as_array().map_or(0, Vec::len);
                    let phase = o["status"]["phase"].as_str().unwrap_or("Pending");
                    let ready = if phase == "Running" { total } else { 0 };
                    json!([name, format!("{ready}/{total}"), phase, 0, age])
                }
                Kind::ConfigMaps => {
                    json!([name, o["data"].as_object().map_or(0, serde_json::Map::len), age])
                }
                Kind::Widgets => json!([name, age]),
            };
            json!({
                "cells": cells,
                "object": {
                    "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                    "metadata": o["metadata"].clone(),
                },
            })
        })
        .collect();
    json!({
        "kind": "Table", "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": columns, "rows": rows,
    })
}

/// How long ago an RFC 3339 timestamp was, as kubectl prints ages.
fn age(timestamp: &str) -> String {
    use time::format_description::well_known::Rfc3339;
    let Ok(then) = time::OffsetDateTime::parse(timestamp, &Rfc3339) else {
        return "<unknown>".into();
    };
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let secs = u64::try_from(then.unix_timestamp()).map_or(0, |t| now.saturating_sub(t));
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 600 => format!("{}m{}s", s / 60, s % 60),
        s if s < 3 * 3600 => format!("{}m", s / 60),
        s if s < 48 * 3600 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

/// A request body: JSON, or YAML (server-side apply may send either).
fn parse_body(req: &Request) -> Result<Value, Answer> {
    let bad = |why: String| Answer::status(400, "BadRequest", &why, None);
    let value: Value = match serde_json::from_slice(&req.body) {
        Ok(v) => v,
        Err(json_error) => serde_yaml_ng::from_slice(&req.body).map_err(|yaml_error| {
            bad(format!("body is neither JSON ({json_error}) nor YAML ({yaml_error})"))
        })?,
    };
    if value.is_object() { Ok(value) } else { Err(bad("the body is not an object".into())) }
}

/// The body's namespace, if it names one different from the path's.
fn namespace_mismatch(body: &Value, ns: &str) -> Option<Answer> {
    let theirs = body["metadata"]["namespace"].as_str()?;
    (theirs != ns).then(|| {
        Answer::status(
            400,
            "BadRequest",
            "the namespace of the provided object does not match the namespace sent on the request",
            None,
        )
    })
}

fn create(state: &State, req: &Request, kind: Kind, ns: &str) -> Answer {
    let mut body = match parse_body(req) {
        Ok(b) => b,
        Err(answer) => return answer,
    };
    if let Some(answer) = namespace_mismatch(&body, ns) {
        return answer;
    }
    let mut store = lock(&state.store);
    let name = match (body["metadata"]["name"].as_str(), body["metadata"]["generateName"].as_str())
    {
        (Some(name), _) if !name.is_empty() => name.to_owned(),
        (_, Some(prefix)) => format!("{prefix}{:05x}", store.uids + 1),
        _ => {
            return Answer::status(
                422,
                "Invalid",
                &format!(
                    "{} \"\" is invalid: metadata.name: Required value: name or generateName is required",
                    kind.kind()
                ),
                None,
            );
        }
    };
    if store.objects.contains_key(&(kind, ns.to_owned(), name.clone())) {
        let what = qualified(kind);
        return Answer::status(
            409,
            "AlreadyExists",
            &format!("{what} \"{name}\" already exists"),
            Some((&name, kind)),
        );
    }
    if let Some(meta) = body["metadata"].as_object_mut() {
        meta.remove("generateName");
    }
    let object = state.insert(&mut store, kind, ns, &name, body);
    Answer::json(201, &object)
}

fn item(state: &State, req: &Request, kind: Kind, ns: &str, name: &str) -> Answer {
    let key = (kind, ns.to_owned(), name.to_owned());
    match req.method.as_str() {
        "GET" => match lock(&state.store).objects.get(&key) {
            Some(object) => Answer::json(200, object),
            None => Answer::not_found(name, kind),
        },
        "DELETE" => match state.remove(&mut lock(&state.store), kind, ns, name) {
            Some(object) => Answer::json(200, &object),
            None => Answer::not_found(name, kind),
        },
        "PUT" => {
            let body = match parse_body(req) {
                Ok(b) => b,
                Err(answer) => return answer,
            };
            if let Some(answer) = namespace_mismatch(&body, ns) {
                return answer;
            }
            let mut store = lock(&state.store);
            if !store.objects.contains_key(&key) {
                return Answer::not_found(name, kind);
            }
            Answer::json(200, &state.update(&mut store, kind, ns, name, body))
        }
        "PATCH" => patch(state, req, kind, ns, name),
        _ => Answer::status(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
            None,
        ),
    }
}

fn patch(state: &State, req: &Request, kind: Kind, ns: &str, name: &str) -> Answer {
    let content_type = req.header("content-type").unwrap_or_default();
    let media = content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    let body = match parse_body(req) {
        Ok(b) => b,
        Err(answer) => return answer,
    };
    if let Some(answer) = namespace_mismatch(&body, ns) {
        return answer;
    }
    let key = (kind, ns.to_owned(), name.to_owned());
    let mut store = lock(&state.store);
    match media.as_str() {
        // Server-side apply: the applied configuration becomes the object.
        "application/apply-patch+yaml" => {
            if store.objects.contains_key(&key) {
                Answer::json(200, &state.update(&mut store, kind, ns, name, body))
            } else {
                Answer::json(201, &state.insert(&mut store, kind, ns, name, body))
            }
        }
        // JSON merge patch (RFC 7386); strategic merge treated the same
        // (lists replaced, not merged by key).
        "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
            let Some(mut object) = store.objects.get(&key).cloned() else {
                return Answer::not_found(name, kind);
            };
            merge(&mut object, &body);
            Answer::json(200, &state.update(&mut store, kind, ns, name, object))
        }
        _ => Answer::status(
            415,
            "UnsupportedMediaType",
            &format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml; got {content_type:?}"
            ),
            None,
        ),
    }
}

/// RFC 7386 JSON merge patch.
fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    if let Value::Object(target) = target {
        for (key, value) in patch {
            if value.is_null() {
                target.remove(key);
            } else {
                merge(target.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Streams: watch and followed logs

fn event_line(kind_type: &str, object: &Value) -> Vec<u8> {
    let mut line =
        serde_json::to_vec(&json!({"type": kind_type, "object": object})).unwrap_or_default();
    line.push(b'\n');
    line
}

/// Streams watch events until the client goes away (`None`) or
/// `timeoutSeconds` passes (`Some`: the response is complete and the
/// connection can carry the next request; bytes read meanwhile are in `buf`).
async fn serve_watch(
    mut stream: TcpStream,
    buf: &mut Vec<u8>,
    state: &State,
    watch: Watch,
) -> Option<TcpStream> {
    let matches = |kind: Kind, object: &Value| {
        kind == watch.kind
            && watch.namespace.as_deref().is_none_or(|ns| object["metadata"]["namespace"] == ns)
            && watch.name.as_deref().is_none_or(|name| object["metadata"]["name"] == name)
    };
    // Subscribe and snapshot under the store's lock: no event falls between.
    let (mut events, initial, version) = {
        let store = lock(&state.store);
        let events = state.events.subscribe();
        let initial: Vec<Value> = store
            .objects
            .iter()
            .filter(|((k, _, _), o)| matches(*k, o))
            .filter(|(_, o)| {
                let rv =
                    o["metadata"]["resourceVersion"].as_str().and_then(|v| v.parse::<u64>().ok());
                watch.since.is_none_or(|since| rv.is_some_and(|rv| rv > since))
            })
            .map(|(_, o)| o.clone())
            .collect();
        (events, initial, store.version)
    };
    if write_stream_head(&mut stream, "application/json").await.is_err() {
        return None;
    }
    for object in &initial {
        let object = if watch.table {
            table(watch.kind, std::slice::from_ref(object), "")
        } else {
            object.clone()
        };
        if write_chunk(&mut stream, &event_line("ADDED", &object)).await.is_err() {
            return None;
        }
    }
    if watch.bookmark {
        let bookmark = json!({
            "kind": watch.kind.kind(), "apiVersion": watch.kind.api_version(),
            "metadata": {
                "resourceVersion": version.to_string(),
                "annotations": {"k8s.io/initial-events-end": "true"},
            },
        });
        if write_chunk(&mut stream, &event_line("BOOKMARK", &bookmark)).await.is_err() {
            return None;
        }
    }
    let deadline = watch.timeout.map(|t| tokio::time::Instant::now() + t);
    let (mut reader, mut writer) = stream.split();
    let mut scratch = [0u8; 1024];
    loop {
        let timeout = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            event = events.recv() => match event {
                Ok(e) if matches(e.kind, &e.object) => {
                    let object = if watch.table { table(e.kind, std::slice::from_ref(&e.object), "") } else { e.object };
                    if write_chunk_to(&mut writer, &event_line(e.kind_type, &object)).await.is_err() {
                        return None;
                    }
                }
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return None,
            },
            read = reader.read(&mut scratch) => match read {
                Ok(0) | Err(_) => return None,
                Ok(n) => buf.extend_from_slice(&scratch[..n]),
            },
            () = timeout => {
                writer.write_all(b"0\r\n\r\n").await.ok()?;
                break;
            }
        }
    }
    Some(stream)
}

async fn write_chunk_to<W: AsyncWriteExt + Unpin>(
    writer: &mut W,
    data: &[u8],
) -> std::io::Result<()> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    writer.write_all(&out).await
}

async fn follow_logs(mut stream: TcpStream) {
    if write_stream_head(&mut stream, "text/plain").await.is_err()
        || write_chunk(&mut stream, b"line 1\nline 2\nline 3\n").await.is_err()
    {
        return;
    }
    let (mut reader, mut writer) = stream.split();
    let lines = async {
        for n in 4u64.. {
            tokio::time::sleep(Duration::from_millis(200)).await;
            if write_chunk_to(&mut writer, format!("line {n}\n").as_bytes()).await.is_err() {
                return;
            }
        }
    };
    let mut scratch = [0u8; 1024];
    let gone = async {
        loop {
            match reader.read(&mut scratch).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::select! {
        () = lines => {}
        () = gone => {}
    }
}

// ---------------------------------------------------------------------------
// Exec over WebSocket (Kubernetes remotecommand, v4/v5.channel.k8s.io)

const WEBSOCKET_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
const SUBPROTOCOLS: [&str; 2] = ["v5.channel.k8s.io", "v4.channel.k8s.io"];

fn exec_reply(req: &Request) -> Reply {
    let lower = |name: &str| {
        req.header_list(name).iter().map(|v| v.to_ascii_lowercase()).collect::<Vec<_>>()
    };
    let upgrade = lower("connection").iter().any(|v| v == "upgrade")
        && lower("upgrade").iter().any(|v| v == "websocket");
    let key = req.header("sec-websocket-key").map(str::trim).filter(|k| !k.is_empty());
    let (true, Some(key)) = (upgrade, key) else {
        return Reply::Full(Answer::status(
            400,
            "BadRequest",
            "Upgrade request required (this fake speaks only WebSocket, not SPDY)",
            None,
        ));
    };
    let offered = req.header_list("sec-websocket-protocol");
    let Some(protocol) = offered.iter().find(|p| SUBPROTOCOLS.contains(&p.as_str())) else {
        return Reply::Full(Answer::status(
            400,
            "BadRequest",
            &format!(
                "no supported subprotocol among {offered:?}; this fake speaks {SUBPROTOCOLS:?}"
            ),
            None,
        ));
    };
    let mut sha = sha1::Sha1::new();
    sha.update(key.as_bytes());
    sha.update(WEBSOCKET_GUID.as_bytes());
    let accept = base64::engine::general_purpose::STANDARD.encode(sha.finalize());
    let command: Vec<&str> =
        req.query.iter().filter(|(k, _)| k == "command").map(|(_, v)| v.as_str()).collect();
    let output = req.flag("stdout").then(|| format!("exec: {}\n", command.join(" ")));
    Reply::Exec { protocol: protocol.clone(), accept, output }
}

/// One unmasked server frame.
fn frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![0x80 | opcode];
    match payload.len() {
        n if n < 126 => out.push(u8::try_from(n).unwrap_or(0)),
        n if n <= usize::from(u16::MAX) => {
            out.push(126);
            out.extend_from_slice(&u16::try_from(n).unwrap_or(0).to_be_bytes());
        }
        n => {
            out.push(127);
            out.extend_from_slice(&u64::try_from(n).unwrap_or(u64::MAX).to_be_bytes());
        }
    }
    out.extend_from_slice(payload);
    out
}

/// A binary message on remotecommand stream `stream`.
fn channel_message(stream: u8, data: &[u8]) -> Vec<u8> {
    let mut payload = vec![stream];
    payload.extend_from_slice(data);
    frame(0x2, &payload)
}

/// Reads one client frame (masked): `Some((opcode, unmasked payload))`,
/// `None` at EOF or on a malformed frame.
async fn read_frame(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<(u8, Vec<u8>)> {
    loop {
        if buf.len() >= 2 {
            let opcode = buf[0] & 0x0f;
            let masked = buf[1] & 0x80 != 0;
            let (len, mut at) = match buf[1] & 0x7f {
                126 if buf.len() >= 4 => (u64::from(u16::from_be_bytes([buf[2], buf[3]])), 4),
                127 if buf.len() >= 10 => {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(&buf[2..10]);
                    (u64::from_be_bytes(b), 10)
                }
                126 | 127 => (u64::MAX, 0),
                n => (u64::from(n), 2),
            };
            if len != u64::MAX {
                let len = usize::try_from(len).ok().filter(|l| *l <= MAX_REQUEST)?;
                let mask_len = if masked { 4 } else { 0 };
                if buf.len() >= at + mask_len + len {
                    let mask: Vec<u8> = buf[at..at + mask_len].to_vec();
                    at += mask_len;
                    let payload: Vec<u8> = buf[at..at + len]
                        .iter()
                        .enumerate()
                        .map(|(i, b)| if masked { b ^ mask[i % 4] } else { *b })
                        .collect();
                    buf.drain(..at + len);
                    return Some((opcode, payload));
                }
            }
        }
        let mut chunk = [0u8; 4096];
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

async fn exec(
    mut stream: TcpStream,
    mut buf: Vec<u8>,
    protocol: &str,
    accept: &str,
    output: Option<String>,
) {
    let head = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {accept}\r\nSec-WebSocket-Protocol: {protocol}\r\n\r\n"
    );
    if stream.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    // A real exec takes a round trip to the kubelet before the first
    // output; the client sets up its streams meanwhile. Mimic that moment,
    // reading (and ignoring) what the client sends. kubectl 1.32 also
    // passed without it (5 runs of 5, directly and through TLS): the pause
    // is a cushion for slower paths, not a known requirement.
    let settle = tokio::time::sleep(Duration::from_millis(100));
    tokio::pin!(settle);
    loop {
        tokio::select! {
            () = &mut settle => break,
            frame = read_frame(&mut stream, &mut buf) => match frame {
                Some((0x8, _)) | None => return,
                Some(_) => {}
            },
        }
    }
    let mut out = Vec::new();
    if let Some(text) = output {
        out.extend(channel_message(1, text.as_bytes()));
    }
    out.extend(channel_message(3, br#"{"metadata":{},"status":"Success"}"#));
    out.extend(frame(0x8, &1000u16.to_be_bytes()));
    if stream.write_all(&out).await.is_err() {
        return;
    }
    // Wait (briefly) for the client's close, then hang up.
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        while let Some((opcode, _)) = read_frame(&mut stream, &mut buf).await {
            if opcode == 0x8 {
                break;
            }
        }
    })
    .await;
    let _ = stream.shutdown().await;
}

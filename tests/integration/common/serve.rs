//! `openapi-proxy serve` run as a process with `--log-format json`, its
//! log read as it is written: for the tests that must see what the real
//! binary logs (tokens that must never appear, a plugin's stderr).

use std::io::Read;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::common::proxy::eventually;

/// The running binary; killed when dropped.
pub struct Served {
    child: std::process::Child,
    logs: Arc<Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Served {
    /// The process id (for its memory, `common::memory`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Starts `serve --config config` with `RUST_LOG=rust_log`.
    pub fn start(config: &Path, rust_log: &str) -> Self {
        Self::start_with(&["serve".as_ref(), "--config".as_ref(), config.as_os_str()], rust_log)
    }

    /// Starts the binary with `--log-format json` and `args`, with
    /// `RUST_LOG=rust_log` and none of a pod's service variables.
    pub fn start_with(args: &[&std::ffi::OsStr], rust_log: &str) -> Self {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_openapi-proxy"))
            .args(["--log-format", "json"])
            .args(args)
            .env("RUST_LOG", rust_log)
            .env_remove("KUBERNETES_SERVICE_HOST")
            .env_remove("KUBERNETES_SERVICE_PORT")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("the binary starts");
        let mut stderr = child.stderr.take().expect("stderr is piped");
        let logs = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&logs);
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(k) = stderr.read(&mut buf) {
                if k == 0 {
                    break;
                }
                sink.lock().expect("log buffer").push_str(&String::from_utf8_lossy(&buf[..k]));
            }
        });
        Self { child, logs, reader: Some(reader) }
    }

    /// Everything logged so far.
    pub fn text(&self) -> String {
        self.logs.lock().expect("log buffer").clone()
    }

    /// Every log line so far that is a JSON object.
    pub fn lines(&self) -> Vec<serde_json::Value> {
        self.text().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
    }

    /// `http://ADDR`, once the binary has logged where it listens.
    pub async fn base(&self) -> String {
        let mut listening = None;
        eventually("the binary logs its address", || {
            listening = self
                .lines()
                .iter()
                .find(|v| v["msg"] == "listening")
                .and_then(|v| v["addr"].as_str().map(str::to_owned));
            listening.is_some()
        })
        .await;
        format!("http://{}", listening.expect("address"))
    }

    /// Stops the binary and returns everything it logged, to the end.
    pub fn stop(mut self) -> String {
        self.kill();
        if let Some(reader) = self.reader.take() {
            reader.join().expect("log reader");
        }
        self.text()
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.kill();
    }
}

//! Running a plugin once: the child process, its bounds, and what becomes
//! of its output.
//!
//! The child gets the proxy's environment plus the stanza's `env` and
//! `KUBERNETES_EXEC_INFO`; stdin is `/dev/null` (the proxy has no
//! terminal, and a plugin that waits for input must fail, not hang).
//! stdout and stderr are read side by side, so a plugin that fills one
//! pipe never blocks on it while the other is read. Past
//! [`ExecLimits::timeout`] the run is abandoned and the child killed
//! (`kill_on_drop`): a plugin stuck on a network call or a prompt costs one
//! failed poll, not the downstream.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};

use super::answer::{self, Answer, AnswerError};
use super::{ExecLimits, ExecPlugin};

/// Why a run gave no token.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The command does not exist.
    #[error("command not found{}", .install_hint.as_deref().map(|h| format!("; {h}")).unwrap_or_default())]
    NotFound {
        /// The stanza's `installHint`.
        install_hint: Option<String>,
    },
    /// The command exists but could not be started (not executable…).
    #[error("starting it")]
    Spawn(#[source] std::io::Error),
    /// Reading its output, or waiting for it, failed.
    #[error("reading its output")]
    Output(#[source] std::io::Error),
    /// It did not finish within the deadline; it was killed.
    #[error("it did not finish within {0:?} and was killed")]
    Timeout(Duration),
    /// It printed more than the stdout cap.
    #[error("it wrote more than {0} bytes to stdout")]
    TooLarge(usize),
    /// It failed; what it wrote to stderr is in the log.
    #[error("it exited with {0} (its stderr is logged)")]
    Exit(ExitStatus),
    /// Its answer cannot be used.
    #[error(transparent)]
    Answer(#[from] AnswerError),
}

/// Runs `plugin` once for `downstream` (named in the log lines of its
/// stderr) and reads its answer.
///
/// # Errors
/// [`ExecError`]; the child is killed on every error path that leaves it
/// running.
pub async fn run(
    plugin: &ExecPlugin,
    limits: &ExecLimits,
    downstream: &str,
) -> Result<Answer, ExecError> {
    let mut command = tokio::process::Command::new(&plugin.command);
    command
        .args(&plugin.args)
        .envs(plugin.env.iter().map(|(k, v)| (k, v)))
        .env("KUBERNETES_EXEC_INFO", &plugin.exec_info)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            ExecError::NotFound { install_hint: plugin.install_hint.clone() }
        }
        _ => ExecError::Spawn(e),
    })?;
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let mut errors = Vec::new();
    let finished = tokio::time::timeout(limits.timeout, async {
        let (out, ()) = tokio::try_join!(
            read_capped(stdout, limits.max_stdout),
            keep_head(stderr, limits.max_stderr, &mut errors),
        )?;
        let status = child.wait().await.map_err(ExecError::Output)?;
        Ok::<_, ExecError>((out, status))
    })
    .await;
    // Dropping the child kills it if it still runs (a timeout, a stdout
    // past its cap).
    drop(child);
    let outcome = match finished {
        Err(_) => Err(ExecError::Timeout(limits.timeout)),
        Ok(Err(e)) => Err(e),
        Ok(Ok((_, status))) if !status.success() => Err(ExecError::Exit(status)),
        Ok(Ok((out, _))) => answer::parse(&out, plugin.api_version).map_err(ExecError::from),
    };
    let token = outcome.as_ref().ok().map(|a| a.token.as_str());
    log_stderr(&errors, limits.max_stderr, token, plugin, downstream);
    outcome
}

/// Reads `pipe` whole, refusing more than `max` bytes (without reading
/// the rest).
async fn read_capped(
    pipe: Option<impl AsyncRead + Unpin>,
    max: usize,
) -> Result<Vec<u8>, ExecError> {
    let mut out = Vec::new();
    if let Some(pipe) = pipe {
        let cap = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
        pipe.take(cap).read_to_end(&mut out).await.map_err(ExecError::Output)?;
    }
    if out.len() > max {
        return Err(ExecError::TooLarge(max));
    }
    Ok(out)
}

/// Reads `pipe` to its end, keeping its first `max` bytes (one more, to
/// tell that there was more): a chatty plugin must neither block on a full
/// pipe nor fill the memory.
async fn keep_head(
    pipe: Option<impl AsyncRead + Unpin>,
    max: usize,
    into: &mut Vec<u8>,
) -> Result<(), ExecError> {
    let Some(mut pipe) = pipe else { return Ok(()) };
    let mut buf = [0u8; 8192];
    loop {
        let n = pipe.read(&mut buf).await.map_err(ExecError::Output)?;
        if n == 0 {
            return Ok(());
        }
        let room = max.saturating_add(1).saturating_sub(into.len());
        into.extend_from_slice(&buf[..n.min(room)]);
    }
}

/// Logs what the plugin wrote to stderr, a line per event — at warn: a
/// plugin speaks there when something is wrong (an expired login, a
/// missing tool) — with any occurrence of the token blanked out.
fn log_stderr(
    stderr: &[u8],
    max: usize,
    token: Option<&str>,
    plugin: &ExecPlugin,
    downstream: &str,
) {
    let truncated = stderr.len() > max;
    let text = String::from_utf8_lossy(&stderr[..stderr.len().min(max)]);
    for line in text.lines().map(str::trim_end).filter(|l| !l.is_empty()) {
        let line = match token {
            Some(t) if line.contains(t) => line.replace(t, "***"),
            _ => line.to_owned(),
        };
        tracing::warn!(
            downstream = %downstream,
            user = %plugin.user,
            command = %plugin.shown,
            line = %line,
            "exec credential plugin wrote to stderr"
        );
    }
    if truncated {
        tracing::warn!(
            downstream = %downstream,
            user = %plugin.user,
            command = %plugin.shown,
            bytes = max,
            "exec credential plugin wrote more to stderr; the rest is not logged"
        );
    }
}

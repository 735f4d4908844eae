//! Exec credential plugins: a kubeconfig's `users[].user.exec`, run the
//! way client-go runs them, so the proxy can poll the managed clouds'
//! clusters (GKE's `gke-gcloud-auth-plugin`, `aws eks get-token`,
//! `kubelogin`), whose kubeconfigs hold no token of their own.
//!
//! - [`stanza`] reads the `exec` stanza when the configuration is
//!   validated: `apiVersion` `client.authentication.k8s.io/v1` or
//!   `v1beta1`, `command` (a relative path with a `/` is relative to the
//!   kubeconfig's directory, a bare name is looked up on `PATH`), `args`,
//!   `env`, `installHint`, `provideClusterInfo` and `interactiveMode`.
//!   The proxy has no terminal: `Always` is refused, and the plugin runs
//!   with stdin on `/dev/null` and `spec.interactive: false`.
//! - [`run`] runs the plugin with `KUBERNETES_EXEC_INFO` in its
//!   environment, bounded ([`ExecLimits`]): a deadline after which the
//!   child is killed, a cap on stdout, a cap on the stderr kept; stderr
//!   lines go to the log at warn level, the token blanked out of them.
//! - [`answer`] reads the `ExecCredential` it prints: the same
//!   `apiVersion`, `kind: ExecCredential`, `status.token` and an optional
//!   `status.expirationTimestamp`.
//! - [`cache`] keeps the token until it expires (or, without an expiry,
//!   until a downstream answers 401 to it), so the plugin runs once, not
//!   per request.
//!
//! Client certificates in `status.clientCertificateData`/`clientKeyData`
//! are not used: the TLS client is built once per downstream, before any
//! plugin runs. An answer with certificates and no token is an error
//! saying so; the managed clouds' plugins return tokens.
//!
//! The token is never logged and never part of an error or `Debug`
//! output: its header value is marked sensitive, and [`ExecPlugin`]'s
//! `Debug` shows the names of the variables it sets, not their values.
//!
//! Wire types: client-go's `pkg/apis/clientauthentication/v1` (and
//! `v1beta1`) `ExecCredential`, `ExecCredentialSpec`, `Cluster`,
//! `ExecCredentialStatus`; the stanza is `clientcmd/api/v1` `ExecConfig`.

pub mod answer;
pub mod cache;
pub mod run;
pub mod stanza;

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// The `client.authentication.k8s.io` versions client-go still speaks
/// (`v1alpha1` was removed in Kubernetes 1.24).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiVersion {
    /// `client.authentication.k8s.io/v1`.
    V1,
    /// `client.authentication.k8s.io/v1beta1`.
    V1beta1,
}

impl ApiVersion {
    /// The full `apiVersion` string.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V1 => "client.authentication.k8s.io/v1",
            Self::V1beta1 => "client.authentication.k8s.io/v1beta1",
        }
    }

    /// The version named by `text`, if it is one of ours.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        [Self::V1, Self::V1beta1].into_iter().find(|v| v.as_str() == text)
    }
}

impl fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A validated exec stanza: everything it takes to run the plugin, the
/// `KUBERNETES_EXEC_INFO` it is given included (computed once: nothing in
/// it changes while the proxy runs).
#[derive(Clone, PartialEq, Eq)]
pub struct ExecPlugin {
    /// The kubeconfig user it belongs to, for messages
    /// (`/root/.kube/config users[admin]`).
    user: String,
    /// The command as the kubeconfig spells it, for messages.
    shown: String,
    /// The command as run: resolved against the kubeconfig's directory
    /// when it is a relative path, a bare name otherwise (looked up on
    /// `PATH` when it runs).
    command: PathBuf,
    args: Vec<String>,
    /// Added to the proxy's own environment.
    env: Vec<(String, String)>,
    install_hint: Option<String>,
    api_version: ApiVersion,
    /// The JSON `ExecCredential` request in `KUBERNETES_EXEC_INFO`.
    exec_info: String,
}

impl ExecPlugin {
    /// The kubeconfig user it belongs to (`/root/.kube/config
    /// users[admin]`).
    #[must_use]
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The command as the kubeconfig spells it.
    #[must_use]
    pub fn command(&self) -> &str {
        &self.shown
    }

    /// The command as run.
    #[cfg(test)]
    pub(crate) fn program(&self) -> &std::path::Path {
        &self.command
    }

    /// The `KUBERNETES_EXEC_INFO` the plugin is given.
    #[cfg(test)]
    pub(crate) fn exec_info(&self) -> &str {
        &self.exec_info
    }
}

impl fmt::Debug for ExecPlugin {
    /// Variables may carry secrets (an API key for the plugin): only
    /// their names are shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env: Vec<&str> = self.env.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("ExecPlugin")
            .field("user", &self.user)
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &env)
            .field("api_version", &self.api_version)
            .finish_non_exhaustive()
    }
}

/// How long a plugin may run and how much it may print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecLimits {
    /// The deadline of one run; past it the child is killed.
    pub timeout: Duration,
    /// The largest stdout read; one byte more is an error.
    pub max_stdout: usize,
    /// The stderr kept for the log; the rest is read and dropped.
    pub max_stderr: usize,
}

impl Default for ExecLimits {
    /// A minute covers a browser-less cloud CLI refreshing its own
    /// credentials (`gcloud`, `aws`, `az` take seconds); an
    /// `ExecCredential` is a few KiB, so 1 MiB of stdout is only ever a
    /// plugin printing something else.
    fn default() -> Self {
        Self { timeout: Duration::from_secs(60), max_stdout: 1024 * 1024, max_stderr: 64 * 1024 }
    }
}

#[cfg(test)]
mod tests;

//! The `exec` stanza of a kubeconfig user (client-go's
//! `clientcmd/api/v1.ExecConfig`), validated into an [`ExecPlugin`] when
//! the configuration is loaded, so that a stanza the proxy cannot run
//! stops the start with the field's name instead of failing every poll.
//!
//! Validation follows client-go's: `command` and a known `apiVersion` are
//! required; `interactiveMode` is required with `v1` and defaults to
//! `IfAvailable` with `v1beta1`. Beyond client-go, `Always` is refused
//! here: it needs a terminal, and the proxy never has one (client-go
//! fails the same way, but only when the plugin is about to run).

use std::path::Path;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_yaml_ng::Value;

use super::{ApiVersion, ExecPlugin};
use crate::outbound::credentials::PemSource;

/// Why an `exec` stanza cannot be used. The kubeconfig resolver puts the
/// file and `users[NAME].user.exec.` before [`StanzaError::field`].
#[derive(Debug, thiserror::Error)]
pub enum StanzaError {
    /// The stanza does not have the expected shape.
    #[error("not an exec stanza")]
    Shape(#[source] serde_yaml_ng::Error),
    /// A required field is missing or empty.
    #[error("required")]
    Missing {
        /// The field.
        field: &'static str,
    },
    /// An `apiVersion` other than `v1` and `v1beta1`.
    #[error(
        "{found:?} is not supported; use client.authentication.k8s.io/v1 or client.authentication.k8s.io/v1beta1"
    )]
    ApiVersion {
        /// What the stanza says.
        found: String,
    },
    /// `v1` without `interactiveMode`.
    #[error("required with client.authentication.k8s.io/v1 (Never or IfAvailable)")]
    InteractiveModeMissing,
    /// `interactiveMode: Always`.
    #[error(
        "Always is not supported: it needs a terminal and the proxy never has one; use Never, or IfAvailable with a plugin that can do without input"
    )]
    InteractiveAlways,
    /// An `interactiveMode` client-go does not know either.
    #[error("{found:?} is not one of Never, IfAvailable, Always")]
    InteractiveMode {
        /// What the stanza says.
        found: String,
    },
    /// The cluster's `client.authentication.k8s.io/exec` extension cannot
    /// be put in JSON (a map with keys that are not strings).
    #[error("cannot be passed to the plugin as JSON")]
    ClusterConfig(#[source] serde_json::Error),
    /// `provideClusterInfo` needs the CA, and its file cannot be read.
    #[error("reading {file} for the plugin's cluster information")]
    CaFile {
        /// The CA file.
        file: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl StanzaError {
    /// The field under `exec` the error is about: `""` for the stanza as a
    /// whole; what goes wrong with the cluster's information is reported
    /// at `provideClusterInfo`, which asked for it.
    #[must_use]
    pub fn field(&self) -> &'static str {
        match self {
            Self::Shape(_) => "",
            Self::Missing { field } => field,
            Self::ApiVersion { .. } => "apiVersion",
            Self::InteractiveModeMissing
            | Self::InteractiveAlways
            | Self::InteractiveMode { .. } => "interactiveMode",
            Self::ClusterConfig(_) | Self::CaFile { .. } => "provideClusterInfo",
        }
    }
}

/// The stanza as written.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawStanza {
    command: Option<String>,
    args: Option<Vec<String>>,
    env: Option<Vec<EnvVar>>,
    api_version: Option<String>,
    install_hint: Option<String>,
    #[serde(default)]
    provide_cluster_info: bool,
    interactive_mode: Option<String>,
}

#[derive(Debug, Deserialize)]
struct EnvVar {
    name: String,
    #[serde(default)]
    value: String,
}

/// What the user's cluster says, for `provideClusterInfo` (client-go's
/// `clientauthentication.Cluster`, from the `rest.Config` it builds).
#[derive(Debug, Clone, Copy)]
pub struct ClusterInfo<'a> {
    /// `server`.
    pub server: &'a str,
    /// `insecure-skip-tls-verify`.
    pub insecure_skip_tls_verify: bool,
    /// `certificate-authority(-data)`: passed to the plugin as bytes.
    pub ca: Option<&'a PemSource>,
    /// `disable-compression`.
    pub disable_compression: bool,
    /// The `extension` of `extensions[client.authentication.k8s.io/exec]`.
    pub exec_extension: Option<&'a Value>,
}

/// The reserved extension name for per-cluster plugin configuration.
pub const EXEC_EXTENSION: &str = "client.authentication.k8s.io/exec";

/// The request written to `KUBERNETES_EXEC_INFO`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ExecCredentialRequest<'a> {
    api_version: &'static str,
    kind: &'static str,
    spec: Spec<'a>,
}

#[derive(Serialize)]
struct Spec<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    cluster: Option<Cluster<'a>>,
    interactive: bool,
}

/// client-go's `Cluster`: the kubeconfig's names, `certificate-authority`
/// always as data. `tls-server-name` and `proxy-url` are refused in a
/// kubeconfig the proxy reads, so they are never sent.
#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct Cluster<'a> {
    server: &'a str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    insecure_skip_tls_verify: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    certificate_authority_data: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    disable_compression: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    config: Option<serde_json::Value>,
}

impl ExecPlugin {
    /// Validates the `exec` stanza of `user` (`/path/kubeconfig
    /// users[admin]`) in a kubeconfig kept in `dir`.
    ///
    /// # Errors
    /// [`StanzaError`] naming the field.
    pub fn from_stanza(
        stanza: &Value,
        user: String,
        dir: &Path,
        cluster: ClusterInfo<'_>,
    ) -> Result<Self, StanzaError> {
        let raw: RawStanza =
            serde_yaml_ng::from_value(stanza.clone()).map_err(StanzaError::Shape)?;
        let shown = raw
            .command
            .filter(|c| !c.is_empty())
            .ok_or(StanzaError::Missing { field: "command" })?;
        let version = raw
            .api_version
            .filter(|v| !v.is_empty())
            .ok_or(StanzaError::Missing { field: "apiVersion" })?;
        let api_version = ApiVersion::parse(&version)
            .ok_or_else(|| StanzaError::ApiVersion { found: version.clone() })?;
        match (raw.interactive_mode.as_deref().filter(|m| !m.is_empty()), api_version) {
            (None, ApiVersion::V1) => return Err(StanzaError::InteractiveModeMissing),
            (None, ApiVersion::V1beta1) | (Some("Never" | "IfAvailable"), _) => {}
            (Some("Always"), _) => return Err(StanzaError::InteractiveAlways),
            (Some(other), _) => {
                return Err(StanzaError::InteractiveMode { found: other.to_owned() });
            }
        }
        // client-go resolves the command against the kubeconfig's
        // directory only when it is a path: a bare name is PATH's.
        let as_path = Path::new(&shown);
        let command = if shown.contains('/') && as_path.is_relative() {
            dir.join(as_path)
        } else {
            as_path.to_path_buf()
        };
        let cluster = if raw.provide_cluster_info { Some(cluster_info(cluster)?) } else { None };
        let request = ExecCredentialRequest {
            api_version: api_version.as_str(),
            kind: "ExecCredential",
            spec: Spec { cluster, interactive: false },
        };
        let exec_info = serde_json::to_string(&request).map_err(StanzaError::ClusterConfig)?;
        Ok(Self {
            user,
            shown,
            command,
            args: raw.args.unwrap_or_default(),
            env: raw.env.unwrap_or_default().into_iter().map(|e| (e.name, e.value)).collect(),
            install_hint: raw.install_hint.filter(|h| !h.is_empty()),
            api_version,
            exec_info,
        })
    }
}

fn cluster_info(c: ClusterInfo<'_>) -> Result<Cluster<'_>, StanzaError> {
    let ca =
        match c.ca {
            None => None,
            Some(PemSource::Inline { value, .. }) => Some(value.to_vec()),
            Some(PemSource::File(file)) => Some(std::fs::read(file).map_err(|source| {
                StanzaError::CaFile { file: file.display().to_string(), source }
            })?),
        };
    let config = c
        .exec_extension
        .filter(|v| !v.is_null())
        .map(serde_json::to_value)
        .transpose()
        .map_err(StanzaError::ClusterConfig)?;
    Ok(Cluster {
        server: c.server,
        insecure_skip_tls_verify: c.insecure_skip_tls_verify,
        // Go's encoding/json writes []byte as standard base64.
        certificate_authority_data: ca
            .map(|bytes| base64::engine::general_purpose::STANDARD.encode(bytes)),
        disable_compression: c.disable_compression,
        config,
    })
}

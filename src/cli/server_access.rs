//! How `check` and `export` reach a server given by its URL.

use std::path::PathBuf;

use clap::Args;

/// The credential and TLS flags of a server given by URL.
#[derive(Debug, Clone, Default, Args)]
pub struct ServerAccess {
    /// A file holding a bearer token to send to the server.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// The PEM CA bundle to verify the server with [default: the system's
    /// roots].
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
    /// Do not verify the server's certificate.
    #[arg(long)]
    pub insecure: bool,
}

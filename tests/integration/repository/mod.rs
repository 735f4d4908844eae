//! The repository around the code: its shape and what it ships.

/// deploy/: manifests validated by kubectl through the proxy, the image's and manifests' configurations.
mod deploy;
/// The repository's shape: rooms by layer without import cycles, Markdown names that resolve.
mod layout;

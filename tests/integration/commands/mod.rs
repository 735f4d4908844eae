//! The commands besides `serve`, as a user runs them.

/// `openapi-proxy check`: passes on conformant servers, each rule fails on a server breaking it.
mod check;
/// The `convert` command as a user runs it.
mod convert;

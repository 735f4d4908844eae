//! The commands besides `serve`, as a user runs them.

/// `openapi-proxy check`: passes on conformant servers, each rule fails on a server breaking it.
mod check;
/// The `convert` command as a user runs it.
mod convert;
/// `openapi-proxy export`: each layout from each kind of source, judged by an independent JSON Schema validator.
mod export;

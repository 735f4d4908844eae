//! What can be wrong with a configuration, always naming the field (and
//! the flag, where one sets it).

/// A configuration problem, naming the field.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("reading {path}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid YAML or has unknown or mistyped fields.
    #[error("parsing {path}")]
    Parse {
        /// The file.
        path: String,
        /// Why (serde names the field).
        #[source]
        source: serde_yaml_ng::Error,
    },
    /// A field has an invalid value.
    #[error("{field}: {problem}")]
    Invalid {
        /// The field, e.g. `downstreams[1].url`.
        field: String,
        /// What is wrong with it.
        problem: String,
    },
}

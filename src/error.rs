//! One error type for the crate. Every variant says what was refused and why.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A caller-supplied value is malformed or out of range.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The reference and distorted pictures (or streams) do not match.
    #[error("mismatch: {0}")]
    Mismatch(String),
    /// Something well-formed that vmafx does not handle.
    #[error("not supported: {0}")]
    NotSupported(String),
    /// A model file or built-in model could not be parsed or used.
    #[error("model: {0}")]
    Model(String),
    /// An input file is malformed.
    #[error("{path}: {what}")]
    Input { path: PathBuf, what: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A GPU runtime or compiler is missing, refused a call, or failed a
    /// kernel build (src/device): names the library, symbol or call.
    #[error("device: {0}")]
    Device(String),
    /// A run stopped early by an error (reported before this one): what
    /// became of the frames scored until then (the log marked incomplete).
    #[error("{0}")]
    Incomplete(String),
    /// The run was stopped by a signal (the CLI's SIGINT or SIGTERM).
    #[error("interrupted by {0}")]
    Interrupted(String),
    /// A worker thread failed.
    #[error("internal: {0}")]
    Internal(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn invalid(msg: impl Into<String>) -> Self {
        Error::InvalidArgument(msg.into())
    }
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }
    pub fn input(path: impl Into<PathBuf>, what: impl Into<String>) -> Self {
        Error::Input { path: path.into(), what: what.into() }
    }
}

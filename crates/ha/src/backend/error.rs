//! Errors of backend primitives.

/// Why a primitive failed. Semantic errors (the server answered) are
/// distinguished from connection errors (the answer is unknown).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CoordError {
    /// The node does not exist.
    #[error("no node {0}")]
    NoNode(String),
    /// The node exists already.
    #[error("node {0} exists already")]
    NodeExists(String),
    /// The node is at another version.
    #[error("node {0} is at another version")]
    BadVersion(String),
    /// The node has children.
    #[error("node {0} has children")]
    NotEmpty(String),
    /// The session may not do this (ACL).
    #[error("not authorized to change {0}")]
    NoAuth(String),
    /// An op of a multi failed; nothing was applied.
    #[error("operation {index} of a multi-op failed: {source}")]
    MultiFailed {
        /// Index of the first failing op.
        index: usize,
        /// Why it failed.
        #[source]
        source: Box<CoordError>,
    },
    /// The connection was lost before an answer came: the request may or
    /// may not have been applied.
    #[error("connection lost before the answer came")]
    ConnectionLoss,
    /// The session has expired or was declared lost.
    #[error("session expired")]
    SessionExpired,
    /// The session was closed.
    #[error("session closed")]
    Closed,
    /// No session could be established.
    #[error("could not connect: {0}")]
    ConnectFailed(String),
    /// Anything else the backend reports.
    #[error("{0}")]
    Other(String),
}

impl CoordError {
    /// Whether the server answered (so the outcome is known): every error
    /// but connection loss, session loss and connect failures. An answered
    /// request also proves the session was alive when it was sent.
    pub fn is_answer(&self) -> bool {
        if let CoordError::MultiFailed { source, .. } = self {
            return source.is_answer();
        }
        !matches!(
            self,
            CoordError::ConnectionLoss
                | CoordError::SessionExpired
                | CoordError::Closed
                | CoordError::ConnectFailed(_)
                | CoordError::Other(_)
        )
    }

    /// Whether the error ends the session (a new one is needed).
    pub fn is_session_end(&self) -> bool {
        matches!(self, CoordError::SessionExpired | CoordError::Closed)
    }

    /// The innermost error of a failed multi (the error itself otherwise).
    pub fn root(&self) -> &CoordError {
        match self {
            CoordError::MultiFailed { source, .. } => source.root(),
            other => other,
        }
    }
}

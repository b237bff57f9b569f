//! The one trait set every backend implements: ZooKeeper-shaped primitives
//! on a session.
//!
//! The HA recipes (latch, retrieval, stores) are written once, against these
//! traits; a backend only provides sessions. [`Backend::connect`] makes a new
//! session; a [`Session`] does reads, writes, conditional multi-ops and
//! watches, and reports what happens to its connection as [`RawEvent`]s.
//! [`crate::conformance`] checks that a backend behaves as the recipes need.

mod error;
mod ops;

use std::future::Future;
use std::time::Duration;

pub use error::CoordError;
pub use ops::{CreateMode, NodeEvent, Op, OpResult, Stat};
use tokio::sync::{mpsc, oneshot};

use crate::types::SessionId;

/// What a session's client observed about its connection, raw: the
/// connection layer turns these into [`ConnectionEvent`](crate::connection::ConnectionEvent)s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RawEvent {
    /// The connection is gone; the client is trying to reconnect.
    Disconnected,
    /// Connected again with the same session.
    Reconnected,
    /// Connected to a read-only server.
    ConnectedReadOnly,
    /// The server expired the session.
    Expired,
    /// The server rejected the credentials.
    AuthFailed,
    /// The session was closed.
    Closed,
}

/// A one-shot watch: resolves with the first change of the watched node, or
/// is dropped (the receiver errs) when the session ends.
pub type Watch = oneshot::Receiver<NodeEvent>;

/// What [`Session::get`] returns: the node's data and stat if it exists,
/// and the watch if one was asked for.
pub type ReadResult = (Option<(Vec<u8>, Stat)>, Option<Watch>);

/// Makes sessions.
pub trait Backend: Send + Sync + 'static {
    /// The session type.
    type Session: Session;

    /// Opens a new session. Fails if none can be established within the
    /// backend's connection timeout.
    fn connect(&self) -> impl Future<Output = Result<Self::Session, CoordError>> + Send;

    /// A human-readable description for logs (e.g. the quorum), without
    /// secrets.
    fn describe(&self) -> String;
}

/// One session with the coordination service. Every path is absolute and
/// already includes the deployment's root.
pub trait Session: Send + Sync + 'static {
    /// The session's id.
    fn id(&self) -> SessionId;

    /// The negotiated session timeout `T`.
    fn timeout(&self) -> Duration;

    /// Raw connection events, in order, until the session ends. Can be
    /// taken once; later calls return `None`.
    fn take_events(&self) -> Option<mpsc::UnboundedReceiver<RawEvent>>;

    /// Creates a node; parents are created as container nodes when
    /// `make_parents`. Returns the created path and its stat.
    fn create(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        make_parents: bool,
    ) -> impl Future<Output = Result<(String, Stat), CoordError>> + Send;

    /// Reads a node (`None` if it does not exist), optionally leaving a
    /// watch that fires on its next change, deletion or creation.
    fn get(
        &self,
        path: &str,
        watch: bool,
    ) -> impl Future<Output = Result<ReadResult, CoordError>> + Send;

    /// Lists a node's children (names, not paths).
    fn children(&self, path: &str) -> impl Future<Output = Result<Vec<String>, CoordError>> + Send;

    /// Deletes a node, if `version` is given only at that version.
    fn delete(
        &self,
        path: &str,
        version: Option<i32>,
    ) -> impl Future<Output = Result<(), CoordError>> + Send;

    /// Applies every op or none. On failure, the error names the index of
    /// the first failing op.
    fn multi(&self, ops: Vec<Op>)
    -> impl Future<Output = Result<Vec<OpResult>, CoordError>> + Send;

    /// The cheapest request that the server must answer (the lease probe).
    fn probe(&self) -> impl Future<Output = Result<(), CoordError>> + Send;

    /// Ends the session; its ephemeral nodes go at once.
    fn close(&self) -> impl Future<Output = ()> + Send;
}

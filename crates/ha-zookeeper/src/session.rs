//! [`ZkSession`]: one ZooKeeper session, as holdfast's [`Session`].
//!
//! A session owns one `zookeeper-client` [`Client`]. Dropping the last clone
//! of a client closes its session, so [`close`](Session::close) takes the
//! client out and waits until the library reports the session closed (its
//! ephemeral nodes are gone then).
//!
//! Requests are refused with [`CoordError::ConnectionLoss`] while the client
//! is disconnected, as the embedded backend does: `zookeeper-client` would
//! otherwise hold them until the connection is back, or the session is over.

use std::sync::{Mutex, RwLock};
use std::time::Duration;

use holdfast_ha::SessionId;
use holdfast_ha::backend::{CoordError, CreateMode, Op, OpResult, RawEvent, Session, Stat, Watch};
use holdfast_types::sync::{lock, unpoisoned};
use tokio::sync::mpsc;
use zookeeper_client::{Acls, Client, SessionState};

use crate::coord_error::{coord_error, session_end};

/// One ZooKeeper session. Made by [`ZkBackend::connect`](crate::ZkBackend).
pub struct ZkSession {
    /// `None` once closed.
    client: RwLock<Option<Client>>,
    id: SessionId,
    timeout: Duration,
    pub(crate) acls: Acls<'static>,
    events: Mutex<Option<mpsc::UnboundedReceiver<RawEvent>>>,
}

impl std::fmt::Debug for ZkSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZkSession")
            .field("id", &self.id)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl ZkSession {
    /// Wraps a connected `client` whose session events arrive on `events`.
    pub(crate) fn new(
        client: Client,
        events: mpsc::UnboundedReceiver<RawEvent>,
        acls: Acls<'static>,
    ) -> Self {
        ZkSession {
            id: SessionId(client.session_id().0 as u64),
            timeout: client.session_timeout(),
            client: RwLock::new(Some(client)),
            acls,
            events: Mutex::new(Some(events)),
        }
    }

    /// The client, if a request may be sent now.
    pub(crate) fn client(&self) -> Result<Client, CoordError> {
        let guard = unpoisoned(self.client.read());
        let client = guard.as_ref().ok_or(CoordError::Closed)?;
        match client.state() {
            SessionState::SyncConnected | SessionState::ConnectedReadOnly => Ok(client.clone()),
            state => Err(session_end(state)),
        }
    }

    /// Maps a request's `error` on `path`, judged by the client's state now.
    pub(crate) fn error(client: &Client, error: zookeeper_client::Error, path: &str) -> CoordError {
        coord_error(error, path, client.state())
    }

    /// The current state of the session's client (`Closed` once closed).
    pub fn state(&self) -> SessionState {
        let guard = unpoisoned(self.client.read());
        guard.as_ref().map_or(SessionState::Closed, Client::state)
    }
}

/// A server [`Stat`](zookeeper_client::Stat) as holdfast's [`Stat`]. Session
/// ids keep their bits (ZooKeeper's ids can be negative as `i64`); an invalid
/// zxid becomes 0.
pub(crate) fn stat(stat: &zookeeper_client::Stat) -> Stat {
    Stat {
        czxid: u64::try_from(stat.czxid).unwrap_or(0),
        mzxid: u64::try_from(stat.mzxid).unwrap_or(0),
        version: stat.version,
        ephemeral_owner: stat.ephemeral_owner as u64,
    }
}

impl Session for ZkSession {
    fn id(&self) -> SessionId {
        self.id
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }

    fn take_events(&self) -> Option<mpsc::UnboundedReceiver<RawEvent>> {
        lock(&self.events).take()
    }

    async fn create(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        make_parents: bool,
    ) -> Result<(String, Stat), CoordError> {
        crate::nodes::create(self, path, data, mode, make_parents).await
    }

    async fn get(
        &self,
        path: &str,
        watch: bool,
    ) -> Result<(Option<(Vec<u8>, Stat)>, Option<Watch>), CoordError> {
        crate::nodes::get(self, path, watch).await
    }

    async fn children(&self, path: &str) -> Result<Vec<String>, CoordError> {
        let client = self.client()?;
        client
            .list_children(path)
            .await
            .map_err(|error| ZkSession::error(&client, error, path))
    }

    async fn delete(&self, path: &str, version: Option<i32>) -> Result<(), CoordError> {
        let client = self.client()?;
        client
            .delete(path, version)
            .await
            .map_err(|error| ZkSession::error(&client, error, path))
    }

    async fn multi(&self, ops: Vec<Op>) -> Result<Vec<OpResult>, CoordError> {
        crate::multi::multi(self, &ops).await
    }

    async fn probe(&self) -> Result<(), CoordError> {
        let client = self.client()?;
        client
            .check_stat("/")
            .await
            .map(|_| ())
            .map_err(|error| ZkSession::error(&client, error, "/"))
    }

    async fn close(&self) {
        let taken = unpoisoned(self.client.write()).take();
        let Some(client) = taken else { return };
        let mut state = client.state_watcher();
        // The library closes the session when the last clone of its client
        // is gone; requests still in flight hold theirs until they end.
        drop(client);
        let closed = async {
            while !state.state().is_terminated() {
                state.changed().await;
            }
        };
        if tokio::time::timeout(self.timeout, closed).await.is_err() {
            tracing::warn!(session = %self.id, "the session did not close within {:?}", self.timeout);
        }
    }
}

//! [`EmbeddedSession`]: a client of the embedded server.
//!
//! A request travels like a packet on the session's link:
//!
//! ```text
//!  send ─(wait while the link is silent)─ one_way ─► applied at the server
//!       ◄─ one_way ─(wait while the link is silent)─ answer
//! ```
//!
//! If the client notices the link is gone meanwhile (its connection
//! changes), the request fails with `ConnectionLoss`, applied or not.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use holdfast_types::sync::lock;
use tokio::sync::{mpsc, watch};

use super::cluster::EmbeddedCluster;
use super::link::View;
use super::options::EmbeddedOptions;
use super::server::{Admission, Server};
use crate::backend::{CoordError, CreateMode, Op, OpResult, RawEvent, Session, Stat, Watch};
use crate::time::MonoTime;
use crate::types::SessionId;

/// A session on an [`EmbeddedCluster`], made by
/// [`EmbeddedBackend::connect`](crate::backend::Backend::connect).
///
/// Its client reports, in order: `Disconnected` when it notices its link
/// is silent (read timeout after the cut), `Reconnected` when the link
/// heals while the server still has the session, `Expired` when it learns
/// the server expired it (only from the server: when the link heals, or at
/// once if the link is up), `Closed` after [`close`](Session::close).
/// After `Expired` or `Closed` the events channel ends, the session's
/// watches err and every request fails with `SessionExpired` or `Closed`.
///
/// Dropping a session without closing it is a crash: its client goes
/// silent, and the server expires the session `T` later.
pub struct EmbeddedSession {
    cluster: EmbeddedCluster,
    id: SessionId,
    timeout: Duration,
    view: watch::Receiver<View>,
    events: Mutex<Option<mpsc::UnboundedReceiver<RawEvent>>>,
}

impl fmt::Debug for EmbeddedSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmbeddedSession")
            .field("id", &self.id)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl EmbeddedSession {
    /// Opens a session on `cluster`, on the named link `link` (a private
    /// one if `None`); while that link is cut, waits for it to heal, up to
    /// the connect timeout.
    pub(crate) async fn connect(
        cluster: &EmbeddedCluster,
        options: &EmbeddedOptions,
        link: Option<&str>,
    ) -> Result<EmbeddedSession, CoordError> {
        let runtime = Arc::clone(cluster.runtime());
        let deadline = runtime.now().plus(options.connect_timeout);
        let opened = loop {
            match cluster.open(options, link) {
                Ok(opened) => break opened,
                Err(mut up) => {
                    tokio::select! {
                        healed = up.wait_for(|up| *up) => {
                            if healed.is_err() {
                                return Err(CoordError::ConnectFailed("the embedded server is gone".into()));
                            }
                        }
                        () = runtime.sleep_until(deadline) => {
                            let (name, timeout) = (link.unwrap_or_default(), options.connect_timeout);
                            return Err(CoordError::ConnectFailed(format!(
                                "link {name:?} stayed cut for the connect timeout ({timeout:?})"
                            )));
                        }
                    }
                }
            }
        };
        Ok(EmbeddedSession {
            cluster: cluster.clone(),
            id: opened.id,
            timeout: options.session_timeout,
            view: opened.view,
            events: Mutex::new(Some(opened.events)),
        })
    }

    /// Sends `request` to the server and waits for its answer.
    async fn call<T: Send>(
        &self,
        request: impl FnOnce(&mut Server, MonoTime) -> Result<T, CoordError> + Send,
    ) -> Result<T, CoordError> {
        let mut view = self.view.clone();
        self.cluster.with(|_, _| ()); // a deadline due now counts
        let connection = {
            let current = *view.borrow_and_update();
            current.check(current.connection)?;
            current.connection
        };
        let latency = wait_until_up(&mut view, connection).await?;
        self.delay(latency).await;
        let mut request = Some(request);
        let answer = loop {
            let arrived =
                self.cluster
                    .with(|server, now| match server.admit(self.id, connection)? {
                        Admission::Go => match request.take() {
                            Some(request) => Ok(Some(request(server, now))),
                            None => Err(CoordError::Other(
                                "embedded: a request was applied twice".into(),
                            )),
                        },
                        Admission::Wait => Ok(None),
                    })?;
            match arrived {
                Some(answer) => break answer,
                None => {
                    wait_until_up(&mut view, connection).await?;
                }
            }
        };
        self.delay(latency).await;
        wait_until_up(&mut view, connection).await?;
        answer
    }

    async fn delay(&self, latency: Duration) {
        if !latency.is_zero() {
            let runtime = self.cluster.runtime();
            runtime.sleep_until(runtime.now().plus(latency)).await;
        }
    }
}

/// Waits until packets flow on `connection`; the link's one-way latency.
async fn wait_until_up(
    view: &mut watch::Receiver<View>,
    connection: u64,
) -> Result<Duration, CoordError> {
    loop {
        let current = *view.borrow_and_update();
        current.check(connection)?;
        if current.link_up {
            return Ok(current.latency);
        }
        if view.changed().await.is_err() {
            // The server forgot the session: its last view is final.
            view.borrow().check(connection)?;
            return Err(CoordError::ConnectionLoss);
        }
    }
}

impl Session for EmbeddedSession {
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
        let (path, data, id) = (path.to_owned(), data.to_vec(), self.id);
        self.call(move |server, now| {
            if make_parents {
                server.create_parents(&path, mode, now);
            }
            match server.write(id, Op::Create { path, data, mode }, now)? {
                OpResult::Created { path, stat } => Ok((path, stat)),
                other => Err(CoordError::Other(format!(
                    "embedded: create answered {other:?}"
                ))),
            }
        })
        .await
    }

    async fn get(
        &self,
        path: &str,
        watch: bool,
    ) -> Result<(Option<(Vec<u8>, Stat)>, Option<Watch>), CoordError> {
        let (path, id) = (path.to_owned(), self.id);
        self.call(move |server, _| {
            let node = server.store.get(&path)?;
            Ok((node, watch.then(|| server.watch(id, &path))))
        })
        .await
    }

    async fn children(&self, path: &str) -> Result<Vec<String>, CoordError> {
        let path = path.to_owned();
        self.call(move |server, _| server.store.children(&path))
            .await
    }

    async fn delete(&self, path: &str, version: Option<i32>) -> Result<(), CoordError> {
        let (path, id) = (path.to_owned(), self.id);
        self.call(move |server, now| {
            server
                .write(id, Op::Delete { path, version }, now)
                .map(|_| ())
        })
        .await
    }

    async fn multi(&self, ops: Vec<Op>) -> Result<Vec<OpResult>, CoordError> {
        let id = self.id;
        self.call(move |server, now| server.write_all(id, &ops, now))
            .await
    }

    async fn probe(&self) -> Result<(), CoordError> {
        self.call(|_, _| Ok(())).await
    }

    async fn close(&self) {
        self.cluster.with(|server, now| server.close(self.id, now));
    }
}

impl Drop for EmbeddedSession {
    fn drop(&mut self) {
        self.cluster
            .with(|server, now| server.abandon(self.id, now));
    }
}

//! A [`Backend`] that counts every call its sessions get, by kind, and
//! notes when the latest multi-op was sent (a leader's publishing write).
//!
//! ```text
//!   Connection / LeaderElection / LeaderRetrieval
//!          │ Session calls
//!          ▼
//!   CountingSession ──counts──► Counters (shared by every session of the backend)
//!          │ delegates
//!          ▼
//!   ZkSession ──► ZooKeeper
//! ```
//!
//! It counts calls of the [`Session`] trait, which is what the HA layer
//! asks for; one call can be more than one ZooKeeper request (a `get` with
//! a watch of an absent node is two, a create whose parents are missing is
//! more), which the server's own packet counts show.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use holdfast_ha::SessionId;
use holdfast_ha::backend::{
    Backend, CoordError, CreateMode, Op, OpResult, RawEvent, ReadResult, Session, Stat,
};
use holdfast_types::sync::lock;
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// The kinds of calls, in report order.
pub const KINDS: [&str; 10] = [
    "connect",
    "create",
    "get",
    "get+watch",
    "children",
    "multi",
    "delete",
    "probe",
    "close",
    "total",
];

/// Live counters, shared by a backend and all its sessions.
#[derive(Debug, Default)]
pub struct Counters {
    connect: AtomicU64,
    create: AtomicU64,
    get: AtomicU64,
    get_watch: AtomicU64,
    children: AtomicU64,
    multi: AtomicU64,
    delete: AtomicU64,
    probe: AtomicU64,
    close: AtomicU64,
    last_multi: Mutex<Option<Instant>>,
}

/// A snapshot of [`Counters`]; subtract two for the calls in between.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Sessions opened.
    pub connect: u64,
    /// Nodes created.
    pub create: u64,
    /// Reads without a watch.
    pub get: u64,
    /// Reads leaving a watch.
    pub get_watch: u64,
    /// Children listings.
    pub children: u64,
    /// Multi-ops.
    pub multi: u64,
    /// Deletions.
    pub delete: u64,
    /// Lease probes.
    pub probe: u64,
    /// Session closes.
    pub close: u64,
}

impl Counters {
    /// The counts now.
    pub fn snapshot(&self) -> Counts {
        let load = |counter: &AtomicU64| counter.load(Ordering::SeqCst);
        Counts {
            connect: load(&self.connect),
            create: load(&self.create),
            get: load(&self.get),
            get_watch: load(&self.get_watch),
            children: load(&self.children),
            multi: load(&self.multi),
            delete: load(&self.delete),
            probe: load(&self.probe),
            close: load(&self.close),
        }
    }

    /// When the latest multi-op was sent (its call began).
    pub fn last_multi(&self) -> Option<Instant> {
        *lock(&self.last_multi)
    }

    /// Waits until the counts stop changing for `quiet` (and returns them).
    pub async fn settled(&self, quiet: Duration) -> Counts {
        let mut last = self.snapshot();
        loop {
            tokio::time::sleep(quiet).await;
            let now = self.snapshot();
            if now == last {
                return now;
            }
            last = now;
        }
    }
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::SeqCst);
}

impl Counts {
    /// `self − earlier`, field by field.
    pub fn since(self, earlier: Counts) -> Counts {
        Counts {
            connect: self.connect - earlier.connect,
            create: self.create - earlier.create,
            get: self.get - earlier.get,
            get_watch: self.get_watch - earlier.get_watch,
            children: self.children - earlier.children,
            multi: self.multi - earlier.multi,
            delete: self.delete - earlier.delete,
            probe: self.probe - earlier.probe,
            close: self.close - earlier.close,
        }
    }

    /// Requests the HA recipes made: every call but connect, probe and close.
    pub fn recipe_requests(&self) -> u64 {
        self.create + self.get + self.get_watch + self.children + self.multi + self.delete
    }

    /// Every call (probes included), in [`KINDS`] order, the total last.
    pub fn cells(&self) -> Vec<String> {
        let total = self.recipe_requests() + self.probe;
        [
            self.connect,
            self.create,
            self.get,
            self.get_watch,
            self.children,
            self.multi,
            self.delete,
            self.probe,
            self.close,
            total,
        ]
        .iter()
        .map(u64::to_string)
        .collect()
    }

    /// As JSON.
    pub fn to_json(self) -> Value {
        json!({
            "connect": self.connect, "create": self.create, "get": self.get,
            "get_watch": self.get_watch, "children": self.children, "multi": self.multi,
            "delete": self.delete, "probe": self.probe, "close": self.close,
            "recipe_requests": self.recipe_requests(),
        })
    }
}

/// Wraps a backend; its sessions count every call into shared [`Counters`].
#[derive(Debug)]
pub struct CountingBackend<B> {
    inner: B,
    counters: Arc<Counters>,
}

impl<B: Backend> CountingBackend<B> {
    /// Counts the calls of `inner`'s sessions.
    pub fn new(inner: B) -> CountingBackend<B> {
        CountingBackend {
            inner,
            counters: Arc::default(),
        }
    }

    /// The counters (keep a clone: the backend moves into its connection).
    pub fn counters(&self) -> Arc<Counters> {
        self.counters.clone()
    }
}

impl<B: Backend> Backend for CountingBackend<B> {
    type Session = CountingSession<B::Session>;

    async fn connect(&self) -> Result<Self::Session, CoordError> {
        bump(&self.counters.connect);
        let inner = self.inner.connect().await?;
        Ok(CountingSession {
            inner,
            counters: self.counters.clone(),
        })
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}

/// A session that counts its calls and delegates them.
#[derive(Debug)]
pub struct CountingSession<S> {
    inner: S,
    counters: Arc<Counters>,
}

impl<S: Session> Session for CountingSession<S> {
    fn id(&self) -> SessionId {
        self.inner.id()
    }

    fn timeout(&self) -> Duration {
        self.inner.timeout()
    }

    fn take_events(&self) -> Option<mpsc::UnboundedReceiver<RawEvent>> {
        self.inner.take_events()
    }

    async fn create(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        make_parents: bool,
    ) -> Result<(String, Stat), CoordError> {
        bump(&self.counters.create);
        self.inner.create(path, data, mode, make_parents).await
    }

    async fn get(&self, path: &str, watch: bool) -> Result<ReadResult, CoordError> {
        bump(if watch {
            &self.counters.get_watch
        } else {
            &self.counters.get
        });
        self.inner.get(path, watch).await
    }

    async fn children(&self, path: &str) -> Result<Vec<String>, CoordError> {
        bump(&self.counters.children);
        self.inner.children(path).await
    }

    async fn delete(&self, path: &str, version: Option<i32>) -> Result<(), CoordError> {
        bump(&self.counters.delete);
        self.inner.delete(path, version).await
    }

    async fn multi(&self, ops: Vec<Op>) -> Result<Vec<OpResult>, CoordError> {
        bump(&self.counters.multi);
        *lock(&self.counters.last_multi) = Some(Instant::now());
        self.inner.multi(ops).await
    }

    async fn probe(&self) -> Result<(), CoordError> {
        bump(&self.counters.probe);
        self.inner.probe().await
    }

    async fn close(&self) {
        bump(&self.counters.close);
        self.inner.close().await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use holdfast_ha::TokioRuntime;
    use holdfast_ha::embedded::{EmbeddedCluster, EmbeddedOptions};

    use super::*;

    #[tokio::test]
    async fn counts_each_call_by_kind() {
        let cluster = EmbeddedCluster::new(Arc::new(TokioRuntime::new()));
        let backend = CountingBackend::new(cluster.backend(EmbeddedOptions::default()));
        let counters = backend.counters();
        let session = backend.connect().await.unwrap();
        let before = counters.snapshot();
        session
            .create("/a", b"x", CreateMode::Persistent, true)
            .await
            .unwrap();
        session.get("/a", true).await.unwrap();
        session.get("/a", false).await.unwrap();
        session.children("/").await.unwrap();
        session.probe().await.unwrap();
        session.delete("/a", None).await.unwrap();
        let calls = counters.snapshot().since(before);
        assert_eq!(
            calls,
            Counts {
                create: 1,
                get: 1,
                get_watch: 1,
                children: 1,
                delete: 1,
                probe: 1,
                ..Counts::default()
            }
        );
        assert_eq!(calls.recipe_requests(), 5);
        assert_eq!(before.connect, 1);
    }
}

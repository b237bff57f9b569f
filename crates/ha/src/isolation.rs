//! A runtime of its own for the coordination client.
//!
//! The incident's TaskManager stalled for 30 s in user code and took its
//! ZooKeeper client down with it. Everything that keeps a session alive — the
//! client's I/O, the [`Connection`](crate::Connection) driver, the lease
//! probe and the latch and retrieval shells — belongs on a
//! [`CoordinationRuntime`]: one dedicated OS thread with its own tokio
//! runtime, shared with nothing else. User code that saturates every core
//! (the thread still gets its fair share of CPU) or blocks the application's
//! threads for 90 s cannot delay it.
//!
//! ```no_run
//! use std::sync::Arc;
//! use holdfast_ha::isolation::CoordinationRuntime;
//! use holdfast_ha::connection::{Connection, ConnectionOptions};
//! use holdfast_ha::embedded::{EmbeddedCluster, EmbeddedOptions};
//! use holdfast_ha::TokioRuntime;
//!
//! let coordination = CoordinationRuntime::start("holdfast-ha")?;
//! let connection = coordination.run(|| {
//!     // Everything spawned in here runs on the coordination thread.
//!     let runtime = Arc::new(TokioRuntime::new());
//!     let cluster = EmbeddedCluster::new(runtime.clone());
//!     Connection::start(cluster.backend(EmbeddedOptions::default()), runtime, ConnectionOptions::default())
//! });
//! # let _ = connection;
//! # Ok::<(), std::io::Error>(())
//! ```

use std::future::Future;

use tokio::runtime::{Builder, Handle, Runtime};

/// One OS thread running a tokio runtime that only coordination work uses.
#[derive(Debug)]
pub struct CoordinationRuntime {
    runtime: Option<Runtime>,
}

impl CoordinationRuntime {
    /// Starts the thread; `name` names it (visible in `top -H`, stack dumps).
    pub fn start(name: &str) -> std::io::Result<CoordinationRuntime> {
        let runtime = Builder::new_multi_thread()
            .worker_threads(1)
            .max_blocking_threads(2)
            .thread_name(name)
            .enable_all()
            .build()?;
        Ok(CoordinationRuntime {
            runtime: Some(runtime),
        })
    }

    /// The runtime's handle (spawn onto it from anywhere).
    pub fn handle(&self) -> &Handle {
        self.runtime
            .as_ref()
            .map(Runtime::handle)
            .expect("the runtime lives until drop")
    }

    /// Runs `f` with the coordination runtime as the current runtime, so that
    /// everything `f` spawns (connections, elections, retrievals, the
    /// ZooKeeper client's tasks) runs on the coordination thread.
    pub fn run<T>(&self, f: impl FnOnce() -> T) -> T {
        let _entered = self.handle().enter();
        f()
    }

    /// Runs `future` on the coordination thread and waits for its output
    /// from async code on any other runtime.
    pub async fn spawn<T: Send + 'static>(
        &self,
        future: impl Future<Output = T> + Send + 'static,
    ) -> Result<T, tokio::task::JoinError> {
        self.handle().spawn(future).await
    }
}

impl Drop for CoordinationRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

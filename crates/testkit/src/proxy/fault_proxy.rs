//! The proxy itself: a thread with its own tokio runtime that serves routes.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::mpsc;
use std::thread::JoinHandle;

use tokio::runtime::{Builder, Handle};
use tokio::sync::oneshot;

use super::options::RouteOptions;
use super::route::Route;
use crate::error::{KitError, Result};

/// A fault-injecting TCP proxy: any number of [`Route`]s, each forwarding
/// connections from a loopback port to an upstream address.
///
/// It owns a dedicated OS thread running its own tokio runtime, so it keeps
/// real time even when the test's runtime uses tokio's paused clock, and it
/// works from sync tests too. Dropping it stops all routes, closes all their
/// connections and joins the thread.
#[derive(Debug)]
pub struct FaultProxy {
    runtime: Handle,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl FaultProxy {
    /// Starts the proxy's thread and runtime, with no routes yet.
    pub fn start() -> Result<FaultProxy> {
        let (handle_tx, handle_rx) = mpsc::channel();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("holdfast-fault-proxy".into())
            .spawn(move || {
                let runtime = match Builder::new_current_thread().enable_all().build() {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = handle_tx.send(Err(e));
                        return;
                    }
                };
                let _ = handle_tx.send(Ok(runtime.handle().clone()));
                // Runs every route and connection until the proxy is dropped;
                // dropping the runtime then drops them all, closing sockets.
                runtime.block_on(async move {
                    let _ = stopped.await;
                });
                tracing::debug!("fault proxy stopped");
            })
            .map_err(KitError::io("spawning the fault proxy's thread"))?;
        let runtime = match handle_rx.recv() {
            Ok(Ok(handle)) => handle,
            Ok(Err(e)) => {
                let _ = thread.join();
                return Err(KitError::io("building the fault proxy's runtime")(e));
            }
            Err(_) => {
                let _ = thread.join();
                return Err(KitError::Invalid(
                    "the fault proxy's thread died while starting".into(),
                ));
            }
        };
        Ok(FaultProxy {
            runtime,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Binds a new route on `127.0.0.1:0` forwarding to `upstream`, in
    /// [`Mode::Pass`](super::Mode::Pass), with default options.
    pub fn route(&self, upstream: SocketAddr) -> Result<Route> {
        self.route_with(upstream, RouteOptions::default())
    }

    /// Binds a new route on `127.0.0.1:0` forwarding to `upstream`, in
    /// [`Mode::Pass`](super::Mode::Pass), with these options.
    pub fn route_with(&self, upstream: SocketAddr, options: RouteOptions) -> Result<Route> {
        let what = || format!("binding a proxy route to {upstream} on 127.0.0.1");
        let listener =
            std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(KitError::io(what()))?;
        listener
            .set_nonblocking(true)
            .map_err(KitError::io(what()))?;
        let listen = listener.local_addr().map_err(KitError::io(what()))?;
        let listener = {
            // Registers the socket with the proxy's runtime, not the caller's.
            let _entered = self.runtime.enter();
            tokio::net::TcpListener::from_std(listener).map_err(KitError::io(what()))?
        };
        Ok(Route::spawn(
            &self.runtime,
            listener,
            listen,
            upstream,
            options,
        ))
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            tracing::warn!("the fault proxy's thread panicked");
        }
    }
}

//! A fault-injecting TCP proxy for tests against real servers.
//!
//! A [`FaultProxy`] runs on its own thread and runtime. Each [`Route`] listens
//! on a free loopback port and forwards every connection to one upstream
//! address, in the route's current [`Mode`]: pass, stall (a frozen link that
//! closes nothing), refuse (reset new connections) or delay (added latency).
//! [`Route::reset_all`] resets every open connection on both sides.
//!
//! ```text
//!   client ──► 127.0.0.1:port ══ Route (Mode) ══► upstream
//!              accept ─► connect upstream (retrying) ─► pump ⇄ pump
//! ```
//!
//! ```no_run
//! use holdfast_testkit::{FaultProxy, Mode};
//!
//! # fn main() -> holdfast_testkit::Result<()> {
//! let proxy = FaultProxy::start()?;
//! let route = proxy.route("127.0.0.1:2181".parse().expect("an address"))?;
//! // Clients connect to route.listen_addr() instead of 127.0.0.1:2181.
//! route.set_mode(Mode::Stall);
//! route.set_mode(Mode::Pass);
//! route.reset_all();
//! # Ok(())
//! # }
//! ```

mod conn;
mod fault_proxy;
mod mode;
mod options;
mod pump;
mod rewrite;
mod route;
mod shared;

pub use fault_proxy::FaultProxy;
pub use mode::Mode;
pub use options::{CONNECT_ATTEMPT_TIMEOUT, CONNECT_RETRY_INTERVAL, RouteOptions, Tap};
pub use rewrite::{FirstMessageRewrite, Rewrite};
pub use route::{Route, RouteStats};

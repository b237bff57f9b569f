//! Connection states and the client-side lease.
//!
//! ```text
//!              disconnected                   same session back
//!  Connected ───────────────► Suspended ─────────────────────────► Reconnected
//!      ▲                          │  session expired, client closed,      │
//!      │ new session              │  or lease deadline passed             │ disconnected
//!      └──────────────────────── Lost ◄────────────────────────── Suspended ◄┘
//! ```
//!
//! [`SessionTracker`] is the sans-IO core: the backend's shell feeds it what
//! its client saw (connected, disconnected, expired, and the send time of
//! every acknowledged request) and publishes the [`ConnectionEvent`]s it
//! returns, in order.

mod handle;
mod log;
mod shell;
mod state;
mod tracker;

pub use handle::SessionHandle;
pub use holdfast_types::ha::{LeaseConfig, LeaseConfigError};
pub use shell::{Connection, ConnectionOptions};
pub use state::{ConnectionEvent, ConnectionState, LostReason};
pub use tracker::SessionTracker;

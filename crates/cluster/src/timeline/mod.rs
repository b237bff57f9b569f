//! The HA timeline (issue #13's picture): one time axis with a lane per
//! process — which JobManager led and at which epoch, each process's
//! coordination connection state, heartbeat timeouts, job restarts,
//! take-overs and checkpoints — so that an incident reads at a glance.
//!
//! ```text
//!  event.rs   TimelineEvent (what, who, when, the log line) and the bounded TimelineLog
//!  layout.rs  events → lanes, spans, stacked markers, ticks (pure numbers)
//!  svg.rs     a Layout as one standalone SVG document (tooltips, no script)
//!  window.rs  the window drawn, from what a caller asked (one rule for all)
//! ```
//!
//! Recording the events (the leader, in the HA job store; TaskManagers'
//! own connection changes) and the pages that show them are built on
//! these pieces.

pub mod event;
pub mod layout;
pub mod svg;
pub mod window;

pub use event::{EventKind, MAX_EVENTS, TimelineEvent, TimelineLog};
pub use layout::{Lane, Layout, LayoutOptions, Marker, Span, SpanKind, Tick, layout};
pub use window::{WindowError, window};

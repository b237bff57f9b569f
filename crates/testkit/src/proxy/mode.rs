//! What a route does with the bytes and connections that reach it.

use std::time::Duration;

/// The fault a [`Route`](super::Route) injects, changed at any time with
/// [`Route::set_mode`](super::Route::set_mode). A change takes effect at once,
/// on open connections as well as on new ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// Forward both ways. The default.
    #[default]
    Pass,
    /// Stop forwarding both ways without closing anything: a black hole, a
    /// frozen link. New connections are accepted, but the proxy does not
    /// connect upstream for them and nothing flows on them either. Bytes the
    /// proxy had already read are held and delivered, in order, when the mode
    /// returns to [`Mode::Pass`] or [`Mode::Delay`]. The proxy stops reading
    /// while stalled, so it buffers at most what was in flight.
    Stall,
    /// Refuse new connections: accept each and reset it at once (`SO_LINGER`
    /// 0, then close, so the peer sees `RST`). Open connections keep flowing.
    Refuse,
    /// Forward both ways, each chunk delivered no earlier than this long after
    /// the proxy read it. This is latency, not a bandwidth cap: chunks are
    /// pipelined and their order is kept.
    Delay(Duration),
}

impl Mode {
    /// Whether bytes must not move in this mode.
    pub fn is_stalled(self) -> bool {
        self == Mode::Stall
    }

    /// How long a chunk read now must wait before it is written on.
    pub fn latency(self) -> Duration {
        match self {
            Mode::Delay(d) => d,
            Mode::Pass | Mode::Stall | Mode::Refuse => Duration::ZERO,
        }
    }
}

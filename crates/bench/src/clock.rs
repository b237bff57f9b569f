//! One process clock for every measurement.
//!
//! The HA layer stamps grants with [`MonoTime`]s of its [`Runtime`] seam;
//! the benchmarks measure with [`Instant`]. [`Clock`] is the real-time
//! [`TokioRuntime`] every connection of a scenario shares, anchored to an
//! `Instant`, so a grant's `at` converts to the `Instant` it happened at.

use std::sync::Arc;
use std::time::Instant;

use holdfast_ha::{Runtime, TokioRuntime};
use holdfast_types::MonoTime;

/// The shared real-time runtime, anchored to [`Instant`].
#[derive(Clone, Debug)]
pub struct Clock {
    runtime: Arc<TokioRuntime>,
    anchor_mono: MonoTime,
    anchor: Instant,
}

impl Clock {
    /// A new real-time runtime and its anchor.
    pub fn new() -> Clock {
        let runtime = Arc::new(TokioRuntime::new());
        let anchor_mono = runtime.now();
        let anchor = Instant::now();
        Clock {
            runtime,
            anchor_mono,
            anchor,
        }
    }

    /// The runtime to give every connection.
    pub fn runtime(&self) -> Arc<dyn Runtime> {
        self.runtime.clone()
    }

    /// The [`Instant`] of a [`MonoTime`] of this clock's runtime.
    pub fn instant(&self, at: MonoTime) -> Instant {
        if at >= self.anchor_mono {
            self.anchor + at.since(self.anchor_mono)
        } else {
            self.anchor - self.anchor_mono.since(at)
        }
    }
}

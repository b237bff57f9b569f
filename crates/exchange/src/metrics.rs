//! The exchange's counters and gauges, kept as atomics and read as one
//! [`ExchangeMetrics`] snapshot (a Prometheus exporter reads it on scrape;
//! no global registry here).

use std::sync::atomic::{AtomicU64, Ordering};

/// What one [`Exchange`](crate::Exchange) has done so far and holds now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExchangeMetrics {
    /// Bytes written to data connections (frames, headers included).
    pub bytes_sent: u64,
    /// Bytes read from data connections.
    pub bytes_received: u64,
    /// Batches accepted by this process's partition writers (local and
    /// remote subpartitions).
    pub batches_sent: u64,
    /// Batches delivered by this process's input gates.
    pub batches_received: u64,
    /// Batches queued in this process right now (producer side and
    /// receiving side of every channel): a gauge.
    pub buffered_batches: u64,
    /// Data connections open right now, both directions: a gauge.
    pub open_connections: u64,
    /// Task threads blocked right now in
    /// [`PartitionWriter::send`](crate::PartitionWriter::send) because a
    /// subpartition is full (backpressure): a gauge.
    pub blocked_sends: u64,
}

/// The live values behind [`ExchangeMetrics`].
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) bytes_sent: AtomicU64,
    pub(crate) bytes_received: AtomicU64,
    pub(crate) batches_sent: AtomicU64,
    pub(crate) batches_received: AtomicU64,
    buffered_batches: AtomicU64,
    open_connections: AtomicU64,
    blocked_sends: AtomicU64,
}

impl Counters {
    /// Adds `n` to a counter.
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// The buffered-batches gauge moved from `before` to `after` in one
    /// channel.
    pub(crate) fn buffered_changed(&self, before: usize, after: usize) {
        if after > before {
            Counters::add(&self.buffered_batches, (after - before) as u64);
        } else if before > after {
            self.buffered_batches
                .fetch_sub((before - after) as u64, Ordering::Relaxed);
        }
    }

    /// A data connection opened; it counts until the guard is dropped.
    pub(crate) fn connection(self: &std::sync::Arc<Self>) -> ConnectionGuard {
        Counters::add(&self.open_connections, 1);
        ConnectionGuard(std::sync::Arc::clone(self))
    }

    /// The current values.
    pub(crate) fn snapshot(&self) -> ExchangeMetrics {
        ExchangeMetrics {
            bytes_sent: self.bytes_sent.load(Ordering::Relaxed),
            bytes_received: self.bytes_received.load(Ordering::Relaxed),
            batches_sent: self.batches_sent.load(Ordering::Relaxed),
            batches_received: self.batches_received.load(Ordering::Relaxed),
            buffered_batches: self.buffered_batches.load(Ordering::Relaxed),
            open_connections: self.open_connections.load(Ordering::Relaxed),
            blocked_sends: self.blocked_sends.load(Ordering::Relaxed),
        }
    }
}

/// Counts one blocked send while it lives.
#[derive(Debug)]
pub(crate) struct BlockedGuard<'a>(&'a Counters);

impl<'a> BlockedGuard<'a> {
    /// A send starts waiting.
    pub(crate) fn new(counters: &'a Counters) -> BlockedGuard<'a> {
        Counters::add(&counters.blocked_sends, 1);
        BlockedGuard(counters)
    }
}

impl Drop for BlockedGuard<'_> {
    fn drop(&mut self) {
        self.0.blocked_sends.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Counts one open data connection while it lives.
#[derive(Debug)]
pub(crate) struct ConnectionGuard(std::sync::Arc<Counters>);

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        self.0.open_connections.fetch_sub(1, Ordering::Relaxed);
    }
}

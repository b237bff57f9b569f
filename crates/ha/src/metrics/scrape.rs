//! Gauges computed when scraped, and the view of a connection's lease they
//! read.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use holdfast_types::sync::lock;
use prometheus_client::encoding::{EncodeGaugeValue, EncodeMetric, MetricEncoder};
use prometheus_client::metrics::{MetricType, TypedMetric};

/// A connection's lease as of now, read at scrape time. Implemented by the
/// connection shell; held weakly, so metrics never keep a connection alive.
pub(crate) trait LeaseView: Send + Sync {
    /// Time left on the current session's lease now (zero once it ran
    /// out); `None` without a live session.
    fn lease_remaining(&self) -> Option<Duration>;

    /// Whether a grant made in `session` may still be acted on now (see
    /// [`Connection::session_holds`](crate::Connection::session_holds)).
    fn session_holds(&self, session: crate::types::SessionId) -> bool;
}

/// Where a [`ScrapeGauge`] reads its value.
type Source<N> = Arc<dyn Fn() -> N + Send + Sync>;

/// A gauge whose value is computed by a source function each time it is
/// encoded; `N::default()` (zero) until a source is set. Clones share the
/// source.
pub(super) struct ScrapeGauge<N> {
    source: Arc<Mutex<Option<Source<N>>>>,
}

impl<N> ScrapeGauge<N> {
    /// Reads from `source` from now on (replacing any earlier source).
    pub(super) fn set_source(&self, source: impl Fn() -> N + Send + Sync + 'static) {
        *self.lock() = Some(Arc::new(source));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Source<N>>> {
        lock(&self.source)
    }
}

impl<N: Default> ScrapeGauge<N> {
    /// The value now.
    pub(super) fn get(&self) -> N {
        // The source runs without our lock held: it takes other locks.
        let source = self.lock().clone();
        source.map_or_else(N::default, |source| source())
    }
}

impl<N> Clone for ScrapeGauge<N> {
    fn clone(&self) -> Self {
        ScrapeGauge {
            source: self.source.clone(),
        }
    }
}

impl<N> Default for ScrapeGauge<N> {
    fn default() -> Self {
        ScrapeGauge {
            source: Arc::new(Mutex::new(None)),
        }
    }
}

impl<N> fmt::Debug for ScrapeGauge<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScrapeGauge")
            .field("has_source", &self.lock().is_some())
            .finish()
    }
}

impl<N> TypedMetric for ScrapeGauge<N> {
    const TYPE: MetricType = MetricType::Gauge;
}

impl<N: EncodeGaugeValue + Default> EncodeMetric for ScrapeGauge<N> {
    fn encode(&self, mut encoder: MetricEncoder<'_>) -> Result<(), fmt::Error> {
        encoder.encode_gauge(&self.get())
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Gauge
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_its_source_each_time() {
        let gauge = ScrapeGauge::<i64>::default();
        assert_eq!(gauge.get(), 0);
        let value = Arc::new(Mutex::new(3));
        let read = value.clone();
        gauge.clone().set_source(move || *read.lock().unwrap());
        assert_eq!(gauge.get(), 3);
        *value.lock().unwrap() = 5;
        assert_eq!(gauge.get(), 5);
    }
}

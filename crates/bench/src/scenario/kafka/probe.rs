//! Is the broker itself responsive? A thread asks it for a partition's
//! offsets (`ListOffsets`, a request that touches no records) every 20 ms
//! while a run goes on and keeps each round trip: a broker that stops
//! answering while it saves its data shows here, whoever drives it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Result;
use rdkafka::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};

use crate::stats::ms;

/// How often the probe asks.
const EVERY: Duration = Duration::from_millis(20);

/// A running probe.
pub struct Probe {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<f64>>,
}

impl Probe {
    /// Starts probing `topic`'s partition 0 on `bootstrap`.
    pub fn start(bootstrap: &str, topic: &str) -> Result<Probe> {
        let client: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", bootstrap)
            .set("group.id", "bench-probe")
            .create()?;
        let stop = Arc::new(AtomicBool::new(false));
        let topic = topic.to_owned();
        let thread = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut samples = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    let started = Instant::now();
                    if client
                        .fetch_watermarks(&topic, 0, Duration::from_secs(30))
                        .is_ok()
                    {
                        samples.push(ms(started.elapsed()));
                    }
                    std::thread::sleep(EVERY);
                }
                samples
            })
        };
        Ok(Probe { stop, thread })
    }

    /// Stops it; the round trips in ms.
    pub fn finish(self) -> Vec<f64> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.join().unwrap_or_default()
    }
}

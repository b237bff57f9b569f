//! What the Kafka tests share.

// Each test binary uses its part of this module.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use holdfast_dataflow::OperatorContext;
use holdfast_dataflow::source::{Poll, Source, SourcePosition, SourceReader};
use holdfast_executor::TaskFailure;
use holdfast_types::CheckpointId;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::{ClientConfig, Message, TopicPartitionList};

/// Creates `topic` with `partitions` partitions (one replica).
pub fn create_topic(bootstrap: &str, topic: &str, partitions: i32) -> anyhow::Result<()> {
    let (admin, runtime) = admin(bootstrap)?;
    let results = runtime.block_on(admin.create_topics(
        &[NewTopic::new(topic, partitions, TopicReplication::Fixed(1))],
        &AdminOptions::new(),
    ))?;
    for result in results {
        result.map_err(|(topic, code)| anyhow::anyhow!("creating {topic}: {code}"))?;
    }
    Ok(())
}

/// Deletes `topic`.
#[allow(dead_code)] // not every test binary deletes topics
pub fn delete_topic(bootstrap: &str, topic: &str) -> anyhow::Result<()> {
    let (admin, runtime) = admin(bootstrap)?;
    let results = runtime.block_on(admin.delete_topics(&[topic], &AdminOptions::new()))?;
    for result in results {
        result.map_err(|(topic, code)| anyhow::anyhow!("deleting {topic}: {code}"))?;
    }
    Ok(())
}

/// An admin client of `bootstrap`, and a runtime to wait for its answers.
fn admin(
    bootstrap: &str,
) -> anyhow::Result<(AdminClient<DefaultClientContext>, tokio::runtime::Runtime)> {
    let admin = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    Ok((admin, runtime))
}

/// Lets a test decide how many records a job's source may produce in all,
/// so that a kill lands between two checkpoints by construction rather than
/// by timing: the source idles (barriers still pass) once it has made what
/// the gate allows.
#[derive(Default)]
pub struct Gate {
    allowed: AtomicU64,
    /// Records reserved by polls under way and made by polls done.
    made: AtomicU64,
    /// Records made by polls done (what the job has, metrics counted).
    delivered: AtomicU64,
}

impl Gate {
    /// A gate that lets nothing through until [`Gate::allow`].
    pub fn closed() -> Arc<Gate> {
        Arc::new(Gate::default())
    }

    /// A gate that lets everything through.
    pub fn open() -> Arc<Gate> {
        let gate = Gate::default();
        gate.allowed.store(u64::MAX, Ordering::SeqCst);
        Arc::new(gate)
    }

    /// Lets `total` records through in all (since the job started).
    pub fn allow(&self, total: u64) {
        self.allowed.store(total, Ordering::SeqCst);
    }

    /// Waits until the source has made `total` records (its polls
    /// returned them), or fails naming how many it made within `within`.
    pub fn wait_made(&self, total: u64, within: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + within;
        loop {
            let made = self.delivered.load(Ordering::SeqCst);
            if made >= total {
                return Ok(());
            }
            if Instant::now() >= deadline {
                anyhow::bail!("the source made {made} records of {total} within {within:?}");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Takes up to `max` of what is still allowed.
    fn reserve(&self, max: u64) -> u64 {
        let mut reserved = 0;
        let _ = self
            .made
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |made| {
                reserved = self
                    .allowed
                    .load(Ordering::SeqCst)
                    .saturating_sub(made)
                    .min(max);
                Some(made + reserved)
            });
        reserved
    }

    /// A poll that reserved `reserved` made `made` of them.
    fn settle(&self, reserved: u64, made: u64) {
        self.made.fetch_sub(reserved - made, Ordering::SeqCst);
        self.delivered.fetch_add(made, Ordering::SeqCst);
    }
}

/// `source` behind `gate`.
pub struct Gated<S> {
    pub source: S,
    pub gate: Arc<Gate>,
}

impl<T: 'static, S: Source<T>> Source<T> for Gated<S> {
    fn open(
        &self,
        ctx: &OperatorContext,
        from: &[SourcePosition],
    ) -> Result<Box<dyn SourceReader<T>>, TaskFailure> {
        Ok(Box::new(GatedReader {
            inner: self.source.open(ctx, from)?,
            gate: Arc::clone(&self.gate),
        }))
    }
}

struct GatedReader<T> {
    inner: Box<dyn SourceReader<T>>,
    gate: Arc<Gate>,
}

impl<T> SourceReader<T> for GatedReader<T> {
    fn poll(&mut self, out: &mut Vec<T>, max: usize) -> Result<Poll, TaskFailure> {
        let reserved = self.gate.reserve(max as u64);
        if reserved == 0 {
            return Ok(Poll::Idle(Duration::from_millis(5)));
        }
        let before = out.len();
        let poll = self.inner.poll(out, reserved as usize);
        let made = (out.len() - before) as u64;
        self.gate.settle(reserved, made);
        poll
    }

    fn idle(&mut self) -> bool {
        self.inner.idle()
    }

    fn position(&self) -> SourcePosition {
        self.inner.position()
    }

    fn watermark(&mut self) -> Option<i64> {
        self.inner.watermark()
    }

    fn snapshotted(&mut self, checkpoint: CheckpointId) {
        self.inner.snapshotted(checkpoint);
    }

    fn checkpoint_ended(
        &mut self,
        checkpoint: CheckpointId,
        completed: bool,
    ) -> Result<(), TaskFailure> {
        self.inner.checkpoint_ended(checkpoint, completed)
    }
}

/// How often each value was seen by a reader at `isolation`, reading until
/// `expected` values came and then half a second more (to catch any
/// duplicate), or until nothing came for 3 s, or 30 s.
pub fn read(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    isolation: &str,
    expected: usize,
) -> anyhow::Result<BTreeMap<String, usize>> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", format!("reader-{isolation}"))
        .set("isolation.level", isolation)
        .set("enable.auto.commit", "false")
        .create()?;
    let mut assignment = TopicPartitionList::new();
    for partition in 0..partitions {
        assignment.add_partition_offset(topic, partition, rdkafka::Offset::Beginning)?;
    }
    consumer.assign(&assignment)?;
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut settle: Option<Instant> = None;
    let mut last = Instant::now();
    while Instant::now() < deadline
        && settle.is_none_or(|until| Instant::now() < until)
        && last.elapsed() < Duration::from_secs(3)
    {
        if let Some(message) = consumer.poll(Duration::from_millis(100)) {
            let message = message?;
            last = Instant::now();
            let value = String::from_utf8_lossy(message.payload().unwrap_or_default()).into_owned();
            *seen.entry(value).or_default() += 1;
        }
        if settle.is_none() && seen.values().sum::<usize>() >= expected {
            settle = Some(Instant::now() + Duration::from_millis(500));
        }
    }
    Ok(seen)
}

//! What one checkpoint costs the exactly-once sink, step by step, on the
//! same broker: the requests `crates/kafka/src/sink/shell.rs` makes at a
//! barrier (flush, `DescribeTransactions`, a new transactional producer —
//! create, `InitProducerId`, begin — and `DescribeTransactions` again) and
//! at a completed checkpoint (`EndTxn`), each timed alone; against the
//! commit of a producer that is kept (`commit_transaction` and
//! `begin_transaction`, the relay's way). The sink runs these on its task
//! thread, so no record passes that subtask meanwhile.
//!
//! rdkafka's `BaseProducer::flush` asks librdkafka once without waiting,
//! then serves events for `min(timeout, 100 ms)` — and its `poll` returns
//! only when that time is up — so a flush with anything in flight takes a
//! multiple of 100 ms; polling 1 ms at a time until nothing is in flight
//! shows what delivery itself takes.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use holdfast_kafka::wire::TxnWire;
use rdkafka::ClientConfig;
use rdkafka::producer::{BaseProducer, Producer};
use serde_json::{Value, json};

use super::data;
use crate::output::Table;
use crate::stats::{Summary, cell, ms};

const WITHIN: Duration = Duration::from_secs(30);

/// Each step's samples, in ms.
pub struct Steps {
    rows: Vec<(&'static str, Vec<f64>)>,
}

/// The steps, in the order they are timed.
const STEPS: [&str; 11] = [
    "create a transactional producer (local)",
    "init_transactions (connect, FindCoordinator, InitProducerId)",
    "InitProducerId alone, raw over the wire (as the sink's reserve)",
    "begin_transaction (local)",
    "first record + rdkafka's BaseProducer::flush (the sink before ef1b30f)",
    "first record + poll(1 ms) until delivered (the sink since ef1b30f)",
    "DescribeTransactions (FindCoordinator + request, new connections)",
    "EndTxn commit over the wire (FindCoordinator + request)",
    "destroy the producer (holdfast: off the task thread)",
    "kept producer: record + poll(1 ms) until delivered",
    "kept producer: commit_transaction",
];

/// Times `rounds` rounds of each step against `topic`.
pub fn measure(bootstrap: &str, topic: &str, rounds: usize) -> Result<Steps> {
    let wire = TxnWire::new(vec![bootstrap.to_owned()], WITHIN);
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); STEPS.len()];
    let mut timed = |step: usize, started: Instant| samples[step].push(ms(started.elapsed()));
    for round in 0..rounds {
        let name = format!("bench-steps-{round}");
        let started = Instant::now();
        let producer = transactional(bootstrap, &name)?;
        timed(0, started);
        let started = Instant::now();
        producer.init_transactions(WITHIN)?;
        timed(1, started);
        let started = Instant::now();
        wire.reserve(&[format!("bench-steps-raw-{round}")], WITHIN)?;
        timed(2, started);
        let started = Instant::now();
        producer.begin_transaction()?;
        timed(3, started);
        // Every other round: the sink's flush, or polling until delivered
        // (each the first record of its transaction).
        let started = Instant::now();
        data::send(&producer, topic, b"step 1")?;
        if round % 2 == 0 {
            data::flush(&producer)?;
            timed(4, started);
        } else {
            delivered(&producer)?;
            timed(5, started);
        }
        let started = Instant::now();
        let described = wire
            .describe(&name)?
            .context("the coordinator does not know the id it just initialised")?;
        timed(6, started);
        let started = Instant::now();
        wire.end_txn(&name, described.pair, true)?;
        timed(7, started);
        let started = Instant::now();
        drop(producer);
        timed(8, started);
    }
    let kept = transactional(bootstrap, "bench-steps-kept")?;
    kept.init_transactions(WITHIN)?;
    for _ in 0..rounds {
        kept.begin_transaction()?;
        let started = Instant::now();
        data::send(&kept, topic, b"step 1")?;
        delivered(&kept)?;
        timed(9, started);
        let started = Instant::now();
        kept.commit_transaction(WITHIN)?;
        timed(10, started);
    }
    Ok(Steps {
        rows: STEPS.iter().copied().zip(samples).collect(),
    })
}

/// Serves delivery reports 1 ms at a time until nothing is in flight.
fn delivered(producer: &BaseProducer) -> Result<()> {
    let started = Instant::now();
    while producer.in_flight_count() > 0 {
        anyhow::ensure!(
            started.elapsed() < WITHIN,
            "a record was not delivered within {WITHIN:?}"
        );
        producer.poll(Duration::from_millis(1));
    }
    Ok(())
}

fn transactional(bootstrap: &str, name: &str) -> Result<BaseProducer> {
    Ok(ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("transactional.id", name)
        .set("linger.ms", "5")
        .create()?)
}

impl Steps {
    /// The table: each step's median and max.
    pub fn table(&self) -> Table {
        let mut table = Table::new(
            "What the exactly-once sink's steps cost on this broker (ms)",
            &["step", "rounds", "p50", "max"],
        );
        for (step, samples) in &self.rows {
            if let Some(summary) = Summary::of(samples) {
                table.row(vec![
                    (*step).to_owned(),
                    summary.count.to_string(),
                    cell(summary.p50),
                    cell(summary.max),
                ]);
            }
        }
        table
    }

    /// As JSON.
    pub fn to_json(&self) -> Value {
        self.rows
            .iter()
            .map(|(step, samples)| json!({"step": step, "ms": crate::stats::summary_json(samples)}))
            .collect()
    }
}

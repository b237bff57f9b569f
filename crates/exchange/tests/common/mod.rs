//! Helpers shared by the exchange's integration tests: ids, locations,
//! numbered batches, runtimes and a log capture. Nothing here sleeps to
//! synchronize: [`eventually`] polls a condition with a deadline.
#![allow(dead_code)]

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use holdfast_auth::{Auth, ClusterSecret};
use holdfast_exchange::{
    Batch, ChannelSpec, Event, Exchange, ExchangeOptions, InputGate, Interrupt, PartitionId,
};
use holdfast_runtime::ids::{ExecutionAttemptId, JobId, TaskId};
use holdfast_runtime::wiring::DataLocation;

/// The upper bound of every wait: generous, never reached when all is well.
pub const DEADLINE: Duration = Duration::from_secs(20);
pub const SECRET: &str = "exchange-test-secret-0123456789";
pub const OTHER_SECRET: &str = "another-cluster-secret-987654321";
pub const JOB: JobId = JobId::from_u128(0x00c0ffee);

pub fn auth(secret: &str) -> Auth {
    Auth::with_secret(ClusterSecret::from_bytes(secret.as_bytes()).unwrap())
}

/// The partition of producer `vertex.subtask` (attempt 0) on edge 0.
pub fn partition(vertex: u32, subtask: u32) -> PartitionId {
    PartitionId {
        job: JOB,
        producer: ExecutionAttemptId::new(TaskId::new(vertex, subtask), 0),
        edge: 0,
    }
}

pub fn location(exchange: &Exchange) -> DataLocation {
    exchange.location()
}

pub fn spec(partition: PartitionId, subpartition: u32, producer: &DataLocation) -> ChannelSpec {
    ChannelSpec {
        partition,
        subpartition,
        location: producer.clone(),
    }
}

/// An encoded batch carrying `(tag, seq)`.
pub fn encoded(tag: u32, seq: u32) -> Event {
    let mut bytes = tag.to_be_bytes().to_vec();
    bytes.extend_from_slice(&seq.to_be_bytes());
    Event::Batch(Batch::Encoded {
        records: 1,
        bytes: Bytes::from(bytes),
    })
}

/// The `(tag, seq)` of a batch made by [`encoded`] or a local `(u32, u32)`.
pub fn numbers(event: Event) -> (u32, u32) {
    match event {
        Event::Batch(Batch::Encoded { bytes, .. }) => (
            u32::from_be_bytes(bytes[..4].try_into().unwrap()),
            u32::from_be_bytes(bytes[4..8].try_into().unwrap()),
        ),
        Event::Batch(local) => *local.into_local::<(u32, u32)>().unwrap(),
        other => panic!("expected a batch, got {other:?}"),
    }
}

/// The next event, failing the test if none comes within [`DEADLINE`].
pub fn next(gate: &mut InputGate) -> (usize, Event) {
    gate.next(DEADLINE)
        .expect("the gate failed")
        .expect("nothing arrived within the deadline")
}

/// The next event, or the gate's error.
pub fn next_or_error(
    gate: &mut InputGate,
) -> Result<(usize, Event), holdfast_exchange::ExchangeError> {
    gate.next(DEADLINE)
        .map(|found| found.expect("nothing arrived within the deadline"))
}

/// Polls `condition` (every millisecond) until it holds; panics with
/// `what` after [`DEADLINE`].
pub fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let start = Instant::now();
    while !condition() {
        assert!(start.elapsed() < DEADLINE, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A multi-threaded runtime standing in for a TaskManager's service
/// threads; the test's own threads are the task threads.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Options for TaskManager `id` on 127.0.0.1, any port.
pub fn options(id: &str, auth: Auth, buffers: usize) -> ExchangeOptions {
    ExchangeOptions {
        buffers_per_channel: buffers,
        connect_backoff: Duration::from_millis(10),
        ..ExchangeOptions::new(id, auth)
    }
}

/// Two TaskManagers' exchanges, `tm-a` and `tm-b`, on one runtime.
pub fn pair(
    rt: &tokio::runtime::Runtime,
    a: ExchangeOptions,
    b: ExchangeOptions,
) -> (Exchange, Exchange) {
    rt.block_on(async {
        (
            Exchange::start(a).await.unwrap(),
            Exchange::start(b).await.unwrap(),
        )
    })
}

/// Everything logged by any thread of this process, from the first call
/// on (a global subscriber: each test binary that uses it calls it first).
pub fn captured_logs() -> Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    Arc::clone(LOGS.get_or_init(|| {
        let logs = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&logs);
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || LogBuffer(Arc::clone(&sink)))
            .with_ansi(false)
            .with_max_level(tracing::Level::DEBUG)
            .finish();
        tracing::subscriber::set_global_default(subscriber).unwrap();
        logs
    }))
}

pub fn logs_text(logs: &Mutex<Vec<u8>>) -> String {
    String::from_utf8_lossy(&logs.lock().unwrap()).into_owned()
}

pub struct LogBuffer(Arc<Mutex<Vec<u8>>>);

impl Write for LogBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A channel from `producer` to `consumer` carrying three batches.
pub fn one_good_channel(producer: &Exchange, consumer: &Exchange, vertex: u32) {
    let never = Interrupt::new();
    let mut writer = producer
        .create_partition(partition(vertex, 0), &[consumer.location()], &never)
        .unwrap();
    let mut gate = consumer
        .open_gate(
            vec![spec(partition(vertex, 0), 0, &producer.location())],
            &never,
        )
        .unwrap();
    for seq in 0..3 {
        writer.send(0, encoded(vertex, seq)).unwrap();
    }
    writer.finish().unwrap();
    for seq in 0..3 {
        assert_eq!(numbers(next(&mut gate).1), (vertex, seq));
    }
    assert!(matches!(next(&mut gate).1, Event::End));
}

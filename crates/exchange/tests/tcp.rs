//! Channels between two TaskManagers over real TCP on 127.0.0.1: two
//! `Exchange::start` instances ("tm-a", "tm-b") on one runtime, producer
//! and consumer tasks on their own threads.

mod common;

use std::collections::BTreeMap;
use std::thread;
use std::time::Duration;

use bytes::Bytes;
use common::*;
use holdfast_exchange::{Batch, Event, ExchangeError, ExchangeOptions, Interrupt};
use holdfast_runtime::wiring::DataLocation;

#[test]
fn a_slow_remote_consumer_bounds_the_producer_at_both_sides_buffers() {
    let rt = runtime();
    let (a, b) = pair(
        &rt,
        options("tm-a", auth(SECRET), 2),
        options("tm-b", auth(SECRET), 2),
    );
    let never = Interrupt::new();
    let mut writer = a
        .create_partition(partition(1, 0), &[b.location()], &never)
        .unwrap();
    assert!(writer.is_remote(0));
    let mut gate = b
        .open_gate(vec![spec(partition(1, 0), 0, &a.location())], &never)
        .unwrap();
    // Two batches fill the consumer's credits, two the producer's buffers:
    // these blocking sends return once the server has used every credit.
    for seq in 0..4 {
        writer.send(0, encoded(1, seq)).unwrap();
    }
    assert!(
        writer.try_send(0, encoded(1, 4)).unwrap().is_some(),
        "a 5th fits"
    );
    assert_eq!(a.metrics().buffered_batches, 2);
    eventually("the consumer side to hold 2 batches", || {
        b.metrics().buffered_batches == 2
    });

    // One pop returns one credit, which frees exactly one producer slot.
    assert_eq!(numbers(next(&mut gate).1), (1, 0));
    writer.send(0, encoded(1, 4)).unwrap();
    assert!(writer.try_send(0, encoded(1, 5)).unwrap().is_some());
    writer.send(0, Event::Watermark(99)).unwrap();
    writer
        .send(
            0,
            Event::Barrier(
                holdfast_types::CheckpointId(7),
                holdfast_types::SnapshotKind::Incremental {
                    base: Some(holdfast_types::CheckpointId(6)),
                },
            ),
        )
        .unwrap();
    writer.finish().unwrap();
    let mut rest = Vec::new();
    loop {
        match next(&mut gate).1 {
            Event::End => break,
            Event::Watermark(w) => rest.push(i64::from(u32::MAX) + w),
            Event::Barrier(id, kind) => {
                assert_eq!(
                    kind,
                    holdfast_types::SnapshotKind::Incremental {
                        base: Some(holdfast_types::CheckpointId(6))
                    },
                    "the barrier's kind crosses the wire"
                );
                rest.push(-(id.0 as i64))
            }
            batch => rest.push(i64::from(numbers(batch).1)),
        }
    }
    // Over TCP too, a barrier keeps its place after the batches and the
    // watermark sent before it.
    assert_eq!(rest, [1, 2, 3, 4, i64::from(u32::MAX) + 99, -7]);
    eventually("the connection to close on both sides", || {
        a.metrics().open_connections == 0 && b.metrics().open_connections == 0
    });
    assert_eq!(a.registered_partitions(), 0);
    // Every byte one side wrote, the other read; five 17-byte batch frames
    // at least.
    let (a, b) = (a.metrics(), b.metrics());
    assert!(a.bytes_sent >= 5 * 17, "{a:?}");
    assert_eq!(
        (a.bytes_sent, a.bytes_received),
        (b.bytes_received, b.bytes_sent)
    );
    assert_eq!((a.batches_sent, b.batches_received), (5, 5));
}

#[test]
fn all_to_all_over_two_task_managers_delivers_every_batch_once_in_channel_order() {
    const PARALLELISM: u32 = 6;
    const BATCHES: u32 = 200;
    let rt = runtime();
    let (a, b) = pair(
        &rt,
        options("tm-a", auth(SECRET), 2),
        options("tm-b", auth(SECRET), 2),
    );
    let exchanges = [a.clone(), b.clone()];
    let on = |subtask: u32| exchanges[(subtask % 2) as usize].clone();
    let consumer_locations: Vec<DataLocation> =
        (0..PARALLELISM).map(|c| on(c).location()).collect();
    let producer_locations: Vec<DataLocation> =
        (0..PARALLELISM).map(|p| on(p).location()).collect();

    let consumers: Vec<_> = (0..PARALLELISM)
        .map(|c| {
            let exchange = on(c);
            let channels = (0..PARALLELISM)
                .map(|p| spec(partition(1, p), c, &producer_locations[p as usize]))
                .collect();
            thread::spawn(move || {
                let mut gate = exchange.open_gate(channels, &Interrupt::new()).unwrap();
                let mut received: BTreeMap<(u32, u32), u32> = BTreeMap::new();
                let mut next_seq = vec![0u32; PARALLELISM as usize];
                while !gate.is_finished() {
                    match next(&mut gate) {
                        (_, Event::End | Event::Watermark(_)) => {}
                        (channel, batch) => {
                            let (tag, seq) = numbers(batch);
                            assert_eq!(tag, channel as u32, "batch on the wrong channel");
                            assert_eq!(seq, next_seq[channel], "order broken on channel {channel}");
                            next_seq[channel] += 1;
                            *received.entry((tag, seq)).or_default() += 1;
                        }
                    }
                }
                received
            })
        })
        .collect();
    let producers: Vec<_> = (0..PARALLELISM)
        .map(|p| {
            let exchange = on(p);
            let consumers = consumer_locations.clone();
            thread::spawn(move || {
                let never = Interrupt::new();
                let mut writer = exchange
                    .create_partition(partition(1, p), &consumers, &never)
                    .unwrap();
                for seq in 0..BATCHES {
                    for c in 0..PARALLELISM as usize {
                        writer.send(c, encoded(p, seq)).unwrap();
                    }
                    if seq % 50 == 0 {
                        writer
                            .broadcast_event(Event::Watermark(i64::from(seq)))
                            .unwrap();
                    }
                }
                writer.finish().unwrap();
            })
        })
        .collect();
    for producer in producers {
        producer.join().unwrap();
    }
    let mut total: BTreeMap<(u32, u32), u32> = BTreeMap::new();
    for consumer in consumers {
        for (key, count) in consumer.join().unwrap() {
            *total.entry(key).or_default() += count;
        }
    }
    // Every (producer, seq) arrived once at each of the consumers.
    assert_eq!(total.len(), (PARALLELISM * BATCHES) as usize);
    assert!(total.values().all(|&count| count == PARALLELISM));
    eventually("every connection to close", || {
        a.metrics().open_connections == 0 && b.metrics().open_connections == 0
    });
    assert_eq!(a.registered_partitions() + b.registered_partitions(), 0);
    assert_eq!(
        a.metrics().buffered_batches + b.metrics().buffered_batches,
        0
    );
}

#[test]
fn a_remote_request_waits_for_the_producer_then_times_out_naming_it() {
    let rt = runtime();
    let producer_side = ExchangeOptions {
        request_timeout: Duration::from_millis(300),
        ..options("tm-a", auth(SECRET), 2)
    };
    let (a, b) = pair(&rt, producer_side, options("tm-b", auth(SECRET), 2));
    let never = Interrupt::new();

    // Asked before the producer exists: it attaches when it appears.
    let mut early = b
        .open_gate(vec![spec(partition(1, 0), 0, &a.location())], &never)
        .unwrap();
    assert!(early.try_next().unwrap().is_none());
    let mut writer = a
        .create_partition(partition(1, 0), &[b.location()], &never)
        .unwrap();
    writer.send(0, encoded(1, 0)).unwrap();
    writer.finish().unwrap();
    assert_eq!(numbers(next(&mut early).1), (1, 0));
    assert!(matches!(next(&mut early).1, Event::End));

    // Never produced: the producer's side gives up after its timeout.
    let mut gate = b
        .open_gate(vec![spec(partition(9, 0), 0, &a.location())], &never)
        .unwrap();
    let error = gate.next(DEADLINE).unwrap_err();
    let ExchangeError::RequestTimeout { channel, waited } = &error else {
        panic!("expected a request timeout, got {error:?}");
    };
    assert_eq!(channel.partition, partition(9, 0));
    assert!(*waited >= Duration::from_millis(300));
    let text = error.to_string();
    assert!(
        text.contains("tm-a@127.0.0.1:") && text.contains("/9.0#0/"),
        "{text}"
    );
}

#[test]
fn a_dropped_remote_writer_fails_the_consumer_with_producer_failed() {
    let rt = runtime();
    let (a, b) = pair(
        &rt,
        options("tm-a", auth(SECRET), 2),
        options("tm-b", auth(SECRET), 2),
    );
    let never = Interrupt::new();
    let mut writer = a
        .create_partition(partition(1, 0), &[b.location()], &never)
        .unwrap();
    let mut gate = b
        .open_gate(vec![spec(partition(1, 0), 0, &a.location())], &never)
        .unwrap();
    writer.send(0, encoded(1, 0)).unwrap();
    drop(writer);
    let error = loop {
        match next_or_error(&mut gate) {
            Ok((0, batch @ Event::Batch(_))) => assert_eq!(numbers(batch), (1, 0)),
            Ok(other) => panic!("unexpected {other:?}"),
            Err(error) => break error,
        }
    };
    assert!(
        matches!(error, ExchangeError::ProducerFailed { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("tm-a@"), "{error}");
}

#[test]
fn a_dropped_remote_gate_wakes_the_blocked_producer_with_consumer_gone() {
    let rt = runtime();
    let (a, b) = pair(
        &rt,
        options("tm-a", auth(SECRET), 1),
        options("tm-b", auth(SECRET), 1),
    );
    let never = Interrupt::new();
    let mut writer = a
        .create_partition(partition(1, 0), &[b.location()], &never)
        .unwrap();
    let gate = b
        .open_gate(vec![spec(partition(1, 0), 0, &a.location())], &never)
        .unwrap();
    // One batch at the consumer, one at the producer: the third blocks.
    writer.send(0, encoded(1, 0)).unwrap();
    writer.send(0, encoded(1, 1)).unwrap();
    assert!(writer.try_send(0, encoded(1, 2)).unwrap().is_some());
    let producer = thread::spawn(move || writer.send(0, encoded(1, 2)));
    eventually("the send to block", || a.metrics().blocked_sends == 1);
    drop(gate);
    let result = producer.join().unwrap();
    let Err(ExchangeError::ConsumerGone { channel }) = &result else {
        panic!("expected ConsumerGone, got {result:?}");
    };
    assert!(channel.peer.starts_with("tm-b@"), "{channel}");
}

#[test]
fn an_interrupt_wakes_a_next_blocked_on_a_remote_channel() {
    let rt = runtime();
    let (a, b) = pair(
        &rt,
        options("tm-a", auth(SECRET), 2),
        options("tm-b", auth(SECRET), 2),
    );
    let interrupt = Interrupt::new();
    let mut gate = b
        .open_gate(vec![spec(partition(1, 0), 0, &a.location())], &interrupt)
        .unwrap();
    let consumer = thread::spawn(move || gate.next(Duration::from_secs(3600)).map(|_| ()));
    interrupt.trigger();
    assert!(matches!(
        consumer.join().unwrap(),
        Err(ExchangeError::Interrupted)
    ));
}

#[test]
fn an_unreachable_producer_fails_after_the_retries() {
    let rt = runtime();
    let (_a, b) = pair(
        &rt,
        options("tm-a", auth(SECRET), 2),
        ExchangeOptions {
            connect_retries: 2,
            ..options("tm-b", auth(SECRET), 2)
        },
    );
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let nowhere = DataLocation {
        task_manager: "tm-gone".into(),
        address: closed.local_addr().unwrap().to_string(),
    };
    drop(closed);
    let mut gate = b
        .open_gate(vec![spec(partition(1, 0), 0, &nowhere)], &Interrupt::new())
        .unwrap();
    let error = gate.next(DEADLINE).unwrap_err();
    assert!(
        matches!(error, ExchangeError::Connect { attempts: 3, .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("tm-gone@127.0.0.1:"), "{error}");
}

#[test]
fn what_cannot_cross_the_wire_is_refused_on_the_task_thread() {
    let rt = runtime();
    let small = ExchangeOptions {
        max_frame_bytes: 1024,
        ..options("tm-a", auth(SECRET), 2)
    };
    let (a, b) = pair(&rt, small, options("tm-b", auth(SECRET), 2));
    let never = Interrupt::new();
    let mut writer = a
        .create_partition(partition(1, 0), &[a.location(), b.location()], &never)
        .unwrap();
    assert!(!writer.is_remote(0) && writer.is_remote(1));
    writer.send(0, Event::Batch(Batch::local(1u8))).unwrap();
    assert!(matches!(
        writer.send(1, Event::Batch(Batch::local(1u8))),
        Err(ExchangeError::LocalBatchToRemote { .. })
    ));
    let big = Event::Batch(Batch::Encoded {
        records: 1,
        bytes: Bytes::from(vec![0u8; 2000]),
    });
    assert!(matches!(
        writer.send(1, big),
        Err(ExchangeError::BatchTooLarge { bytes: 2000, .. })
    ));
    assert!(matches!(
        writer.broadcast_event(Event::Batch(Batch::local(1u8))),
        Err(ExchangeError::BroadcastLocalBatch { .. })
    ));
}

#[test]
fn large_and_small_batches_cross_intact_and_in_order() {
    let rt = runtime();
    let (a, b) = pair(
        &rt,
        options("tm-a", auth(SECRET), 3),
        options("tm-b", auth(SECRET), 3),
    );
    let never = Interrupt::new();
    let mut writer = a
        .create_partition(partition(1, 0), &[b.location()], &never)
        .unwrap();
    let mut gate = b
        .open_gate(vec![spec(partition(1, 0), 0, &a.location())], &never)
        .unwrap();
    let sizes = [
        0usize,
        1,
        16 * 1024 - 1,
        16 * 1024,
        1 << 20,
        7,
        3 << 20,
        100,
    ];
    let batch = |i: usize, size: usize| {
        Bytes::from((0..size).map(|j| (i * 31 + j) as u8).collect::<Vec<_>>())
    };
    let producer = thread::spawn(move || {
        for (i, size) in sizes.into_iter().enumerate() {
            let bytes = batch(i, size);
            writer
                .send(
                    0,
                    Event::Batch(Batch::Encoded {
                        records: i as u32,
                        bytes,
                    }),
                )
                .unwrap();
        }
        writer.finish().unwrap();
    });
    for (i, size) in sizes.into_iter().enumerate() {
        match next(&mut gate).1 {
            Event::Batch(Batch::Encoded { records, bytes }) => {
                assert_eq!(records, i as u32);
                assert!(bytes == batch(i, size), "batch {i} of {size} bytes differs");
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(matches!(next(&mut gate).1, Event::End));
    producer.join().unwrap();
}

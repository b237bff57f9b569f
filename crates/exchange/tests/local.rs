//! In-memory channels between tasks of one TaskManager: order, End,
//! backpressure, attach-before-produce, timeouts, failures, interrupts,
//! blocking for alignment. Producer and consumer run on their own threads,
//! as task threads do.

mod common;

use std::thread;
use std::time::Duration;

use common::*;
use holdfast_auth::Auth;
use holdfast_exchange::{Batch, Event, Exchange, ExchangeError, ExchangeOptions, Interrupt};

fn local(buffers: usize) -> Exchange {
    Exchange::local("tm-a", buffers)
}

fn local_batch(tag: u32, seq: u32) -> Event {
    Event::Batch(Batch::local((tag, seq)))
}

#[test]
fn events_arrive_in_order_then_end_and_the_partition_leaves() {
    let exchange = local(4);
    let here = exchange.location();
    let never = Interrupt::new();
    let mut writer = exchange
        .create_partition(partition(1, 0), std::slice::from_ref(&here), &never)
        .unwrap();
    let mut gate = exchange
        .open_gate(vec![spec(partition(1, 0), 0, &here)], &never)
        .unwrap();
    let producer = thread::spawn(move || {
        for seq in 0..1000 {
            writer.send(0, local_batch(7, seq)).unwrap();
            if seq % 100 == 0 {
                writer.send(0, Event::Watermark(i64::from(seq))).unwrap();
            }
            if seq % 250 == 249 {
                let id = holdfast_types::CheckpointId(u64::from(seq / 250 + 1));
                writer
                    .send(0, Event::Barrier(id, holdfast_types::SnapshotKind::Full))
                    .unwrap();
            }
        }
        writer.finish().unwrap();
    });
    let mut expected = 0;
    let mut watermarks = Vec::new();
    let mut barriers = Vec::new();
    loop {
        match next(&mut gate) {
            (0, Event::End) => break,
            (0, Event::Watermark(w)) => watermarks.push(w),
            // Exactly where it was sent: after 250 × n batches.
            (0, Event::Barrier(id, _)) => barriers.push((id.0, expected)),
            (0, batch) => {
                assert_eq!(numbers(batch), (7, expected));
                expected += 1;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    producer.join().unwrap();
    assert_eq!(expected, 1000);
    // Watermarks keep their place; a consumer never sees one out of order.
    assert!(watermarks.windows(2).all(|w| w[0] < w[1]), "{watermarks:?}");
    assert_eq!(barriers, [(1, 250), (2, 500), (3, 750), (4, 1000)]);
    assert!(gate.is_finished());
    assert_eq!(
        gate.next(Duration::from_secs(60)).unwrap().map(|x| x.0),
        None
    );
    assert_eq!(exchange.registered_partitions(), 0);
    let metrics = exchange.metrics();
    assert_eq!(
        (metrics.batches_sent, metrics.batches_received),
        (1000, 1000)
    );
    assert_eq!(metrics.buffered_batches, 0);
}

#[test]
fn a_slow_consumer_bounds_the_producer_at_exactly_the_buffer_count() {
    let exchange = local(3);
    let here = exchange.location();
    let never = Interrupt::new();
    let mut writer = exchange
        .create_partition(partition(1, 0), std::slice::from_ref(&here), &never)
        .unwrap();
    let mut gate = exchange
        .open_gate(vec![spec(partition(1, 0), 0, &here)], &never)
        .unwrap();
    let mut accepted = 0;
    while writer
        .try_send(0, local_batch(1, accepted))
        .unwrap()
        .is_none()
    {
        accepted += 1;
    }
    assert_eq!(accepted, 3);
    // Watermarks and End never count against the buffers.
    assert!(writer.try_send(0, Event::Watermark(1)).unwrap().is_none());
    assert_eq!(exchange.metrics().buffered_batches, 3);

    // A blocking send waits until the consumer takes one.
    let producer = thread::spawn(move || {
        writer.send(0, local_batch(1, 3)).unwrap();
        writer
    });
    eventually("the send to block", || {
        exchange.metrics().blocked_sends == 1
    });
    assert_eq!(numbers(next(&mut gate).1), (1, 0));
    let mut writer = producer.join().unwrap();
    assert!(writer.try_send(0, local_batch(1, 4)).unwrap().is_some());
    writer.finish().unwrap();
    let mut seqs = Vec::new();
    loop {
        match next(&mut gate).1 {
            Event::End => break,
            Event::Watermark(w) => assert_eq!(w, 1),
            batch => seqs.push(numbers(batch).1),
        }
    }
    assert_eq!(seqs, [1, 2, 3]);
}

#[test]
fn a_consumer_may_open_its_gate_before_the_producer_exists() {
    let exchange = local(2);
    let here = exchange.location();
    let never = Interrupt::new();
    let mut gate = exchange
        .open_gate(
            vec![
                spec(partition(1, 0), 0, &here),
                spec(partition(1, 1), 0, &here),
            ],
            &never,
        )
        .unwrap();
    assert!(gate.try_next().unwrap().is_none());
    let producers: Vec<_> = (0..2)
        .map(|subtask| {
            let exchange = exchange.clone();
            let here = here.clone();
            thread::spawn(move || {
                let never = Interrupt::new();
                let mut writer = exchange
                    .create_partition(partition(1, subtask), &[here], &never)
                    .unwrap();
                for seq in 0..5 {
                    writer.send(0, local_batch(subtask, seq)).unwrap();
                }
                writer.finish().unwrap();
            })
        })
        .collect();
    let mut seen = [0u32; 2];
    while !gate.is_finished() {
        match next(&mut gate) {
            (channel, Event::End) => assert_eq!(seen[channel], 5),
            (channel, batch) => {
                assert_eq!(numbers(batch), (channel as u32, seen[channel]));
                seen[channel] += 1;
            }
        }
    }
    for producer in producers {
        producer.join().unwrap();
    }
}

#[test]
fn a_request_times_out_when_the_producer_never_appears() {
    let options = ExchangeOptions {
        request_timeout: Duration::from_millis(200),
        ..ExchangeOptions::new("tm-a", Auth::Disabled)
    };
    let exchange = Exchange::local_with_options(options).unwrap();
    let here = exchange.location();
    let never = Interrupt::new();
    let mut gate = exchange
        .open_gate(vec![spec(partition(1, 0), 0, &here)], &never)
        .unwrap();
    let error = gate.next(DEADLINE).unwrap_err();
    let ExchangeError::RequestTimeout { channel, waited } = &error else {
        panic!("expected a request timeout, got {error:?}");
    };
    assert_eq!(channel.partition, partition(1, 0));
    assert!(*waited >= Duration::from_millis(200));
    assert!(error.to_string().contains("tm-a"), "{error}");
    // Sticky; and a producer that comes late learns its consumer is gone.
    assert!(matches!(
        gate.try_next(),
        Err(ExchangeError::RequestTimeout { .. })
    ));
    let mut writer = exchange
        .create_partition(partition(1, 0), &[here], &never)
        .unwrap();
    assert!(matches!(
        writer.send(0, local_batch(0, 0)),
        Err(ExchangeError::ConsumerGone { .. })
    ));
}

#[test]
fn a_dropped_writer_fails_its_consumers() {
    let exchange = local(2);
    let here = exchange.location();
    let never = Interrupt::new();
    let mut writer = exchange
        .create_partition(partition(1, 0), &[here.clone(), here.clone()], &never)
        .unwrap();
    let mut gate = exchange
        .open_gate(vec![spec(partition(1, 0), 1, &here)], &never)
        .unwrap();
    writer.send(1, local_batch(0, 0)).unwrap();
    thread::spawn(move || drop(writer)).join().unwrap();
    let error = gate.next(DEADLINE).unwrap_err();
    assert!(
        matches!(&error, ExchangeError::ProducerFailed { channel } if channel.subpartition == 1),
        "{error:?}"
    );
    // Subpartition 0's consumer has not learned of the failure yet: the
    // partition stays until it does, or until the job is released.
    assert_eq!(exchange.registered_partitions(), 1);
    let mut late = exchange
        .open_gate(vec![spec(partition(1, 0), 0, &here)], &never)
        .unwrap();
    assert!(matches!(
        late.try_next(),
        Err(ExchangeError::ProducerFailed { .. })
    ));
    assert_eq!(exchange.registered_partitions(), 0);
}

#[test]
fn a_dropped_gate_wakes_its_blocked_producer_with_consumer_gone() {
    let exchange = local(1);
    let here = exchange.location();
    let never = Interrupt::new();
    let mut writer = exchange
        .create_partition(partition(1, 0), std::slice::from_ref(&here), &never)
        .unwrap();
    let gate = exchange
        .open_gate(vec![spec(partition(1, 0), 0, &here)], &never)
        .unwrap();
    writer.send(0, local_batch(0, 0)).unwrap();
    let producer = thread::spawn(move || writer.send(0, local_batch(0, 1)));
    eventually("the send to block", || {
        exchange.metrics().blocked_sends == 1
    });
    drop(gate);
    let result = producer.join().unwrap();
    assert!(
        matches!(result, Err(ExchangeError::ConsumerGone { .. })),
        "{result:?}"
    );
    assert_eq!(exchange.metrics().blocked_sends, 0);
}

#[test]
fn an_interrupt_wakes_a_blocked_send_and_a_blocked_next() {
    let exchange = local(1);
    let here = exchange.location();
    let producer_interrupt = Interrupt::new();
    let consumer_interrupt = Interrupt::new();
    let mut writer = exchange
        .create_partition(
            partition(1, 0),
            std::slice::from_ref(&here),
            &producer_interrupt,
        )
        .unwrap();
    writer.send(0, local_batch(0, 0)).unwrap();
    let producer = thread::spawn(move || writer.send(0, local_batch(0, 1)));
    // A gate on a partition nobody produces: next blocks.
    let mut gate = exchange
        .open_gate(vec![spec(partition(2, 0), 0, &here)], &consumer_interrupt)
        .unwrap();
    let consumer = thread::spawn(move || gate.next(Duration::from_secs(3600)).map(|_| ()));
    eventually("the send to block", || {
        exchange.metrics().blocked_sends == 1
    });
    producer_interrupt.trigger();
    consumer_interrupt.trigger();
    assert!(matches!(
        producer.join().unwrap(),
        Err(ExchangeError::Interrupted)
    ));
    assert!(matches!(
        consumer.join().unwrap(),
        Err(ExchangeError::Interrupted)
    ));
}

#[test]
fn release_job_wakes_blocked_producers_and_forgets_partitions() {
    let exchange = local(1);
    let here = exchange.location();
    let never = Interrupt::new();
    let mut writer = exchange
        .create_partition(partition(1, 0), std::slice::from_ref(&here), &never)
        .unwrap();
    assert!(matches!(
        exchange.create_partition(partition(1, 0), std::slice::from_ref(&here), &never),
        Err(ExchangeError::DuplicatePartition { .. })
    ));
    writer.send(0, local_batch(0, 0)).unwrap();
    let producer = thread::spawn(move || writer.send(0, local_batch(0, 1)));
    eventually("the send to block", || {
        exchange.metrics().blocked_sends == 1
    });
    exchange.release_job(JOB);
    assert!(matches!(
        producer.join().unwrap(),
        Err(ExchangeError::Released { .. })
    ));
    assert_eq!(exchange.registered_partitions(), 0);
}

#[test]
fn a_blocked_channel_holds_its_data_until_unblocked_while_others_flow() {
    let exchange = local(2);
    let here = exchange.location();
    let never = Interrupt::new();
    let mut writers: Vec<_> = (0..2)
        .map(|subtask| {
            exchange
                .create_partition(partition(1, subtask), std::slice::from_ref(&here), &never)
                .unwrap()
        })
        .collect();
    let mut gate = exchange
        .open_gate(
            vec![
                spec(partition(1, 0), 0, &here),
                spec(partition(1, 1), 0, &here),
            ],
            &never,
        )
        .unwrap();
    gate.block(0);
    for (tag, writer) in writers.iter_mut().enumerate() {
        writer.send(0, local_batch(tag as u32, 0)).unwrap();
        writer.send(0, local_batch(tag as u32, 1)).unwrap();
    }
    assert_eq!(numbers(next(&mut gate).1), (1, 0));
    assert_eq!(numbers(next(&mut gate).1), (1, 1));
    assert!(gate.try_next().unwrap().is_none(), "channel 0 is blocked");
    assert!(writers[0].try_send(0, local_batch(0, 2)).unwrap().is_some());
    gate.unblock(0);
    assert_eq!(numbers(next(&mut gate).1), (0, 0));
}

#[test]
fn channels_with_data_take_turns() {
    let exchange = local(4);
    let here = exchange.location();
    let never = Interrupt::new();
    let mut gate = exchange
        .open_gate(
            (0..3).map(|s| spec(partition(1, s), 0, &here)).collect(),
            &never,
        )
        .unwrap();
    for subtask in 0..3 {
        let mut writer = exchange
            .create_partition(partition(1, subtask), std::slice::from_ref(&here), &never)
            .unwrap();
        for seq in 0..4 {
            writer.send(0, local_batch(subtask, seq)).unwrap();
        }
        writer.finish().unwrap();
    }
    let order: Vec<usize> = (0..9).map(|_| next(&mut gate).0).collect();
    // Every window of three consecutive events holds each channel once.
    for window in order.chunks(3) {
        let mut sorted = window.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, [0, 1, 2], "{order:?}");
    }
}

#[test]
fn an_in_memory_exchange_refuses_remote_peers_clearly() {
    let exchange = local(2);
    let elsewhere = holdfast_runtime::wiring::DataLocation {
        task_manager: "tm-b".into(),
        address: "10.0.0.2:6121".into(),
    };
    let never = Interrupt::new();
    let error = exchange
        .create_partition(partition(1, 0), std::slice::from_ref(&elsewhere), &never)
        .unwrap_err();
    assert!(error.to_string().contains("tm-b@10.0.0.2:6121"), "{error}");
    let error = exchange
        .open_gate(vec![spec(partition(1, 0), 0, &elsewhere)], &never)
        .unwrap_err();
    assert!(
        matches!(error, ExchangeError::RemoteUnsupported { .. }),
        "{error:?}"
    );
}

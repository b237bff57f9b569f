//! Scenario tests of [`WindowCore`]: each asserts the exact results emitted.

use super::super::{Count, Reduce, Sum};
use super::*;

type Out<O> = Vec<WindowResult<&'static str, O>>;

fn counting(spec: WindowSpec, lateness: i64) -> WindowCore<&'static str, i64, Count> {
    let domain = TimeDomain::EventTime {
        allowed_lateness: lateness,
    };
    WindowCore::new(spec, domain, Count).unwrap()
}

fn result<O>(
    key: &'static str,
    start: i64,
    end: i64,
    value: O,
    firing: Firing,
) -> WindowResult<&'static str, O> {
    WindowResult {
        key,
        window: Window::new(start, end),
        value,
        firing,
    }
}

fn feed(
    core: &mut WindowCore<&'static str, i64, Count>,
    key: &'static str,
    timestamps: &[i64],
) -> Out<u64> {
    let mut out = Vec::new();
    for &ts in timestamps {
        core.on_record(key, ts, &ts, &mut out);
    }
    out
}

#[test]
fn out_of_order_events_before_the_watermark_are_all_counted() {
    let mut core = counting(WindowSpec::tumbling(10), 0);
    assert!(feed(&mut core, "a", &[5, 1, 9, 3]).is_empty());
    let mut out = Vec::new();
    core.on_watermark(8, &mut out);
    assert!(out.is_empty());
    assert!(feed(&mut core, "a", &[7, 2, 0]).is_empty());
    core.on_watermark(9, &mut out);
    assert_eq!(out, [result("a", 0, 10, 7, Firing::OnTime)]);
    assert_eq!(core.late_dropped(), 0);
    assert_eq!(core.pending_windows(), 0);
}

#[test]
fn late_event_within_lateness_fires_late_with_updated_value() {
    let mut core = counting(WindowSpec::tumbling(10), 5);
    feed(&mut core, "a", &[1, 2]);
    let mut out = Vec::new();
    core.on_watermark(9, &mut out);
    assert_eq!(out, [result("a", 0, 10, 2, Firing::OnTime)]);
    assert_eq!(core.pending_windows(), 1, "kept for the allowed lateness");

    assert_eq!(
        feed(&mut core, "a", &[3]),
        [result("a", 0, 10, 3, Firing::Late)]
    );
    let mut out = Vec::new();
    core.on_watermark(13, &mut out);
    assert!(out.is_empty(), "no second on-time firing");
    assert_eq!(
        feed(&mut core, "a", &[4]),
        [result("a", 0, 10, 4, Firing::Late)]
    );

    core.on_watermark(14, &mut out);
    assert!(out.is_empty());
    assert_eq!(
        core.pending_windows(),
        0,
        "purged at max_timestamp + lateness"
    );
    assert!(feed(&mut core, "a", &[5]).is_empty());
    assert_eq!(core.late_dropped(), 1);
}

#[test]
fn window_whose_records_all_came_late_fires_late_only() {
    let mut core = counting(WindowSpec::tumbling(10), 100);
    let mut out = Vec::new();
    core.on_watermark(50, &mut out);
    assert_eq!(
        feed(&mut core, "k", &[15]),
        [result("k", 10, 20, 1, Firing::Late)]
    );
    core.on_watermark(60, &mut out);
    assert!(out.is_empty());
}

#[test]
fn too_late_event_is_dropped_and_counted() {
    let mut core = counting(WindowSpec::tumbling(10), 0);
    let mut out = Vec::new();
    core.on_watermark(9, &mut out);
    assert_eq!(
        core.on_record("a", 5, &5, &mut out),
        RecordOutcome::DroppedLate
    );
    assert_eq!(
        core.on_record("a", 10, &10, &mut out),
        RecordOutcome::Assigned
    );
    assert!(out.is_empty());
    assert_eq!(core.late_dropped(), 1);
    assert_eq!(core.pending_windows(), 1);
}

#[test]
fn sliding_windows_hold_a_record_in_size_over_slide_windows() {
    let mut core = counting(WindowSpec::sliding(10, 2), 0);
    feed(&mut core, "a", &[9]);
    assert_eq!(core.pending_windows(), 5);
    let mut out = Vec::new();
    core.finish(&mut out);
    let windows: Vec<_> = out
        .iter()
        .map(|r| (r.window.start, r.window.end, r.value))
        .collect();
    assert_eq!(
        windows,
        [(0, 10, 1), (2, 12, 1), (4, 14, 1), (6, 16, 1), (8, 18, 1)]
    );

    let mut core = counting(WindowSpec::sliding(10, 5), 0);
    feed(&mut core, "a", &[7, 12]);
    let mut out = Vec::new();
    core.on_watermark(9, &mut out);
    assert_eq!(out, [result("a", 0, 10, 1, Firing::OnTime)]);
    out.clear();
    core.on_watermark(14, &mut out);
    assert_eq!(out, [result("a", 5, 15, 2, Firing::OnTime)]);
}

#[test]
fn sliding_late_record_updates_fired_and_pending_windows() {
    let mut core = counting(WindowSpec::sliding(10, 5), 10);
    feed(&mut core, "a", &[7]);
    let mut out = Vec::new();
    core.on_watermark(9, &mut out);
    assert_eq!(out, [result("a", 0, 10, 1, Firing::OnTime)]);
    // 8 is in [0, 10) (fired: late update) and [5, 15) (pending: silent).
    assert_eq!(
        feed(&mut core, "a", &[8]),
        [result("a", 0, 10, 2, Firing::Late)]
    );
    out.clear();
    core.on_watermark(14, &mut out);
    assert_eq!(out, [result("a", 5, 15, 2, Firing::OnTime)]);
}

#[test]
fn record_in_a_gap_between_sliding_windows_is_ignored() {
    let mut core = counting(WindowSpec::sliding(3, 10), 0);
    let mut out = Vec::new();
    assert_eq!(core.on_record("a", 5, &5, &mut out), RecordOutcome::Ignored);
    assert_eq!(
        core.on_record("a", 12, &12, &mut out),
        RecordOutcome::Assigned
    );
    core.on_watermark(100, &mut out);
    assert_eq!(
        core.on_record("a", 5, &5, &mut out),
        RecordOutcome::DroppedLate
    );
    assert_eq!(out, [result("a", 10, 13, 1, Firing::OnTime)]);
    assert_eq!(core.late_dropped(), 1);
}

#[test]
fn processing_time_windows_fire_on_processing_time() {
    let sum = Sum::new(|v: &i64| *v);
    let mut core =
        WindowCore::new(WindowSpec::tumbling(10), TimeDomain::ProcessingTime, sum).unwrap();
    let mut out = Vec::new();
    core.on_record("a", 3, &5, &mut out);
    core.on_record("b", 4, &1, &mut out);
    core.on_record("a", 8, &2, &mut out);
    core.on_record("a", 12, &100, &mut out);
    assert!(out.is_empty());
    assert_eq!(core.next_timer(), Some(9));
    core.on_watermark(1_000, &mut out);
    assert!(out.is_empty(), "watermarks do not drive processing time");
    core.on_processing_time(8, &mut out);
    assert!(out.is_empty());
    core.on_processing_time(9, &mut out);
    assert_eq!(
        out,
        [
            result("a", 0, 10, 7, Firing::OnTime),
            result("b", 0, 10, 1, Firing::OnTime)
        ]
    );
    assert_eq!(core.next_timer(), Some(19));
    assert_eq!(core.pending_windows(), 1);
    assert_eq!(core.watermark(), 9);
}

#[test]
fn processing_time_fires_windows_created_behind_the_clock() {
    let mut core = WindowCore::<&str, i64, _>::new(
        WindowSpec::tumbling(10),
        TimeDomain::ProcessingTime,
        Count,
    )
    .unwrap();
    let mut out = Vec::new();
    core.on_processing_time(100, &mut out);
    core.on_record("a", 50, &0, &mut out);
    assert_eq!(core.next_timer(), Some(59));
    core.on_processing_time(90, &mut out);
    assert_eq!(out, [result("a", 50, 60, 1, Firing::OnTime)]);
    assert_eq!(core.watermark(), 100);
}

#[test]
fn finish_fires_pending_windows_on_time() {
    let mut core = counting(WindowSpec::tumbling(10), 5);
    feed(&mut core, "a", &[1]);
    let mut out = Vec::new();
    core.on_watermark(9, &mut out);
    feed(&mut core, "b", &[25, -3]);
    feed(&mut core, "a", &[21]);
    out.clear();
    core.finish(&mut out);
    assert_eq!(
        out,
        [
            result("b", 20, 30, 1, Firing::OnTime),
            result("a", 20, 30, 1, Firing::OnTime),
        ]
    );
    assert_eq!(core.pending_windows(), 0);
    assert_eq!(core.watermark(), i64::MAX);
    assert_eq!(core.next_timer(), None);
    assert!(feed(&mut core, "a", &[1_000]).is_empty());
    assert_eq!(
        core.late_dropped(),
        2,
        "-3 was too late for watermark 9; 1000 came after finish"
    );
}

#[test]
fn finish_in_processing_time_fires_everything() {
    let mut core = WindowCore::<&str, i64, _>::new(
        WindowSpec::sliding(10, 5),
        TimeDomain::ProcessingTime,
        Count,
    )
    .unwrap();
    let mut out = Vec::new();
    core.on_record("a", 7, &0, &mut out);
    core.finish(&mut out);
    assert_eq!(
        out,
        [
            result("a", 0, 10, 1, Firing::OnTime),
            result("a", 5, 15, 1, Firing::OnTime)
        ]
    );
    assert_eq!(core.pending_windows(), 0);
}

#[test]
fn backwards_watermark_is_ignored() {
    let mut core = counting(WindowSpec::tumbling(10), 0);
    let mut out = Vec::new();
    core.on_watermark(20, &mut out);
    core.on_watermark(5, &mut out);
    assert_eq!(core.watermark(), 20);
    assert!(feed(&mut core, "a", &[12]).is_empty());
    assert_eq!(core.late_dropped(), 1, "still judged against watermark 20");
    feed(&mut core, "a", &[25]);
    core.on_watermark(15, &mut out);
    assert!(out.is_empty());
    core.on_watermark(29, &mut out);
    assert_eq!(out, [result("a", 20, 30, 1, Firing::OnTime)]);
}

#[test]
fn one_firing_orders_by_window_then_first_arrival() {
    let reduce = Reduce(|a: &i64, b: &i64| a + b);
    let mut core =
        WindowCore::new(WindowSpec::tumbling(10), TimeDomain::event_time(), reduce).unwrap();
    let mut out = Vec::new();
    for (key, ts) in [
        ("z", 15),
        ("y", 3),
        ("x", 17),
        ("z", 4),
        ("y", 16),
        ("x", 1),
    ] {
        core.on_record(key, ts, &ts, &mut out);
    }
    core.on_watermark(100, &mut out);
    let got: Vec<_> = out
        .iter()
        .map(|r| (r.key, r.window.start, r.value))
        .collect();
    assert_eq!(
        got,
        [
            ("y", 0, Some(3)),
            ("z", 0, Some(4)),
            ("x", 0, Some(1)),
            ("z", 10, Some(15)),
            ("x", 10, Some(17)),
            ("y", 10, Some(16))
        ]
    );
}

#[test]
fn next_timer_skips_windows_already_fired() {
    let mut core = counting(WindowSpec::tumbling(10), 50);
    assert_eq!(core.next_timer(), None);
    feed(&mut core, "a", &[5, 25]);
    assert_eq!(core.next_timer(), Some(9));
    let mut out = Vec::new();
    core.on_watermark(8, &mut out);
    assert!(out.is_empty());
    core.on_watermark(9, &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(core.next_timer(), Some(29), "[0, 10) is kept but has fired");
}

#[test]
fn invalid_specs_are_rejected_naming_the_field() {
    let err =
        WindowCore::<u8, u8, _>::new(WindowSpec::sliding(10, 0), TimeDomain::event_time(), Count)
            .unwrap_err();
    assert_eq!(err.field(), "slide");
    let domain = TimeDomain::EventTime {
        allowed_lateness: -10,
    };
    let err = WindowCore::<u8, u8, _>::new(WindowSpec::tumbling(10), domain, Count).unwrap_err();
    assert_eq!((err.field(), err.value()), ("allowed_lateness", -10));
}

#[test]
fn extreme_times_do_not_panic() {
    let spec = WindowSpec::Sliding {
        size: 7,
        slide: 3,
        offset: -2,
    };
    for lateness in [0, 1, i64::MAX] {
        let mut core = counting(spec, lateness);
        let mut out = Vec::new();
        for ts in [i64::MIN, i64::MIN + 1, -1, 0, i64::MAX - 1, i64::MAX] {
            core.on_record("a", ts, &ts, &mut out);
            let _ = core.next_timer();
        }
        for wm in [i64::MIN, i64::MIN + 5, 0, i64::MAX - 3, i64::MAX] {
            core.on_watermark(wm, &mut out);
            core.on_record("b", wm, &wm, &mut out);
        }
        core.finish(&mut out);
        assert_eq!(core.pending_windows(), 0);
        assert!(out.iter().all(|r| r.window.start < r.window.end));
        assert!(out.iter().all(|r| r.window.max_timestamp() < i64::MAX));
    }
}

/// A snapshot keeps the state it was taken with while the core goes on
/// (keys updated and added, a window fired and another opened), and the
/// core's own results are as if no snapshot had been taken.
#[test]
fn a_snapshot_keeps_its_state_while_the_core_goes_on() {
    let spec = WindowSpec::tumbling(10);
    let mut core = counting(spec, 0);
    let mut twin = counting(spec, 0);
    for c in [&mut core, &mut twin] {
        feed(c, "a", &[1, 2]);
        feed(c, "b", &[3, 12]);
    }
    let snapshot = core.snapshot();
    let expected = twin.snapshot().state();
    let mut out = Vec::new();
    let mut twin_out = Vec::new();
    for (c, out) in [(&mut core, &mut out), (&mut twin, &mut twin_out)] {
        feed(c, "a", &[4, 13]);
        feed(c, "c", &[5]);
        c.on_watermark(9, out);
        feed(c, "b", &[14, 25]);
    }
    assert_eq!(
        snapshot.state(),
        expected,
        "the snapshot is as it was taken"
    );
    assert_eq!(out, twin_out);
    assert_eq!(
        out,
        [
            result("a", 0, 10, 3, Firing::OnTime),
            result("b", 0, 10, 1, Firing::OnTime),
            result("c", 0, 10, 1, Firing::OnTime),
        ]
    );
    drop(snapshot);
    core.on_watermark(30, &mut out);
    twin.on_watermark(30, &mut twin_out);
    assert_eq!(out, twin_out, "and after the snapshot is dropped");
    assert_eq!(core.pending_windows(), 0);
}

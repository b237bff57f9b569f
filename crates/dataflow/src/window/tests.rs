//! Property tests: window assignment against brute force, and
//! [`WindowCore`] against a naive model and a reference computed straight
//! from the inputs, for random specs, out-of-order streams and watermarks.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;

// ---------------------------------------------------------------- assignment

fn spec_of(size: i64, slide: Option<i64>, offset: i64) -> WindowSpec {
    match slide {
        None => WindowSpec::Tumbling { size, offset },
        Some(slide) => WindowSpec::Sliding {
            size,
            slide,
            offset,
        },
    }
}

/// Every grid start `s` in `(ts - size, ts]`, tried one by one; windows are
/// clamped into `i64` and kept only if they still contain `ts`.
fn brute_windows(spec: WindowSpec, ts: i64) -> Vec<Window> {
    let (size, slide, offset) = (spec.size(), spec.slide(), spec.offset());
    let t = i128::from(ts);
    (t - i128::from(size) + 1..=t)
        .filter(|s| (s - i128::from(offset)).rem_euclid(i128::from(slide)) == 0)
        .map(|s| Window::clamped(s, size))
        .filter(|w| w.contains(ts))
        .collect()
}

/// Grid indices `k` (start = offset + k * slide) from below the first to
/// past the last candidate, each checked against `[start, start + size)`.
fn grid_windows(spec: WindowSpec, ts: i64) -> Vec<Window> {
    let (size, slide, offset) = (
        i128::from(spec.size()),
        i128::from(spec.slide()),
        i128::from(spec.offset()),
    );
    let t = i128::from(ts);
    let k_low = (t - size - offset).div_euclid(slide) - 1;
    let k_high = (t - offset).div_euclid(slide) + 1;
    (k_low..=k_high)
        .map(|k| offset + k * slide)
        .filter(|&s| s <= t && t < s + size)
        .map(|s| Window::clamped(s, spec.size()))
        .filter(|w| w.contains(ts))
        .collect()
}

fn any_timestamp() -> impl Strategy<Value = i64> {
    prop_oneof![
        -1_000i64..1_000,
        any::<i64>(),
        i64::MIN..i64::MIN + 100,
        i64::MAX - 100..=i64::MAX,
    ]
}

/// Valid specs with small sizes and slides (brute force stays cheap).
fn small_spec() -> impl Strategy<Value = WindowSpec> {
    (1i64..40, prop::option::of(1i64..40)).prop_flat_map(|(size, slide)| {
        let step = slide.unwrap_or(size);
        (-(step - 1)..step).prop_map(move |offset| spec_of(size, slide, offset))
    })
}

/// Valid specs over the whole `i64` range, at most ~1000 windows a record.
fn large_spec() -> impl Strategy<Value = WindowSpec> {
    (1i64..=i64::MAX, any::<bool>(), 1i64..=i64::MAX).prop_flat_map(|(size, sliding, raw)| {
        let slide = if sliding {
            Some(
                (size / 1000)
                    .max(1)
                    .saturating_add(raw % size.saturating_mul(2)),
            )
        } else {
            None
        };
        let step = slide.unwrap_or(size);
        (-(step - 1)..=step - 1).prop_map(move |offset| spec_of(size, slide, offset))
    })
}

proptest! {
    #[test]
    fn assignment_matches_brute_force(spec in small_spec(), ts in any_timestamp()) {
        let got: Vec<Window> = spec.assigner().unwrap().windows_for(ts).collect();
        prop_assert_eq!(&got, &brute_windows(spec, ts));
        for w in &got {
            prop_assert!(w.contains(ts));
        }
        if ts != i64::MAX && spec.slide() <= spec.size() {
            let per = spec.size() / spec.slide();
            prop_assert!(got.len() as i64 == per || got.len() as i64 == per + 1);
        }
    }

    #[test]
    fn assignment_matches_grid_for_large_values(spec in large_spec(), ts in any_timestamp()) {
        prop_assume!(spec.validate().is_ok());
        let got: Vec<Window> = spec.assigner().unwrap().windows_for(ts).collect();
        prop_assert_eq!(got, grid_windows(spec, ts));
    }
}

// ------------------------------------------------------------------- engine

/// Collects record ids: a result says exactly which records a window held.
struct Collect;

impl Aggregate<u32> for Collect {
    type Acc = Vec<u32>;
    type Out = Vec<u32>;

    fn create(&self) -> Vec<u32> {
        Vec::new()
    }

    fn add(&self, acc: &mut Vec<u32>, value: &u32) {
        acc.push(*value);
    }

    fn result(&self, acc: &Vec<u32>) -> Vec<u32> {
        let mut ids = acc.clone();
        ids.sort_unstable();
        ids
    }
}

#[derive(Debug, Clone, Copy)]
enum Event {
    Record { key: u8, ts: i64 },
    Watermark(i64),
}

type Results = Vec<WindowResult<u8, Vec<u32>>>;

/// A stream around `base`: a clock moves forward, records lag it by a
/// random delay (out of order), watermarks lag it by a random bound (some
/// far behind: they go backwards).
fn event_stream() -> impl Strategy<Value = Vec<Event>> {
    let base = prop_oneof![
        3 => -300i64..300,
        1 => i64::MIN..i64::MIN + 200,
        1 => i64::MAX - 400..=i64::MAX,
    ];
    let step = (0u8..10, 0u8..4, 0i64..8, 0i64..60, 0i64..40);
    (base, prop::collection::vec(step, 0..160)).prop_map(|(base, steps)| {
        let mut clock = base;
        steps
            .into_iter()
            .map(|(kind, key, advance, delay, lag)| {
                clock = clock.saturating_add(advance);
                match kind {
                    0..=6 => Event::Record {
                        key,
                        ts: clock.saturating_sub(delay),
                    },
                    7 | 8 => Event::Watermark(clock.saturating_sub(lag)),
                    _ => Event::Watermark(clock.saturating_sub(lag * 10)),
                }
            })
            .collect()
    })
}

struct Entry {
    key: u8,
    window: Window,
    ids: Vec<u32>,
}

/// The event-time rules written as plainly as possible: a list of
/// (key, window) entries in creation order, scanned in full on every event.
struct Model {
    spec: WindowSpec,
    lateness: i64,
    watermark: i64,
    entries: Vec<Entry>,
    dropped: u64,
}

impl Model {
    fn new(spec: WindowSpec, lateness: i64) -> Self {
        Model {
            spec,
            lateness,
            watermark: i64::MIN,
            entries: Vec::new(),
            dropped: 0,
        }
    }

    fn late(&self, w: Window) -> bool {
        w.max_timestamp().saturating_add(self.lateness) <= self.watermark
    }

    fn record(&mut self, key: u8, ts: i64, id: u32, out: &mut Results) -> RecordOutcome {
        let mut assigned = false;
        for window in brute_windows(self.spec, ts) {
            if self.late(window) {
                continue;
            }
            assigned = true;
            let i = match self
                .entries
                .iter()
                .position(|e| e.key == key && e.window == window)
            {
                Some(i) => i,
                None => {
                    self.entries.push(Entry {
                        key,
                        window,
                        ids: Vec::new(),
                    });
                    self.entries.len() - 1
                }
            };
            self.entries[i].ids.push(id);
            if window.max_timestamp() <= self.watermark {
                let value = Collect.result(&self.entries[i].ids);
                out.push(WindowResult {
                    key,
                    window,
                    value,
                    firing: Firing::Late,
                });
            }
        }
        if assigned {
            RecordOutcome::Assigned
        } else if ts.saturating_add(self.lateness) <= self.watermark {
            self.dropped += 1;
            RecordOutcome::DroppedLate
        } else {
            RecordOutcome::Ignored
        }
    }

    fn watermark(&mut self, new: i64, out: &mut Results) {
        if new <= self.watermark {
            return;
        }
        let old = self.watermark;
        self.watermark = new;
        let mut due: Vec<&Entry> = self
            .entries
            .iter()
            .filter(|e| old < e.window.max_timestamp() && e.window.max_timestamp() <= new)
            .collect();
        due.sort_by_key(|e| (e.window.end, e.window.start)); // stable: creation order
        for e in due {
            let value = Collect.result(&e.ids);
            out.push(WindowResult {
                key: e.key,
                window: e.window,
                value,
                firing: Firing::OnTime,
            });
        }
        let (lateness, wm) = (self.lateness, self.watermark);
        self.entries
            .retain(|e| e.window.max_timestamp().saturating_add(lateness) > wm);
    }

    fn next_timer(&self) -> Option<i64> {
        self.entries
            .iter()
            .map(|e| e.window.max_timestamp())
            .filter(|&t| t > self.watermark)
            .min()
    }
}

fn run_core(
    core: &mut WindowCore<u8, u32, Collect>,
    events: &[Event],
) -> (Results, Vec<RecordOutcome>) {
    let mut out = Vec::new();
    let mut outcomes = Vec::new();
    let mut id = 0;
    for event in events {
        match *event {
            Event::Record { key, ts } => {
                outcomes.push(core.on_record(key, ts, &id, &mut out));
                id += 1;
            }
            Event::Watermark(wm) => core.on_watermark(wm, &mut out),
        }
    }
    core.finish(&mut out);
    (out, outcomes)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The core emits exactly what the naive model emits, in the same order,
    /// and agrees with it on every counter after every event.
    #[test]
    fn event_time_matches_naive_model(
        spec in small_spec(),
        lateness in prop_oneof![Just(0i64), 0i64..50, Just(i64::MAX)],
        events in event_stream(),
    ) {
        let domain = TimeDomain::EventTime { allowed_lateness: lateness };
        let mut core = WindowCore::new(spec, domain, Collect).unwrap();
        let mut model = Model::new(spec, lateness);
        let (mut got, mut want) = (Vec::new(), Vec::new());
        let mut id = 0;
        for event in &events {
            match *event {
                Event::Record { key, ts } => {
                    let a = core.on_record(key, ts, &id, &mut got);
                    let b = model.record(key, ts, id, &mut want);
                    prop_assert_eq!(a, b);
                    id += 1;
                }
                Event::Watermark(wm) => {
                    core.on_watermark(wm, &mut got);
                    model.watermark(wm, &mut want);
                }
            }
            prop_assert_eq!(&got, &want);
            prop_assert_eq!(core.watermark(), model.watermark);
            prop_assert_eq!(core.late_dropped(), model.dropped);
            prop_assert_eq!(core.pending_windows(), model.entries.len());
            prop_assert_eq!(core.next_timer(), model.next_timer());
        }
        core.finish(&mut got);
        model.watermark(i64::MAX, &mut want);
        prop_assert_eq!(got, want);
        prop_assert_eq!(core.pending_windows(), 0);
    }

    /// Reference straight from the inputs: a record enters window `w` iff
    /// `w.max_timestamp + lateness > W` for the highest watermark `W` seen
    /// before it. Over all firings (on time and late), each (key, window)
    /// ends with exactly the records that entered it; it fires on time once
    /// iff some record entered before `W` reached its end, and late once per
    /// record that entered after; `late_dropped` counts exactly the records
    /// that entered no window and were late themselves
    /// (`ts + lateness <= W`).
    #[test]
    fn firings_cover_exactly_the_records_not_too_late(
        spec in small_spec(),
        lateness in prop_oneof![Just(0i64), 0i64..50],
        events in event_stream(),
    ) {
        let domain = TimeDomain::EventTime { allowed_lateness: lateness };
        let mut core = WindowCore::new(spec, domain, Collect).unwrap();
        let (results, _) = run_core(&mut core, &events);

        #[derive(Default, Debug, PartialEq)]
        struct Expect { ids: Vec<u32>, on_time: usize, late: usize }
        let mut expected: BTreeMap<(u8, Window), Expect> = BTreeMap::new();
        let mut dropped = 0u64;
        let mut watermark = i64::MIN;
        let mut id = 0u32;
        for event in &events {
            match *event {
                Event::Watermark(wm) => watermark = watermark.max(wm),
                Event::Record { key, ts } => {
                    let windows = brute_windows(spec, ts);
                    let mut entered = false;
                    for w in &windows {
                        if w.max_timestamp().saturating_add(lateness) > watermark {
                            entered = true;
                            let e = expected.entry((key, *w)).or_default();
                            e.ids.push(id);
                            if w.max_timestamp() <= watermark { e.late += 1 } else { e.on_time = 1 }
                        }
                    }
                    if !entered && ts.saturating_add(lateness) <= watermark {
                        dropped += 1;
                    }
                    id += 1;
                }
            }
        }

        let mut seen: BTreeMap<(u8, Window), Expect> = BTreeMap::new();
        for r in &results {
            let e = seen.entry((r.key, r.window)).or_default();
            match r.firing {
                Firing::OnTime => {
                    prop_assert_eq!(e.late, 0, "on-time firing after a late one");
                    e.on_time += 1;
                }
                Firing::Late => e.late += 1,
            }
            prop_assert!(r.value.len() > e.ids.len(), "every firing adds records");
            e.ids = r.value.clone();
        }
        prop_assert_eq!(seen, expected);
        prop_assert_eq!(core.late_dropped(), dropped);
    }
}

// ---------------------------------------------------------- processing time

#[derive(Debug, Clone, Copy)]
enum Tick {
    Record { key: u8, now: i64 },
    Time(i64),
}

fn tick_stream() -> impl Strategy<Value = Vec<Tick>> {
    let step = (0u8..10, 0u8..4, -3i64..10);
    (-300i64..300, prop::collection::vec(step, 0..160)).prop_map(|(base, steps)| {
        let mut clock = base;
        steps
            .into_iter()
            .map(|(kind, key, advance)| {
                clock += advance; // sometimes steps back
                if kind < 7 {
                    Tick::Record { key, now: clock }
                } else {
                    Tick::Time(clock)
                }
            })
            .collect()
    })
}

proptest! {
    /// Processing time: every window fires once, on the first tick at or
    /// after its `max_timestamp` (or at `finish`), with all its records,
    /// in the documented order.
    #[test]
    fn processing_time_matches_naive_model(spec in small_spec(), ticks in tick_stream()) {
        let mut core = WindowCore::new(spec, TimeDomain::ProcessingTime, Collect).unwrap();
        let mut entries: Vec<Entry> = Vec::new();
        let (mut got, mut want): (Results, Results) = (Vec::new(), Vec::new());
        let fire = |entries: &mut Vec<Entry>, now: i64, want: &mut Results| {
            let mut due: Vec<&Entry> =
                entries.iter().filter(|e| e.window.max_timestamp() <= now).collect();
            due.sort_by_key(|e| (e.window.end, e.window.start));
            for e in due {
                let value = Collect.result(&e.ids);
                want.push(WindowResult { key: e.key, window: e.window, value, firing: Firing::OnTime });
            }
            entries.retain(|e| e.window.max_timestamp() > now);
        };
        for (id, tick) in (0u32..).zip(&ticks) {
            match *tick {
                Tick::Record { key, now } => {
                    let windows = brute_windows(spec, now);
                    let outcome = if windows.is_empty() { RecordOutcome::Ignored } else { RecordOutcome::Assigned };
                    prop_assert_eq!(core.on_record(key, now, &id, &mut got), outcome);
                    for window in windows {
                        match entries.iter_mut().find(|e| e.key == key && e.window == window) {
                            Some(e) => e.ids.push(id),
                            None => entries.push(Entry { key, window, ids: vec![id] }),
                        }
                    }
                }
                Tick::Time(now) => {
                    core.on_processing_time(now, &mut got);
                    fire(&mut entries, now, &mut want);
                }
            }
            prop_assert_eq!(&got, &want);
            prop_assert_eq!(core.pending_windows(), entries.len());
            let next = entries.iter().map(|e| e.window.max_timestamp()).min();
            prop_assert_eq!(core.next_timer(), next);
        }
        core.finish(&mut got);
        fire(&mut entries, i64::MAX, &mut want);
        prop_assert_eq!(got, want);
        prop_assert_eq!(core.late_dropped(), 0);
    }

    /// Arbitrary specs, lateness and times never panic, and the core's
    /// invariants hold.
    #[test]
    fn arbitrary_inputs_never_panic(
        size in any::<i64>(),
        slide in prop::option::of(any::<i64>()),
        offset in any::<i64>(),
        lateness in any::<i64>(),
        times in prop::collection::vec((any::<bool>(), any_timestamp()), 0..40),
    ) {
        let spec = spec_of(size, slide, offset);
        let domain = TimeDomain::EventTime { allowed_lateness: lateness };
        let Ok(mut core) = WindowCore::<u8, u32, _>::new(spec, domain, Count) else {
            prop_assert!(spec.validate().is_err() || domain.validate().is_err());
            return Ok(());
        };
        let mut out = Vec::new();
        for (i, (is_record, t)) in (0u32..).zip(times) {
            if is_record {
                core.on_record((i % 3) as u8, t, &i, &mut out);
            } else {
                core.on_watermark(t, &mut out);
            }
            if let Some(next) = core.next_timer() {
                prop_assert!(next > core.watermark());
            }
        }
        core.finish(&mut out);
        prop_assert_eq!(core.pending_windows(), 0);
        for r in &out {
            prop_assert!(r.window.start < r.window.end);
        }
    }
}

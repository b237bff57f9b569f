//! `enrich`: the incident's job. A stream of events is enriched from a
//! lookup table loaded from a file (the "daily cache", optionally reloaded on
//! a schedule) and counted per enriched attribute in event-time windows.
//!
//! ```text
//! events (generator, rate-limited or not)
//!   → event-time (watermarks trail by out_of_orderness_ms)
//!   → enrich (table lookup: user → attribute; waits for the first load)
//!   ══ key_by(attribute) ══►
//!   → count per attribute in tumbling event-time windows (allowed lateness)
//!   → format → print, or part files in `output`
//! ```
//!
//! Parameters: `table` (the `key<TAB>attribute` file; required; make one
//! with `holdfast enrich-table`), `events` (default 10,000,000; `null` for
//! unbounded), `rate` (events per second in all; default unlimited), `users`
//! (distinct users the events name, default 10,000,000), `events_per_second`
//! (event-time density, default 10,000), `window_secs` (default 60),
//! `lateness_secs` (allowed lateness, default 0), `out_of_orderness_ms`
//! (default 1,000), `reload_secs` (reload the table this often; default
//! never), `output` (a directory or a connector's URL; default print),
//! `input` (instead of generated events, lines `TIME_MS<TAB>USER[<TAB>AMOUNT]`
//! from a connector's URL such as `kafka://HOST:PORT/TOPIC`, or from files;
//! a line that does not parse is counted as malformed and skipped).

pub mod cache;
pub mod table;

use std::sync::Arc;
use std::time::Duration;

use holdfast_executor::TaskFailure;
use serde::{Deserialize, Serialize};
use smol_str::SmolStr;

use crate::api::Dataflow;
use crate::connector::{InputUse, Target};
use crate::context::OperatorContext;
use crate::data::Timestamp;
use crate::plan::kit::{boxed, unbox};
use crate::plan::{AnyBox, MakeOperator};
use crate::push::{BoxPush, Push, forward_control};
use crate::registry::{JobError, JobParams};
use crate::sink::FileSink;
use crate::source::{FileLines, Generator};
use crate::window::{WindowResult, WindowSpec};

use self::cache::SharedTable;
use self::table::Table;

/// The job's name.
pub const NAME: &str = "enrich";

/// Event time of event 0: 2023-11-14T22:13:20Z.
pub const BASE_TIME: Timestamp = 1_700_000_000_000;

/// An event: a user did something worth `amount` at `time`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// The user (a key of the lookup table).
    pub user: u64,
    /// Event time.
    pub time: Timestamp,
    /// Some amount.
    pub amount: u32,
}

/// An event with the user's attribute from the table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Enriched {
    /// The user's attribute (`"unknown"` if the table lacks the user); short
    /// names are stored inline, so enriching copies bytes instead of
    /// sharing a reference count across task threads.
    pub attribute: SmolStr,
    /// Event time.
    pub time: Timestamp,
    /// The amount.
    pub amount: u32,
}

/// The generator's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventShape {
    /// Distinct users.
    pub users: u64,
    /// Events per second of event time.
    pub events_per_second: u64,
    /// Events are shuffled within this much event time.
    pub out_of_orderness_ms: i64,
}

fn mix(i: u64) -> u64 {
    let mut h = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
    h = (h ^ (h >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    h ^ (h >> 31)
}

/// Event `i`: its time advances `1 / events_per_second` per index, shuffled
/// by less than half the out-of-orderness either way (so none is late for
/// the watermark).
pub fn event(i: u64, shape: EventShape) -> Event {
    let h = mix(i);
    let base = (u128::from(i) * 1000 / u128::from(shape.events_per_second.max(1))) as i64;
    let half = (shape.out_of_orderness_ms / 2).max(0);
    let jitter = if half > 0 {
        (h >> 40) as i64 % (2 * half) - half
    } else {
        0
    };
    Event {
        user: h % shape.users.max(1),
        time: BASE_TIME.saturating_add(base).saturating_add(jitter),
        amount: (h >> 16) as u32 % 1000,
    }
}

const KNOWN: &[&str] = &[
    "table",
    "events",
    "rate",
    "users",
    "events_per_second",
    "window_secs",
    "lateness_secs",
    "out_of_orderness_ms",
    "reload_secs",
    "output",
    "input",
];

/// An event from a line `TIME_MS<TAB>USER[<TAB>AMOUNT]`.
pub fn parse_event(line: &str) -> Result<Event, String> {
    let mut fields = line.trim_end_matches(['\r', '\n']).split('\t');
    let time = fields
        .next()
        .and_then(|f| f.trim().parse::<i64>().ok())
        .ok_or_else(|| format!("{line:?}: the first field must be the event time in ms"))?;
    let user = fields
        .next()
        .and_then(|f| f.trim().parse::<u64>().ok())
        .ok_or_else(|| format!("{line:?}: the second field must be the user (a whole number)"))?;
    let amount = match fields.next() {
        None => 0,
        Some(f) => f.trim().parse::<u32>().map_err(|_| {
            format!("{line:?}: the third field must be the amount (a whole number)")
        })?,
    };
    Ok(Event { user, time, amount })
}

/// Builds the job.
pub fn build(params: JobParams<'_>) -> Result<Dataflow, JobError> {
    let args = params.args(KNOWN)?;
    let table = args.string("table", "")?;
    if table.is_empty() {
        return Err(args
            .bad_value(
                "table",
                &serde_json::Value::Null,
                "the path of a key<TAB>attribute file (make one with `holdfast enrich-table`)",
            )
            .into());
    }
    let events = args.opt_u64("events", Some(10_000_000))?;
    let rate = args.opt_u64("rate", None)?;
    let shape = EventShape {
        users: args.u64_at_least("users", 1, 10_000_000)?,
        events_per_second: args.u64_at_least("events_per_second", 1, 10_000)?,
        out_of_orderness_ms: args
            .u64_at_least("out_of_orderness_ms", 0, 1_000)?
            .min(86_400_000) as i64,
    };
    let window = args.u64_at_least("window_secs", 1, 60)?.min(365 * 86_400) as i64 * 1000;
    let lateness = args.u64_at_least("lateness_secs", 0, 0)?.min(365 * 86_400);
    let reload = args
        .opt_u64("reload_secs", None)?
        .map(|s| Duration::from_secs(s.max(1)));
    let output = args.string("output", "")?;
    let input = args.string("input", "")?;

    let flow = Dataflow::new(NAME);
    let events = if input.is_empty() {
        let mut generator = Generator::new(events, move |i| event(i, shape));
        if let Some(rate) = rate {
            generator = generator.rate(rate);
        }
        flow.source("events", generator)
    } else {
        let unbounded = InputUse {
            bounded_by_default: false,
        };
        match params.lines_source("input", &input, unbounded)? {
            Target::Path(path) => flow.source("events-read", FileLines::new([path])),
            Target::Connected(source) => flow.source("events-read", source),
        }
        .uid("enrich-read")
        .try_map("events", |line: String| parse_event(&line))
    };
    let table_path = std::path::PathBuf::from(table);
    let make: MakeOperator = Arc::new(move |ctx: &OperatorContext, out: AnyBox| {
        let next = unbox::<Enriched>(out, ctx.operator())?;
        let shared = cache::acquire(&table_path, reload);
        Ok(boxed::<Event>(Box::new(EnrichOp {
            shared,
            table: None,
            ctx: ctx.clone(),
            out: Vec::new(),
            next,
        })))
    });
    let counts = events
        .uid("enrich-events")
        .assign_timestamps(
            "event-time",
            |e: &Event| e.time,
            Duration::from_millis(shape.out_of_orderness_ms as u64),
        )
        .then::<Enriched>("enrich", make)
        .with_timestamps(|e: &Enriched| e.time)
        .key_by(|e: &Enriched| e.attribute.clone())
        .window(WindowSpec::tumbling(window))
        .allowed_lateness(Duration::from_secs(lateness))
        .count("count")
        .uid("enrich-count")
        .map("format", |r: WindowResult<SmolStr, u64>| {
            let late = match r.firing {
                crate::window::Firing::OnTime => "",
                crate::window::Firing::Late => " late",
            };
            format!(
                "{} {} {} {}{late}",
                r.window.start, r.window.end, r.key, r.value
            )
        });
    if output.is_empty() {
        counts.print("print").uid("enrich-print");
    } else {
        match params.lines_sink("output", &output)? {
            Target::Path(path) => counts.sink("write", FileSink::lines(path)),
            Target::Connected(sink) => counts.sink("write", sink),
        }
        .uid("enrich-write");
    }
    Ok(flow)
}

/// How long the enrich operator waits for the table between cancel checks.
const WAIT_SLICE: Duration = Duration::from_millis(200);

/// Looks each event's user up in the shared table.
struct EnrichOp {
    shared: Arc<SharedTable>,
    table: Option<Arc<Table>>,
    ctx: OperatorContext,
    out: Vec<Enriched>,
    next: BoxPush<Enriched>,
}

impl EnrichOp {
    /// The table to use for this batch: the newest loaded one; before the
    /// first load completes, waits for it (the task stays cancelable).
    fn table(&mut self) -> Result<Arc<Table>, TaskFailure> {
        if let Some(current) = self.shared.current() {
            self.table = Some(Arc::clone(&current));
            return Ok(current);
        }
        loop {
            if self.ctx.is_canceled() {
                return Err(TaskFailure::new(
                    "canceled while waiting for the lookup table",
                ));
            }
            match self.shared.wait(WAIT_SLICE) {
                Ok(Some(table)) => {
                    self.table = Some(Arc::clone(&table));
                    return Ok(table);
                }
                Ok(None) => {}
                Err(failure) => return Err(TaskFailure::new(failure.to_string())),
            }
        }
    }
}

impl Push<Event> for EnrichOp {
    fn push(&mut self, batch: &mut Vec<Event>) -> Result<(), TaskFailure> {
        let table = self.table()?;
        self.out.extend(batch.drain(..).map(|e| Enriched {
            attribute: table.lookup(e.user).clone(),
            time: e.time,
            amount: e.amount,
        }));
        self.next.push(&mut self.out)
    }
    forward_control!(next);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_deterministic_and_never_late_for_the_watermark() {
        let shape = EventShape {
            users: 1000,
            events_per_second: 100,
            out_of_orderness_ms: 1000,
        };
        assert_eq!(event(12345, shape), event(12345, shape));
        let mut max_seen = i64::MIN;
        for i in 0..100_000 {
            let e = event(i, shape);
            assert!(e.user < 1000);
            let watermark = max_seen.saturating_sub(1000).saturating_sub(1);
            assert!(e.time > watermark, "event {i} is late");
            max_seen = max_seen.max(e.time);
        }
    }
}

//! `datagen`: generated records through one of three pipelines, for
//! benchmarks and demonstrations.
//!
//! Parameters: `records` (how many; `null` for unbounded; default
//! 10,000,000), `rate` (records per second in all; `null`, the default, for
//! as fast as possible), `keys` (distinct keys, default 10,000), `pipeline`:
//! - `"stateless"` (default): generate → map → filter → map → discard, all
//!   chained into one task per subtask;
//! - `"keyed"`: generate → key_by → rolling sum → discard (a hash exchange
//!   between the source and the sum, across TaskManagers where they run);
//! - `"rebalance"`: generate → rebalance → map → discard.
//!
//! `output` (a directory, or a connector's URL such as
//! `kafka://HOST:PORT/TOPIC`) replaces the discard with an exactly-once
//! sink: the `stateless` pipeline writes `id<TAB>key<TAB>value` for every
//! record it keeps, the `keyed` one `key<TAB>sum` for every update — so a
//! run through failures can be checked line by line. With `rate`, a
//! bounded run lasts long enough to kill processes in the middle.

use serde::{Deserialize, Serialize};

use crate::api::Dataflow;
use crate::connector::Target;
use crate::registry::{JobError, JobParams};
use std::fmt::Write as _;

use crate::sink::{Discard, FileSink};
use crate::source::Generator;

/// The job's name.
pub const NAME: &str = "datagen";

/// A generated record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// Its index.
    pub id: u64,
    /// Its key, below `keys`.
    pub key: u32,
    /// A value.
    pub value: i64,
}

/// Record `i` with `keys` keys.
pub fn record(i: u64, keys: u32) -> Record {
    // A multiplicative hash spreads consecutive indexes over the keys.
    let mixed = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    Record {
        id: i,
        key: (mixed >> 32) as u32 % keys.max(1),
        value: (mixed & 0xffff) as i64,
    }
}

const KNOWN: &[&str] = &["records", "rate", "keys", "pipeline", "output"];

/// Builds the job.
pub fn build(params: JobParams<'_>) -> Result<Dataflow, JobError> {
    let args = params.args(KNOWN)?;
    let records = args.opt_u64("records", Some(10_000_000))?;
    let rate = args.opt_u64("rate", None)?;
    let keys = args.u64_at_least("keys", 1, 10_000)?;
    let keys = u32::try_from(keys)
        .map_err(|_| args.bad_value("keys", &serde_json::json!(keys), "at most 4294967295"))?;
    let pipeline = args.string("pipeline", "stateless")?;
    let output = args.string("output", "")?;
    let flow = Dataflow::new(NAME);
    let mut generator = Generator::new(records, move |i| record(i, keys));
    if let Some(rate) = rate {
        generator = generator.rate(rate);
    }
    let source = flow.source("generate", generator).uid("datagen-source");
    match pipeline.as_str() {
        "stateless" => {
            let kept = source
                .map("scale", |r: Record| Record {
                    value: r.value * 3,
                    ..r
                })
                .filter("even", |r: &Record| r.value % 2 == 0);
            if output.is_empty() {
                kept.map("project", |r: Record| (r.key, r.value))
                    .sink("discard", Discard::new())
                    .uid("datagen-discard");
            } else {
                match params.lines_sink("output", &output)? {
                    Target::Path(path) => kept.sink(
                        "write",
                        FileSink::with_format(path, |r: &Record, line: &mut String| {
                            let _ = write!(line, "{}\t{}\t{}", r.id, r.key, r.value);
                        }),
                    ),
                    Target::Connected(sink) => kept
                        .map("format", |r: Record| {
                            format!("{}\t{}\t{}", r.id, r.key, r.value)
                        })
                        .sink("write", sink),
                }
                .uid("datagen-write");
            }
        }
        "keyed" => {
            let sums = source
                .key_by(|r: &Record| r.key)
                .sum("sum", |r: &Record| r.value)
                .uid("datagen-sum");
            if output.is_empty() {
                sums.sink("discard", Discard::new()).uid("datagen-discard");
            } else {
                match params.lines_sink("output", &output)? {
                    Target::Path(path) => sums.sink(
                        "write",
                        FileSink::with_format(
                            path,
                            |(key, sum): &(u32, i64), line: &mut String| {
                                let _ = write!(line, "{key}\t{sum}");
                            },
                        ),
                    ),
                    Target::Connected(sink) => sums
                        .map("format", |(key, sum): (u32, i64)| format!("{key}\t{sum}"))
                        .sink("write", sink),
                }
                .uid("datagen-write");
            }
        }
        "rebalance" => {
            source
                .rebalance()
                .map("project", |r: Record| (r.key, r.value))
                .sink("discard", Discard::new())
                .uid("datagen-discard");
        }
        other => {
            return Err(args
                .bad_value(
                    "pipeline",
                    &serde_json::json!(other),
                    "\"stateless\", \"keyed\" or \"rebalance\"",
                )
                .into());
        }
    }
    Ok(flow)
}

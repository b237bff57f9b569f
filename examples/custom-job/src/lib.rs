//! An example job: counts of page views per page in one-minute event-time
//! windows, from generated clicks — what you would write for your own
//! service. `main.rs` registers it beside holdfast's built-in jobs and hands
//! over to holdfast's command line, so this one binary is the JobManager,
//! the TaskManager, the standalone cluster and the client:
//!
//! ```text
//! custom-job standalone --run page-views --args '{"clicks": 100000}' --exit-when-done
//! custom-job jobmanager …   custom-job taskmanager …   custom-job run page-views …
//! ```

use std::time::Duration;

use holdfast_dataflow::sink::FileSink;
use holdfast_dataflow::source::Generator;
use holdfast_dataflow::window::{WindowResult, WindowSpec};
use holdfast_dataflow::{Dataflow, JobError, JobParams};
use serde::{Deserialize, Serialize};

/// The job's name, as `run` and `standalone --run` take it.
pub const NAME: &str = "page-views";

/// A click: someone viewed a page at a time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Click {
    /// The page.
    pub page: String,
    /// When (event time, ms since the epoch).
    pub time: i64,
}

/// Click `i` of a deterministic stream: 5 pages, one click per 10 ms.
pub fn click(i: u64) -> Click {
    Click {
        page: format!("/page/{}", i * 31 % 5),
        time: 1_700_000_000_000 + i as i64 * 10,
    }
}

/// Builds the job from its parameters: `clicks` (how many, default 100,000)
/// and `output` (a directory for the results; default: print them).
///
/// A build must be cheap and deterministic: every TaskManager runs it again
/// to find the operators it deploys.
pub fn build(params: JobParams<'_>) -> Result<Dataflow, JobError> {
    let args = params.args(&["clicks", "output"])?;
    let clicks = args.u64_at_least("clicks", 1, 100_000)?;
    let output = args.string("output", "")?;

    let flow = Dataflow::new(NAME);
    let views = flow
        .source("clicks", Generator::new(Some(clicks), click))
        // Stable ids: a later version of this job finds its state by them.
        .uid("clicks")
        .assign_timestamps("event time", |c: &Click| c.time, Duration::from_secs(1))
        .key_by(|c: &Click| c.page.clone())
        .window(WindowSpec::tumbling(60_000))
        .count("views per minute")
        .uid("views-per-minute")
        .map("format", |r: WindowResult<String, u64>| {
            format!("{} {} {}", r.window.start, r.key, r.value)
        });
    if output.is_empty() {
        views.print("print").uid("print");
    } else {
        views.sink("write", FileSink::lines(output)).uid("write");
    }
    Ok(flow)
}

//! `holdfast savepoint | stop` and `holdfast cancel --savepoint-dir`: a
//! savepoint of a running job (it keeps running), or a stop with one (the
//! sources stop at the savepoint, the job ends `FINISHED`). Each asks the
//! leader over REST, waits for the outcome and prints the savepoint's
//! directory on its last line (the whole answer as JSON with `--json`).

use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};
use clap::Args;
use holdfast_runtime::ids::JobId;
use serde_json::json;

use crate::client_cli::Target;

/// How often the outcome is asked for.
const POLL: Duration = Duration::from_millis(200);

/// `holdfast savepoint` and `holdfast stop`.
#[derive(Debug, Args)]
pub struct SavepointArgs {
    /// The job id (32 hex digits, as `holdfast run` and `list` print it).
    #[arg(value_name = "JOBID")]
    pub(crate) id: JobId,
    /// The directory the savepoint goes into (an absolute path every
    /// JobManager and TaskManager reaches) [default:
    /// execution.checkpointing.savepoint-dir].
    #[arg(long, value_name = "DIR")]
    pub(crate) savepoint_dir: Option<String>,
    /// How long to wait for the savepoint (and, for a stop, the job's end).
    #[arg(long, default_value = "10min", value_parser = humantime::parse_duration)]
    pub(crate) wait_timeout: Duration,
    #[command(flatten)]
    pub(crate) target: Target,
}

/// Takes a savepoint of the job (`stop`: and stops it); prints its
/// directory last.
pub async fn run(args: SavepointArgs, stop: bool) -> Result<()> {
    let (_, client) = args.target.connect()?;
    let what = if stop {
        "stop-with-savepoint"
    } else {
        "savepoint"
    };
    let trigger = client
        .trigger_savepoint(args.id, args.savepoint_dir.as_deref(), stop)
        .await
        .map_err(|e| anyhow!("{e}"))?;
    if !args.target.json {
        println!(
            "{what} of job {} triggered ({trigger}); waiting for it",
            args.id
        );
    }
    let deadline = Instant::now() + args.wait_timeout;
    let status = loop {
        let status = client
            .savepoint_status(args.id, &trigger)
            .await
            .map_err(|e| anyhow!("{e}"))?;
        if status.is_done() {
            break status;
        }
        if Instant::now() >= deadline {
            bail!(
                "the {what} of job {} did not complete within {:?} (trigger {trigger}; it may still: \
                 ask GET /jobs/{}/savepoints/{trigger})",
                args.id,
                args.wait_timeout,
                args.id
            );
        }
        tokio::time::sleep(POLL).await;
    };
    let operation = status.operation.unwrap_or_default();
    if let Some(failure) = operation.failure_cause {
        bail!(
            "the {what} of job {} failed: {}{}",
            args.id,
            failure.reason(),
            if stop { " (the job goes on)" } else { "" }
        );
    }
    let location = operation.location.ok_or_else(|| {
        anyhow!("the JobManager answered a completed savepoint without its location")
    })?;
    let mut state = None;
    if stop {
        // The tasks end once they committed the savepoint.
        loop {
            let job = client.job(args.id).await.map_err(|e| anyhow!("{e}"))?;
            if job.state == "FINISHED" {
                state = Some(job.state);
                break;
            }
            if is_terminal(&job.state) {
                bail!(
                    "the savepoint {location} was taken, but job {} ended {} instead of FINISHED",
                    args.id,
                    job.state
                );
            }
            if Instant::now() >= deadline {
                bail!(
                    "the savepoint {location} was taken, but job {} is still {} after {:?}",
                    args.id,
                    job.state,
                    args.wait_timeout
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }
    if args.target.json {
        println!(
            "{}",
            json!({ "jobid": args.id.to_string(), "request-id": trigger, "location": location, "state": state })
        );
    } else {
        if stop {
            println!("job {} stopped with a savepoint; it is FINISHED", args.id);
        }
        println!("{location}");
    }
    Ok(())
}

fn is_terminal(state: &str) -> bool {
    matches!(state, "FINISHED" | "FAILED" | "CANCELED")
}

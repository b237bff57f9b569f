//! A leader in another process: the workspace's `holdfast ha elect`, so that
//! a crash is a real process death (`kill -9`), not a simulated one.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use holdfast_ha::SessionId;
use holdfast_types::Epoch;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

/// Where the `holdfast` binary is: `explicit`, else next to this
/// executable (`target/release/holdfast` when the benchmark runs from
/// `target/release/holdfast-bench`).
pub fn locate_holdfast(explicit: Option<&Path>) -> Result<PathBuf> {
    let path = match explicit {
        Some(path) => path.to_owned(),
        None => std::env::current_exe()
            .context("finding the benchmark's own executable")?
            .with_file_name("holdfast"),
    };
    if !path.is_file() {
        bail!(
            "the crash scenario runs the leader as a `holdfast` process and found none at {}; \
             build it first with `cargo build --release -p holdfast`, or pass --holdfast-bin PATH",
            path.display()
        );
    }
    Ok(path)
}

/// A `holdfast ha elect` process.
pub struct ChildLeader {
    child: Child,
    lines: mpsc::UnboundedReceiver<Value>,
}

impl ChildLeader {
    /// Starts `holdfast ha --acl open --session-timeout Tms --quorum QUORUM
    /// elect NAME PROPOSAL --json` (the configuration flags belong to `ha`).
    pub fn spawn(
        binary: &Path,
        name: &str,
        proposal: &str,
        quorum: &str,
        session_timeout: Duration,
    ) -> Result<ChildLeader> {
        let mut child = Command::new(binary)
            .args([
                "ha",
                "--acl",
                "open",
                "--quorum",
                quorum,
                "--session-timeout",
            ])
            .arg(format!("{}ms", session_timeout.as_millis()))
            .args(["elect", name, proposal, "--json"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let stdout = child.stdout.take().context("the child's stdout")?;
        let (sender, lines) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                if let Ok(value) = serde_json::from_str::<Value>(&line) {
                    let _ = sender.send(value);
                }
            }
        });
        Ok(ChildLeader { child, lines })
    }

    /// Waits until the child prints its grant; returns its epoch and session.
    pub async fn granted(&mut self, limit: Duration) -> Result<(Epoch, SessionId)> {
        let wait = async {
            while let Some(line) = self.lines.recv().await {
                if line["event"] == "granted" {
                    return Some(line);
                }
            }
            None
        };
        let line = match tokio::time::timeout(limit, wait).await {
            Ok(Some(line)) => line,
            Ok(None) => bail!("the holdfast child exited before it was granted"),
            Err(_) => bail!("the holdfast child was not granted within {limit:?}"),
        };
        let epoch = line["epoch"].as_u64().context("a grant without an epoch")?;
        let session = line["session"]
            .as_str()
            .and_then(|hex| u64::from_str_radix(hex.trim_start_matches("0x"), 16).ok())
            .context("a grant without a session")?;
        Ok((Epoch(epoch), SessionId(session)))
    }

    /// `kill -9`, at once; the process is reaped in the background.
    pub fn kill(mut self) -> Result<()> {
        self.child
            .start_kill()
            .context("killing the holdfast child")?;
        tokio::spawn(async move {
            let _ = self.child.wait().await;
        });
        Ok(())
    }
}

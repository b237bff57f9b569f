//! Runs the `holdfast` binary as real processes for tier-4 tests: spawns
//! `holdfast ha …` children, reads their `--json` lines as they come, and
//! kills every child when its guard is dropped (also when a test fails).
//!
//! ```text
//!   test ──spawn──► holdfast ha … elect NAME PROPOSAL --json
//!     ▲                 │ stdout, one JSON object per line
//!     └── channel ◄── reader thread (stderr: another thread, kept for errors)
//! ```
#![allow(dead_code)]

pub mod cluster;
pub mod datagen_job;
pub mod standalone;

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use holdfast_types::sync::lock;
use nix::sys::signal::{Signal, kill};
use nix::time::{ClockId, clock_gettime};
use nix::unistd::Pid;
use serde_json::Value;
use tokio::sync::mpsc;

/// The binary under test.
pub const HOLDFAST: &str = env!("CARGO_BIN_EXE_holdfast");

/// The session timeout `T` every process asks for.
pub const T: Duration = Duration::from_secs(4);

/// Generous bound for anything that should take a few session timeouts on
/// a loaded 2-core machine.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// `holdfast ha` with the options every test uses: `quorum`, open ACLs,
/// a session timeout of [`T`].
pub fn ha_args(quorum: &str) -> Vec<String> {
    [
        "ha",
        "--quorum",
        quorum,
        "--acl",
        "open",
        "--session-timeout",
        "4s",
    ]
    .map(String::from)
    .to_vec()
}

/// Now on the system-wide CLOCK_MONOTONIC, in nanoseconds: the clock of
/// the `monotonic_ns` field of `holdfast ha elect --json`.
pub fn monotonic_ns() -> u64 {
    let now = clock_gettime(ClockId::CLOCK_MONOTONIC).expect("Linux always has CLOCK_MONOTONIC");
    u64::try_from(now.tv_sec()).expect("after boot") * 1_000_000_000
        + u64::try_from(now.tv_nsec()).expect("within a second")
}

/// A command for the binary with an environment that cannot change its
/// behaviour (no configuration file, default logging, no backtraces).
fn command(args: &[String]) -> Command {
    let mut command = Command::new(HOLDFAST);
    command
        .args(args)
        .env_remove("HOLDFAST_CONFIG")
        .env_remove("RUST_LOG")
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .stdin(Stdio::null());
    command
}

/// Runs `holdfast ARGS` to completion (killed after [`PATIENCE`]).
pub async fn run<S: AsRef<str> + std::fmt::Debug>(args: &[S]) -> Result<Output> {
    let owned: Vec<String> = args.iter().map(|a| a.as_ref().to_owned()).collect();
    let mut command = tokio::process::Command::from(command(&owned));
    command.kill_on_drop(true);
    tokio::time::timeout(PATIENCE, command.output())
        .await
        .with_context(|| format!("holdfast {args:?} did not finish within {PATIENCE:?}"))?
        .with_context(|| format!("running holdfast {args:?}"))
}

/// One running `holdfast` process and what it printed. Dropping it kills
/// the process (SIGKILL) and reaps it.
pub struct Holdfast {
    name: String,
    child: Child,
    lines: mpsc::UnboundedReceiver<String>,
    /// Every stdout line so far, parsed.
    seen: Vec<Value>,
    /// How many of `seen` [`wait_for`](Self::wait_for) has consumed.
    cursor: usize,
    stderr: Arc<Mutex<String>>,
}

impl Holdfast {
    /// Starts `holdfast ARGS`; `name` names it in failures.
    pub fn spawn(name: &str, args: &[String]) -> Result<Holdfast> {
        Holdfast::spawn_with_env(name, args, &[])
    }

    /// [`spawn`](Self::spawn) with environment variables `env` (such as
    /// `FAILPOINTS`).
    pub fn spawn_with_env(name: &str, args: &[String], env: &[(&str, &str)]) -> Result<Holdfast> {
        let mut child = command(args)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {name}: holdfast {args:?}"))?;
        let (sender, lines) = mpsc::unbounded_channel();
        let stdout = child.stdout.take().context("no stdout")?;
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if sender.send(line).is_err() {
                    return;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let (mut pipe, sink) = (child.stderr.take().context("no stderr")?, stderr.clone());
        std::thread::spawn(move || {
            let mut chunk = [0; 4096];
            while let Ok(read @ 1..) = pipe.read(&mut chunk) {
                lock(&sink).push_str(&String::from_utf8_lossy(&chunk[..read]));
            }
        });
        Ok(Holdfast {
            name: name.to_owned(),
            child,
            lines,
            seen: Vec::new(),
            cursor: 0,
            stderr,
        })
    }

    /// `holdfast ha … elect NAME PROPOSAL --json` through `quorum`.
    pub fn elect(quorum: &str, election: &str, proposal: &str) -> Result<Holdfast> {
        let mut args = ha_args(quorum);
        args.extend(["elect", election, proposal, "--json"].map(String::from));
        Holdfast::spawn(proposal, &args)
    }

    /// `holdfast ha … elect --listen NAME --json` through `quorum`.
    pub fn listen(quorum: &str, election: &str) -> Result<Holdfast> {
        let mut args = ha_args(quorum);
        args.extend(["elect", "--listen", election, "--json"].map(String::from));
        Holdfast::spawn("listener", &args)
    }

    /// Waits for the next line (after the last one this returned) whose
    /// `event` is `event` and that `accept`s; lines in between are kept.
    pub async fn wait_for(
        &mut self,
        event: &str,
        accept: impl Fn(&Value) -> bool,
    ) -> Result<Value> {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            while let Some(line) = self.seen.get(self.cursor) {
                self.cursor += 1;
                if line["event"] == event && accept(line) {
                    return Ok(line.clone());
                }
            }
            match tokio::time::timeout_at(deadline, self.lines.recv()).await {
                Ok(Some(line)) => {
                    let value = serde_json::from_str(&line).with_context(|| {
                        format!("{} printed a line that is not JSON: {line:?}", self.name)
                    })?;
                    self.seen.push(value);
                }
                Ok(None) => bail!(
                    "{} ended its output without `{event}`; it printed {}; stderr: {}",
                    self.name,
                    self.shown(),
                    self.stderr()
                ),
                Err(_) => bail!(
                    "no `{event}` from {} within {PATIENCE:?}; it printed {}; stderr: {}",
                    self.name,
                    self.shown(),
                    self.stderr()
                ),
            }
        }
    }

    /// Waits for the next `event` line, whatever it says.
    pub async fn next(&mut self, event: &str) -> Result<Value> {
        self.wait_for(event, |_| true).await
    }

    /// Every line printed so far (reads what has arrived).
    pub fn printed(&mut self) -> Result<&[Value]> {
        while let Ok(line) = self.lines.try_recv() {
            let value = serde_json::from_str(&line)
                .with_context(|| format!("{} printed {line:?}", self.name))?;
            self.seen.push(value);
        }
        Ok(&self.seen)
    }

    /// The lines seen so far, as printed.
    fn shown(&self) -> String {
        let lines: Vec<_> = self.seen.iter().map(Value::to_string).collect();
        format!("[{}]", lines.join(", "))
    }

    /// What the process wrote to stderr so far.
    pub fn stderr(&self) -> String {
        lock(&self.stderr).clone()
    }

    /// Sends `signal`.
    pub fn signal(&self, signal: Signal) -> Result<()> {
        let pid = Pid::from_raw(i32::try_from(self.child.id())?);
        kill(pid, signal).with_context(|| format!("sending {signal} to {}", self.name))
    }

    /// kill -9, and reaps the process.
    pub fn kill(&mut self) -> Result<()> {
        self.child.kill().context("killing")?;
        self.child.wait().context("reaping")?;
        Ok(())
    }

    /// Waits (polling) for the process to exit on its own.
    pub async fn exit_status(&mut self) -> Result<ExitStatus> {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            ensure!(
                started.elapsed() < PATIENCE,
                "{} did not exit within {PATIENCE:?}; stderr: {}",
                self.name,
                self.stderr()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Holdfast {
    fn drop(&mut self) {
        // Fails only if it is gone already.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A JSON line's `field` as a number.
pub fn number(line: &Value, field: &str) -> Result<u64> {
    line[field]
        .as_u64()
        .with_context(|| format!("no number {field} in {line}"))
}

/// How long after `earlier_ns` the `monotonic_ns` of `line` is.
pub fn after(line: &Value, earlier_ns: u64) -> Result<Duration> {
    let at = number(line, "monotonic_ns")?;
    ensure!(
        at >= earlier_ns,
        "{line} happened before the moment it is measured from ({earlier_ns} ns)"
    );
    Ok(Duration::from_nanos(at - earlier_ns))
}

/// Where election `name` keeps its latch and its leader (the defaults'
/// root and cluster id).
pub fn election_path(name: &str, leaf: &str) -> String {
    format!("/holdfast/default/elections/{name}/leader/{leaf}")
}

/// A `zookeeper-client` client of the test's own, bypassing every proxy.
pub async fn direct_client(connect: &str) -> Result<zookeeper_client::Client> {
    zookeeper_client::Client::connector()
        .with_session_timeout(Duration::from_secs(20))
        .connect(connect)
        .await
        .with_context(|| format!("connecting a direct client to {connect}"))
}

/// Waits (polling) until election `name` has `count` participants.
pub async fn wait_for_participants(connect: &str, name: &str, count: usize) -> Result<()> {
    let client = direct_client(connect).await?;
    let latch = election_path(name, "latch");
    let started = Instant::now();
    loop {
        let children = match client.list_children(&latch).await {
            Err(zookeeper_client::Error::NoNode) => Vec::new(),
            other => other?,
        };
        if children.len() == count {
            return Ok(());
        }
        ensure!(
            started.elapsed() < PATIENCE,
            "election {name} has participants {children:?}, not {count}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The lines of every finished `part-*` file a file sink wrote to `dir`.
pub fn part_lines(dir: &std::path::Path) -> Result<Vec<String>> {
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("part-"))
        {
            lines.extend(std::fs::read_to_string(&path)?.lines().map(str::to_owned));
        }
    }
    Ok(lines)
}

/// The events `enrich` counted in `dir`: the sum of its window results'
/// counts (the last field of each line).
pub fn counted_events(dir: &std::path::Path) -> Result<u64> {
    let mut counted = 0;
    for line in part_lines(dir)? {
        counted += line.rsplit(' ').next().context("a count")?.parse::<u64>()?;
    }
    Ok(counted)
}

//! One cluster process (`holdfast jobmanager | taskmanager | standalone`)
//! under the benchmark's control: its `started` line stamped on arrival, its
//! log kept, its resident memory read from `/proc`, and `kill -9` when it is
//! dropped (also when a scenario fails half-way).
//!
//! ```text
//!   bench ──spawn──► holdfast ROLE --config FILE -D …
//!     ▲                 │ stdout: one JSON line per event ── reader task stamps each line (Instant)
//!     └── LogBook ◄──── │ stderr: the log ─────────────────── reader task keeps it; on drop it goes
//!                                                              to the LogBook (and --logs DIR)
//! ```

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use holdfast_types::sync::lock;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

/// The most log text kept per process (the rest is counted, not kept).
const MAX_LOG_BYTES: usize = 4 << 20;

/// Resident memory of a process, from `/proc/PID/status`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Memory {
    /// `VmRSS`: resident now, in KiB.
    pub rss_kib: u64,
    /// `VmHWM`: the most it was ever resident, in KiB.
    pub peak_kib: u64,
    /// `Threads`.
    pub threads: u64,
}

impl Memory {
    /// Reads `/proc/PID/status`.
    pub fn of(pid: u32) -> Result<Memory> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .with_context(|| format!("reading /proc/{pid}/status"))?;
        Memory::parse(&status).with_context(|| format!("no VmRSS/VmHWM in /proc/{pid}/status"))
    }

    fn parse(status: &str) -> Option<Memory> {
        let field = |name: &str| {
            status.lines().find_map(|line| {
                let value = line.strip_prefix(name)?.strip_prefix(':')?.trim();
                value.trim_end_matches("kB").trim().parse::<u64>().ok()
            })
        };
        Some(Memory {
            rss_kib: field("VmRSS")?,
            peak_kib: field("VmHWM")?,
            threads: field("Threads").unwrap_or(0),
        })
    }

    /// `VmRSS` in MiB.
    pub fn rss_mib(&self) -> f64 {
        self.rss_kib as f64 / 1024.0
    }
}

/// Every log of the processes of a run, collected as they are dropped.
#[derive(Clone, Debug, Default)]
pub struct LogBook {
    logs: Arc<Mutex<Vec<ProcessLog>>>,
    /// Where to write each process's log as `NAME.log`, if anywhere.
    dir: Option<PathBuf>,
}

/// One process's log.
#[derive(Clone, Debug)]
pub struct ProcessLog {
    /// The process's name in the benchmark (e.g. `jm-a-4s-1`).
    pub name: String,
    /// What it wrote to stderr (at most [`MAX_LOG_BYTES`]).
    pub text: String,
}

impl LogBook {
    /// A book that also writes every log into `dir` (created if missing).
    pub fn new(dir: Option<&Path>) -> Result<LogBook> {
        if let Some(dir) = dir {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("creating the log directory {}", dir.display()))?;
        }
        Ok(LogBook {
            logs: Arc::default(),
            dir: dir.map(Path::to_owned),
        })
    }

    /// Every log collected so far.
    pub fn logs(&self) -> Vec<ProcessLog> {
        lock(&self.logs).clone()
    }

    fn keep(&self, log: ProcessLog) {
        if let Some(dir) = &self.dir {
            let path = dir.join(format!("{}.log", log.name));
            if let Err(error) = std::fs::write(&path, &log.text) {
                eprintln!("  (cannot write {}: {error})", path.display());
            }
        }
        lock(&self.logs).push(log);
    }
}

/// What a `started` line says, and when it arrived.
#[derive(Clone, Debug)]
pub struct Started {
    /// When the benchmark read the line.
    pub at: Instant,
    /// The line.
    pub line: Value,
}

/// A running `holdfast` cluster process; dropping it kills it (`kill -9`).
pub struct ClusterProcess {
    name: String,
    child: Child,
    pid: u32,
    spawned: Instant,
    lines: mpsc::UnboundedReceiver<(Instant, Value)>,
    stderr: Arc<Mutex<String>>,
    book: LogBook,
}

impl ClusterProcess {
    /// Starts `binary ARGS` (named `name` in messages and logs), with an
    /// environment that cannot change its behaviour: no `HOLDFAST_CONFIG`,
    /// no `RUST_LOG` (so the default log filter), no backtraces.
    pub fn spawn(
        binary: &Path,
        name: &str,
        args: &[String],
        book: &LogBook,
    ) -> Result<ClusterProcess> {
        let mut command = Command::new(binary);
        command
            .args(args)
            .env_remove("HOLDFAST_CONFIG")
            .env_remove("RUST_LOG")
            .env_remove("RUST_BACKTRACE")
            .env_remove("RUST_LIB_BACKTRACE")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let spawned = Instant::now();
        let mut child = command
            .spawn()
            .with_context(|| format!("starting {name}: {} {args:?}", binary.display()))?;
        let pid = child.id().context("the child has no pid")?;
        let stdout = child.stdout.take().context("the child's stdout")?;
        let (sender, lines) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                let at = Instant::now();
                if let Ok(value) = serde_json::from_str::<Value>(&line)
                    && sender.send((at, value)).is_err()
                {
                    return;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stderr.take().context("the child's stderr")?;
        let sink = stderr.clone();
        tokio::spawn(async move {
            let mut chunk = vec![0; 8192];
            while let Ok(read @ 1..) = pipe.read(&mut chunk).await {
                let mut text = lock(&sink);
                if text.len() < MAX_LOG_BYTES {
                    text.push_str(&String::from_utf8_lossy(&chunk[..read]));
                }
            }
        });
        Ok(ClusterProcess {
            name: name.to_owned(),
            child,
            pid,
            spawned,
            lines,
            stderr,
            book: book.clone(),
        })
    }

    /// When the process was spawned (just before `fork`).
    pub fn spawned(&self) -> Instant {
        self.spawned
    }

    /// Its name in the benchmark.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Waits for its `{"event":"started",…}` line.
    pub async fn started(&mut self, limit: Duration) -> Result<Started> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            match tokio::time::timeout_at(deadline, self.lines.recv()).await {
                Ok(Some((at, line))) if line["event"] == "started" => {
                    return Ok(Started { at, line });
                }
                Ok(Some(_)) => {}
                Ok(None) => bail!(
                    "{} exited without a `started` line; its log:\n{}",
                    self.name,
                    self.log_tail()
                ),
                Err(_) => bail!(
                    "{} printed no `started` line within {limit:?}; its log:\n{}",
                    self.name,
                    self.log_tail()
                ),
            }
        }
    }

    /// Its resident memory now.
    pub fn memory(&self) -> Result<Memory> {
        Memory::of(self.pid).with_context(|| format!("memory of {}", self.name))
    }

    /// The CPU time it used so far.
    pub fn cpu_time(&self) -> Option<Duration> {
        crate::cpu::cpu_time(self.pid)
    }

    /// Whether the process has ended (a zombie not reaped yet counts).
    pub fn exited(&self) -> bool {
        match std::fs::read_to_string(format!("/proc/{}/stat", self.pid)) {
            Ok(stat) => stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_none_or(|state| matches!(state, "Z" | "X")),
            Err(_) => true,
        }
    }

    /// `kill -9` now (reaped in the background, or on drop).
    pub fn kill(&mut self) -> Result<()> {
        self.child
            .start_kill()
            .with_context(|| format!("killing {}", self.name))
    }

    /// SIGTERM now: the process shuts down gracefully (a leading
    /// JobManager hands leadership over).
    pub fn terminate(&self) -> Result<()> {
        let status = std::process::Command::new("kill")
            .args(["-TERM", &self.pid.to_string()])
            .status()
            .with_context(|| format!("signalling {}", self.name))?;
        anyhow::ensure!(
            status.success(),
            "kill -TERM {} failed: {status}",
            self.name
        );
        Ok(())
    }

    /// How many lines of its log so far contain `needle`.
    pub fn log_count(&self, needle: &str) -> usize {
        lock(&self.stderr).matches(needle).count()
    }

    /// The last lines of its log, for error messages.
    pub fn log_tail(&self) -> String {
        let text = lock(&self.stderr);
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for ClusterProcess {
    fn drop(&mut self) {
        // Fails only if it is gone already; tokio reaps it in the background.
        let _ = self.child.start_kill();
        self.book.keep(ProcessLog {
            name: self.name.clone(),
            text: lock(&self.stderr).clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_proc_status() {
        let status = "Name:\tholdfast\nVmHWM:\t   20480 kB\nVmRSS:\t   10240 kB\nThreads:\t9\n";
        let memory = Memory::parse(status).unwrap();
        assert_eq!(
            memory,
            Memory {
                rss_kib: 10240,
                peak_kib: 20480,
                threads: 9
            }
        );
        assert_eq!(memory.rss_mib(), 10.0);
        assert!(Memory::of(std::process::id()).is_ok());
    }

    #[tokio::test]
    async fn sees_a_process_end() {
        let book = LogBook::default();
        let mut process =
            ClusterProcess::spawn(Path::new("sleep"), "tm-sleep", &["30".into()], &book).unwrap();
        assert!(!process.exited());
        process.kill().unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(process.exited());
        drop(process);
        assert_eq!(book.logs()[0].name, "tm-sleep");
    }
}

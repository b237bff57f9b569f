//! holdfast's side: a release `holdfast standalone` process (a JobManager
//! and two TaskManagers in one process, records between them over loopback
//! TCP) running `wordcount` with running counts from one topic to another,
//! exactly once, and what it prints: the progress line every second
//! (`[  7.0s] wordcount RUNNING … read N …`), the job id and the REST
//! address.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::progress::Marks;
use crate::cpu::cpu_time;

/// What to run.
#[derive(Clone, Debug)]
pub struct JobSpec {
    /// The `holdfast` binary.
    pub binary: PathBuf,
    /// `input`: a `kafka://` URL.
    pub input: String,
    /// `output`: a `kafka://` URL.
    pub output: String,
    /// `execution.checkpointing.interval`.
    pub interval: Duration,
    /// The job's parallelism.
    pub parallelism: u32,
}

/// One line the child printed, when the benchmark read it.
struct Line {
    at: Instant,
    text: String,
}

/// A running `holdfast standalone`.
pub struct Standalone {
    child: Child,
    lines: mpsc::Receiver<Line>,
    started: Instant,
    log: std::fs::File,
    log_path: PathBuf,
    rest: Option<String>,
    job: Option<String>,
    /// Its CPU time when last read (it cannot be read once it exited).
    cpu: Duration,
    _dir: tempfile::TempDir,
}

impl Standalone {
    /// Starts the process; its checkpoints go to a fresh directory and its
    /// output to `logs/NAME.log`.
    pub fn start(spec: &JobSpec, logs: &Path, name: &str) -> Result<Standalone> {
        let dir = tempfile::Builder::new()
            .prefix("holdfast-bench-kafka.")
            .tempdir()?;
        let args = json!({"input": spec.input, "output": spec.output, "counts": "running"});
        let port = |what: &str| -> Result<String> {
            Ok(format!("{what}={}", holdfast_testkit::free_port()?))
        };
        let mut child = Command::new(&spec.binary)
            .arg("standalone")
            .args([
                "-D",
                &port("rest.port")?,
                "-D",
                &port("jobmanager.rpc.port")?,
            ])
            .arg("-D")
            .arg(format!(
                "execution.checkpointing.interval={}ms",
                spec.interval.as_millis()
            ))
            .arg("-D")
            .arg(format!(
                "execution.checkpointing.dir={}",
                dir.path().join("checkpoints").display()
            ))
            .arg("-D")
            .arg(format!(
                "execution.checkpointing.savepoint-dir={}",
                dir.path().join("savepoints").display()
            ))
            .args(["--run", "wordcount", "--args", &args.to_string()])
            .args(["--parallelism", &spec.parallelism.to_string()])
            .arg("--exit-when-done")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {}", spec.binary.display()))?;
        let started = Instant::now();
        let (sender, lines) = mpsc::channel();
        let stdout = child.stdout.take().context("the child's stdout")?;
        let stderr = child.stderr.take().context("the child's stderr")?;
        for stream in [
            Box::new(stdout) as Box<dyn std::io::Read + Send>,
            Box::new(stderr),
        ] {
            let sender = sender.clone();
            std::thread::spawn(move || {
                for text in BufReader::new(stream).lines().map_while(Result::ok) {
                    let at = Instant::now();
                    if sender.send(Line { at, text }).is_err() {
                        break;
                    }
                }
            });
        }
        std::fs::create_dir_all(logs)?;
        let log_path = logs.join(format!("{name}.log"));
        Ok(Standalone {
            child,
            lines,
            started,
            log: std::fs::File::create(&log_path)?,
            log_path,
            rest: None,
            job: None,
            cpu: Duration::ZERO,
            _dir: dir,
        })
    }

    /// The next line within `limit`, logged and looked at for the REST
    /// address and the job id; `None` when nothing came or the child's
    /// output ended.
    fn next_line(&mut self, limit: Duration) -> Option<Line> {
        let line = self.lines.recv_timeout(limit).ok()?;
        let _ = writeln!(self.log, "{}", line.text);
        if let Some(cpu) = cpu_time(self.child.id()) {
            self.cpu = cpu;
        }
        if let Some(job) = line.text.strip_prefix("submitted job ") {
            self.job = Some(job.trim().to_owned());
        }
        if let Ok(started) = serde_json::from_str::<Value>(&line.text)
            && let Some(rest) = started["rest"].as_str()
        {
            self.rest = Some(rest.to_owned());
        }
        Some(line)
    }

    /// Follows a bounded job to its end; marks the lines read each second
    /// and the moment it reported `FINISHED`.
    pub fn until_finished(mut self, total: u64, limit: Duration) -> Result<(Marks, Duration)> {
        let mut marks = Marks::new(total);
        marks.observe(Duration::ZERO, 0);
        while self.started.elapsed() < limit {
            let Some(line) = self.next_line(Duration::from_secs(5)) else {
                if let Ok(Some(status)) = self.child.try_wait() {
                    bail!(
                        "holdfast exited ({status}) before its job finished; {}",
                        self.tail()
                    );
                }
                continue;
            };
            let Some(progress) = Progress::parse(&line.text) else {
                continue;
            };
            if progress.restarts > 0 {
                bail!(
                    "the job restarted, which makes the run no measurement (did the broker \
                     die?); {}",
                    self.tail()
                );
            }
            let at = line.at - self.started;
            marks.observe(at, progress.read);
            match progress.state.as_str() {
                "FINISHED" => {
                    marks.end(at);
                    let _ = self.child.wait();
                    return Ok((marks, self.cpu));
                }
                "FAILED" | "CANCELED" => bail!("the job ended {}; {}", progress.state, self.tail()),
                _ => {}
            }
        }
        bail!("the job did not finish within {limit:?}; {}", self.tail())
    }

    /// Waits until the job and every one of its subtasks run.
    pub fn until_running(&mut self, limit: Duration) -> Result<()> {
        while self.started.elapsed() < limit {
            if let Some(line) = self.next_line(Duration::from_millis(500))
                && Progress::parse(&line.text)
                    .is_some_and(|p| p.state == "RUNNING" && p.all_running)
            {
                return Ok(());
            }
        }
        bail!("the job was not running within {limit:?}; {}", self.tail())
    }

    /// Logs what it printed, without waiting.
    pub fn drain(&mut self) {
        while self.next_line(Duration::ZERO).is_some() {}
    }

    /// Its CPU time so far.
    pub fn cpu(&mut self) -> Duration {
        self.drain();
        cpu_time(self.child.id()).unwrap_or(self.cpu)
    }

    /// `GET /jobs/{id}/checkpoints` of the running job.
    pub fn checkpoints(&mut self) -> Result<Value> {
        self.drain();
        let (Some(rest), Some(job)) = (&self.rest, &self.job) else {
            bail!("no REST address or job id yet; {}", self.tail());
        };
        let url = format!("{rest}/jobs/{job}/checkpoints");
        let fetch = async move {
            let client = reqwest::Client::new();
            client
                .get(&url)
                .send()
                .await?
                .error_for_status()?
                .json()
                .await
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(runtime.block_on(fetch)?)
    }

    /// Where its output is logged, and its last lines.
    fn tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log_path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let from = lines.len().saturating_sub(15);
        format!(
            "its output is in {}; the last lines:\n{}",
            self.log_path.display(),
            lines[from..].join("\n")
        )
    }
}

impl Drop for Standalone {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.drain();
    }
}

/// A progress line: `[  7.0s] NAME STATE  tasks … read N  (…)  …`.
#[derive(Debug, PartialEq)]
struct Progress {
    state: String,
    /// `tasks A/B running` with `A = B > 0`.
    all_running: bool,
    read: u64,
    restarts: u64,
}

impl Progress {
    fn parse(line: &str) -> Option<Progress> {
        let rest = line.strip_prefix('[')?.split_once("s] ")?.1;
        let mut fields = rest.split_whitespace();
        let state = fields.nth(1)?.to_owned();
        let tasks = fields.nth(1)?.split_once('/')?;
        let all_running = tasks.0 == tasks.1 && tasks.0 != "0";
        let mut after = |name: &str| -> Option<u64> {
            fields
                .by_ref()
                .skip_while(|field| *field != name)
                .nth(1)?
                .parse()
                .ok()
        };
        let read = after("read")?;
        let restarts = after("restarts")?;
        Some(Progress {
            state,
            all_running,
            read,
            restarts,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_progress_lines() {
        let line = "[   7.0s] wordcount RUNNING    tasks 4/4 running  read       1265664  (1.26 M/s)  restarts 0  written 200";
        assert_eq!(
            Progress::parse(line),
            Some(Progress {
                state: "RUNNING".into(),
                all_running: true,
                read: 1_265_664,
                restarts: 0
            })
        );
        assert_eq!(Progress::parse("submitted job 49163163"), None);
    }
}

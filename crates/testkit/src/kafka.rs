//! A real Kafka-protocol broker for tests: [`KafkaBroker`].
//!
//! No Apache Kafka build can be installed from the registries this project
//! reaches, so the kit runs PyPI's `noida-db` (pinned to 0.2.3 by
//! `scripts/test`, which installs it into `target/test-tools/kafka`): one
//! static binary that speaks the Kafka protocol at the Kafka 3.8 API level —
//! topics, idempotent and transactional produce, `read_committed` reads that
//! stop at the last stable offset, producer fencing, consumer groups. It is
//! one broker without replication. What it does differently from Apache
//! Kafka, as far as holdfast's tests have found, is listed in
//! `docs/TESTING.md`.
//!
//! Each broker gets its own data directory and a free loopback port. Dropping
//! a [`KafkaBroker`] kills it, also when the test panics; a broker left behind
//! by a test process that was itself killed is reaped by
//! [`reap_orphans`](crate::zk::reap_orphans) (its data directory carries the
//! owner's pid, like the ZooKeeper JVMs' marker).
//!
//! ```no_run
//! # fn demo() -> holdfast_testkit::Result<()> {
//! let broker = holdfast_testkit::KafkaBroker::start()?;
//! let bootstrap = broker.bootstrap(); // "127.0.0.1:PORT"
//! # let _ = bootstrap;
//! # Ok(())
//! # }
//! ```

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::error::{KitError, Result};
use crate::zk::{OWNER_MARKER_NAME, spawn_logged};

/// The environment variable naming the broker binary, when it is not where
/// `scripts/test` installs it.
pub const BROKER_ENV: &str = "HOLDFAST_KAFKA_BROKER";

/// How long a broker may take to accept connections.
const READY_WITHIN: Duration = Duration::from_secs(15);
/// How long a graceful stop may take before the broker is killed.
const STOP_WITHIN: Duration = Duration::from_secs(10);

/// A running Kafka-protocol broker on a free loopback port.
#[derive(Debug)]
pub struct KafkaBroker {
    binary: PathBuf,
    dir: tempfile::TempDir,
    addr: SocketAddr,
    child: Option<Child>,
}

impl KafkaBroker {
    /// Starts a broker with an empty data directory and waits until it
    /// accepts connections. Fails, saying why and how to fix the machine,
    /// when the binary is missing or the broker does not come up.
    pub fn start() -> Result<KafkaBroker> {
        KafkaBroker::start_binary(broker_binary()?)
    }

    /// Starts the broker binary at `binary` (a `noida-db`), as
    /// [`start`](Self::start) does.
    pub fn start_binary(binary: PathBuf) -> Result<KafkaBroker> {
        crate::zk::reap_orphans();
        if !binary.is_file() {
            return Err(KitError::BrokerMissing { looked: binary });
        }
        let dir = tempfile::Builder::new()
            .prefix(&format!("kafka.{OWNER_MARKER_NAME}{}.", std::process::id()))
            .tempdir()
            .map_err(KitError::io("creating the broker's data directory"))?;
        let mut broker = KafkaBroker {
            binary,
            dir,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            child: None,
        };
        // Another test process may take the port between choosing and
        // binding: then the broker exits, and the kit tries another port.
        let mut attempts = 0;
        loop {
            broker.addr = SocketAddr::from(([127, 0, 0, 1], crate::free_port()?));
            match broker.spawn() {
                Ok(()) => return Ok(broker),
                Err(KitError::BrokerExited { .. }) if attempts < 4 => attempts += 1,
                Err(error) => return Err(error),
            }
        }
    }

    /// `HOST:PORT`, for `bootstrap.servers`.
    pub fn bootstrap(&self) -> String {
        self.addr.to_string()
    }

    /// The broker's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The broker's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Stops the broker gracefully (SIGINT, as Ctrl-C: it saves its data),
    /// killing it if it has not exited within 10 s.
    pub fn stop(&mut self) -> Result<()> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        let pid = Pid::from_raw(child.id() as i32);
        let _ = kill(pid, Signal::SIGCONT);
        let _ = kill(pid, Signal::SIGINT);
        let deadline = Instant::now() + STOP_WITHIN;
        loop {
            match child.try_wait() {
                Ok(Some(_)) => return Ok(()),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(KitError::Timeout {
                        what: format!(
                            "the Kafka broker on {} to stop after SIGINT (killed it)",
                            self.addr
                        ),
                        waited: STOP_WITHIN,
                    });
                }
            }
        }
    }

    /// Kills the broker outright (SIGKILL). Its last half second of data
    /// may be lost: it snapshots its data with a delay.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the broker again on the same port and data directory, after
    /// [`stop`](Self::stop) or [`kill`](Self::kill).
    pub fn restart(&mut self) -> Result<()> {
        self.stop()?;
        self.spawn()
    }

    /// Pauses the broker (SIGSTOP): connections stay open, nothing answers.
    pub fn pause(&self) -> Result<()> {
        self.signal(Signal::SIGSTOP)
    }

    /// Resumes a paused broker (SIGCONT).
    pub fn resume(&self) -> Result<()> {
        self.signal(Signal::SIGCONT)
    }

    /// The last `lines` lines of the broker's log.
    pub fn log_tail(&self, lines: usize) -> String {
        crate::zk::log_tail(&self.log_path(), lines)
    }

    fn signal(&self, signal: Signal) -> Result<()> {
        let child = self
            .child
            .as_ref()
            .ok_or_else(|| KitError::Invalid("the Kafka broker is not running".into()))?;
        kill(Pid::from_raw(child.id() as i32), signal)
            .map_err(|source| KitError::Signal { member: 0, source })
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("broker.log")
    }

    fn spawn(&mut self) -> Result<()> {
        let log = self.log_path();
        // Readiness is this start's own announcement in the log, then a
        // connection: a port that merely accepts may be another process's.
        let logged_before = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
        let announcement = format!("127.0.0.1:{}", self.addr.port());
        let mut command = Command::new(&self.binary);
        command
            .arg("start")
            .arg("--data-dir")
            .arg(self.dir.path())
            .args(["--host", "127.0.0.1", "--only", "kafka", "--kafka-port"])
            .arg(self.addr.port().to_string());
        let child = spawn_logged(
            &mut command,
            &log,
            &format!("the Kafka broker {}", self.binary.display()),
        )?;
        self.child = Some(child);
        let started = Instant::now();
        while started.elapsed() < READY_WITHIN {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                self.child = None;
                return Err(KitError::BrokerExited {
                    status: status.to_string(),
                    log_tail: self.log_tail(40),
                });
            }
            if announced(&log, logged_before, &announcement)
                && TcpStream::connect_timeout(&self.addr, Duration::from_millis(200)).is_ok()
            {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill();
        Err(KitError::BrokerNotReady {
            addr: self.addr,
            waited: READY_WITHIN,
            log_tail: self.log_tail(40),
        })
    }
}

/// Whether the log at `path`, past its first `from` bytes, holds `text`.
fn announced(path: &Path, from: u64, text: &str) -> bool {
    std::fs::read(path)
        .ok()
        .and_then(|bytes| bytes.get(usize::try_from(from).ok()?..).map(<[u8]>::to_vec))
        .is_some_and(|tail| String::from_utf8_lossy(&tail).contains(text))
}

impl Drop for KafkaBroker {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Where the broker binary is: `$HOLDFAST_KAFKA_BROKER`, else where
/// `scripts/test` installs it.
fn broker_binary() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os(BROKER_ENV) {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(KitError::BrokerMissing { looked: path })
        };
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-tools/kafka");
    let lib = venv.join("lib");
    let found = std::fs::read_dir(&lib).ok().and_then(|entries| {
        entries
            .flatten()
            .map(|entry| entry.path().join("site-packages/noida_db/noida-db"))
            .find(|path| path.is_file())
    });
    found.ok_or(KitError::BrokerMissing {
        looked: lib.join("python3.*/site-packages/noida_db/noida-db"),
    })
}

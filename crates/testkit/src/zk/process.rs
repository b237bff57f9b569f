//! One ZooKeeper JVM: spawning it, signalling it, and making sure none
//! outlives the test that started it.
//!
//! Every JVM runs in its own process group (so a stop signal reaches only it,
//! and a shell's hang-up does not) and carries the marker
//! `-Dholdfast.testkit.owner=<pid of the test process>` on its command line.
//! [`ServerProcess`] kills its JVM when dropped, which also happens when a
//! test panics; [`reap_orphans`] kills JVMs whose owner is gone, which covers
//! a test process that was itself killed.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::config::ZkClusterConfig;
use crate::error::{KitError, Result};

/// The marker, followed by the owning test process's pid, that every server
/// the kit starts carries on its command line (a JVM property for
/// ZooKeeper, the data directory's name for the Kafka broker).
pub(crate) const OWNER_MARKER_NAME: &str = "holdfast.testkit.owner=";
const OWNER_MARKER: &str = "-Dholdfast.testkit.owner=";

/// A running (or stopped, or paused) ZooKeeper server process.
#[derive(Debug)]
pub(crate) struct ServerProcess {
    member: u32,
    child: Child,
}

impl ServerProcess {
    /// Starts `java … QuorumPeerMain <config>` with output to `log`.
    pub(crate) fn spawn(
        config: &ZkClusterConfig,
        member: u32,
        zoo_cfg: &Path,
        log: &Path,
    ) -> Result<ServerProcess> {
        let jar = config.classpath.split(':').next().unwrap_or_default();
        if !Path::new(jar).exists() {
            return Err(KitError::ZooKeeperMissing {
                missing: PathBuf::from(jar),
            });
        }
        let mut command = Command::new(&config.java);
        command
            .arg(format!("-Xmx{}m", config.heap_mib))
            .args(["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k"])
            .arg(format!(
                "-Dorg.slf4j.simpleLogger.defaultLogLevel={}",
                config.log_level
            ))
            .arg("-Dzookeeper.admin.enableServer=false")
            .arg(format!("{OWNER_MARKER}{}", std::process::id()))
            .arg("-cp")
            .arg(&config.classpath)
            .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
            .arg(zoo_cfg);
        let child = spawn_logged(
            &mut command,
            log,
            &format!("ZooKeeper member {member} with {}", config.java.display()),
        )?;
        Ok(ServerProcess { member, child })
    }

    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` to the JVM.
    pub(crate) fn signal(&self, signal: Signal) -> Result<()> {
        kill(self.nix_pid(), signal).map_err(|source| KitError::Signal {
            member: self.member,
            source,
        })
    }

    /// `Some(description)` when the process has exited.
    pub(crate) fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            Ok(None) => None,
            Err(error) => Some(format!("unknown ({error})")),
        }
    }

    /// Sends `signal` (after a SIGCONT, in case it is paused) and waits for
    /// the process to exit.
    pub(crate) fn terminate(mut self, signal: Signal) -> Result<()> {
        if self.exited().is_none() {
            let _ = kill(self.nix_pid(), Signal::SIGCONT);
            self.signal(signal)?;
        }
        self.child.wait().map_err(KitError::io(format!(
            "waiting for ZooKeeper member {}",
            self.member
        )))?;
        Ok(())
    }

    fn nix_pid(&self) -> Pid {
        Pid::from_raw(self.child.id() as i32)
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if self.exited().is_none() {
            let _ = kill(self.nix_pid(), Signal::SIGKILL);
            let _ = self.child.wait();
        }
    }
}

/// Starts `command` in a process group of its own (so a signal to the test
/// does not reach it), stdin closed, stdout and stderr appended to `log`;
/// `what` names it in the error.
pub(crate) fn spawn_logged(command: &mut Command, log: &Path, what: &str) -> Result<Child> {
    let out = File::options()
        .create(true)
        .append(true)
        .open(log)
        .map_err(KitError::io(format!("opening {}", log.display())))?;
    let err = out
        .try_clone()
        .map_err(KitError::io("duplicating the log handle"))?;
    command
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
        .map_err(KitError::io(format!("starting {what}")))
}

/// The last `lines` lines of a log file (empty if unreadable).
pub(crate) fn log_tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The owner's pid in one command-line argument that carries the marker.
fn owner_in(arg: &str) -> Option<u32> {
    let (_, after) = arg.split_once(OWNER_MARKER_NAME)?;
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Kills every server (ZooKeeper JVM or Kafka broker) started by this kit whose owning process no
/// longer exists (a test that was killed outright). [`ZkCluster::start`](super::ZkCluster::start)
/// calls it; call it yourself to clean a machine.
/// Returns how many it killed.
pub fn reap_orphans() -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut reaped = 0;
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let owner = cmdline
            .split(|byte| *byte == 0)
            .filter_map(|arg| std::str::from_utf8(arg).ok())
            .find_map(owner_in);
        if let Some(owner) = owner
            && !Path::new(&format!("/proc/{owner}")).exists()
        {
            tracing::warn!(
                pid,
                owner,
                "killing an orphaned test server whose test process is gone"
            );
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            reaped += 1;
        }
    }
    reaped
}

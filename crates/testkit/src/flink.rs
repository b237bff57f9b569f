//! Apache Flink's own clients, for the tests that check holdfast's REST API
//! against them: [`FlinkClients`].
//!
//! `scripts/test` installs PyPI's `apache-flink` and
//! `apache-flink-libraries` (pinned to 2.3.0, without their Python
//! dependencies) into `target/test-tools/flink`; their `pyflink` directory
//! is a Flink distribution with `bin/flink` and `lib/flink-dist-*.jar`,
//! which runs on the machine's Java 17. From it the kit runs
//!
//! * the `flink` CLI ([`FlinkClients::cli`]), whose `RestClusterClient`
//!   parses every answer into Flink's own response classes;
//! * the contract check ([`FlinkClients::check`]): `flink/FlinkContract.java`
//!   next to this crate, run on the class path of the Flink distribution,
//!   parses each answer with the response class of Flink's handler for that
//!   method and path (the classes Flink's OpenAPI description is generated
//!   from) and compares what Flink would write back with the answer;
//! * Flink's web dashboard ([`FlinkClients::web_dir`]): the Angular app in
//!   `flink-dist`'s `web/`, unpacked for a test to serve.
//!
//! Nothing here skips: a missing installation is a [`KitError::FlinkMissing`]
//! that says how to install it.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{KitError, Result};

/// The environment variable naming a Flink distribution, when it is not
/// where `scripts/test` installs it.
pub const FLINK_HOME_ENV: &str = "HOLDFAST_FLINK_HOME";

/// One answer of a REST API, for [`FlinkClients::check`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The request's method (`GET`, `POST`, `PATCH`).
    pub method: String,
    /// The request's path, with its query if any.
    pub path: String,
    /// The answer's status code.
    pub status: u16,
    /// The answer's body.
    pub body: String,
}

/// What [`FlinkClients::check`] found for one answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// `METHOD PATH`.
    pub what: String,
    /// Why the answer is not what Flink's client reads; `None`: it is.
    pub failure: Option<String>,
    /// The fields of an answer that reads well which Flink's class does not
    /// know (a caller checks them against the fields it means to add, so
    /// that a misspelled field of Flink's does not pass as an extra).
    pub extra: Vec<String>,
}

/// An installed Flink distribution.
#[derive(Clone, Debug)]
pub struct FlinkClients {
    home: PathBuf,
    dist: PathBuf,
}

impl FlinkClients {
    /// Finds the distribution (`HOLDFAST_FLINK_HOME`, else where
    /// `scripts/test` installs it); fails, saying how to install it, when
    /// there is none.
    pub fn find() -> Result<FlinkClients> {
        let home = match std::env::var_os(FLINK_HOME_ENV) {
            Some(home) => PathBuf::from(home),
            None => installed_home()?,
        };
        let lib = home.join("lib");
        let dist = std::fs::read_dir(&lib)
            .ok()
            .and_then(|entries| {
                entries.flatten().map(|e| e.path()).find(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("flink-dist") && n.ends_with(".jar"))
                })
            })
            .ok_or_else(|| KitError::FlinkMissing {
                looked: lib.join("flink-dist-*.jar"),
            })?;
        if !home.join("bin/flink").is_file() {
            return Err(KitError::FlinkMissing {
                looked: home.join("bin/flink"),
            });
        }
        Ok(FlinkClients { home, dist })
    }

    /// The distribution's directory (Flink's `FLINK_HOME`).
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// Runs `flink ARGS` (e.g. `["list", "-m", "127.0.0.1:8081"]`) with its
    /// log on the console, for at most `within`; its exit status and what
    /// it printed (stdout then stderr).
    pub fn cli(&self, args: &[&str], within: Duration) -> Result<(bool, String)> {
        self.cli_with(args, "", within)
    }

    /// [`cli`](Self::cli) with `config` (Flink's `config.yaml` text, e.g.
    /// its `security.ssl.rest.*` keys) as the CLI's configuration.
    pub fn cli_with(
        &self,
        args: &[&str],
        config: &str,
        within: Duration,
    ) -> Result<(bool, String)> {
        let conf = tempfile::tempdir().map_err(KitError::io("creating a Flink conf directory"))?;
        // The CLI reads its configuration from FLINK_CONF_DIR; an empty one
        // keeps every default, and the CLI's log goes to the console.
        std::fs::write(conf.path().join("config.yaml"), config)
            .map_err(KitError::io("writing Flink's config.yaml"))?;
        std::fs::copy(
            self.home.join("conf/log4j-cli.properties"),
            conf.path().join("log4j-cli.properties"),
        )
        .map_err(KitError::io("copying Flink's log4j-cli.properties"))?;
        let mut command = Command::new(self.home.join("bin/flink"));
        command
            .args(args)
            .env("FLINK_HOME", &self.home)
            .env("FLINK_CONF_DIR", conf.path())
            .env("FLINK_LOG_DIR", conf.path());
        let line = format!("flink {}", args.join(" "));
        run(command, &line, None, within)
    }

    /// Checks `answers` against Flink's REST contract (see the module
    /// documentation); one verdict per answer, in order.
    pub fn check(&self, answers: &[Answer]) -> Result<Vec<Verdict>> {
        let dir = tempfile::tempdir().map_err(KitError::io("creating a directory for answers"))?;
        let mut input = String::new();
        for (i, answer) in answers.iter().enumerate() {
            let file = dir.path().join(format!("answer-{i}.json"));
            std::fs::write(&file, &answer.body).map_err(KitError::io("writing an answer"))?;
            input += &format!(
                "{} {} {} {}\n",
                answer.method,
                answer.path,
                answer.status,
                file.display()
            );
        }
        let contract = Path::new(env!("CARGO_MANIFEST_DIR")).join("flink/FlinkContract.java");
        let mut command = Command::new("java");
        command
            .arg("-cp")
            .arg(&self.dist)
            .arg(&contract)
            .arg(&self.dist);
        let (_, output) = run(
            command,
            "java FlinkContract.java",
            Some(input),
            Duration::from_secs(120),
        )?;
        let verdicts: Vec<Verdict> = output
            .lines()
            .filter_map(|line| {
                if let Some(rest) = line.strip_prefix("ok ") {
                    let (what, extra) = match rest.split_once(" extra=") {
                        Some((what, extra)) => {
                            (what, extra.split(',').map(str::to_owned).collect())
                        }
                        None => (rest, Vec::new()),
                    };
                    Some(Verdict {
                        what: what.to_owned(),
                        failure: None,
                        extra,
                    })
                } else {
                    line.strip_prefix("FAIL ").map(|rest| {
                        let (what, why) = rest.split_once(": ").unwrap_or((rest, "?"));
                        Verdict {
                            what: what.to_owned(),
                            failure: Some(why.to_owned()),
                            extra: Vec::new(),
                        }
                    })
                }
            })
            .collect();
        if verdicts.len() != answers.len() {
            return Err(KitError::Io {
                what: format!(
                    "FlinkContract.java judged {} of {} answers; it printed:\n{output}",
                    verdicts.len(),
                    answers.len()
                ),
                source: std::io::Error::other("incomplete contract check"),
            });
        }
        Ok(verdicts)
    }

    /// Flink's web dashboard (`web/` of `flink-dist`), unpacked into a new
    /// directory under `into`; the directory holding its `index.html`.
    pub fn web_dir(&self, into: &Path) -> Result<PathBuf> {
        let script = "import sys, zipfile\n\
                      z = zipfile.ZipFile(sys.argv[1])\n\
                      z.extractall(sys.argv[2], [n for n in z.namelist() if n.startswith('web/')])\n";
        let mut command = Command::new("python3");
        command.arg("-c").arg(script).arg(&self.dist).arg(into);
        let (ok, output) = run(
            command,
            "unpacking Flink's web dashboard",
            None,
            Duration::from_secs(120),
        )?;
        let web = into.join("web");
        if !ok || !web.join("index.html").is_file() {
            return Err(KitError::Io {
                what: format!(
                    "unpacking web/ of {} gave no index.html: {output}",
                    self.dist.display()
                ),
                source: std::io::Error::other("no dashboard"),
            });
        }
        Ok(web)
    }
}

/// Where `scripts/test` installs the distribution.
fn installed_home() -> Result<PathBuf> {
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-tools/flink/lib");
    std::fs::read_dir(&lib)
        .ok()
        .and_then(|entries| {
            entries
                .flatten()
                .map(|entry| entry.path().join("site-packages/pyflink"))
                .find(|path| path.join("bin/flink").is_file())
        })
        .ok_or(KitError::FlinkMissing {
            looked: lib.join("python3.*/site-packages/pyflink"),
        })
}

/// Runs `command` with `input` on its stdin, killing it after `within`; its
/// success and its stdout followed by its stderr.
fn run(
    mut command: Command,
    line: &str,
    input: Option<String>,
    within: Duration,
) -> Result<(bool, String)> {
    let mut child = command
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(KitError::io(format!("starting `{line}`")))?;
    if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
        std::thread::spawn(move || {
            let _ = stdin.write_all(input.as_bytes());
        });
    }
    let readers = [
        child.stdout.take().map(reader),
        child.stderr.take().map(reader),
    ];
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child
            .try_wait()
            .map_err(KitError::io(format!("waiting for `{line}`")))?
        {
            break Some(status);
        }
        if started.elapsed() > within {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let output: String = readers
        .into_iter()
        .flatten()
        .map(|r| r.join().unwrap_or_default())
        .collect();
    match status {
        Some(status) => Ok((status.success(), output)),
        None => Err(KitError::FlinkTimeout {
            command: line.to_owned(),
            waited: within,
            output,
        }),
    }
}

fn reader(mut from: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = from.read_to_string(&mut text);
        text
    })
}

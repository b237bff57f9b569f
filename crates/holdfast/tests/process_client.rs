//! Tier 4: `holdfast run | list | status | cancel` as real processes against
//! the real REST server (`holdfast_cluster::rest`) over a fake JobManager:
//! outputs, exit codes (0 ok, 1 error, 2 usage) and error messages.

mod support;

use std::net::SocketAddr;
use std::process::Output;
use std::sync::{Arc, Mutex};

use anyhow::{Result, ensure};
use holdfast_cluster::control::{BoxFuture, ClusterControl, ControlError};
use holdfast_cluster::rest;
use holdfast_cluster::rest::answers::*;
use holdfast_runtime::graph::JobGraph;
use holdfast_runtime::ids::JobId;
use holdfast_types::WallTime;
use holdfast_types::wall::{SystemClock, WallClock};
use serde_json::{Value, json};

/// The job every submit creates: CREATED when first asked, then RUNNING.
const SUBMITTED: JobId = JobId::from_u128(0x1001);

#[derive(Default)]
struct Fake {
    /// The leader's REST URL when this fake is a standby.
    leader: Option<String>,
    submitted: Mutex<Vec<JobGraph>>,
    cancelled: Mutex<Vec<JobId>>,
    polls: Mutex<u32>,
}

impl ClusterControl for Fake {
    fn overview(&self) -> Overview {
        Overview::default()
    }
    fn wall_now(&self) -> WallTime {
        SystemClock.wall_now()
    }
    fn jobs(&self) -> Result<JobsOverview, ControlError> {
        let running = self.job(SUBMITTED)?;
        Ok(JobsOverview {
            jobs: vec![JobSummary {
                jid: running.jid,
                name: "wordcount".into(),
                state: "RUNNING".into(),
                start_time: 0,
                restarts: 3,
                tasks_total: 2,
                tasks_running: 1,
                ..JobSummary::default()
            }],
        })
    }
    fn job(&self, id: JobId) -> Result<JobDetails, ControlError> {
        if id != SUBMITTED {
            return Err(ControlError::NotFound(id));
        }
        let mut polls = self.polls.lock().unwrap();
        *polls += 1;
        let state = if *polls == 1 { "CREATED" } else { "RUNNING" };
        let subtask = |index, taskmanager: Option<&str>| SubtaskView {
            subtask: index,
            attempt: 3,
            status: if taskmanager.is_some() {
                "RUNNING"
            } else {
                "SCHEDULED"
            }
            .into(),
            taskmanager: taskmanager.map(String::from),
            slot: taskmanager.map(|_| 1),
            processed: 1234,
            ..SubtaskView::default()
        };
        Ok(JobDetails {
            jid: id.to_string(),
            name: "wordcount".into(),
            state: state.into(),
            start_time: 1_700_000_000_000,
            restarts: 3,
            vertices: vec![VertexView {
                id: vertex_id(0),
                name: "count".into(),
                task: "count".into(),
                parallelism: 2,
                subtasks: vec![subtask(0, Some("tm-east-1")), subtask(1, None)],
                ..VertexView::default()
            }],
            plan: Default::default(),
            takeovers: Vec::new(),
            ..JobDetails::default()
        })
    }
    fn exceptions(&self, id: JobId) -> Result<JobExceptions, ControlError> {
        self.job(id)?;
        Ok(JobExceptions {
            root_exception: None,
            timestamp: None,
            history: ExceptionHistory {
                entries: vec![ExceptionView::of(
                    &ExceptionEntry {
                        exception_name: "TaskManager tm-west-2 lost (heartbeat timeout)".into(),
                        timestamp: 1_700_000_060_000,
                        task_name: Some("0.1#2".into()),
                        location: Some("tm-west-2".into()),
                        decision: "restart in 1s".into(),
                        kind: Some("taskmanager-heartbeat-timeout".into()),
                    },
                    None,
                )],
                truncated: false,
            },
        })
    }
    fn checkpoints(&self, id: JobId) -> Result<CheckpointStats, ControlError> {
        self.job(id)?;
        let completed = CheckpointView {
            id: 12,
            status: "COMPLETED".into(),
            is_savepoint: false,
            trigger_timestamp: 1_700_000_070_000,
            end_timestamp: Some(1_700_000_070_050),
            end_to_end_duration: 50,
            state_size: 2048,
            alignment_duration: 1,
            num_subtasks: 2,
            num_acknowledged_subtasks: 2,
            failure_message: None,
            ..CheckpointView::default()
        };
        Ok(CheckpointStats {
            counts: CheckpointCounts {
                restored: 1,
                total: 12,
                in_progress: 0,
                completed: 12,
                failed: 0,
            },
            summary: Default::default(),
            latest: LatestCheckpoints {
                completed: Some(completed.clone()),
                savepoint: None,
                failed: None,
                restored: Some(RestoredView {
                    id: 9,
                    restore_timestamp: 1_700_000_060_500,
                    is_savepoint: false,
                    external_path: "job/chk-9/_metadata".into(),
                }),
            },
            history: vec![completed],
        })
    }
    fn checkpoint_config(&self, id: JobId) -> Result<CheckpointConfigView, ControlError> {
        self.job(id)?;
        Err(ControlError::Invalid("not in this test".into()))
    }
    fn taskmanagers(&self) -> Result<TaskManagers, ControlError> {
        Ok(TaskManagers::default())
    }
    fn config(&self) -> Vec<ConfigEntry> {
        Vec::new()
    }
    fn ha(&self) -> HaView {
        unreachable!("the client commands do not ask for /ha")
    }
    fn submit(&self, graph: JobGraph) -> BoxFuture<'_, Result<JobId, ControlError>> {
        Box::pin(async move {
            if let Some(leader) = &self.leader {
                return Err(ControlError::NotLeader {
                    leader_rest: Some(leader.clone()),
                });
            }
            self.submitted.lock().unwrap().push(graph);
            Ok(SUBMITTED)
        })
    }
    fn cancel(&self, id: JobId) -> BoxFuture<'_, Result<(), ControlError>> {
        Box::pin(async move {
            self.job(id)?;
            self.cancelled.lock().unwrap().push(id);
            Ok(())
        })
    }
}

/// Serves `fake` on 127.0.0.1 until the test ends; returns its URL.
async fn serve(fake: Arc<Fake>) -> Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let server = rest::serve(listener, fake, std::future::pending()).await?;
    Ok(format!("http://{}", server.local_addr()))
}

async fn holdfast(args: &[&str]) -> Result<Output> {
    support::run(&args.iter().map(|a| a.to_string()).collect::<Vec<_>>()).await
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Asserts the exit code and that stderr contains every word.
fn expect(output: &Output, code: i32, words: &[&str]) -> Result<()> {
    let stderr = text(&output.stderr);
    ensure!(
        output.status.code() == Some(code),
        "exit {:?}, wanted {code}:\n{stderr}",
        output.status
    );
    for word in words {
        ensure!(stderr.contains(word), "{word:?} not in stderr:\n{stderr}");
    }
    Ok(())
}

#[tokio::test]
async fn run_list_status_and_cancel_talk_to_the_jobmanager() -> Result<()> {
    let fake = Arc::new(Fake::default());
    let url = serve(fake.clone()).await?;
    let target = ["--jobmanager", url.as_str()];

    let args = [
        &[
            "run",
            "count",
            "--args",
            r#"{"limit": 5}"#,
            "--parallelism",
            "3",
        ][..],
        &target,
        &["--wait-running"],
    ]
    .concat();
    let run = holdfast(&args).await?;
    expect(&run, 0, &["is CREATED", "is RUNNING"])?;
    ensure!(
        text(&run.stdout) == format!("{SUBMITTED}\n"),
        "{}",
        text(&run.stdout)
    );
    let expected = JobGraph::single("count", "count", json!({"limit": 5}), 3);
    ensure!(*fake.submitted.lock().unwrap() == [expected]);

    let list = holdfast(&[&["list"][..], &target].concat()).await?;
    expect(&list, 0, &[])?;
    let stdout = text(&list.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    ensure!(
        lines[0].split_whitespace().collect::<Vec<_>>()
            == ["JOB", "ID", "NAME", "STATE", "RESTARTS", "TASKS"],
        "{stdout}"
    );
    ensure!(
        lines[1].split_whitespace().collect::<Vec<_>>()
            == [
                SUBMITTED.to_string().as_str(),
                "wordcount",
                "RUNNING",
                "3",
                "1/2"
            ],
        "{stdout}"
    );

    let id = SUBMITTED.to_string();
    let status = holdfast(&[&["status", id.as_str()][..], &target].concat()).await?;
    expect(&status, 0, &[])?;
    let stdout = text(&status.stdout);
    for word in [
        "restarts: 3",
        "vertex 0 count (task count, parallelism 2)",
        "tm-east-1",
        "SCHEDULED",
        "TaskManager tm-west-2 lost (heartbeat timeout) (0.1#2 on tm-west-2) -> restart in 1s",
        "checkpoints: 12 completed, 0 failed, 0 in progress; latest 12 at",
        "(2048 bytes, 50 ms)",
        "restored:    from checkpoint 9 at",
    ] {
        ensure!(stdout.contains(word), "{word:?} not in:\n{stdout}");
    }

    let json_status = holdfast(&[&["status", id.as_str(), "--json"][..], &target].concat()).await?;
    let parsed: Value = serde_json::from_slice(&json_status.stdout)?;
    ensure!(
        parsed["job"]["jid"] == id.as_str()
            && parsed["exceptions"]["exceptionHistory"]["entries"][0]["decision"]
                == "restart in 1s"
            && parsed["checkpoints"]["latest"]["restored"]["id"] == 9,
        "{parsed}"
    );

    let cancel = holdfast(&[&["cancel", id.as_str()][..], &target].concat()).await?;
    expect(&cancel, 0, &[])?;
    ensure!(text(&cancel.stdout).contains(&format!("cancellation of job {id} requested")));
    ensure!(*fake.cancelled.lock().unwrap() == [SUBMITTED]);
    Ok(())
}

#[tokio::test]
async fn a_graph_file_sent_to_a_standby_lands_on_the_leader() -> Result<()> {
    let leader = Arc::new(Fake::default());
    let leader_url = serve(leader.clone()).await?;
    let standby = serve(Arc::new(Fake {
        leader: Some(leader_url),
        ..Fake::default()
    }))
    .await?;
    let graph = JobGraph::single("from-file", "burn", json!({"millis": 10}), 2);
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("process_client_graph.json");
    std::fs::write(&path, serde_json::to_vec(&graph)?)?;
    let run = holdfast(&[
        "run",
        "--graph",
        path.to_str().unwrap(),
        "--jobmanager",
        &standby,
        "--json",
    ])
    .await?;
    expect(&run, 0, &[])?;
    let answer: Value = serde_json::from_slice(&run.stdout)?;
    ensure!(
        answer == json!({"jobid": SUBMITTED.to_string()}),
        "{answer}"
    );
    ensure!(*leader.submitted.lock().unwrap() == [graph]);
    Ok(())
}

#[tokio::test]
async fn an_unreachable_jobmanager_is_named_with_a_hint() -> Result<()> {
    let dead: SocketAddr = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.local_addr()?
    };
    let url = format!("http://{dead}");
    let list = holdfast(&["list", "--jobmanager", &url]).await?;
    let named = format!("cannot reach the JobManager at {url}/jobs/overview: connection refused");
    expect(
        &list,
        1,
        &[&named, "is it running? (rest.address/rest.port)"],
    )?;
    // The default URL comes from the configuration (rest.address, rest.port).
    let port = format!("rest.port={}", dead.port());
    let run = holdfast(&["run", "count", "-D", "rest.address=127.0.0.1", "-D", &port]).await?;
    expect(
        &run,
        1,
        &[&format!(
            "cannot reach the JobManager at {url}/jobs: connection refused"
        )],
    )?;
    Ok(())
}

#[tokio::test]
async fn usage_errors_name_the_argument_and_exit_2() -> Result<()> {
    let url = serve(Arc::new(Fake::default())).await?;
    let bad_args =
        holdfast(&["run", "count", "--args", "{limit: 5}", "--jobmanager", &url]).await?;
    expect(&bad_args, 2, &["'--args <JSON>'", "not valid JSON"])?;
    let not_object = holdfast(&["run", "count", "--args", "[5]", "--jobmanager", &url]).await?;
    expect(
        &not_object,
        2,
        &["'--args <JSON>'", "expected a JSON object"],
    )?;
    let parallelism = holdfast(&[
        "run",
        "count",
        "--parallelism",
        "many",
        "--jobmanager",
        &url,
    ])
    .await?;
    expect(&parallelism, 2, &["'--parallelism <N>'"])?;
    let bad_id = holdfast(&["status", "12345-not-hex", "--jobmanager", &url]).await?;
    expect(
        &bad_id,
        2,
        &["'12345-not-hex'", "job id has a non-hex character '-'"],
    )?;
    let short_id = holdfast(&["cancel", "abc", "--jobmanager", &url]).await?;
    expect(
        &short_id,
        2,
        &["'abc'", "job id must be 32 characters, got 3"],
    )?;
    Ok(())
}

#[tokio::test]
async fn an_unknown_job_is_a_404_naming_it() -> Result<()> {
    let url = serve(Arc::new(Fake::default())).await?;
    let unknown = JobId::from_u128(0xfeed).to_string();
    for command in ["status", "cancel"] {
        let output = holdfast(&[command, &unknown, "--jobmanager", &url]).await?;
        expect(
            &output,
            1,
            &[
                "answered 404 Not Found",
                &format!("job {unknown} not found"),
            ],
        )?;
        ensure!(output.stdout.is_empty(), "{}", text(&output.stdout));
    }
    Ok(())
}

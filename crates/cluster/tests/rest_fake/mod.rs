//! A fake JobManager behind the real REST server, for the REST tests: a
//! [`ClusterControl`] with two known jobs whose role (leader, standby,
//! unavailable) a test sets, recording every submit and cancel it accepts,
//! on a wall clock the test sets.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use holdfast_cluster::control::{BoxFuture, ClusterControl, ControlError, SavepointTrigger};
use holdfast_cluster::rest;
use holdfast_cluster::rest::answers::*;
use holdfast_runtime::graph::JobGraph;
use holdfast_runtime::ids::JobId;
use holdfast_types::WallTime;
use holdfast_types::wall::{ManualClock, WallClock};
use tokio::sync::oneshot;

/// A running job the fake knows.
pub const RUNNING: JobId = JobId::from_u128(0xabc);
/// A finished job the fake knows (cancelling it is a conflict).
pub const FINISHED: JobId = JobId::from_u128(0xdef);
/// When both jobs started (2023-11-14 22:13:20 UTC).
pub const STARTED_MS: u64 = 1_700_000_000_000;
/// The fake's wall clock at first: 3 min 05 s after the jobs started.
pub const NOW: WallTime = WallTime::from_millis(STARTED_MS + 185_000);

/// How the fake answers mutating calls.
#[derive(Clone, Debug)]
pub enum Role {
    /// Accepts them.
    Leader,
    /// Refuses them, naming the leader's REST address if known.
    Standby(Option<String>),
    /// Fails them as unavailable (e.g. the job store is unreachable).
    Unavailable,
    /// Knows no leader for the first mutating call, then leads.
    ElectingThenLeader,
}

/// The fake JobManager.
pub struct Fake {
    /// How it answers mutating calls.
    pub role: Mutex<Role>,
    /// Every graph it accepted.
    pub submitted: Mutex<Vec<JobGraph>>,
    /// Every job it cancelled.
    pub cancelled: Mutex<Vec<JobId>>,
    /// The running job's name.
    pub name: Mutex<String>,
    /// Every savepoint asked for: (job, directory, stop).
    pub savepoints: Mutex<Vec<(JobId, Option<String>, bool)>>,
    /// Every job submitted from a savepoint, with the savepoint.
    pub from_savepoint: Mutex<Vec<(JobGraph, holdfast_cluster::control::FromSavepoint)>>,
    /// Its wall clock (at [`NOW`] until a test moves it).
    pub clock: Arc<ManualClock>,
}

impl Fake {
    /// A fake in `role`.
    pub fn new(role: Role) -> Arc<Fake> {
        Arc::new(Fake {
            role: Mutex::new(role),
            submitted: Mutex::new(Vec::new()),
            cancelled: Mutex::new(Vec::new()),
            name: Mutex::new("wordcount".into()),
            savepoints: Mutex::new(Vec::new()),
            from_savepoint: Mutex::new(Vec::new()),
            clock: ManualClock::at(NOW),
        })
    }

    fn refusal(&self) -> Option<ControlError> {
        let mut role = self.role.lock().unwrap();
        match role.clone() {
            Role::Leader => None,
            Role::ElectingThenLeader => {
                *role = Role::Leader;
                Some(ControlError::NotLeader { leader_rest: None })
            }
            Role::Standby(leader_rest) => Some(ControlError::NotLeader { leader_rest }),
            Role::Unavailable => Some(ControlError::Unavailable(
                "the job store is unreachable".into(),
            )),
        }
    }

    fn known(&self, id: JobId) -> Result<&'static str, ControlError> {
        match id {
            RUNNING => Ok("RUNNING"),
            FINISHED => Ok("FINISHED"),
            _ => Err(ControlError::NotFound(id)),
        }
    }
}

impl ClusterControl for Fake {
    fn overview(&self) -> Overview {
        Overview {
            taskmanagers: 1,
            slots_total: 4,
            slots_available: 2,
            jobs_running: 1,
            jobs_finished: 1,
            holdfast_version: "0.1.0".into(),
            leader: matches!(*self.role.lock().unwrap(), Role::Leader),
            ..Overview::default()
        }
    }

    fn jobs(&self) -> Result<JobsOverview, ControlError> {
        if let Role::Standby(leader_rest) = self.role.lock().unwrap().clone() {
            return Err(ControlError::NotLeader { leader_rest });
        }
        let summary = |id: JobId, name: &str, state: &str| JobSummary {
            jid: id.to_string(),
            name: name.into(),
            state: state.into(),
            start_time: STARTED_MS,
            restarts: 2,
            tasks_total: 2,
            tasks_running: if state == "RUNNING" { 2 } else { 0 },
            ..JobSummary::default()
        };
        Ok(JobsOverview {
            jobs: vec![
                summary(RUNNING, &self.name.lock().unwrap(), "RUNNING"),
                summary(FINISHED, "batch", "FINISHED"),
            ],
        })
    }

    fn job(&self, id: JobId) -> Result<JobDetails, ControlError> {
        let state = self.known(id)?;
        let subtask = |index| SubtaskView {
            subtask: index,
            attempt: 2,
            status: state.into(),
            taskmanager: Some("tm-1".into()),
            slot: Some(index),
            processed: 42,
            records_out: 40,
            records_in_per_second: 250.0,
            records_out_per_second: 120.0,
            backpressure: 0.6,
            watermark: Some(1_700_000_000_000),
            connectors: connectors(index),
            ..SubtaskView::default()
        };
        Ok(JobDetails {
            jid: id.to_string(),
            name: self.name.lock().unwrap().clone(),
            state: state.into(),
            start_time: STARTED_MS,
            restarts: 2,
            vertices: vec![VertexView {
                id: vertex_id(0),
                name: "source".into(),
                task: "counter".into(),
                parallelism: 2,
                subtasks: vec![subtask(0), subtask(1)],
                ..VertexView::default()
            }],
            plan: PlanView {
                jid: id.to_string(),
                name: "wordcount".into(),
                nodes: vec![PlanNode {
                    id: vertex_id(0),
                    parallelism: 2,
                    operator: "counter".into(),
                    description: "source".into(),
                    ..PlanNode::default()
                }],
                ..PlanView::default()
            },
            takeovers: Vec::new(),
            ..JobDetails::default()
        })
    }

    fn exceptions(&self, id: JobId) -> Result<JobExceptions, ControlError> {
        self.known(id)?;
        let entry = ExceptionEntry {
            exception_name: "task 0.1 failed: boom".into(),
            timestamp: 1_700_000_001_000,
            task_name: Some("0.1#1".into()),
            location: Some("tm-1".into()),
            decision: "restart in 1s".into(),
            kind: Some("user-code".into()),
        };
        Ok(JobExceptions {
            root_exception: Some(entry.exception_name.clone()),
            timestamp: Some(entry.timestamp),
            history: ExceptionHistory {
                entries: vec![ExceptionView::of(&entry, None)],
                truncated: false,
            },
        })
    }

    fn checkpoints(&self, id: JobId) -> Result<CheckpointStats, ControlError> {
        self.known(id)?;
        let completed = CheckpointView {
            id: 7,
            status: "COMPLETED".into(),
            is_savepoint: false,
            trigger_timestamp: 1_700_000_002_000,
            end_timestamp: Some(1_700_000_002_040),
            end_to_end_duration: 40,
            state_size: 4096,
            alignment_duration: 3,
            num_subtasks: 4,
            num_acknowledged_subtasks: 4,
            failure_message: None,
            ..CheckpointView::default()
        };
        Ok(CheckpointStats {
            counts: CheckpointCounts {
                restored: 1,
                total: 7,
                in_progress: 0,
                completed: 6,
                failed: 1,
            },
            summary: Default::default(),
            latest: LatestCheckpoints {
                completed: Some(completed.clone()),
                savepoint: None,
                failed: None,
                restored: Some(RestoredView {
                    id: 5,
                    restore_timestamp: 1_700_000_001_500,
                    is_savepoint: false,
                    external_path: "job/chk-5/_metadata".into(),
                }),
            },
            history: vec![completed],
        })
    }

    fn checkpoint_config(&self, id: JobId) -> Result<CheckpointConfigView, ControlError> {
        self.known(id)?;
        Err(ControlError::Invalid(format!(
            "job {id} does not checkpoint: execution.checkpointing.interval is not set"
        )))
    }

    fn taskmanagers(&self) -> Result<TaskManagers, ControlError> {
        Ok(TaskManagers {
            taskmanagers: vec![TaskManagerView {
                id: "tm-1".into(),
                path: "127.0.0.1:6124".into(),
                data_address: Some("127.0.0.1:6125".into()),
                slots_number: 4,
                free_slots: 2,
                ms_since_last_heartbeat: 120,
                ha: Some(connected()),
                ..TaskManagerView::default()
            }],
        })
    }

    fn config(&self) -> Vec<ConfigEntry> {
        vec![ConfigEntry {
            key: "rest.port".into(),
            value: "8081".into(),
        }]
    }

    fn ha(&self) -> HaView {
        HaView {
            this_jobmanager: "jm-1".into(),
            is_leader: true,
            policy: "lease".into(),
            leader: Some(LeaderView {
                id: "jm-1".into(),
                rpc_address: "127.0.0.1:6123".into(),
                rest_address: "http://127.0.0.1:8081".into(),
                epoch: 7,
            }),
            connection: connected(),
            taskmanagers: vec![TaskManagerHa {
                id: "tm-1".into(),
                connection: None,
            }],
        }
    }

    fn wall_now(&self) -> WallTime {
        self.clock.wall_now()
    }

    fn submit(&self, graph: JobGraph) -> BoxFuture<'_, Result<JobId, ControlError>> {
        Box::pin(async move {
            if let Some(refusal) = self.refusal() {
                return Err(refusal);
            }
            let mut submitted = self.submitted.lock().unwrap();
            submitted.push(graph);
            Ok(JobId::from_u128(0x1000 + submitted.len() as u128))
        })
    }

    fn trigger_savepoint(
        &self,
        id: JobId,
        trigger: SavepointTrigger,
    ) -> BoxFuture<'_, Result<String, ControlError>> {
        let SavepointTrigger {
            target,
            stop,
            trigger_id,
        } = trigger;
        Box::pin(async move {
            if let Some(refusal) = self.refusal() {
                return Err(refusal);
            }
            match self.known(id)? {
                "RUNNING" => {
                    let mut asked = self.savepoints.lock().unwrap();
                    asked.push((id, target, stop));
                    Ok(trigger_id.unwrap_or_else(|| format!("{:032x}", asked.len())))
                }
                state => Err(ControlError::Terminal {
                    job: id,
                    state: state.into(),
                }),
            }
        })
    }

    fn savepoint_status(
        &self,
        id: JobId,
        trigger: &str,
    ) -> Result<holdfast_cluster::rest::answers::SavepointStatus, ControlError> {
        use holdfast_cluster::rest::answers::SavepointStatus;
        self.known(id)?;
        match trigger {
            "00000000000000000000000000000001" => {
                Ok(SavepointStatus::completed("/sp/savepoint-1".into()))
            }
            "00000000000000000000000000000002" => Ok(SavepointStatus::failed("expired".into())),
            "00000000000000000000000000000003" => Ok(SavepointStatus::in_progress()),
            other => Err(ControlError::Invalid(format!(
                "no savepoint trigger {other:?} is known"
            ))),
        }
    }

    fn submit_from_savepoint(
        &self,
        graph: JobGraph,
        from: holdfast_cluster::control::FromSavepoint,
    ) -> BoxFuture<'_, Result<JobId, ControlError>> {
        Box::pin(async move {
            if let Some(refusal) = self.refusal() {
                return Err(refusal);
            }
            let mut submitted = self.from_savepoint.lock().unwrap();
            submitted.push((graph, from));
            Ok(JobId::from_u128(0x2000 + submitted.len() as u128))
        })
    }

    fn cancel(&self, id: JobId) -> BoxFuture<'_, Result<(), ControlError>> {
        Box::pin(async move {
            if let Some(refusal) = self.refusal() {
                return Err(refusal);
            }
            match self.known(id)? {
                "RUNNING" => {
                    self.cancelled.lock().unwrap().push(id);
                    Ok(())
                }
                state => Err(ControlError::Terminal {
                    job: id,
                    state: state.into(),
                }),
            }
        })
    }
}

fn connected() -> ConnectionView {
    ConnectionView {
        state: "CONNECTED".into(),
        lease_remaining_ms: Some(30_000),
    }
}

/// A fake JobManager served over a real socket; stops when dropped.
pub struct Served {
    /// Its base URL (`http://127.0.0.1:PORT`).
    pub url: String,
    /// Its address.
    pub addr: SocketAddr,
    /// The fake behind it.
    pub fake: Arc<Fake>,
    _stop: oneshot::Sender<()>,
}

/// Serves `fake` on a free port of 127.0.0.1.
pub async fn serve(fake: Arc<Fake>) -> Served {
    serve_with(fake, rest::RestAccess::open()).await
}

/// Serves `fake` with `access` deciding who may change jobs.
pub async fn serve_with(fake: Arc<Fake>, access: rest::RestAccess) -> Served {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let scheme = if access.tls().is_some() {
        "https"
    } else {
        "http"
    };
    let (stop, stopped) = oneshot::channel::<()>();
    let server = rest::serve_with(listener, fake.clone(), access, async move {
        let _ = stopped.await;
    })
    .await
    .unwrap();
    let addr = server.local_addr();
    Served {
        url: format!("{scheme}://{addr}"),
        addr,
        fake,
        _stop: stop,
    }
}

/// A valid graph of one vertex.
pub fn graph() -> JobGraph {
    JobGraph::single("wordcount", "counter", serde_json::json!({"limit": 10}), 2)
}

/// What subtask `index` of the fake job's one vertex reports: 0 reads two
/// partitions, 1 writes in transactions.
fn connectors(index: u32) -> Vec<ConnectorView> {
    if index == 0 {
        let split = |partition: u32, position, end| SplitView {
            name: format!("orders/{partition}"),
            position: Some(position),
            end: Some(end),
            lag: Some(end - position),
            finished: false,
        };
        vec![ConnectorView {
            operator: "kafka-in".into(),
            splits: vec![split(0, 1_000, 1_500), split(1, 70, 70)],
            transactions: Vec::new(),
        }]
    } else {
        let txn = |k: u32, state: &str, age_ms| TransactionView {
            id: format!("counts-{k}"),
            state: state.into(),
            start_time: 1_700_000_000_000,
            age_ms,
        };
        vec![ConnectorView {
            operator: "kafka-out".into(),
            splits: Vec::new(),
            transactions: vec![txn(1, "awaiting-commit", 2_500), txn(2, "open", 400)],
        }]
    }
}

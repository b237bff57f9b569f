//! Prometheus metrics of the cluster runtime (prefix `holdfast_`), next to
//! the HA layer's `holdfast_ha_*` in the same registry. `docs/METRICS.md`
//! lists them with what an operator should do when each one moves.
//!
//! A heartbeat timeout and a leadership change are counted apart on
//! purpose: `task_failures_total{cause}` says which one failed tasks.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

pub use crate::checkpoint_metrics::{CheckpointMetrics, Completed};

/// Upper bounds (seconds) of the heartbeat round-trip histogram's buckets:
/// fine below 100 ms (a p99 under 100 ms can be read off them), coarse up to
/// 10 s, about where `heartbeat.timeout` lies.
pub const ROUND_TRIP_BUCKETS: [f64; 13] = [
    0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0,
];

/// Label of [`ClusterMetrics::task_failures`].
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CauseLabel {
    /// TaskManager: `new-leader`, `leader-lost` (policy standard only),
    /// `heartbeat-timeout`, `shutdown`. JobManager: the failure's kind
    /// ([`FailureKind::label`](holdfast_runtime::failure::FailureKind::label)):
    /// `task` (the task's own failure, or a neighbour's seen through the
    /// exchange), `taskmanager-heartbeat-timeout`, `taskmanager-lost`,
    /// `taskmanager-reregistered`, `taskmanager-shutdown`,
    /// `jobmanager-heartbeat-timeout`, `leader-lost`, `new-leader`,
    /// `deploy-failed`, `infrastructure`.
    pub cause: String,
}

/// Label of `ClusterMetrics::restore_reads`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FromLabel {
    /// `local-copy` (local recovery) or `checkpoint-storage`.
    pub from: String,
}

/// Label of `ClusterMetrics::jobs`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabel {
    /// A job state (Flink's names).
    pub state: String,
}

/// The cluster's metrics. Cheap to clone; clones share the values.
#[derive(Clone, Debug)]
pub struct ClusterMetrics {
    /// TaskManager: successful registrations with a leader.
    pub registrations: Counter,
    /// TaskManager: JobManager heartbeats missed for `heartbeat.timeout`.
    pub jobmanager_heartbeat_timeouts: Counter,
    /// JobManager: TaskManagers that missed heartbeats for `heartbeat.timeout`.
    pub taskmanager_heartbeat_timeouts: Counter,
    /// JobManager: TaskManagers lost because calls could not
    /// reach them (`heartbeat.rpc-failure-threshold`).
    pub taskmanager_unreachable: Counter,
    /// TaskManager: calls refused because they came from a stale leader.
    pub stale_calls_rejected: Counter,
    /// JobManager: REST calls refused for want of a credential (the bearer
    /// token of `security.rest.token-file`, or a client certificate).
    pub rest_calls_refused: Counter,
    /// TLS: certificate expiry, refused handshakes, reloads.
    pub tls: holdfast_tls::TlsMetrics,
    /// TaskManager: task attempts it failed itself, by cause.
    task_failures: Family<CauseLabel, Counter>,
    /// TaskManager with local recovery: files its restores read (state
    /// files, runs), by where from.
    restore_reads: Family<FromLabel, Counter>,
    /// JobManager (leader): job failures, by cause.
    job_failures: Family<CauseLabel, Counter>,
    /// JobManager: job restarts decided.
    pub job_restarts: Counter,
    /// JobManager (leader): jobs taken over from a previous leader.
    pub takeovers: Counter,
    /// JobManager (leader): running attempts adopted at take-overs.
    pub attempts_adopted: Counter,
    /// JobManager (leader): tasks restarted at take-overs (not adoptable).
    pub attempts_restarted_at_takeover: Counter,
    /// TaskManager: tasks kept running while waiting for a successor of a
    /// silent leader (1 while waiting).
    pub awaiting_successor: Gauge,
    /// JobManager (leader): jobs by state.
    jobs: Family<StateLabel, Gauge>,
    /// JobManager (leader): records processed by all tasks of all jobs, as
    /// last reported (use `rate()` for throughput).
    pub records_processed: Gauge,
    /// JobManager: 1 while this JobManager leads and serves as leader.
    pub leading: Gauge,
    /// JobManager (leader): round trip of each answered heartbeat call to
    /// a TaskManager, in seconds.
    pub taskmanager_heartbeat_round_trip: Histogram,
    /// JobManager (leader): checkpoints, per job.
    pub checkpoints: CheckpointMetrics,
}

impl Default for ClusterMetrics {
    /// Metrics registered nowhere (for tests, or a process without a
    /// metrics endpoint).
    fn default() -> Self {
        ClusterMetrics {
            registrations: Counter::default(),
            jobmanager_heartbeat_timeouts: Counter::default(),
            taskmanager_heartbeat_timeouts: Counter::default(),
            taskmanager_unreachable: Counter::default(),
            stale_calls_rejected: Counter::default(),
            rest_calls_refused: Counter::default(),
            tls: holdfast_tls::TlsMetrics::default(),
            task_failures: Family::default(),
            restore_reads: Family::default(),
            job_failures: Family::default(),
            job_restarts: Counter::default(),
            takeovers: Counter::default(),
            attempts_adopted: Counter::default(),
            attempts_restarted_at_takeover: Counter::default(),
            awaiting_successor: Gauge::default(),
            jobs: Family::default(),
            records_processed: Gauge::default(),
            leading: Gauge::default(),
            taskmanager_heartbeat_round_trip: Histogram::new(ROUND_TRIP_BUCKETS),
            checkpoints: CheckpointMetrics::default(),
        }
    }
}

impl ClusterMetrics {
    /// Metrics registered in `registry`.
    pub fn new(registry: &mut Registry) -> ClusterMetrics {
        let metrics = ClusterMetrics::default();
        let r = registry.sub_registry_with_prefix("holdfast");
        r.register(
            "taskmanager_registrations",
            "TaskManager registrations with a leader",
            metrics.registrations.clone(),
        );
        r.register(
            "jobmanager_heartbeat_timeouts",
            "JobManager heartbeats missed for heartbeat.timeout (seen by a TaskManager)",
            metrics.jobmanager_heartbeat_timeouts.clone(),
        );
        r.register(
            "taskmanager_heartbeat_timeouts",
            "TaskManagers that missed heartbeats for heartbeat.timeout (seen by the leader)",
            metrics.taskmanager_heartbeat_timeouts.clone(),
        );
        r.register(
            "taskmanager_unreachable",
            "TaskManagers lost because calls in a row could not reach them (seen by the leader)",
            metrics.taskmanager_unreachable.clone(),
        );
        r.register(
            "stale_epoch_calls_rejected",
            "calls refused for a stale leader epoch",
            metrics.stale_calls_rejected.clone(),
        );
        r.register(
            "rest_calls_refused",
            "REST calls refused for want of a credential (bearer token or client certificate)",
            metrics.rest_calls_refused.clone(),
        );
        metrics.tls.register(r);
        r.register(
            "task_failures",
            "task attempts a TaskManager failed itself, by cause",
            metrics.task_failures.clone(),
        );
        r.register(
            "taskmanager_restore_reads",
            "files a TaskManager's restores read (local recovery on), from its local copies or from the checkpoint storage",
            metrics.restore_reads.clone(),
        );
        r.register(
            "job_failures",
            "job failures seen by the leader, by cause",
            metrics.job_failures.clone(),
        );
        r.register(
            "job_restarts",
            "job restarts decided by the restart strategy",
            metrics.job_restarts.clone(),
        );
        r.register(
            "job_takeovers",
            "jobs a new leader took over from the previous one (not restarts)",
            metrics.takeovers.clone(),
        );
        r.register(
            "takeover_attempts_adopted",
            "running task attempts a new leader adopted (they kept running)",
            metrics.attempts_adopted.clone(),
        );
        r.register(
            "takeover_attempts_restarted",
            "tasks a new leader could not adopt and restarted from the latest completed checkpoint",
            metrics.attempts_restarted_at_takeover.clone(),
        );
        r.register(
            "taskmanager_awaiting_successor",
            "1 while a TaskManager keeps its tasks for a successor of a silent leader",
            metrics.awaiting_successor.clone(),
        );
        r.register(
            "jobs",
            "jobs known to the leader, by state",
            metrics.jobs.clone(),
        );
        r.register(
            "records_processed",
            "records processed by all tasks, as last reported",
            metrics.records_processed.clone(),
        );
        r.register(
            "jobmanager_leading",
            "1 while this JobManager serves as leader",
            metrics.leading.clone(),
        );
        r.register_with_unit(
            "taskmanager_heartbeat_round_trip",
            "round trip of each answered heartbeat call from the leader to a TaskManager",
            Unit::Seconds,
            metrics.taskmanager_heartbeat_round_trip.clone(),
        );
        metrics.checkpoints.register(r);
        metrics
    }

    /// The leader's job failure counter of one cause.
    pub fn job_failures(&self, cause: &str) -> Counter {
        self.job_failures
            .get_or_create(&CauseLabel {
                cause: cause.to_owned(),
            })
            .clone()
    }

    /// The TaskManager's task failure counter of one cause.
    pub fn task_failures(&self, cause: &str) -> Counter {
        self.task_failures
            .get_or_create(&CauseLabel {
                cause: cause.to_owned(),
            })
            .clone()
    }

    /// The TaskManager's counter of files its restores read from its
    /// local copies (`local`) or from the checkpoint storage.
    pub fn restore_reads(&self, local: bool) -> Counter {
        let from = if local {
            "local-copy"
        } else {
            "checkpoint-storage"
        };
        self.restore_reads
            .get_or_create(&FromLabel {
                from: from.to_owned(),
            })
            .clone()
    }

    /// Sets the number of jobs in each state.
    pub fn set_jobs(&self, counts: &[(&str, i64)]) {
        for (state, count) in counts {
            self.jobs
                .get_or_create(&StateLabel {
                    state: (*state).to_owned(),
                })
                .set(*count);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_is_documented_in_metrics_md() {
        let mut registry = Registry::default();
        let metrics = ClusterMetrics::new(&mut registry);
        metrics.task_failures("new-leader").inc();
        metrics.restore_reads(true).inc();
        metrics.job_failures("task").inc();
        metrics.set_jobs(&[("RUNNING", 1)]);
        let link = || holdfast_tls::LinkLabel {
            link: "rest".into(),
        };
        metrics
            .tls
            .certificate_expiry
            .get_or_create(&link())
            .set(86_400);
        let refused = holdfast_tls::RefusalLabel {
            link: "rest".into(),
            reason: "not-tls".into(),
        };
        metrics.tls.handshakes_refused.get_or_create(&refused).inc();
        let reload = holdfast_tls::ReloadLabel {
            link: "rest".into(),
            outcome: "reloaded".into(),
        };
        metrics.tls.reloads.get_or_create(&reload).inc();
        metrics.checkpoints.completed(
            "j",
            crate::checkpoint_metrics::Completed {
                duration: 0.1,
                bytes: 10,
                alignment: 0.0,
                at: 1.0,
            },
        );
        metrics.checkpoints.failed("j");
        metrics.checkpoints.restored("j", 3);
        let text = holdfast_ha::metrics::encode(&registry);
        let doc = include_str!("../../../docs/METRICS.md");
        let names: Vec<&str> = text
            .lines()
            .filter_map(|line| line.strip_prefix("# TYPE "))
            .filter_map(|line| line.split_whitespace().next())
            .collect();
        assert_eq!(names.len(), 28, "{text}");
        for name in names {
            assert!(
                doc.contains(&format!("`{name}")),
                "{name} is not in docs/METRICS.md"
            );
        }
    }
}

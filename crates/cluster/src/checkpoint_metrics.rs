//! The leader's checkpoint metrics, per job (`holdfast_checkpoint*`).

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};

/// Label of every checkpoint metric.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct JobLabel {
    /// The job's id.
    pub job: String,
}

type FloatGauge = Gauge<f64, AtomicU64>;

/// Checkpoints of the jobs this JobManager leads. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct CheckpointMetrics {
    completed: Family<JobLabel, Counter>,
    failed: Family<JobLabel, Counter>,
    last_duration: Family<JobLabel, FloatGauge>,
    last_size: Family<JobLabel, Gauge>,
    last_alignment: Family<JobLabel, FloatGauge>,
    last_completed_at: Family<JobLabel, FloatGauge>,
    restored_id: Family<JobLabel, Gauge>,
}

/// What a completed checkpoint measured.
#[derive(Clone, Copy, Debug)]
pub struct Completed {
    /// From trigger to completion, in seconds.
    pub duration: f64,
    /// State written, in bytes.
    pub bytes: u64,
    /// The longest alignment of a task, in seconds.
    pub alignment: f64,
    /// When it completed, in seconds since the Unix epoch.
    pub at: f64,
}

impl CheckpointMetrics {
    /// Registers the metrics under `registry` (prefixed `holdfast_` by the
    /// caller's sub-registry).
    pub(crate) fn register(&self, r: &mut Registry) {
        r.register(
            "checkpoints_completed",
            "checkpoints completed (their pointer in the HA store), per job",
            self.completed.clone(),
        );
        r.register(
            "checkpoints_failed",
            "checkpoints that failed (expired, declined, a write failed, or the job stopped), per job",
            self.failed.clone(),
        );
        r.register_with_unit(
            "checkpoint_last_duration",
            "trigger to completion of the latest completed checkpoint, per job",
            Unit::Seconds,
            self.last_duration.clone(),
        );
        r.register_with_unit(
            "checkpoint_last_size",
            "state written by the latest completed checkpoint, per job",
            Unit::Bytes,
            self.last_size.clone(),
        );
        r.register_with_unit(
            "checkpoint_last_alignment",
            "the longest barrier alignment of a task in the latest completed checkpoint, per job",
            Unit::Seconds,
            self.last_alignment.clone(),
        );
        r.register(
            "checkpoint_last_completed_timestamp_seconds",
            "when the latest checkpoint completed (Unix time; its age is time() minus this), per job",
            self.last_completed_at.clone(),
        );
        r.register(
            "checkpoint_restored_id",
            "the checkpoint the job's current run restored from, per job",
            self.restored_id.clone(),
        );
    }

    fn label(job: &str) -> JobLabel {
        JobLabel {
            job: job.to_owned(),
        }
    }

    /// `job` completed a checkpoint.
    pub fn completed(&self, job: &str, completed: Completed) {
        let label = Self::label(job);
        self.completed.get_or_create(&label).inc();
        self.last_duration
            .get_or_create(&label)
            .set(completed.duration);
        self.last_size
            .get_or_create(&label)
            .set(i64::try_from(completed.bytes).unwrap_or(i64::MAX));
        self.last_alignment
            .get_or_create(&label)
            .set(completed.alignment);
        self.last_completed_at
            .get_or_create(&label)
            .set(completed.at);
    }

    /// A checkpoint of `job` failed.
    pub fn failed(&self, job: &str) {
        self.failed.get_or_create(&Self::label(job)).inc();
    }

    /// `job`'s current run restored from checkpoint `id`.
    pub fn restored(&self, job: &str, id: u64) {
        self.restored_id
            .get_or_create(&Self::label(job))
            .set(i64::try_from(id).unwrap_or(i64::MAX));
    }
}

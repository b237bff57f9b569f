//! `GET /overview`, `GET /config` (what Flink's web dashboard needs to
//! start), `GET /jobmanager/config` (the effective configuration),
//! `GET /jobmanager/environment` and `GET /applications/overview`.

use serde::{Deserialize, Serialize};

/// `GET /overview`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Overview {
    /// Registered TaskManagers.
    pub taskmanagers: usize,
    /// Slots of all registered TaskManagers.
    pub slots_total: u32,
    /// Slots holding no task attempt. A job's attempts share slots (subtask
    /// *i* of every vertex in one), so a job takes as many slots as its
    /// highest parallelism.
    pub slots_available: u32,
    /// Jobs not in a terminal state.
    pub jobs_running: usize,
    /// Jobs that finished.
    pub jobs_finished: usize,
    /// Jobs that were canceled.
    pub jobs_cancelled: usize,
    /// Jobs that failed.
    pub jobs_failed: usize,
    /// What Flink's clients show as the version: `holdfast <version>`.
    pub flink_version: String,
    /// What Flink's clients show as the commit: the Flink REST API level
    /// holdfast answers in.
    pub flink_commit: String,
    /// holdfast's version.
    pub holdfast_version: String,
    /// Whether this JobManager leads.
    pub leader: bool,
}

/// One configuration entry in `GET /jobmanager/config` (secrets are
/// masked).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfigEntry {
    /// The key.
    pub key: String,
    /// The effective value.
    pub value: String,
}

/// The Flink release whose REST API v1 holdfast answers in, as its
/// clients show it.
pub const FLINK_API_LEVEL: &str = "Flink 2.3 REST API v1";

/// What Flink's clients show as the server's version.
pub fn shown_version() -> String {
    format!("holdfast {}", env!("CARGO_PKG_VERSION"))
}

/// `GET /config`: what Flink's web dashboard reads when it starts (Flink's
/// `DashboardConfiguration`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct DashboardConfig {
    /// How often the dashboard refreshes (ms; `web.refresh-interval`).
    pub refresh_interval: u64,
    /// The time zone the dashboard shows times in: holdfast's processes
    /// log and answer in UTC.
    pub timezone_name: String,
    /// Its offset from UTC (ms).
    pub timezone_offset: i32,
    /// As [`Overview::flink_version`].
    pub flink_version: String,
    /// As [`Overview::flink_commit`].
    pub flink_revision: String,
    /// What the dashboard offers.
    pub features: DashboardFeatures,
}

impl DashboardConfig {
    /// The settings with `refresh_interval_ms`.
    pub fn new(refresh_interval_ms: u64) -> DashboardConfig {
        DashboardConfig {
            refresh_interval: refresh_interval_ms,
            timezone_name: "UTC".to_owned(),
            timezone_offset: 0,
            flink_version: shown_version(),
            flink_revision: FLINK_API_LEVEL.to_owned(),
            features: DashboardFeatures {
                web_submit: false,
                web_cancel: true,
                web_rescale: false,
                web_history: false,
            },
        }
    }
}

/// The features of Flink's dashboard holdfast supports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct DashboardFeatures {
    /// Jar upload and submission: no (jobs are compiled into holdfast).
    pub web_submit: bool,
    /// Cancelling a job: yes.
    pub web_cancel: bool,
    /// Rescaling through the adaptive scheduler: no (rescale through a
    /// savepoint).
    pub web_rescale: bool,
    /// A history server: no.
    pub web_history: bool,
}

/// `GET /jobmanager/environment` (Flink's `EnvironmentInfo`): holdfast is
/// a native process, so there is no JVM; `jvm.version` says what runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// What runs the JobManager.
    pub jvm: RuntimeInfo,
    /// Flink's class path: none.
    pub classpath: Vec<String>,
}

/// The process in `GET /jobmanager/environment`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RuntimeInfo {
    /// `holdfast <version> (native, no JVM)`.
    pub version: String,
    /// The CPU architecture it was built for.
    pub arch: String,
    /// Flink's JVM options: none.
    pub options: Vec<String>,
}

impl Environment {
    /// This process's environment.
    pub fn this_process() -> Environment {
        Environment {
            jvm: RuntimeInfo {
                version: format!("{} (native, no JVM)", shown_version()),
                arch: std::env::consts::ARCH.to_owned(),
                options: Vec::new(),
            },
            classpath: Vec::new(),
        }
    }
}

/// `GET /applications/overview`: Flink 2's applications; holdfast runs
/// jobs, not applications, so the list is always empty.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ApplicationsOverview {
    /// Always empty.
    pub applications: Vec<serde_json::Value>,
}

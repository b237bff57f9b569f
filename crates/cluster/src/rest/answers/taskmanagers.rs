//! `GET /taskmanagers`: the registered TaskManagers and their slots.

use serde::{Deserialize, Serialize};

use super::ConnectionView;

/// `GET /taskmanagers`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskManagers {
    /// Registered TaskManagers.
    pub taskmanagers: Vec<TaskManagerView>,
}

/// One TaskManager in `GET /taskmanagers` (Flink's `TaskManagerInfo`,
/// with holdfast's data address, heartbeat age and HA connection).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskManagerView {
    /// Its id.
    pub id: String,
    /// Its RPC address.
    pub path: String,
    /// The port of its data-exchange server (-1: it runs none).
    pub data_port: i32,
    /// Flink's JMX port: none (-1).
    pub jmx_port: i32,
    /// When it last answered a heartbeat (ms since the Unix epoch; Flink's
    /// name, whose value is that time).
    pub time_since_last_heartbeat: u64,
    /// Its slots.
    pub slots_number: u32,
    /// Its slots holding no task attempt (a slot shared by several
    /// attempts of one job counts once, as used).
    pub free_slots: u32,
    /// Task attempts placed on it.
    pub assigned_tasks: u32,
    /// What its slots offer: its CPU cores (holdfast gives slots no memory
    /// budget: 0).
    pub total_resource: ResourceView,
    /// The share of [`total_resource`](Self::total_resource) its free slots
    /// hold.
    pub free_resource: ResourceView,
    /// Its machine, as it reported it when it registered.
    pub hardware: HardwareView,
    /// Flink's JVM memory model: holdfast has none (every field null).
    pub memory_configuration: MemoryConfiguration,
    /// Its slots in use, by job (Flink's `allocatedSlots` of
    /// `GET /taskmanagers/{id}`).
    pub allocated_slots: Vec<SlotView>,
    /// Flink's JVM memory figures, in `GET /taskmanagers/{id}` only: a
    /// native process has no JVM heap or direct buffers to report, so
    /// every figure is 0 (Flink's client requires the block).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<JvmMetrics>,
    /// Its data-exchange server (`host:port`), if it runs one (holdfast's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_address: Option<String>,
    /// Milliseconds since its last heartbeat reply (holdfast's).
    pub ms_since_last_heartbeat: u64,
    /// Its ZooKeeper connection as it last reported it (holdfast's).
    pub ha: Option<ConnectionView>,
}

/// One slot in use on a TaskManager (Flink's `SlotInfo`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SlotView {
    /// The job using it.
    pub job_id: String,
    /// What it offers (as the TaskManager's, per slot).
    pub resource: ResourceView,
    /// The job's task attempts in it (one per vertex at that subtask
    /// index).
    pub assigned_tasks: u32,
}

/// Flink's `ResourceProfileInfo`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceView {
    /// CPU cores.
    pub cpu_cores: f64,
    /// Task heap (MB): none.
    pub task_heap_memory: u32,
    /// Task off-heap memory (MB): none.
    pub task_off_heap_memory: u32,
    /// Managed memory (MB): none.
    pub managed_memory: u32,
    /// Network memory (MB): none.
    pub network_memory: u32,
    /// Other resources: none.
    pub extended_resources: std::collections::BTreeMap<String, f64>,
}

/// Flink's `HardwareDescription`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HardwareView {
    /// CPU cores.
    pub cpu_cores: u32,
    /// The machine's memory (bytes).
    pub physical_memory: u64,
    /// What the machine had available when it registered (bytes).
    pub free_memory: u64,
    /// Flink's managed memory: none.
    pub managed_memory: u64,
}

/// Flink's `TaskExecutorMemoryConfiguration`: a JVM's memory budget,
/// which a holdfast TaskManager does not have; every field is null.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryConfiguration {
    /// None.
    pub framework_heap: Option<u64>,
    /// None.
    pub task_heap: Option<u64>,
    /// None.
    pub framework_off_heap: Option<u64>,
    /// None.
    pub task_off_heap: Option<u64>,
    /// None.
    pub network_memory: Option<u64>,
    /// None.
    pub managed_memory: Option<u64>,
    /// None.
    pub jvm_metaspace: Option<u64>,
    /// None.
    pub jvm_overhead: Option<u64>,
    /// None.
    pub total_flink_memory: Option<u64>,
    /// None.
    pub total_process_memory: Option<u64>,
}

/// Flink's `TaskManagerMetricsInfo`: the JVM's memory figures, all 0 for a
/// holdfast TaskManager (see [`TaskManagerView::metrics`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JvmMetrics {
    /// 0.
    pub heap_used: u64,
    /// 0.
    pub heap_committed: u64,
    /// 0.
    pub heap_max: u64,
    /// 0.
    pub non_heap_used: u64,
    /// 0.
    pub non_heap_committed: u64,
    /// 0.
    pub non_heap_max: u64,
    /// 0.
    pub direct_count: u64,
    /// 0.
    pub direct_used: u64,
    /// 0.
    pub direct_max: u64,
    /// 0.
    pub mapped_count: u64,
    /// 0.
    pub mapped_used: u64,
    /// 0.
    pub mapped_max: u64,
    /// 0.
    pub netty_shuffle_memory_segments_available: u64,
    /// 0.
    pub netty_shuffle_memory_segments_used: u64,
    /// 0.
    pub netty_shuffle_memory_segments_total: u64,
    /// 0.
    pub netty_shuffle_memory_available: u64,
    /// 0.
    pub netty_shuffle_memory_used: u64,
    /// 0.
    pub netty_shuffle_memory_total: u64,
    /// None.
    pub garbage_collectors: Vec<serde_json::Value>,
}

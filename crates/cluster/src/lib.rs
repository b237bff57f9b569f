//! The cluster's processes: JobManager (leader and standbys), TaskManager,
//! the REST API and the client. The pure decisions live in
//! `holdfast-runtime`; this crate is their async shell over RPC
//! (`holdfast-rpc`), the HA layer (`holdfast-ha`) and task threads
//! (`holdfast-executor`).
#![warn(missing_docs)]

pub mod address;
mod checkpoint_files;
mod checkpoint_metrics;
pub mod client;
pub mod control;
pub mod dashboard;
pub mod job_store;
pub mod jobmanager;
pub mod metrics;
pub mod rest;
mod savepoint_files;
mod shared;
mod start_error;
pub mod taskmanager;
pub mod timeline;

pub use start_error::{BadValue, Endpoint, StartError};

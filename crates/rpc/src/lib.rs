//! The cluster's RPC: JobManager ⇄ TaskManager over gRPC (tonic), per
//! `proto/cluster.proto`.
//!
//! ```text
//!  JobManager                                        TaskManager
//!   TaskManagerClient ── Heartbeat/DeployTask/CancelTask ──► serve_task_manager
//!   serve_job_manager ◄── RegisterTaskManager/UpdateTaskState ── JobManagerClient
//!
//!  every call: signed with the cluster secret (auth), bounded by the ask
//!  timeout (ClientConfig), fenced by the leader epoch (fencing)
//! ```
//!
//! - [`auth`]: the tonic interceptors that sign ([`ClientAuth`]) and
//!   verify ([`ServerAuth`]) every call, [`AuthenticatedPeer`]; the cluster
//!   secret and the rest of the authentication are holdfast-auth's,
//!   re-exported there.
//! - [`client`]: [`TaskManagerClient`], [`JobManagerClient`].
//! - [`server`]: [`serve_task_manager`], [`serve_job_manager`],
//!   [`serve_both`], [`ServerHandle`].
//! - [`fencing`]: [`FencingRejection`], the wire form of stale-epoch and
//!   not-leader refusals.
//! - [`convert`]: wire messages ⇄ runtime ids, epochs and task states.
//! - [`error`]: [`RpcError`], what a call can end in.
//!
//! Security model and operation: `docs/SECURITY.md`.
#![warn(missing_docs)]

pub mod auth;
pub mod client;
pub mod config;
pub mod convert;
pub mod error;
pub mod fencing;
pub mod server;

/// The generated messages, clients (`*_client`) and service traits
/// (`*_server`) of `proto/cluster.proto`.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod proto {
    tonic::include_proto!("holdfast.cluster.v1");
}

pub use auth::{Auth, AuthenticatedPeer, ClientAuth, ClusterSecret, PeerId, ServerAuth};
pub use client::{JobManagerClient, TaskManagerClient};
pub use config::{ClientConfig, ConfigError};
pub use error::RpcError;
pub use fencing::FencingRejection;
pub use server::{ServeError, ServerHandle, serve_both, serve_job_manager, serve_task_manager};

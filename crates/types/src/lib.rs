//! # holdfast-types
//!
//! The leaf of holdfast's crate graph: small values every layer shares, with
//! no runtime, no randomness and no I/O (reading the system's wall clock in
//! [`wall::SystemClock`] aside), so that a pure core (such as
//! `holdfast-runtime`) can use them without pulling in the HA layer.
//!
//! - [`time`]: [`MonoTime`], a point on a monotonic clock (for deadlines).
//! - [`wall`]: [`WallTime`], a point on the wall clock (for what operators
//!   see), read through a [`wall::WallClock`]: [`wall::SystemClock`] (the
//!   one place that reads the system's clock) or, in tests,
//!   [`wall::ManualClock`].
//! - [`ids`]: [`Epoch`] (the fencing token), [`SessionId`], [`CheckpointId`]
//!   and [`ContenderId`].
//! - [`sync`]: [`sync::lock`] and [`sync::unpoisoned`], the one place that
//!   decides how a poisoned lock is treated.
//! - [`ha`]: the HA layer's configuration as values: [`ha::HaConfig`] (Flink's
//!   `high-availability.*` keys), [`ha::ErrorPolicy`], [`ha::LeaseConfig`]
//!   — here so that `holdfast-config` reads them without the HA layer.
//! - [`location`]: [`Location`], where checkpoints, savepoints and output
//!   go: an absolute local path or `s3://bucket/key`.
//! - [`s3`]: [`s3::S3Options`], how to reach an S3-compatible store.
//! - [`secret`]: [`secret::Secret`], a configured secret `Debug` never shows.
//! - [`duration`]: [`parse_duration`], Flink's spelling of durations in
//!   configuration values (`60 s`, `60000`, `1min`).
//!
//! `holdfast-ha` re-exports the time and id types at their old paths
//! (`holdfast_ha::MonoTime`, `holdfast_ha::types::Epoch`, …), and the HA
//! values as part of its API (`holdfast_ha::config::HaConfig`,
//! `holdfast_ha::ErrorPolicy`, `holdfast_ha::connection::LeaseConfig`).
#![warn(missing_docs)]

pub mod duration;
pub mod ha;
pub mod ids;
pub mod location;
pub mod s3;
pub mod secret;
pub mod sync;
pub mod time;
pub mod wall;

pub use duration::parse_duration;
pub use ids::{CheckpointId, ContenderId, Epoch, SessionId, SnapshotKind};
pub use location::{Location, LocationError};
pub use time::MonoTime;
pub use wall::WallTime;

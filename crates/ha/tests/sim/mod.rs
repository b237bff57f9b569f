//! A seeded simulation of the HA layer on the embedded backend and a
//! virtual clock: contenders and observers, each on its own link, under a
//! random schedule of cuts, crashes and graceful rejoins. Checks the
//! invariants of HA contract §9 (1–4, `docs/HA-CONTRACT.md`).

pub mod invariants;
pub mod run;
pub mod schedule;

//! A seeded simulation of the HA layer on the embedded backend and a
//! virtual clock: contenders and observers, each on its own link, under a
//! random schedule of cuts, crashes and graceful rejoins. Checks the
//! invariants of `ha-semantics.md` §9 (1–4).

pub mod invariants;
pub mod run;
pub mod schedule;

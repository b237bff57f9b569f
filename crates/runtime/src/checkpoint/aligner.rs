//! [`BarrierAligner`]: a task's barrier alignment over its input channels,
//! sans-IO.
//!
//! Barriers flow in order with records on every channel. In
//! `EXACTLY_ONCE` mode a task with several inputs blocks each channel once
//! it delivered barrier *n*, so that nothing after the barrier is processed
//! before the snapshot; when every open channel has delivered it, the task
//! snapshots, forwards the barrier and unblocks them all. In
//! `AT_LEAST_ONCE` mode nothing is blocked: the snapshot is taken when the
//! last barrier arrives.
//!
//! ```text
//!  on_barrier(ch, n) ──► Block(ch)                       (exactly once, not the last)
//!                    └─► Snapshot{n, alignment} + Unblock(every blocked)   (the last one)
//!  on_barrier(ch, m > n) while aligning n ──► Aborted{n} + Unblock(all), then align m
//!  on_end(ch) ──► an ended channel counts as aligned (it can send nothing more)
//!  on_abort(n) ──► Aborted{n} + Unblock(all)
//! ```
//!
//! A blocked channel's data stays in the exchange, under its credits: the
//! sender stops when they run out, so blocking never grows buffers without
//! bound, and since every channel is unblocked once the last barrier (or a
//! newer one, or the end of a channel) arrives, it cannot deadlock.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use holdfast_types::{CheckpointId, MonoTime};

use super::config::CheckpointingMode;

/// What the task is to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AlignCommand {
    /// Stop reading this channel until told to unblock it.
    Block(usize),
    /// Read this channel again.
    Unblock(usize),
    /// Every channel delivered the barrier: snapshot now, then forward the
    /// barrier downstream.
    Snapshot {
        /// The checkpoint.
        id: CheckpointId,
        /// How long the first barrier waited for the last.
        alignment: Duration,
    },
    /// The alignment of this checkpoint was given up (a newer barrier came
    /// first, or the checkpoint was aborted): decline it.
    Aborted {
        /// The checkpoint.
        id: CheckpointId,
    },
}

#[derive(Clone, Debug)]
struct Aligning {
    started: MonoTime,
    seen: BTreeSet<usize>,
}

/// Barrier alignment over a task's input channels.
#[derive(Clone, Debug)]
pub struct BarrierAligner {
    mode: CheckpointingMode,
    channels: usize,
    ended: BTreeSet<usize>,
    blocked: BTreeSet<usize>,
    /// Checkpoints whose barriers are arriving: at most one in
    /// `EXACTLY_ONCE` mode; in `AT_LEAST_ONCE` mode several may overlap
    /// (nothing is blocked, so a fast channel can deliver the next barrier
    /// first), and completing one gives up the older ones.
    pending: BTreeMap<CheckpointId, Aligning>,
    /// The newest checkpoint snapshotted or given up: older barriers are
    /// late and ignored.
    done: Option<CheckpointId>,
}

impl BarrierAligner {
    /// An aligner over `channels` input channels.
    pub fn new(channels: usize, mode: CheckpointingMode) -> BarrierAligner {
        BarrierAligner {
            mode,
            channels,
            ended: BTreeSet::new(),
            blocked: BTreeSet::new(),
            pending: BTreeMap::new(),
            done: None,
        }
    }

    /// Whether `channel` is blocked now.
    pub fn is_blocked(&self, channel: usize) -> bool {
        self.blocked.contains(&channel)
    }

    /// The oldest checkpoint being aligned, if any.
    pub fn aligning(&self) -> Option<CheckpointId> {
        self.pending.keys().next().copied()
    }

    /// `channel` delivered barrier `id` at `now`.
    pub fn on_barrier(
        &mut self,
        now: MonoTime,
        channel: usize,
        id: CheckpointId,
    ) -> Vec<AlignCommand> {
        let mut out = Vec::new();
        if channel >= self.channels || self.done.is_some_and(|done| id <= done) {
            return out; // not a channel of this task, or a late barrier
        }
        if self.mode == CheckpointingMode::ExactlyOnce
            && let Some(&current) = self.pending.keys().next()
        {
            if id < current {
                return out; // older than the one aligning
            }
            if id > current {
                // A newer checkpoint overtook the one aligning (a channel
                // skipped its barrier): that one can no longer complete.
                self.give_up(&mut out, current);
            }
        }
        self.pending
            .entry(id)
            .or_insert_with(|| Aligning {
                started: now,
                seen: BTreeSet::new(),
            })
            .seen
            .insert(channel);
        if !self.complete_if_aligned(&mut out, now, id)
            && self.mode == CheckpointingMode::ExactlyOnce
            && self.blocked.insert(channel)
        {
            out.push(AlignCommand::Block(channel));
        }
        out
    }

    /// `channel` ended (it delivers nothing more): it counts as aligned.
    pub fn on_end(&mut self, now: MonoTime, channel: usize) -> Vec<AlignCommand> {
        let mut out = Vec::new();
        if channel < self.channels && self.ended.insert(channel) {
            if self.blocked.remove(&channel) {
                out.push(AlignCommand::Unblock(channel));
            }
            let ids: Vec<CheckpointId> = self.pending.keys().copied().collect();
            for id in ids {
                self.complete_if_aligned(&mut out, now, id);
            }
        }
        out
    }

    /// Checkpoint `id` was aborted (the coordinator said so): stop aligning
    /// it.
    pub fn on_abort(&mut self, id: CheckpointId) -> Vec<AlignCommand> {
        let mut out = Vec::new();
        if self.pending.contains_key(&id) {
            self.give_up(&mut out, id);
        }
        if self.done.is_none_or(|done| id > done) {
            self.done = Some(id);
        }
        out
    }

    /// Snapshots `id` if every open channel delivered its barrier (giving
    /// up older ones still pending); returns whether it did.
    fn complete_if_aligned(
        &mut self,
        out: &mut Vec<AlignCommand>,
        now: MonoTime,
        id: CheckpointId,
    ) -> bool {
        let Some(aligning) = self.pending.get(&id) else {
            return false;
        };
        let aligned = (0..self.channels)
            .filter(|c| !self.ended.contains(c))
            .all(|c| aligning.seen.contains(&c));
        if !aligned {
            return false;
        }
        let started = aligning.started;
        let older: Vec<CheckpointId> = self.pending.range(..id).map(|(id, _)| *id).collect();
        for old in older {
            self.pending.remove(&old);
            out.push(AlignCommand::Aborted { id: old });
        }
        self.pending.remove(&id);
        self.done = Some(id);
        out.push(AlignCommand::Snapshot {
            id,
            alignment: now.since(started),
        });
        for channel in std::mem::take(&mut self.blocked) {
            out.push(AlignCommand::Unblock(channel));
        }
        true
    }

    fn give_up(&mut self, out: &mut Vec<AlignCommand>, id: CheckpointId) {
        self.pending.remove(&id);
        self.done = Some(self.done.map_or(id, |d| d.max(id)));
        out.push(AlignCommand::Aborted { id });
        for channel in std::mem::take(&mut self.blocked) {
            out.push(AlignCommand::Unblock(channel));
        }
    }
}

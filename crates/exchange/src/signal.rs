//! How a gate learns which of its channels have something to deliver.
//!
//! A channel marks itself ready (data, `End`, a fault, its producer
//! appearing) in its gate's [`GateSignal`]; the gate takes ready channels
//! in FIFO order and puts a channel that delivered an event at the back,
//! so channels with data take turns (round robin) and an idle gate costs
//! nothing per channel. A spurious mark (a channel already drained) is
//! harmless: the gate finds nothing and moves on.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use holdfast_types::sync::{lock, unpoisoned};

use crate::interrupt::{Interrupt, InterruptWake};

/// The ready channels of a gate, each at most once, in the order they
/// became ready. Pure.
#[derive(Debug)]
pub(crate) struct ReadyQueue {
    order: VecDeque<usize>,
    queued: Vec<bool>,
}

impl ReadyQueue {
    /// No channel ready, out of `channels`.
    pub(crate) fn new(channels: usize) -> ReadyQueue {
        ReadyQueue {
            order: VecDeque::with_capacity(channels),
            queued: vec![false; channels],
        }
    }

    /// `channel` has something; appended unless it is queued already.
    pub(crate) fn mark(&mut self, channel: usize) {
        if let Some(queued) = self.queued.get_mut(channel)
            && !*queued
        {
            *queued = true;
            self.order.push_back(channel);
        }
    }

    /// The channel that has waited longest.
    pub(crate) fn take(&mut self) -> Option<usize> {
        let channel = self.order.pop_front()?;
        self.queued[channel] = false;
        Some(channel)
    }

    /// Whether no channel is ready.
    pub(crate) fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}

/// A gate's ready queue and the condvar its task thread waits on.
#[derive(Debug)]
pub(crate) struct GateSignal {
    ready: Mutex<Ready>,
    cond: Condvar,
}

/// The queue, and whether the gate's thread is waiting (only then is a
/// notify worth its system call).
#[derive(Debug)]
struct Ready {
    queue: ReadyQueue,
    waiting: bool,
}

impl GateSignal {
    /// A signal for a gate of `channels` channels.
    pub(crate) fn new(channels: usize) -> GateSignal {
        GateSignal {
            ready: Mutex::new(Ready {
                queue: ReadyQueue::new(channels),
                waiting: false,
            }),
            cond: Condvar::new(),
        }
    }

    /// Marks `channel` ready and wakes the gate's thread.
    pub(crate) fn mark(&self, channel: usize) {
        let mut ready = lock(&self.ready);
        ready.queue.mark(channel);
        if ready.waiting {
            self.cond.notify_one();
        }
    }

    /// The next ready channel, if any.
    pub(crate) fn take(&self) -> Option<usize> {
        lock(&self.ready).queue.take()
    }

    /// Blocks until a channel is ready, `interrupt` is triggered or
    /// `until` passes, whichever is first.
    pub(crate) fn wait(&self, until: Instant, interrupt: &Interrupt) {
        let mut ready = lock(&self.ready);
        loop {
            if !ready.queue.is_empty() || interrupt.is_triggered() {
                return;
            }
            let now = Instant::now();
            if now >= until {
                return;
            }
            ready.waiting = true;
            ready = unpoisoned(self.cond.wait_timeout(ready, until - now)).0;
            ready.waiting = false;
        }
    }
}

impl InterruptWake for GateSignal {
    fn wake_interrupted(&self) {
        let _ready = lock(&self.ready);
        self.cond.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_come_out_once_each_in_the_order_they_became_ready() {
        let mut ready = ReadyQueue::new(4);
        for channel in [2, 0, 2, 3, 0, 9] {
            ready.mark(channel);
        }
        assert_eq!(ready.take(), Some(2));
        ready.mark(2);
        assert_eq!(ready.take(), Some(0));
        assert_eq!(ready.take(), Some(3));
        assert_eq!(ready.take(), Some(2));
        assert_eq!(ready.take(), None);
        assert!(ready.is_empty());
    }

    #[test]
    fn a_wait_ends_at_its_deadline_or_at_once_when_interrupted() {
        let signal = GateSignal::new(1);
        let interrupt = Interrupt::new();
        let start = Instant::now();
        signal.wait(start + std::time::Duration::from_millis(20), &interrupt);
        assert!(start.elapsed() >= std::time::Duration::from_millis(20));
        interrupt.trigger();
        signal.wait(
            Instant::now() + std::time::Duration::from_secs(60),
            &interrupt,
        );
        signal.mark(0);
        assert_eq!(signal.take(), Some(0));
    }
}

//! The decisions of one channel's queue, sans I/O: what may be queued, what
//! comes out next, when the channel is dead. No locks, no waiting, no
//! clock: [`Pipe`](crate::pipe::Pipe) wraps it in a mutex and wakes the
//! waiters.
//!
//! ```text
//!  offer(Batch)      ─► Accepted | Full (capacity batches queued) | Refused (dead / after End)
//!  offer(Watermark)  ─► Accepted (replaces a watermark at the tail)
//!  offer(End)        ─► Accepted (once)
//!  pop()             ─► the head event | nothing | the fault
//!  fail(fault)       ─► drops the queue; every later call sees the fault
//! ```
//!
//! Memory is bounded: at most `capacity` batches, at most one watermark
//! between two batches (or before the first), and one `End`.

use std::collections::VecDeque;

use crate::error::Fault;
use crate::event::Event;

/// The answer to [`ChannelCore::offer`].
#[derive(Debug)]
pub(crate) enum Offer {
    /// Queued.
    Accepted,
    /// `capacity` batches are queued: try again after a pop.
    Full(Event),
    /// The channel is dead.
    Refused(Fault),
    /// The channel already holds its `End`.
    AfterEnd,
}

/// One channel's queue and life.
#[derive(Debug)]
pub(crate) struct ChannelCore {
    events: VecDeque<Event>,
    batches: usize,
    capacity: usize,
    /// Whether the producer is known (a consumer can ask before it exists).
    attached: bool,
    end_queued: bool,
    end_popped: bool,
    fault: Option<Fault>,
    /// The consumer has seen the fault, or is gone.
    consumer_done: bool,
    popped_batches: u64,
}

impl ChannelCore {
    /// An empty channel holding at most `capacity` batches (at least one).
    pub(crate) fn new(capacity: usize, attached: bool) -> ChannelCore {
        ChannelCore {
            events: VecDeque::new(),
            batches: 0,
            capacity: capacity.max(1),
            attached,
            end_queued: false,
            end_popped: false,
            fault: None,
            consumer_done: false,
            popped_batches: 0,
        }
    }

    /// Queues `event` if the rules allow it.
    pub(crate) fn offer(&mut self, event: Event) -> Offer {
        if let Some(fault) = &self.fault {
            return Offer::Refused(fault.clone());
        }
        if self.end_queued {
            return Offer::AfterEnd;
        }
        match event {
            Event::Batch(_) if self.batches >= self.capacity => return Offer::Full(event),
            Event::Batch(_) => self.batches += 1,
            Event::Watermark(_) => {
                if let Some(tail @ Event::Watermark(_)) = self.events.back_mut() {
                    *tail = event;
                    return Offer::Accepted;
                }
            }
            // Never merged: a watermark after a barrier must not replace
            // one before it, nor a barrier or a change of idleness vanish.
            Event::Barrier(..) | Event::Idle(_) => {}
            Event::End => self.end_queued = true,
        }
        self.events.push_back(event);
        Offer::Accepted
    }

    /// Takes the head event.
    #[cfg(test)]
    pub(crate) fn pop(&mut self) -> Result<Option<Event>, Fault> {
        self.pop_if(|_| true)
    }

    /// Takes the head event if `admit` accepts it (a sender without credit
    /// passes watermarks but keeps batches).
    pub(crate) fn pop_if(
        &mut self,
        admit: impl FnOnce(&Event) -> bool,
    ) -> Result<Option<Event>, Fault> {
        if let Some(fault) = &self.fault {
            self.consumer_done = true;
            return Err(fault.clone());
        }
        if !self.events.front().is_some_and(admit) {
            return Ok(None);
        }
        let event = self.events.pop_front();
        match &event {
            Some(Event::Batch(_)) => {
                self.batches -= 1;
                self.popped_batches += 1;
            }
            Some(Event::End) => self.end_popped = true,
            _ => {}
        }
        Ok(event)
    }

    /// Kills the channel with `fault`, dropping what is queued. `false` if
    /// it was dead already or its consumer has taken `End` (then nothing
    /// changes). A fault from the consumer's side ([`Fault::ConsumerGone`],
    /// [`Fault::RequestTimeout`]) means the consumer is done.
    pub(crate) fn fail(&mut self, fault: Fault) -> bool {
        if matches!(fault, Fault::ConsumerGone | Fault::RequestTimeout { .. }) {
            self.consumer_done = true;
        }
        if self.fault.is_some() || self.end_popped {
            return false;
        }
        self.events.clear();
        self.batches = 0;
        self.fault = Some(fault);
        true
    }

    /// The producer is known now.
    pub(crate) fn attach(&mut self) {
        self.attached = true;
    }

    /// Whether the producer is known.
    pub(crate) fn is_attached(&self) -> bool {
        self.attached
    }

    /// The fault, if the channel is dead.
    pub(crate) fn fault(&self) -> Option<&Fault> {
        self.fault.as_ref()
    }

    /// Whether the channel is over for good: its consumer took `End`, saw
    /// the fault, or is gone. (A failed producer's channel is not over
    /// until its consumer has learned of the failure.)
    pub(crate) fn is_over(&self) -> bool {
        self.end_popped || self.consumer_done
    }

    /// Whether anything is queued.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Batches queued now.
    pub(crate) fn batches(&self) -> usize {
        self.batches
    }

    /// Batches popped so far (a receiver returns one credit for each).
    pub(crate) fn popped_batches(&self) -> u64 {
        self.popped_batches
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Batch;
    use holdfast_types::{CheckpointId, SnapshotKind};

    fn batch(n: u32) -> Event {
        Event::Batch(Batch::Encoded {
            records: n,
            bytes: bytes::Bytes::new(),
        })
    }

    fn records(event: Option<Event>) -> Option<u32> {
        match event {
            Some(Event::Batch(Batch::Encoded { records, .. })) => Some(records),
            _ => None,
        }
    }

    #[test]
    fn holds_exactly_capacity_batches_and_frees_one_slot_per_pop() {
        let mut core = ChannelCore::new(2, true);
        assert!(matches!(core.offer(batch(1)), Offer::Accepted));
        assert!(matches!(core.offer(batch(2)), Offer::Accepted));
        assert!(matches!(core.offer(batch(3)), Offer::Full(_)));
        assert_eq!(core.batches(), 2);
        assert_eq!(records(core.pop().unwrap()), Some(1));
        assert!(matches!(core.offer(batch(3)), Offer::Accepted));
        assert!(matches!(core.offer(batch(4)), Offer::Full(_)));
        assert_eq!(core.popped_batches(), 1);
    }

    #[test]
    fn watermarks_and_end_take_no_slot_and_keep_fifo_order() {
        let mut core = ChannelCore::new(1, true);
        assert!(matches!(core.offer(Event::Watermark(1)), Offer::Accepted));
        assert!(matches!(core.offer(batch(1)), Offer::Accepted));
        assert!(matches!(core.offer(Event::Watermark(2)), Offer::Accepted));
        assert!(matches!(core.offer(Event::End), Offer::Accepted));
        assert!(matches!(core.offer(Event::Watermark(3)), Offer::AfterEnd));
        assert!(matches!(core.pop(), Ok(Some(Event::Watermark(1)))));
        assert_eq!(records(core.pop().unwrap()), Some(1));
        assert!(matches!(core.pop(), Ok(Some(Event::Watermark(2)))));
        assert!(!core.is_over());
        assert!(matches!(core.pop(), Ok(Some(Event::End))));
        assert!(core.is_over());
        assert!(matches!(core.pop(), Ok(None)));
        // A consumer that took End is not failed by a late failure.
        assert!(!core.fail(Fault::ProducerFailed));
    }

    #[test]
    fn a_newer_watermark_replaces_one_at_the_tail() {
        let mut core = ChannelCore::new(1, true);
        for w in 0..100 {
            assert!(matches!(core.offer(Event::Watermark(w)), Offer::Accepted));
        }
        assert!(matches!(core.pop(), Ok(Some(Event::Watermark(99)))));
        assert!(core.is_empty());
    }

    #[test]
    fn barriers_take_no_slot_keep_their_place_and_fence_watermarks() {
        let mut core = ChannelCore::new(1, true);
        core.offer(batch(1));
        assert!(matches!(core.offer(Event::Watermark(1)), Offer::Accepted));
        assert!(matches!(
            core.offer(Event::Barrier(CheckpointId(5), SnapshotKind::Full)),
            Offer::Accepted
        ));
        // Not merged into the watermark before the barrier.
        core.offer(Event::Watermark(2));
        core.offer(Event::Watermark(3));
        assert_eq!(records(core.pop().unwrap()), Some(1));
        assert!(matches!(core.pop(), Ok(Some(Event::Watermark(1)))));
        assert!(matches!(
            core.pop(),
            Ok(Some(Event::Barrier(CheckpointId(5), SnapshotKind::Full)))
        ));
        assert!(matches!(core.pop(), Ok(Some(Event::Watermark(3)))));
        // Without credit a barrier at the head passes; behind a batch it
        // waits (FIFO).
        core.offer(batch(2));
        core.offer(Event::Barrier(CheckpointId(6), SnapshotKind::Full));
        let no_credit = |e: &Event| !e.is_batch();
        assert!(matches!(core.pop_if(no_credit), Ok(None)));
    }

    #[test]
    fn idleness_takes_no_slot_and_is_never_merged_away() {
        let mut core = ChannelCore::new(1, true);
        core.offer(batch(1));
        core.offer(Event::Watermark(1));
        core.offer(Event::Idle(true));
        core.offer(Event::Idle(false));
        core.offer(Event::Watermark(2));
        let no_credit = |e: &Event| !e.is_batch();
        assert_eq!(records(core.pop().unwrap()), Some(1));
        assert!(matches!(
            core.pop_if(no_credit),
            Ok(Some(Event::Watermark(1)))
        ));
        assert!(matches!(
            core.pop_if(no_credit),
            Ok(Some(Event::Idle(true)))
        ));
        assert!(matches!(
            core.pop_if(no_credit),
            Ok(Some(Event::Idle(false)))
        ));
        assert!(matches!(
            core.pop_if(no_credit),
            Ok(Some(Event::Watermark(2)))
        ));
    }

    #[test]
    fn pop_if_passes_what_is_admitted_only() {
        let mut core = ChannelCore::new(4, true);
        core.offer(Event::Watermark(7));
        core.offer(batch(1));
        let no_credit = |e: &Event| !e.is_batch();
        assert!(matches!(
            core.pop_if(no_credit),
            Ok(Some(Event::Watermark(7)))
        ));
        assert!(matches!(core.pop_if(no_credit), Ok(None)));
        assert_eq!(core.batches(), 1);
    }

    #[test]
    fn a_gone_consumer_is_over_at_once() {
        let mut core = ChannelCore::new(2, true);
        core.offer(batch(1));
        assert!(core.fail(Fault::ConsumerGone));
        assert!(core.is_over());
        let mut late = ChannelCore::new(2, true);
        late.fail(Fault::ProducerFailed);
        late.fail(Fault::ConsumerGone);
        assert!(late.is_over());
    }

    #[test]
    fn a_fault_drops_the_queue_and_sticks() {
        let mut core = ChannelCore::new(2, false);
        assert!(!core.is_attached());
        core.offer(batch(1));
        assert!(core.fail(Fault::ProducerFailed));
        assert!(!core.is_over(), "the consumer has not seen it yet");
        assert_eq!(core.batches(), 0);
        assert_eq!(core.pop().unwrap_err(), Fault::ProducerFailed);
        assert!(core.is_over());
        assert!(!core.fail(Fault::ConsumerGone));
        assert_eq!(core.pop().unwrap_err(), Fault::ProducerFailed);
        assert!(matches!(
            core.offer(batch(2)),
            Offer::Refused(Fault::ProducerFailed)
        ));
        assert_eq!(core.fault(), Some(&Fault::ProducerFailed));
    }
}

//! A task's input side: [`InputPort`] decodes batches from the exchange into
//! the head of the chain (in-process batches are moved, network batches are
//! decoded on the task's own thread); [`Watermarks`] combines the
//! watermarks of every input channel (the minimum over channels that have
//! not ended, as in Flink).

use holdfast_exchange::Batch;
use holdfast_executor::TaskFailure;
use holdfast_types::CheckpointId;

use crate::checkpoint::Snapshot;

use crate::data::{MIN_WATERMARK, Timestamp};
use crate::push::{BoxPush, Push};

/// The head of a chain, fed from the exchange.
pub(crate) trait InputPort {
    /// Decodes `batch` and pushes its records; returns how many.
    fn batch(&mut self, batch: Batch) -> Result<u64, TaskFailure>;
    /// The chain itself, for watermarks, timers, flush and finish.
    fn chain(&mut self) -> &mut dyn Chain;
}

/// The control side of a chain (everything but typed batches).
pub(crate) trait Chain {
    fn watermark(&mut self, watermark: Timestamp) -> Result<(), TaskFailure>;
    fn idle(&mut self, idle: bool) -> Result<(), TaskFailure>;
    fn on_time(&mut self, now: Timestamp) -> Result<(), TaskFailure>;
    fn next_timer(&self) -> Option<Timestamp>;
    fn flush(&mut self) -> Result<(), TaskFailure>;
    fn finish(&mut self) -> Result<(), TaskFailure>;
    fn barrier(&mut self, id: CheckpointId, snapshot: &mut Snapshot) -> Result<(), TaskFailure>;
    fn checkpoint_ended(&mut self, id: CheckpointId, completed: bool) -> Result<(), TaskFailure>;
}

impl<T> Chain for BoxPush<T> {
    fn watermark(&mut self, watermark: Timestamp) -> Result<(), TaskFailure> {
        Push::watermark(self.as_mut(), watermark)
    }
    fn idle(&mut self, idle: bool) -> Result<(), TaskFailure> {
        Push::idle(self.as_mut(), idle)
    }
    fn on_time(&mut self, now: Timestamp) -> Result<(), TaskFailure> {
        Push::on_time(self.as_mut(), now)
    }
    fn next_timer(&self) -> Option<Timestamp> {
        Push::next_timer(self.as_ref())
    }
    fn flush(&mut self) -> Result<(), TaskFailure> {
        Push::flush(self.as_mut())
    }
    fn finish(&mut self) -> Result<(), TaskFailure> {
        Push::finish(self.as_mut())
    }
    fn barrier(&mut self, id: CheckpointId, snapshot: &mut Snapshot) -> Result<(), TaskFailure> {
        Push::barrier(self.as_mut(), id, snapshot)
    }
    fn checkpoint_ended(&mut self, id: CheckpointId, completed: bool) -> Result<(), TaskFailure> {
        Push::checkpoint_ended(self.as_mut(), id, completed)
    }
}

/// The [`InputPort`] of record type `T`.
pub(crate) struct TypedInput<T> {
    head: BoxPush<T>,
}

impl<T> TypedInput<T> {
    pub(crate) fn new(head: BoxPush<T>) -> TypedInput<T> {
        TypedInput { head }
    }
}

impl<T: crate::data::Data> InputPort for TypedInput<T> {
    fn batch(&mut self, batch: Batch) -> Result<u64, TaskFailure> {
        let mut records: Vec<T> = match batch {
            Batch::Local(local) => *local.downcast::<Vec<T>>().map_err(|_| {
                TaskFailure::new(format!(
                    "internal error: an in-process batch is not of {}",
                    std::any::type_name::<T>()
                ))
            })?,
            Batch::Encoded { records, bytes } => {
                let decoded: Vec<T> = postcard::from_bytes(&bytes).map_err(|e| {
                    TaskFailure::with_source(
                        format!(
                            "a batch from the network does not decode as {} ({} bytes): the \
                             producer runs another build of the job, or the data is corrupt",
                            std::any::type_name::<T>(),
                            bytes.len()
                        ),
                        e,
                    )
                })?;
                if decoded.len() != records as usize {
                    return Err(TaskFailure::new(format!(
                        "a batch from the network says {records} records but holds {}",
                        decoded.len()
                    )));
                }
                decoded
            }
        };
        let n = records.len() as u64;
        self.head.push(&mut records)?;
        Ok(n)
    }

    fn chain(&mut self) -> &mut dyn Chain {
        &mut self.head
    }
}

/// The combined watermark of a task's input channels: the least over the
/// channels neither ended nor idle (Flink's status watermark valve). The
/// task is idle itself while every open channel is.
#[derive(Debug)]
pub(crate) struct Watermarks {
    channels: Vec<Timestamp>,
    ended: Vec<bool>,
    idle: Vec<bool>,
    open: usize,
    current: Timestamp,
    /// Whether the task said downstream that it is idle.
    said_idle: bool,
}

impl Watermarks {
    /// `channels` channels, none heard from.
    pub(crate) fn new(channels: usize) -> Watermarks {
        Watermarks {
            channels: vec![MIN_WATERMARK; channels],
            ended: vec![false; channels],
            idle: vec![false; channels],
            open: channels,
            current: MIN_WATERMARK,
            said_idle: false,
        }
    }

    /// Channel `channel` sent `watermark`: the combined watermark if it
    /// advanced.
    pub(crate) fn advance(&mut self, channel: usize, watermark: Timestamp) -> Option<Timestamp> {
        let slot = self.channels.get_mut(channel)?;
        if watermark <= *slot {
            return None;
        }
        *slot = watermark;
        self.recompute()
    }

    /// Channel `channel` ended: the combined watermark if it advanced (an
    /// ended channel no longer holds the others back).
    pub(crate) fn end(&mut self, channel: usize) -> Option<Timestamp> {
        match self.ended.get_mut(channel) {
            Some(ended) if !*ended => {
                *ended = true;
                self.open -= 1;
            }
            _ => return None,
        }
        if self.open == 0 {
            return None;
        }
        self.recompute()
    }

    /// Channel `channel` went idle (`true`) or active again: the combined
    /// watermark if it advanced (an idle channel no longer holds the
    /// others back; one active again holds back only what comes after, as
    /// the watermark never goes back).
    pub(crate) fn set_idle(&mut self, channel: usize, idle: bool) -> Option<Timestamp> {
        let slot = self.idle.get_mut(channel)?;
        if *slot == idle {
            return None;
        }
        *slot = idle;
        self.recompute()
    }

    /// Whether the task's own idleness changed since it last said: `true`
    /// once every open channel is idle, `false` once one is active again
    /// (call after each change and tell downstream what it returns;
    /// nothing once every channel ended: the end says the rest).
    pub(crate) fn idleness_change(&mut self) -> Option<bool> {
        if self.open == 0 {
            return None;
        }
        let idle = self.open > 0
            && self
                .ended
                .iter()
                .zip(&self.idle)
                .all(|(ended, idle)| *ended || *idle);
        (idle != self.said_idle).then(|| {
            self.said_idle = idle;
            idle
        })
    }

    /// Whether every channel ended.
    pub(crate) fn all_ended(&self) -> bool {
        self.open == 0
    }

    fn recompute(&mut self) -> Option<Timestamp> {
        let min = self
            .channels
            .iter()
            .zip(self.ended.iter().zip(&self.idle))
            .filter(|(_, (ended, idle))| !**ended && !**idle)
            .map(|(w, _)| *w)
            .min()?;
        (min > self.current).then(|| {
            self.current = min;
            min
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watermark_is_the_minimum_over_open_channels() {
        let mut w = Watermarks::new(3);
        assert_eq!(w.advance(0, 10), None);
        assert_eq!(w.advance(1, 5), None);
        assert_eq!(w.advance(2, 7), Some(5));
        assert_eq!(w.advance(1, 4), None, "a channel never goes back");
        assert_eq!(w.advance(1, 20), Some(7));
        assert_eq!(w.end(2), Some(10));
        assert_eq!(w.end(2), None, "ending twice changes nothing");
        assert_eq!(w.advance(7, 100), None, "unknown channel");
        assert!(!w.all_ended());
        assert_eq!(w.end(0), Some(20));
        assert_eq!(w.end(1), None);
        assert!(w.all_ended());
    }

    #[test]
    fn an_idle_channel_holds_nothing_back_until_it_is_active_again() {
        let mut w = Watermarks::new(3);
        w.advance(0, 10);
        w.advance(1, 20);
        assert_eq!(w.set_idle(2, true), Some(10), "channel 2 never spoke");
        assert_eq!(w.idleness_change(), None, "two channels are active");
        assert_eq!(w.set_idle(2, true), None, "idle twice changes nothing");
        assert_eq!(w.set_idle(0, true), Some(20));
        // Channel 2 comes back behind: the watermark does not go back,
        // and it holds back what comes after.
        assert_eq!(w.set_idle(2, false), None);
        assert_eq!(w.advance(1, 30), None, "channel 2 is at nothing yet");
        assert_eq!(w.advance(2, 25), Some(25));
        // Channel 0 back at 10 holds the watermark at 25 until it passes.
        assert_eq!(w.set_idle(0, false), None);
        assert_eq!(w.advance(2, 45), None, "channel 0 is at 10");
        assert_eq!(w.advance(0, 40), Some(30));
    }

    #[test]
    fn the_task_is_idle_while_every_open_channel_is() {
        let mut w = Watermarks::new(2);
        assert_eq!(w.idleness_change(), None);
        w.set_idle(0, true);
        assert_eq!(w.idleness_change(), None, "channel 1 is active");
        w.set_idle(1, true);
        assert_eq!(w.idleness_change(), Some(true));
        assert_eq!(w.idleness_change(), None, "said once");
        w.set_idle(1, false);
        assert_eq!(w.idleness_change(), Some(false));
        // Channel 1 ends: channel 0, idle, is all that is left.
        w.end(1);
        assert_eq!(w.idleness_change(), Some(true));
        w.end(0);
        assert_eq!(
            w.idleness_change(),
            None,
            "nothing open: the end says the rest"
        );
    }
}

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

/// The combined watermark of a task's input channels.
#[derive(Debug)]
pub(crate) struct Watermarks {
    channels: Vec<Timestamp>,
    ended: Vec<bool>,
    open: usize,
    current: Timestamp,
}

impl Watermarks {
    /// `channels` channels, none heard from.
    pub(crate) fn new(channels: usize) -> Watermarks {
        Watermarks {
            channels: vec![MIN_WATERMARK; channels],
            ended: vec![false; channels],
            open: channels,
            current: MIN_WATERMARK,
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

    /// Whether every channel ended.
    pub(crate) fn all_ended(&self) -> bool {
        self.open == 0
    }

    fn recompute(&mut self) -> Option<Timestamp> {
        let min = self
            .channels
            .iter()
            .zip(&self.ended)
            .filter(|(_, ended)| !**ended)
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
}

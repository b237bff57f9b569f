//! [`InputGate`]: the consumer's end of its input channels, used on the
//! consumer's task thread.
//!
//! ```text
//!  channel 0 pipe ─┐ mark(0)
//!  channel 1 pipe ─┼──────────► GateSignal ready queue ─► next(): take a ready
//!  channel 2 pipe ─┘ mark(2)    (Mutex + Condvar)          channel, pop one event,
//!                                                          put the channel at the back
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{ExchangeError, Fault};
use crate::event::Event;
use crate::ids::ChannelRef;
use crate::interrupt::Interrupt;
use crate::metrics::Counters;
use crate::pipe::Pipe;
use crate::signal::GateSignal;

/// Reads the channels of one input of a task: one channel per producer
/// subtask, numbered in the order they were given to
/// [`Exchange::open_gate`](crate::Exchange::open_gate).
///
/// Channels with data take turns (round robin); each channel delivers its
/// events in the order they were sent. Dropping the gate tells every
/// producer that has not ended that its consumer is gone.
pub struct InputGate {
    channels: Vec<GateChannel>,
    signal: Arc<GateSignal>,
    interrupt: Interrupt,
    counters: Arc<Counters>,
    finished: usize,
    /// The earliest pending request expiry, if any.
    next_expiry: Option<Instant>,
}

/// One channel of a gate.
pub(crate) struct GateChannel {
    pub(crate) channel: ChannelRef,
    pub(crate) pipe: Arc<Pipe>,
    /// A local request whose producer was not registered yet: when it
    /// expires, and the timeout it had.
    pub(crate) expires: Option<(Instant, Duration)>,
    /// The connection task of a remote channel.
    pub(crate) task: Option<tokio::task::AbortHandle>,
    blocked: bool,
    /// Blocked and taken off the ready queue while it had something.
    parked: bool,
    ended: bool,
}

impl GateChannel {
    pub(crate) fn new(channel: ChannelRef, pipe: Arc<Pipe>) -> GateChannel {
        GateChannel {
            channel,
            pipe,
            expires: None,
            task: None,
            blocked: false,
            parked: false,
            ended: false,
        }
    }
}

impl InputGate {
    pub(crate) fn new(
        signal: Arc<GateSignal>,
        interrupt: Interrupt,
        counters: Arc<Counters>,
    ) -> InputGate {
        InputGate {
            channels: Vec::new(),
            signal,
            interrupt,
            counters,
            finished: 0,
            next_expiry: None,
        }
    }

    /// Adds the next channel.
    pub(crate) fn push_channel(&mut self, channel: GateChannel) {
        if let Some((at, _)) = channel.expires {
            self.next_expiry = Some(self.next_expiry.map_or(at, |next| next.min(at)));
        }
        self.channels.push(channel);
    }

    /// How many channels the gate has.
    pub fn channels(&self) -> usize {
        self.channels.len()
    }

    /// The next event of any channel, as `(channel index, event)`, waiting
    /// up to `timeout`. `Ok(None)` when the timeout passed, or at once when
    /// the gate is finished.
    ///
    /// Fails when a channel failed (producer failed, connection lost,
    /// request timed out, protocol error; the error names the partition
    /// and peer), or with [`ExchangeError::Interrupted`]. A channel's error
    /// is sticky: later calls return it again.
    pub fn next(&mut self, timeout: Duration) -> Result<Option<(usize, Event)>, ExchangeError> {
        let deadline = Instant::now().checked_add(timeout);
        loop {
            if let Some(found) = self.try_next()? {
                return Ok(Some(found));
            }
            if self.is_finished() {
                return Ok(None);
            }
            let now = Instant::now();
            if deadline.is_some_and(|deadline| now >= deadline) {
                return Ok(None);
            }
            let far = now + Duration::from_secs(3600);
            let wake_at = [deadline, self.next_expiry]
                .into_iter()
                .flatten()
                .fold(far, Instant::min);
            self.signal.wait(wake_at, &self.interrupt);
        }
    }

    /// Like [`next`](Self::next) without waiting: `Ok(None)` when no
    /// channel has anything right now.
    pub fn try_next(&mut self) -> Result<Option<(usize, Event)>, ExchangeError> {
        if self.interrupt.is_triggered() {
            return Err(ExchangeError::Interrupted);
        }
        self.expire_requests(Instant::now())?;
        while let Some(index) = self.signal.take() {
            let channel = &mut self.channels[index];
            if channel.ended {
                continue;
            }
            if channel.blocked {
                if let Some(fault) = channel.pipe.fault() {
                    self.signal.mark(index);
                    return Err(fault.into_error(channel.channel.clone()));
                }
                channel.parked = true;
                continue;
            }
            match channel.pipe.pop() {
                Ok(Some(event)) => {
                    match event {
                        Event::End => {
                            channel.ended = true;
                            self.finished += 1;
                        }
                        Event::Batch(_) => Counters::add(&self.counters.batches_received, 1),
                        Event::Watermark(_) | Event::Barrier(..) | Event::Idle(_) => {}
                    }
                    if !channel.ended {
                        // To the back of the queue: the others take their turn.
                        self.signal.mark(index);
                    }
                    return Ok(Some((index, event)));
                }
                Ok(None) => {}
                Err(fault) => {
                    self.signal.mark(index);
                    return Err(fault.into_error(channel.channel.clone()));
                }
            }
        }
        Ok(None)
    }

    /// Stops delivering from `channel` until [`unblock`](Self::unblock) (for
    /// checkpoint-barrier alignment). Its events stay queued, bounded by its
    /// credits, so its producer is backpressured; its failure is still
    /// reported.
    ///
    /// # Panics
    /// If `channel` is not below [`channels`](Self::channels).
    pub fn block(&mut self, channel: usize) {
        assert!(channel < self.channels.len(), "no channel {channel}");
        self.channels[channel].blocked = true;
    }

    /// Delivers from `channel` again.
    ///
    /// # Panics
    /// If `channel` is not below [`channels`](Self::channels).
    pub fn unblock(&mut self, channel: usize) {
        assert!(channel < self.channels.len(), "no channel {channel}");
        let state = &mut self.channels[channel];
        state.blocked = false;
        if std::mem::take(&mut state.parked) {
            self.signal.mark(channel);
        }
    }

    /// Whether `channel` is blocked.
    pub fn is_blocked(&self, channel: usize) -> bool {
        self.channels.get(channel).is_some_and(|c| c.blocked)
    }

    /// Whether every channel has delivered `End`.
    pub fn is_finished(&self) -> bool {
        self.finished == self.channels.len()
    }

    /// Fails local requests whose producer has not appeared in time.
    fn expire_requests(&mut self, now: Instant) -> Result<(), ExchangeError> {
        if self.next_expiry.is_none_or(|next| now < next) {
            return Ok(());
        }
        self.next_expiry = None;
        let mut expired = None;
        for channel in &mut self.channels {
            let Some((at, waited)) = channel.expires else {
                continue;
            };
            if now < at {
                self.next_expiry = Some(self.next_expiry.map_or(at, |next| next.min(at)));
                continue;
            }
            channel.expires = None;
            if channel.pipe.expire_if_unattached(waited) {
                let c = &channel.channel;
                expired
                    .get_or_insert_with(|| Fault::RequestTimeout { waited }.into_error(c.clone()));
            }
        }
        expired.map_or(Ok(()), Err)
    }
}

impl Drop for InputGate {
    /// Tells every producer that has not ended that its consumer is gone,
    /// and closes the gate's connections.
    fn drop(&mut self) {
        for channel in &self.channels {
            channel.pipe.fail(Fault::ConsumerGone);
            if let Some(task) = &channel.task {
                task.abort();
            }
        }
    }
}

impl fmt::Debug for InputGate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InputGate")
            .field("channels", &self.channels.len())
            .field("finished", &self.finished)
            .finish()
    }
}

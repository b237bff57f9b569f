//! [`Pipe`]: one channel's queue ([`ChannelCore`]) behind a mutex, with the
//! waiting and waking around it. The shell of the core.
//!
//! ```text
//!  producer side                         consumer side
//!  task thread: send() ─ Condvar wait    gate: marks in its GateSignal ─► next()
//!  tokio task: push()  (never waits)     tokio task: Notify ─► server sends frames
//!         ▲ space / credit on pop               ▲ data, End, fault, attach
//! ```
//!
//! A local channel is a single pipe: the producer's writer sends into it,
//! the consumer's gate pops from it. A remote channel is two: the
//! producer's pipe, drained by the data server's connection task, and a
//! receiving pipe at the consumer, filled by the gate's connection task.
//! Wakers are called after the pipe's lock is released, so the lock order
//! is registry → pipe → gate signal and nothing waits while holding a pipe.

use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Duration;

use holdfast_types::sync::{lock, unpoisoned};
use tokio::sync::Notify;

use crate::core::{ChannelCore, Offer};
use crate::error::Fault;
use crate::event::Event;
use crate::interrupt::{Interrupt, InterruptWake};
use crate::metrics::{BlockedGuard, Counters};
use crate::signal::GateSignal;

/// Told once when a pipe is over (its consumer took `End`, saw its fault
/// or is gone), so its partition can leave the registry when all its pipes
/// are.
pub(crate) trait Retire: Send + Sync {
    /// One more pipe of the partition is over.
    fn retired(&self);
}

/// Who to tell that a pipe has something for its consumer.
#[derive(Clone, Debug)]
pub(crate) enum Waker {
    /// A gate's task thread: mark the channel ready.
    Gate {
        /// The gate's signal.
        signal: Arc<GateSignal>,
        /// The channel's index in the gate.
        channel: usize,
    },
    /// A tokio task.
    Task(Arc<Notify>),
}

impl Waker {
    fn wake(&self) {
        match self {
            Waker::Gate { signal, channel } => signal.mark(*channel),
            Waker::Task(notify) => notify.notify_one(),
        }
    }
}

/// Why a blocking send stopped.
#[derive(Debug)]
pub(crate) enum Stop {
    /// The interrupt was triggered.
    Interrupted,
    /// The pipe already holds its `End`.
    AfterEnd,
    /// The pipe is dead.
    Fault(Fault),
}

/// One channel's queue, shared by its two ends.
pub(crate) struct Pipe {
    state: Mutex<PipeState>,
    /// A producer task thread blocked in `send` waits here for space.
    space: Condvar,
    counters: Arc<Counters>,
}

struct PipeState {
    core: ChannelCore,
    consumer: Option<Waker>,
    /// A tokio task filling this pipe, told about pops (credit) and death.
    producer: Option<Arc<Notify>>,
    retire: Option<Weak<dyn Retire>>,
    retired: bool,
    claimed: bool,
    /// A task thread waits in `send` (only then is a notify worth its
    /// system call).
    sender_waiting: bool,
}

/// Which side a change concerns.
#[derive(Clone, Copy)]
struct Wake {
    consumer: bool,
    producer: bool,
}

impl Pipe {
    /// An empty pipe of `capacity` batches; `attached` when its producer is
    /// known.
    pub(crate) fn new(capacity: usize, attached: bool, counters: Arc<Counters>) -> Arc<Pipe> {
        Arc::new(Pipe {
            state: Mutex::new(PipeState {
                core: ChannelCore::new(capacity, attached),
                consumer: None,
                producer: None,
                retire: None,
                retired: false,
                claimed: false,
                sender_waiting: false,
            }),
            space: Condvar::new(),
            counters,
        })
    }

    /// Queues `event`, blocking the calling (task) thread while the pipe
    /// holds its capacity of batches.
    pub(crate) fn send(&self, mut event: Event, interrupt: &Interrupt) -> Result<(), Stop> {
        let mut state = lock(&self.state);
        let mut blocked = None;
        loop {
            if interrupt.is_triggered() {
                return Err(Stop::Interrupted);
            }
            let before = state.core.batches();
            match state.core.offer(event) {
                Offer::Accepted => {
                    self.counters.buffered_changed(before, state.core.batches());
                    let consumer = state.consumer.clone();
                    drop(state);
                    if let Some(consumer) = consumer {
                        consumer.wake();
                    }
                    return Ok(());
                }
                Offer::Full(back) => {
                    event = back;
                    blocked.get_or_insert_with(|| BlockedGuard::new(&self.counters));
                    state.sender_waiting = true;
                    state = unpoisoned(self.space.wait(state));
                    state.sender_waiting = false;
                }
                Offer::Refused(fault) => return Err(Stop::Fault(fault)),
                Offer::AfterEnd => return Err(Stop::AfterEnd),
            }
        }
    }

    /// Queues `event` unless the pipe is full: then `Ok(Some(event))`.
    pub(crate) fn try_send(&self, event: Event) -> Result<Option<Event>, Stop> {
        match self.update(Wake::CONSUMER, |core| core.offer(event)) {
            Offer::Accepted => Ok(None),
            Offer::Full(event) => Ok(Some(event)),
            Offer::Refused(fault) => Err(Stop::Fault(fault)),
            Offer::AfterEnd => Err(Stop::AfterEnd),
        }
    }

    /// Queues `event` without waiting (a connection task filling a
    /// receiving pipe, where credit guarantees space).
    pub(crate) fn push(&self, event: Event) -> Result<(), Stop> {
        match self.try_send(event)? {
            None => Ok(()),
            Some(_) => Err(Stop::Fault(Fault::Protocol {
                reason: "more batches than credits".into(),
            })),
        }
    }

    /// Takes the head event.
    pub(crate) fn pop(&self) -> Result<Option<Event>, Fault> {
        self.pop_if(|_| true)
    }

    /// Takes the head event if `admit` accepts it.
    pub(crate) fn pop_if(
        &self,
        admit: impl FnOnce(&Event) -> bool,
    ) -> Result<Option<Event>, Fault> {
        let mut state = lock(&self.state);
        let before = state.core.batches();
        let popped = state.core.pop_if(admit);
        let mut producer = None;
        if state.core.batches() < before {
            // A batch left: room for a blocked sender, credit for a task.
            self.counters.buffered_changed(before, state.core.batches());
            if state.sender_waiting {
                self.space.notify_all();
            }
            producer = state.producer.clone();
        }
        let retire = state.take_retire();
        drop(state);
        notify(producer);
        retire_now(retire);
        popped
    }

    /// Kills the pipe with `fault` (unless it is over already) and wakes
    /// both ends.
    pub(crate) fn fail(&self, fault: Fault) {
        self.update(Wake::BOTH, |core| core.fail(fault));
    }

    /// The producer is known now; its partition is told through `retire`
    /// when the pipe is over. `true` if the pipe is over already (its
    /// consumer gave up before the producer came).
    pub(crate) fn attach(&self, retire: Weak<dyn Retire>) -> bool {
        let mut state = lock(&self.state);
        state.core.attach();
        if state.retired {
            return true;
        }
        state.retire = Some(retire);
        let consumer = state.consumer.clone();
        drop(state);
        if let Some(consumer) = consumer {
            consumer.wake();
        }
        false
    }

    /// Fails the pipe with a request timeout if its producer is still
    /// unknown; `true` if it did.
    pub(crate) fn expire_if_unattached(&self, waited: Duration) -> bool {
        self.update(Wake::BOTH, |core| {
            !core.is_attached() && core.fail(Fault::RequestTimeout { waited })
        })
    }

    /// Sets who reads the pipe, and wakes it once (so nothing already
    /// queued is missed).
    pub(crate) fn set_consumer(&self, waker: Waker) {
        lock(&self.state).consumer = Some(waker.clone());
        waker.wake();
    }

    /// Sets the tokio task that fills the pipe.
    pub(crate) fn set_producer(&self, notify: Arc<Notify>) {
        lock(&self.state).producer = Some(notify);
    }

    /// Claims the consumer's end; `false` if someone else holds it.
    pub(crate) fn claim(&self) -> bool {
        !std::mem::replace(&mut lock(&self.state).claimed, true)
    }

    /// Whether a consumer holds its end.
    pub(crate) fn is_claimed(&self) -> bool {
        lock(&self.state).claimed
    }

    /// The fault, if the pipe is dead.
    pub(crate) fn fault(&self) -> Option<Fault> {
        lock(&self.state).core.fault().cloned()
    }

    /// Whether the producer is known.
    pub(crate) fn is_attached(&self) -> bool {
        lock(&self.state).core.is_attached()
    }

    /// Batches popped so far.
    pub(crate) fn popped_batches(&self) -> u64 {
        lock(&self.state).core.popped_batches()
    }

    /// Runs `change` on the core, then wakes the sides `wake` names if it
    /// returned a changed state, and the retire hook if the pipe is over.
    fn update<R: Changed>(&self, wake: Wake, change: impl FnOnce(&mut ChannelCore) -> R) -> R {
        let mut state = lock(&self.state);
        let before = state.core.batches();
        let result = change(&mut state.core);
        self.counters.buffered_changed(before, state.core.batches());
        let changed = result.changed();
        if changed && wake.producer && state.sender_waiting {
            self.space.notify_all();
        }
        let consumer = state.consumer.clone().filter(|_| changed && wake.consumer);
        let producer = state.producer.clone().filter(|_| changed && wake.producer);
        let retire = state.take_retire();
        drop(state);
        if let Some(consumer) = consumer {
            consumer.wake();
        }
        notify(producer);
        retire_now(retire);
        result
    }
}

impl PipeState {
    /// The retire hook, once, when the pipe has just become over.
    fn take_retire(&mut self) -> Option<Arc<dyn Retire>> {
        if !self.core.is_over() || self.retired {
            return None;
        }
        self.retired = true;
        self.retire.take().and_then(|hook| hook.upgrade())
    }
}

impl Wake {
    const CONSUMER: Wake = Wake {
        consumer: true,
        producer: false,
    };
    const BOTH: Wake = Wake {
        consumer: true,
        producer: true,
    };
}

/// Whether an update changed something worth waking for.
trait Changed {
    fn changed(&self) -> bool;
}

impl Changed for bool {
    fn changed(&self) -> bool {
        *self
    }
}

impl Changed for Offer {
    fn changed(&self) -> bool {
        matches!(self, Offer::Accepted)
    }
}

fn notify(task: Option<Arc<Notify>>) {
    if let Some(task) = task {
        task.notify_one();
    }
}

fn retire_now(hook: Option<Arc<dyn Retire>>) {
    if let Some(hook) = hook {
        hook.retired();
    }
}

impl std::fmt::Debug for Pipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = lock(&self.state);
        f.debug_struct("Pipe")
            .field("batches", &state.core.batches())
            .field("attached", &state.core.is_attached())
            .field("fault", &state.core.fault())
            .finish()
    }
}

impl InterruptWake for Pipe {
    fn wake_interrupted(&self) {
        let _state = lock(&self.state);
        self.space.notify_all();
    }
}

//! Timers of a keyed process operator: per time domain, the keys due at
//! each time, in persistent maps (a snapshot copies a pointer).

use holdfast_executor::TaskFailure;
use serde::{Deserialize, Serialize};

use crate::checkpoint::decode_part;
use crate::data::{Key, Timestamp};

/// Which clock a timer follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TimeDomainOf {
    /// The watermark: fires once the watermark reaches its time (and at the
    /// end of input).
    EventTime,
    /// The processing-time clock.
    ProcessingTime,
}

/// A timer that came due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timer {
    /// The time it was registered for.
    pub time: Timestamp,
    /// Its clock.
    pub domain: TimeDomainOf,
}

type Due<K> = imbl::OrdMap<Timestamp, imbl::HashSet<K>>;

/// Every registered timer of one subtask.
#[derive(Clone)]
pub(super) struct Timers<K: Key> {
    event: Due<K>,
    processing: Due<K>,
}

/// What a checkpoint keeps of the timers.
#[derive(Serialize, Deserialize)]
struct Encoded<K> {
    event: Vec<(Timestamp, Vec<K>)>,
    processing: Vec<(Timestamp, Vec<K>)>,
}

impl<K: Key> Timers<K> {
    pub(super) fn new() -> Timers<K> {
        Timers {
            event: Due::new(),
            processing: Due::new(),
        }
    }

    fn of(&mut self, domain: TimeDomainOf) -> &mut Due<K> {
        match domain {
            TimeDomainOf::EventTime => &mut self.event,
            TimeDomainOf::ProcessingTime => &mut self.processing,
        }
    }

    /// Registers `key`'s timer at `at` (once: registering it again changes
    /// nothing).
    pub(super) fn register(&mut self, domain: TimeDomainOf, at: Timestamp, key: K) {
        self.of(domain).entry(at).or_default().insert(key);
    }

    /// Deletes `key`'s timer at `at`, if there is one.
    pub(super) fn delete(&mut self, domain: TimeDomainOf, at: Timestamp, key: &K) {
        let due = self.of(domain);
        if let Some(keys) = due.get_mut(&at) {
            keys.remove(key);
            if keys.is_empty() {
                due.remove(&at);
            }
        }
    }

    /// The earliest processing-time timer.
    pub(super) fn next_processing(&self) -> Option<Timestamp> {
        self.processing.get_min().map(|(at, _)| *at)
    }

    /// Takes the earliest timer of `domain` due at `time` (at or before),
    /// if any: one at a time, so a timer registered by a firing one is seen.
    pub(super) fn pop_due(
        &mut self,
        domain: TimeDomainOf,
        time: Timestamp,
    ) -> Option<(Timestamp, K)> {
        let due = self.of(domain);
        let (at, keys) = due.get_min()?;
        let at = *at;
        if at > time {
            return None;
        }
        let key = keys.iter().next()?.clone();
        let keys = due.get_mut(&at)?;
        keys.remove(&key);
        if keys.is_empty() {
            due.remove(&at);
        }
        Some((at, key))
    }

    /// Encodes a snapshot (run off the task thread).
    pub(super) fn encode(&self) -> Result<Vec<u8>, postcard::Error> {
        let flat = |due: &Due<K>| -> Vec<(Timestamp, Vec<K>)> {
            due.iter()
                .map(|(at, keys)| (*at, keys.iter().cloned().collect()))
                .collect()
        };
        postcard::to_allocvec(&Encoded {
            event: flat(&self.event),
            processing: flat(&self.processing),
        })
    }

    /// The timers of a checkpoint, of the keys `mine` says this subtask
    /// owns.
    pub(super) fn restore<'a>(
        operator: &str,
        parts: impl IntoIterator<Item = &'a [u8]>,
        mine: impl Fn(&K) -> bool,
    ) -> Result<Timers<K>, TaskFailure> {
        let mut timers = Timers::new();
        for bytes in parts {
            let encoded: Encoded<K> = decode_part(&format!("{operator} (timers)"), bytes)?;
            for (domain, list) in [
                (TimeDomainOf::EventTime, encoded.event),
                (TimeDomainOf::ProcessingTime, encoded.processing),
            ] {
                for (at, keys) in list {
                    for key in keys.into_iter().filter(|k| mine(k)) {
                        timers.register(domain, at, key);
                    }
                }
            }
        }
        Ok(timers)
    }
}

//! Receiver-side fencing: reject messages from a leader older than the
//! newest one seen.
//!
//! A receiver (a TaskManager, say) keeps one [`EpochFence`] per leader role
//! it talks to (the JobManager of each job, the ResourceManager) and checks
//! the [`Epoch`] of every fenced message:
//!
//! ```text
//! epoch <  highest ─► Err(StaleEpoch)       drop the message
//! epoch == highest ─► Ok(Accepted::Current)
//! epoch >  highest ─► Ok(Accepted::NewLeader) a newer leader (§6: it adopts the tasks;
//!                                             under `standard` the old leader's fail), then handle
//! ```

use holdfast_types::Epoch;

/// A fenced message's epoch was accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accepted {
    /// The epoch of the leader already known.
    Current,
    /// A newer leader than any seen before. Under `standard` the caller
    /// fails the tasks it runs for the previous leader; otherwise the new
    /// leader adopts them (HA contract §6, `docs/HA-CONTRACT.md`).
    NewLeader {
        /// The highest epoch seen before, if any.
        previous: Option<Epoch>,
    },
}

/// A fenced message came from a leader older than one already seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("stale epoch {got}: a leader with epoch {highest} was already seen")]
pub struct StaleEpoch {
    /// The message's epoch.
    pub got: Epoch,
    /// The highest epoch seen.
    pub highest: Epoch,
}

/// The highest epoch seen for one leader role. Only ever moves up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EpochFence {
    highest: Option<Epoch>,
}

impl EpochFence {
    /// A fence that has seen no leader yet.
    pub fn new() -> EpochFence {
        EpochFence::default()
    }

    /// Checks a message's epoch, remembering it if it is the highest yet.
    pub fn check(&mut self, epoch: Epoch) -> Result<Accepted, StaleEpoch> {
        match self.highest {
            Some(highest) if epoch < highest => Err(StaleEpoch {
                got: epoch,
                highest,
            }),
            Some(highest) if epoch == highest => Ok(Accepted::Current),
            previous => {
                self.highest = Some(epoch);
                Ok(Accepted::NewLeader { previous })
            }
        }
    }

    /// The highest epoch seen, if any.
    pub fn highest(&self) -> Option<Epoch> {
        self.highest
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_current_and_newer_rejects_older() {
        let mut fence = EpochFence::new();
        assert_eq!(fence.highest(), None);
        assert_eq!(
            fence.check(Epoch(5)),
            Ok(Accepted::NewLeader { previous: None })
        );
        assert_eq!(fence.check(Epoch(5)), Ok(Accepted::Current));
        assert_eq!(
            fence.check(Epoch(4)),
            Err(StaleEpoch {
                got: Epoch(4),
                highest: Epoch(5)
            })
        );
        assert_eq!(
            fence.check(Epoch(9)),
            Ok(Accepted::NewLeader {
                previous: Some(Epoch(5))
            })
        );
        assert_eq!(fence.highest(), Some(Epoch(9)));
        assert_eq!(
            fence.check(Epoch(5)).unwrap_err().to_string(),
            "stale epoch 5: a leader with epoch 9 was already seen"
        );
    }

    proptest! {
        #[test]
        fn never_accepts_an_epoch_below_one_accepted_before(
            epochs in proptest::collection::vec(0u64..20, 0..64)
        ) {
            let mut fence = EpochFence::new();
            let mut max_accepted: Option<u64> = None;
            for e in epochs {
                let result = fence.check(Epoch(e));
                match max_accepted {
                    Some(max) if e < max => prop_assert!(result.is_err()),
                    Some(max) if e == max => prop_assert_eq!(result, Ok(Accepted::Current)),
                    previous => {
                        prop_assert_eq!(result, Ok(Accepted::NewLeader { previous: previous.map(Epoch) }));
                        max_accepted = Some(e);
                    }
                }
                prop_assert_eq!(fence.highest(), max_accepted.map(Epoch));
            }
        }
    }
}

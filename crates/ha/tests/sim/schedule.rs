//! Seeded fault schedules for the simulation.

use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// What happens to a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Its link goes silent at `at` and heals after `length` (never, for
    /// `None`: a crash or a partition that outlives the run).
    Cut {
        at: Duration,
        length: Option<Duration>,
    },
    /// A contender leaves gracefully at `at` and joins again `after` later.
    Rejoin { at: Duration, after: Duration },
}

/// One run's plan.
#[derive(Clone, Debug)]
pub struct Schedule {
    pub seed: u64,
    pub contenders: usize,
    pub observers: usize,
    pub session_timeout: Duration,
    pub horizon: Duration,
    /// `(process index, fault)`; contenders come first, then observers.
    pub faults: Vec<(usize, Fault)>,
}

impl Schedule {
    /// A random schedule: per process, a few non-overlapping faults whose
    /// lengths straddle the interesting thresholds (read timeout, lease,
    /// session timeout).
    pub fn generate(seed: u64) -> Schedule {
        let mut rng = SmallRng::seed_from_u64(seed);
        let session_timeout = Duration::from_secs(10);
        let contenders = rng.random_range(2..=3);
        let observers = rng.random_range(1..=2);
        let horizon = Duration::from_secs(150);
        let mut faults = Vec::new();
        for process in 0..contenders + observers {
            let mut at = Duration::from_secs(rng.random_range(5..30));
            while at < horizon - Duration::from_secs(40) {
                let roll = rng.random_range(0..100);
                let fault = if roll < 10 && process < contenders {
                    let after = Duration::from_millis(rng.random_range(0..20_000));
                    at += after;
                    Fault::Rejoin {
                        at: at - after,
                        after,
                    }
                } else {
                    let millis = match roll {
                        0..=34 => rng.random_range(100..6_600),    // not even noticed
                        35..=59 => rng.random_range(6_700..6_900), // noticed, within any lease
                        60..=74 => rng.random_range(6_900..10_500), // around the lease deadline
                        75..=94 => rng.random_range(10_500..30_000), // past the session timeout
                        _ => u64::MAX,                             // never heals
                    };
                    let length = (millis != u64::MAX).then(|| Duration::from_millis(millis));
                    let fault = Fault::Cut { at, length };
                    match length {
                        Some(length) => at += length,
                        None => {
                            faults.push((process, fault));
                            break;
                        }
                    }
                    fault
                };
                faults.push((process, fault));
                at += Duration::from_secs(rng.random_range(12..40));
            }
        }
        faults.sort_by_key(|(_, fault)| match fault {
            Fault::Cut { at, .. } | Fault::Rejoin { at, .. } => *at,
        });
        Schedule {
            seed,
            contenders,
            observers,
            session_timeout,
            horizon,
            faults,
        }
    }
}

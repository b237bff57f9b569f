//! [`Outage`]: what a source does when its consumer reports an error
//! instead of a record. librdkafka reconnects and retries by itself, so a
//! broker that is down, restarting or moving a partition's leadership is
//! ridden out — the job is not restarted for it, as a ZooKeeper hiccup is
//! not — with a warning when it starts, every minute while it lasts, and a
//! line when reading resumes. An error that may say the data is gone or
//! forbidden (a deleted topic, a denied authorisation) is checked once the
//! grace period has passed since it began — it can appear briefly while a
//! broker restarts, and librdkafka may report it only once — by asking the
//! brokers' metadata: gone or denied fails the task, naming it; there
//! after all ends the outage. A fatal error fails the task at once. Pure:
//! the caller passes the time and does the asking, so tests drive it on a
//! simulated clock.

use rdkafka::types::RDKafkaErrorCode;

/// How long a streak of errors lasts without a new one before it counts
/// as over (librdkafka repeats a persistent error at each retry).
const QUIET_MS: i64 = 10_000;
/// How often a long outage is logged again.
const WARN_EVERY_MS: i64 = 60_000;

/// What kind of error the consumer reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ErrorClass {
    /// The brokers cannot be reached or a partition has no leader now:
    /// librdkafka retries until they can; the source waits, however long.
    Unreachable,
    /// Anything else librdkafka does not call fatal (a topic that does not
    /// exist, an authorisation denied): checked against the metadata once
    /// the grace period passed.
    Persistent,
    /// librdkafka's own fatal errors: fail now.
    Fatal,
}

/// Sorts a consumer error.
pub(crate) fn classify(code: RDKafkaErrorCode, fatal: bool) -> ErrorClass {
    use RDKafkaErrorCode as C;
    if fatal {
        return ErrorClass::Fatal;
    }
    match code {
        C::AllBrokersDown
        | C::BrokerTransportFailure
        | C::Resolve
        | C::OperationTimedOut
        | C::RequestTimedOut
        | C::NetworkException
        | C::NotLeaderForPartition
        | C::LeaderNotAvailable
        | C::BrokerNotAvailable
        | C::CoordinatorNotAvailable
        | C::NotCoordinator
        | C::CoordinatorLoadInProgress
        | C::ReplicaNotAvailable
        | C::NotEnoughReplicas
        | C::KafkaStorageError
        | C::FencedLeaderEpoch
        | C::UnknownLeaderEpoch
        | C::TimedOutQueue => ErrorClass::Unreachable,
        _ => ErrorClass::Persistent,
    }
}

/// What to do about one error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Nothing to log: the outage is known and was logged recently.
    Quiet,
    /// Log a warning: an outage began, or goes on (`for_ms` so far).
    Warn {
        /// How long the outage has lasted.
        for_ms: i64,
    },
    /// Fail the task: the error is fatal.
    Fail,
}

/// The current streak of consumer errors, if any.
#[derive(Debug)]
pub(crate) struct Outage {
    grace_ms: i64,
    streak: Option<Streak>,
}

#[derive(Debug)]
struct Streak {
    since: i64,
    last_error: i64,
    warned: i64,
    /// Whether an error of the streak may mean the data is gone.
    persistent: bool,
}

impl Outage {
    /// Persistent errors are checked after `grace_ms`.
    pub(crate) fn new(grace_ms: i64) -> Outage {
        Outage {
            grace_ms,
            streak: None,
        }
    }

    /// The consumer reported an error of `class` at `now`.
    pub(crate) fn error(&mut self, class: ErrorClass, now: i64) -> Verdict {
        let persistent = class == ErrorClass::Persistent;
        match class {
            ErrorClass::Fatal => Verdict::Fail,
            _ => match &mut self.streak {
                Some(streak) if now.saturating_sub(streak.last_error) < QUIET_MS => {
                    streak.last_error = now;
                    streak.persistent |= persistent;
                    if now.saturating_sub(streak.warned) >= WARN_EVERY_MS {
                        streak.warned = now;
                        Verdict::Warn {
                            for_ms: now.saturating_sub(streak.since),
                        }
                    } else {
                        Verdict::Quiet
                    }
                }
                _ => {
                    self.streak = Some(Streak {
                        since: now,
                        last_error: now,
                        warned: now,
                        persistent,
                    });
                    Verdict::Warn { for_ms: 0 }
                }
            },
        }
    }

    /// Whether the metadata should be asked now: an error that may mean
    /// the data is gone began at least the grace period ago (records do not
    /// end such a streak: see [`recovered`](Self::recovered)).
    pub(crate) fn check_due(&self, now: i64) -> bool {
        self.streak
            .as_ref()
            .is_some_and(|s| s.persistent && now.saturating_sub(s.since) >= self.grace_ms)
    }

    /// The metadata showed every topic and partition there and readable:
    /// the outage is over (a new error starts a new one).
    pub(crate) fn checked_fine(&mut self) {
        self.streak = None;
    }

    /// The metadata could not be asked at `now`: ask again a grace period
    /// later.
    pub(crate) fn postpone(&mut self, now: i64) {
        if let Some(streak) = &mut self.streak {
            streak.since = now;
        }
    }

    /// How long the streak has lasted at `now`.
    pub(crate) fn lasted(&self, now: i64) -> i64 {
        self.streak
            .as_ref()
            .map_or(0, |s| now.saturating_sub(s.since))
    }

    /// Whether a streak of errors is going on.
    pub(crate) fn ongoing(&self) -> bool {
        self.streak.is_some()
    }

    /// A record came at `now`: an outage of unreachable brokers is over
    /// (returns how long it lasted). One that may mean a topic is gone is
    /// not: the record may come from another topic or partition than the
    /// one the error was about (librdkafka does not say which), so only
    /// the metadata check ends it ([`checked_fine`](Self::checked_fine)).
    pub(crate) fn recovered(&mut self, now: i64) -> Option<i64> {
        if self.streak.as_ref().is_some_and(|s| s.persistent) {
            return None;
        }
        self.streak
            .take()
            .map(|streak| now.saturating_sub(streak.since))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreachable_broker_is_waited_for_however_long_warned_every_minute() {
        let mut outage = Outage::new(30_000);
        let down = ErrorClass::Unreachable;
        assert_eq!(outage.error(down, 0), Verdict::Warn { for_ms: 0 });
        assert_eq!(outage.error(down, 5_000), Verdict::Quiet);
        let mut now = 5_000;
        let mut warnings = 0;
        // Ten minutes of errors every five seconds: never a check, never
        // a failure.
        while now < 600_000 {
            now += 5_000;
            match outage.error(down, now) {
                Verdict::Quiet => {}
                Verdict::Warn { for_ms } => {
                    assert_eq!(for_ms, now);
                    warnings += 1;
                }
                Verdict::Fail => panic!("failed at {now}"),
            }
            assert!(!outage.check_due(now));
        }
        assert_eq!(warnings, 10, "once a minute");
        assert_eq!(outage.recovered(now + 1), Some(now + 1));
        assert_eq!(outage.recovered(now + 2), None, "reported once");
    }

    #[test]
    fn a_persistent_error_is_checked_once_the_grace_period_passed_even_if_not_repeated() {
        let mut outage = Outage::new(30_000);
        outage.error(ErrorClass::Unreachable, 0);
        assert_eq!(outage.error(ErrorClass::Persistent, 1_000), Verdict::Quiet);
        assert!(!outage.check_due(29_999), "{outage:?}");
        // No error since: the check is due all the same.
        assert!(outage.check_due(30_000));
        assert_eq!(outage.lasted(30_000), 30_000);
        outage.postpone(30_000);
        assert!(
            !outage.check_due(59_999),
            "asked again a grace period later"
        );
        assert!(outage.check_due(60_000));
        outage.checked_fine();
        assert!(!outage.check_due(90_000));
        assert!(!outage.ongoing());
        // A record does not end it (it may come from a partition that is
        // fine): the check still comes.
        outage.error(ErrorClass::Persistent, 100_000);
        assert_eq!(outage.recovered(101_000), None);
        assert!(outage.check_due(130_000));
        // It ends an outage of unreachable brokers.
        outage.checked_fine();
        outage.error(ErrorClass::Unreachable, 200_000);
        assert_eq!(outage.recovered(201_000), Some(1_000));
        assert!(!outage.ongoing());
    }

    #[test]
    fn a_streak_ends_after_a_quiet_spell() {
        let mut outage = Outage::new(30_000);
        let down = ErrorClass::Unreachable;
        outage.error(down, 0);
        assert_eq!(outage.error(down, 9_000), Verdict::Quiet);
        // Ten seconds without an error: a new outage, warned again.
        assert_eq!(outage.error(down, 19_000), Verdict::Warn { for_ms: 0 });
    }

    #[test]
    fn fatal_errors_fail_at_once_and_the_codes_sort_as_librdkafka_means_them() {
        let mut outage = Outage::new(30_000);
        assert_eq!(outage.error(ErrorClass::Fatal, 0), Verdict::Fail);
        let sorted = |code, fatal| classify(code, fatal);
        assert_eq!(
            sorted(RDKafkaErrorCode::AllBrokersDown, false),
            ErrorClass::Unreachable
        );
        assert_eq!(
            sorted(RDKafkaErrorCode::BrokerTransportFailure, false),
            ErrorClass::Unreachable
        );
        assert_eq!(
            sorted(RDKafkaErrorCode::UnknownTopicOrPartition, false),
            ErrorClass::Persistent
        );
        assert_eq!(
            sorted(RDKafkaErrorCode::TopicAuthorizationFailed, false),
            ErrorClass::Persistent
        );
        assert_eq!(
            sorted(RDKafkaErrorCode::AllBrokersDown, true),
            ErrorClass::Fatal
        );
    }
}

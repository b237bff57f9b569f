use std::time::Duration;

use holdfast_types::MonoTime;
use proptest::prelude::*;

use super::*;

fn at(secs: u64) -> MonoTime {
    MonoTime::from_duration(Duration::from_secs(secs))
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn fail(tracker: &mut RestartTracker, now: MonoTime) -> RestartDecision {
    tracker.on_failure(now, FailureCause::new("boom"), u64::MAX / 2)
}

fn restart(d: Duration) -> RestartDecision {
    RestartDecision::RestartAfter(d)
}

fn give_up(reason: GiveUpReason) -> RestartDecision {
    RestartDecision::GiveUp { reason }
}

/// Exponential delay without jitter, for exact backoffs.
fn exponential(attempts_before_reset: u32) -> RestartStrategy {
    RestartStrategy::ExponentialDelay {
        initial_backoff: secs(1),
        max_backoff: secs(10),
        multiplier: 2.0,
        reset_backoff_threshold: secs(100),
        jitter_factor: 0.0,
        attempts_before_reset,
    }
}

#[test]
fn defaults_are_flinks() {
    assert_eq!(RestartStrategy::default(), RestartStrategy::None);
    assert_eq!(
        RestartStrategy::fixed_delay(),
        RestartStrategy::FixedDelay {
            attempts: 1,
            delay: secs(1)
        }
    );
    assert_eq!(
        RestartStrategy::failure_rate(),
        RestartStrategy::FailureRate {
            max_failures_per_interval: 1,
            interval: secs(60),
            delay: secs(1)
        }
    );
    let RestartStrategy::ExponentialDelay {
        multiplier,
        jitter_factor,
        max_backoff,
        reset_backoff_threshold,
        ..
    } = RestartStrategy::exponential_delay()
    else {
        panic!("not exponential");
    };
    assert_eq!((multiplier, jitter_factor), (1.5, 0.1));
    assert_eq!(
        (max_backoff, reset_backoff_threshold),
        (secs(60), secs(3600))
    );
}

#[test]
fn validate_names_each_broken_rule() {
    let with = |multiplier, jitter_factor, initial| RestartStrategy::ExponentialDelay {
        initial_backoff: secs(initial),
        max_backoff: secs(10),
        multiplier,
        reset_backoff_threshold: secs(1),
        jitter_factor,
        attempts_before_reset: 1,
    };
    assert_eq!(with(1.0, 0.0, 1).validate(), Ok(()));
    assert_eq!(
        with(0.5, 0.0, 1).validate(),
        Err(RestartStrategyError::Multiplier(0.5))
    );
    assert!(matches!(
        with(f64::NAN, 0.0, 1).validate(),
        Err(RestartStrategyError::Multiplier(_))
    ));
    assert_eq!(
        with(2.0, 1.5, 1).validate(),
        Err(RestartStrategyError::JitterFactor(1.5))
    );
    assert!(matches!(
        with(2.0, 0.1, 11).validate(),
        Err(RestartStrategyError::BackoffOrder { .. })
    ));
    let zero = RestartStrategy::FailureRate {
        max_failures_per_interval: 1,
        interval: Duration::ZERO,
        delay: secs(1),
    };
    assert_eq!(
        RestartTracker::new(zero).err(),
        Some(RestartStrategyError::ZeroInterval)
    );
}

#[test]
fn none_gives_up_at_once() {
    let mut t = RestartTracker::new(RestartStrategy::None).unwrap();
    assert_eq!(
        fail(&mut t, at(1)),
        give_up(GiveUpReason::NoRestartStrategy)
    );
}

#[test]
fn an_unrecoverable_failure_gives_up_whatever_the_strategy_allows_and_uses_no_attempt() {
    let mut t = RestartTracker::new(RestartStrategy::FixedDelay {
        attempts: 100,
        delay: secs(1),
    })
    .unwrap();
    let unrecoverable = FailureCause::new(crate::failure::Failure::new(
        crate::failure::FailureKind::Unrecoverable,
        "transaction lost",
    ));
    assert_eq!(
        t.on_failure(at(1), unrecoverable, 0),
        give_up(GiveUpReason::Unrecoverable)
    );
    // A later ordinary failure still has every attempt.
    assert_eq!(fail(&mut t, at(2)), restart(secs(1)));
}

#[test]
fn fixed_delay_stops_after_attempts_and_never_resets() {
    let mut t = RestartTracker::new(RestartStrategy::FixedDelay {
        attempts: 2,
        delay: secs(3),
    })
    .unwrap();
    t.on_running(at(0));
    assert_eq!(fail(&mut t, at(1)), restart(secs(3)));
    t.on_running(at(4));
    assert_eq!(fail(&mut t, at(10_000)), restart(secs(3)));
    t.on_running(at(10_003));
    assert_eq!(
        fail(&mut t, at(1_000_000)),
        give_up(GiveUpReason::AttemptsExhausted { attempts: 2 })
    );
}

#[test]
fn failure_rate_gives_up_when_more_than_max_fall_in_the_window() {
    let mut t = RestartTracker::new(RestartStrategy::FailureRate {
        max_failures_per_interval: 2,
        interval: secs(60),
        delay: secs(5),
    })
    .unwrap();
    assert_eq!(fail(&mut t, at(0)), restart(secs(5)));
    assert_eq!(fail(&mut t, at(30)), restart(secs(5)));
    // 61 s: the failure at 0 left the window; 30 and 61 are inside.
    assert_eq!(fail(&mut t, at(61)), restart(secs(5)));
    // 90: 30 is exactly 60 s ago and still counts, so three are inside.
    assert_eq!(
        fail(&mut t, at(90)),
        give_up(GiveUpReason::FailureRateExceeded {
            failures: 3,
            max: 2,
            interval: secs(60)
        })
    );
}

#[test]
fn failure_rate_defaults_allow_one_failure_per_minute() {
    let mut t = RestartTracker::new(RestartStrategy::failure_rate()).unwrap();
    assert_eq!(fail(&mut t, at(0)), restart(secs(1)));
    assert_eq!(fail(&mut t, at(61)), restart(secs(1)));
    assert!(matches!(
        fail(&mut t, at(62)),
        RestartDecision::GiveUp { .. }
    ));
}

#[test]
fn exponential_backoff_grows_to_the_cap() {
    let mut t = RestartTracker::new(exponential(u32::MAX)).unwrap();
    let mut now = at(0);
    let mut seen = Vec::new();
    for _ in 0..6 {
        t.on_running(now);
        now = now.plus(secs(1));
        match fail(&mut t, now) {
            RestartDecision::RestartAfter(d) => seen.push(d.as_secs()),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(seen, [1, 2, 4, 8, 10, 10]);
}

#[test]
fn exponential_resets_after_stable_running_only() {
    let mut t = RestartTracker::new(exponential(u32::MAX)).unwrap();
    t.on_running(at(0));
    assert_eq!(fail(&mut t, at(1)), restart(secs(1)));
    t.on_running(at(2));
    assert_eq!(fail(&mut t, at(3)), restart(secs(2)));
    t.on_running(at(5));
    // 99 s of running: one short of the threshold, no reset.
    assert_eq!(fail(&mut t, at(104)), restart(secs(4)));
    // A long gap without running again does not count as stability.
    assert_eq!(fail(&mut t, at(10_000)), restart(secs(8)));
    t.on_running(at(10_008));
    // Exactly the threshold: reset.
    assert_eq!(fail(&mut t, at(10_108)), restart(secs(1)));
}

#[test]
fn exponential_attempts_before_reset_limit_and_reset() {
    let mut t = RestartTracker::new(exponential(2)).unwrap();
    t.on_running(at(0));
    assert_eq!(fail(&mut t, at(1)), restart(secs(1)));
    t.on_running(at(2));
    assert_eq!(fail(&mut t, at(3)), restart(secs(2)));
    t.on_running(at(5));
    assert_eq!(
        fail(&mut t, at(6)),
        give_up(GiveUpReason::AttemptsBeforeResetExhausted { attempts: 2 })
    );
    // Had it kept running long enough, the count would have started over.
    let mut t = RestartTracker::new(exponential(2)).unwrap();
    t.on_running(at(0));
    fail(&mut t, at(1));
    t.on_running(at(2));
    fail(&mut t, at(3));
    t.on_running(at(5));
    assert_eq!(fail(&mut t, at(105)), restart(secs(1)));
}

#[test]
fn jitter_bounds_are_exact_at_the_extremes() {
    let strategy = RestartStrategy::ExponentialDelay {
        initial_backoff: secs(10),
        max_backoff: secs(10),
        multiplier: 1.0,
        reset_backoff_threshold: secs(100),
        jitter_factor: 0.1,
        attempts_before_reset: u32::MAX,
    };
    let mut t = RestartTracker::new(strategy).unwrap();
    let delay = |t: &mut RestartTracker, random| match t.on_failure(
        at(0),
        FailureCause::new("x"),
        random,
    ) {
        RestartDecision::RestartAfter(d) => d,
        other => panic!("{other:?}"),
    };
    assert_eq!(delay(&mut t, 0), secs(9));
    assert_eq!(delay(&mut t, u64::MAX), secs(11));
    let mid = delay(&mut t, u64::MAX / 2);
    assert!(mid.abs_diff(secs(10)) < Duration::from_micros(1), "{mid:?}");
}

#[test]
fn history_keeps_every_failure_with_cause_time_and_decision() {
    let mut t = RestartTracker::new(RestartStrategy::FixedDelay {
        attempts: 1,
        delay: secs(1),
    })
    .unwrap();
    t.on_failure(at(1), FailureCause::new("first"), 0);
    t.on_failure(at(2), FailureCause::new("second"), 0);
    let history = t.history();
    assert_eq!(history.records().len(), 2);
    assert_eq!(history.restarts(), 1);
    assert_eq!(history.records()[0].at, at(1));
    assert_eq!(history.records()[0].cause.message, "first");
    assert_eq!(history.records()[0].decision, restart(secs(1)));
    let last = history.last().unwrap();
    assert_eq!(last.cause.message, "second");
    assert!(matches!(last.decision, RestartDecision::GiveUp { .. }));
}

proptest! {
    #[test]
    fn jittered_delay_stays_within_bounds(
        initial_ms in 0u64..10_000,
        extra_ms in 0u64..100_000,
        multiplier in 1.0f64..4.0,
        jitter in 0.0f64..=1.0,
        failures in proptest::collection::vec((any::<u64>(), 0u64..200_000, any::<bool>()), 1..40),
    ) {
        let initial = Duration::from_millis(initial_ms);
        let max = initial + Duration::from_millis(extra_ms);
        let mut t = RestartTracker::new(RestartStrategy::ExponentialDelay {
            initial_backoff: initial,
            max_backoff: max,
            multiplier,
            reset_backoff_threshold: secs(100),
            jitter_factor: jitter,
            attempts_before_reset: u32::MAX,
        }).unwrap();
        let mut now = MonoTime::ZERO;
        for (random, gap_ms, ran) in failures {
            if ran {
                t.on_running(now);
            }
            now = now.plus(Duration::from_millis(gap_ms));
            // A failure after 100 s of running resets the backoff first.
            let base = if ran && gap_ms >= 100_000 { initial } else { t.backoff };
            prop_assert!(base >= initial && base <= max);
            let RestartDecision::RestartAfter(d) = t.on_failure(now, FailureCause::new("x"), random) else {
                return Err(TestCaseError::fail("gave up"));
            };
            let slack = Duration::from_micros(1);
            prop_assert!(d + slack >= base.mul_f64(1.0 - jitter), "{d:?} below {base:?}");
            prop_assert!(d <= base.mul_f64(1.0 + jitter) + slack, "{d:?} above {base:?}");
        }
    }
}

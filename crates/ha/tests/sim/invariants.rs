//! The invariants of HA contract §9 (1–4, `docs/HA-CONTRACT.md`), checked on a trace. Each
//! returns the violations it found, described for a human.

use std::time::Duration;

use holdfast_ha::MonoTime;
use holdfast_ha::election::{LeadershipEvent, RevokeReason};
use holdfast_ha::retrieval::RetrievalEvent;

use super::run::{Trace, epoch_of};
use super::schedule::Schedule;

/// How much later than the session timeout a standby may be granted.
const TAKEOVER_BOUND: Duration = Duration::from_secs(1);

/// Leadership intervals `(contender, from, to)`; `to` is `None` while held
/// at the end of the run.
fn intervals(trace: &Trace) -> Vec<(usize, MonoTime, Option<MonoTime>)> {
    let mut open: Vec<(usize, MonoTime)> = Vec::new();
    let mut done = Vec::new();
    for (contender, event) in &trace.leadership {
        match event {
            LeadershipEvent::Granted { at, .. } => open.push((*contender, *at)),
            LeadershipEvent::Revoked { at, .. } => {
                if let Some(index) = open.iter().position(|(who, _)| who == contender) {
                    let (who, from) = open.remove(index);
                    done.push((who, from, Some(*at)));
                }
            }
        }
    }
    done.extend(open.into_iter().map(|(who, from)| (who, from, None)));
    done
}

/// Invariant 1: no two contenders believe they lead at overlapping times.
pub fn at_most_one_leader(trace: &Trace) -> Vec<String> {
    let mut violations: Vec<String> = trace
        .samples_with_two_leaders
        .iter()
        .map(|(at, leaders)| format!("at {at} contenders {leaders:?} all said is_leader()"))
        .collect();
    let all = intervals(trace);
    for (i, (a, a_from, a_to)) in all.iter().enumerate() {
        for (b, b_from, b_to) in &all[i + 1..] {
            let a_end = a_to.unwrap_or(MonoTime(u64::MAX));
            let b_end = b_to.unwrap_or(MonoTime(u64::MAX));
            if a != b && *a_from < b_end && *b_from < a_end {
                violations.push(format!(
                    "p{a} led {a_from}..{a_to:?} while p{b} led {b_from}..{b_to:?}"
                ));
            }
        }
    }
    violations
}

/// Invariant 2: epochs never go back: grants increase, and every observer reports
/// increasing epochs.
pub fn epochs_only_grow(trace: &Trace) -> Vec<String> {
    let mut violations = Vec::new();
    let mut last_grant = None;
    for (contender, event) in &trace.leadership {
        if let LeadershipEvent::Granted { epoch, at, .. } = event {
            if last_grant.is_some_and(|last| *epoch <= last) {
                violations.push(format!(
                    "p{contender} granted epoch {epoch} at {at} after epoch {last_grant:?}"
                ));
            }
            last_grant = Some(*epoch);
        }
    }
    let observers: std::collections::BTreeSet<usize> =
        trace.retrieval.iter().map(|(who, _, _)| *who).collect();
    for observer in observers {
        let mut last = None;
        for (_, event, at) in trace
            .retrieval
            .iter()
            .filter(|(who, _, _)| *who == observer)
        {
            if let RetrievalEvent::Leader(leader) = event {
                if last.is_some_and(|last| leader.epoch <= last) {
                    violations.push(format!(
                        "observer p{observer} went to epoch {} at {at} after {last:?}",
                        leader.epoch
                    ));
                }
                last = Some(leader.epoch);
            }
        }
    }
    violations
}

/// Invariant 3: a suspension shorter than the lease revokes nothing: every revocation
/// (but a graceful leave) happens during a cut of that contender that has
/// lasted at least the lease length minus one probe interval.
pub fn short_suspensions_revoke_nothing(schedule: &Schedule, trace: &Trace) -> Vec<String> {
    let t = schedule.session_timeout;
    let earliest = t.mul_f64(0.89) - t.mul_f64(0.2);
    let mut violations = Vec::new();
    for (contender, event) in &trace.leadership {
        let LeadershipEvent::Revoked { at, reason, epoch } = event else {
            continue;
        };
        if *reason == RevokeReason::Closed {
            continue;
        }
        let justified = trace.cuts.iter().any(|(who, from, to)| {
            who == contender
                && *from <= *at
                && to.is_none_or(|to| *at <= to)
                && at.since(*from) + Duration::from_millis(1) >= earliest
        });
        if !justified {
            violations.push(format!("p{contender} lost epoch {epoch} at {at} ({reason}) without a cut of at least {earliest:?}"));
        }
    }
    violations
}

/// Invariant 4: after a real leader loss (the leader alone cut off past `T`), a
/// standby leads within `T` plus a small bound, and every healthy observer
/// learns of it within the bound.
pub fn a_standby_takes_over(schedule: &Schedule, trace: &Trace) -> Vec<String> {
    let t = schedule.session_timeout;
    let all = intervals(trace);
    let mut violations = Vec::new();
    for (leader, cut_at, healed_at) in &trace.cuts {
        let held = all.iter().any(|(who, from, to)| {
            who == leader && from <= cut_at && to.is_none_or(|to| to > *cut_at)
        });
        let window_end = cut_at.plus(t + TAKEOVER_BOUND);
        let long_enough = healed_at.is_none_or(|healed| healed >= window_end);
        if !held || !long_enough || window_end.since(MonoTime::ZERO) > schedule.horizon {
            continue;
        }
        let window_start = cut_at.minus(Duration::from_secs(2));
        let quiet = |process: usize| {
            let cut = trace.cuts.iter().any(|(who, from, to)| {
                *who == process && *from <= window_end && to.is_none_or(|to| to >= window_start)
            });
            let left = trace
                .leaves
                .iter()
                .any(|(who, at)| *who == process && *at <= window_end);
            !cut && !left
        };
        // Only a fault of the leader alone is required to fail over in time:
        // a standby ahead in the latch that is itself cut off holds the
        // line (correctly) until it heals or its session expires.
        let others_quiet =
            (0..schedule.contenders).all(|process| process == *leader || quiet(process));
        if !others_quiet {
            continue;
        }
        let grant = trace
            .leadership
            .iter()
            .find_map(|(who, event)| match event {
                LeadershipEvent::Granted { at, .. }
                    if who != leader && at > cut_at && *at <= window_end =>
                {
                    Some(*event)
                }
                _ => None,
            });
        let Some(grant) = grant else {
            violations.push(format!(
                "p{leader} was cut off at {cut_at} but no standby led by {window_end}"
            ));
            continue;
        };
        let LeadershipEvent::Granted { at: granted_at, .. } = grant else {
            continue;
        };
        let epoch = epoch_of(&grant);
        for observer in schedule.contenders..schedule.contenders + schedule.observers {
            let learn_by = granted_at.plus(TAKEOVER_BOUND);
            if !quiet(observer) || learn_by.since(MonoTime::ZERO) > schedule.horizon {
                continue;
            }
            let learned = trace.retrieval.iter().any(|(who, event, at)| {
                *who == observer
                    && *at <= learn_by
                    && matches!(event, RetrievalEvent::Leader(info) if info.epoch >= epoch)
            });
            if !learned {
                violations.push(format!(
                    "observer p{observer} did not learn of epoch {epoch} by {learn_by}"
                ));
            }
        }
    }
    violations
}

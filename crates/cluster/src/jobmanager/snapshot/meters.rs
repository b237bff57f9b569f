//! What the leader shows of each attempt's meters: the counters its
//! TaskManager last reported and the rates between the last two reports
//! ([`Meters`]). Display only — no decision reads them, so they live in the
//! shell beside the core, not in it.

use std::collections::HashMap;
use std::time::Duration;

use holdfast_rpc::proto;
use holdfast_runtime::ids::{ExecutionAttemptId, JobId};
use holdfast_types::MonoTime;

/// Reports closer together than this keep the previous rates (a
/// registration right after a heartbeat would otherwise divide by ~0).
const MIN_SAMPLE: Duration = Duration::from_millis(500);
/// An attempt not reported for this long is forgotten.
const FORGET_AFTER: Duration = Duration::from_secs(300);
/// How often forgotten attempts are looked for.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// One attempt's meters as last reported, with rates.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct AttemptMeters {
    /// Records processed (in).
    pub records_in: u64,
    /// Records sent downstream.
    pub records_out: u64,
    /// Records in per second, between the last two samples.
    pub in_per_second: f64,
    /// Records out per second, between the last two samples.
    pub out_per_second: f64,
    /// The share of time it waited for room downstream (0 to 1).
    pub backpressure: f64,
    /// The time it waited for room downstream since it started (ms).
    pub backpressured_ms: u64,
    /// Its current watermark.
    pub watermark: Option<i64>,
    /// What its connectors last reported (a source's partitions, a sink's
    /// transactions).
    pub connectors: Vec<proto::ConnectorReport>,
    /// The sample the rates are taken from: (records in, records out, ms
    /// waited, when).
    base: Option<(u64, u64, u64, MonoTime)>,
    /// When it was last reported.
    reported: Option<MonoTime>,
}

/// Every attempt's meters the leader heard of.
#[derive(Debug, Default)]
pub(crate) struct Meters {
    attempts: HashMap<(JobId, ExecutionAttemptId), AttemptMeters>,
    /// When attempts not reported for a while were last forgotten.
    swept: Option<MonoTime>,
}

impl Meters {
    /// Takes in `report`, received at `now` (a malformed attempt is
    /// skipped: [`super::super::convert`] logs it).
    pub(crate) fn observe(&mut self, report: &proto::TaskReport, now: MonoTime) {
        let Some(Ok((job, attempt))) = report
            .attempt
            .as_ref()
            .map(<(JobId, ExecutionAttemptId)>::try_from)
        else {
            return;
        };
        let entry = self.attempts.entry((job, attempt)).or_default();
        entry.update(
            report.processed,
            report.records_out,
            report.backpressured_ms,
            report.watermark,
            now,
        );
        entry.connectors.clone_from(&report.connectors);
    }

    /// Forgets attempts not reported for five minutes (looked for at most
    /// once a minute).
    pub(crate) fn forget_old(&mut self, now: MonoTime) {
        if self.swept.is_some_and(|at| now.since(at) < SWEEP_EVERY) {
            return;
        }
        self.swept = Some(now);
        self.attempts
            .retain(|_, m| m.reported.is_some_and(|at| now.since(at) < FORGET_AFTER));
    }

    /// The meters of `attempt` of `job`, if reported.
    pub(crate) fn get(&self, job: JobId, attempt: ExecutionAttemptId) -> Option<&AttemptMeters> {
        self.attempts.get(&(job, attempt))
    }
}

impl AttemptMeters {
    fn update(
        &mut self,
        records_in: u64,
        records_out: u64,
        backpressured_ms: u64,
        watermark: Option<i64>,
        now: MonoTime,
    ) {
        // The counts are always the newest; the rates move on only once
        // the base sample is old enough.
        self.records_in = records_in;
        self.records_out = records_out;
        self.backpressured_ms = backpressured_ms;
        self.watermark = watermark;
        self.reported = Some(now);
        match self.base {
            Some((_, _, _, at)) if now.since(at) < MIN_SAMPLE => return,
            Some((base_in, base_out, base_waited, at)) => {
                let seconds = now.since(at).as_secs_f64();
                let rate = |now: u64, before: u64| now.saturating_sub(before) as f64 / seconds;
                self.in_per_second = rate(records_in, base_in);
                self.out_per_second = rate(records_out, base_out);
                self.backpressure = (rate(backpressured_ms, base_waited) / 1000.0).clamp(0.0, 1.0);
            }
            None => {}
        }
        self.base = Some((records_in, records_out, backpressured_ms, now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use holdfast_runtime::ids::TaskId;

    fn report(processed: u64, out: u64, waited_ms: u64) -> proto::TaskReport {
        proto::TaskReport {
            attempt: Some(
                (
                    JobId::from_u128(1),
                    ExecutionAttemptId::new(TaskId::new(0, 0), 0),
                )
                    .into(),
            ),
            processed,
            records_out: out,
            backpressured_ms: waited_ms,
            watermark: Some(42),
            ..Default::default()
        }
    }

    fn at(ms: u64) -> MonoTime {
        MonoTime::from_duration(Duration::from_millis(ms))
    }

    #[test]
    fn rates_are_taken_between_samples_and_too_close_samples_are_skipped() {
        let mut meters = Meters::default();
        let key = (
            JobId::from_u128(1),
            ExecutionAttemptId::new(TaskId::new(0, 0), 0),
        );
        meters.observe(&report(100, 50, 0), at(1_000));
        let first = meters.get(key.0, key.1).cloned().unwrap();
        assert_eq!((first.records_in, first.in_per_second), (100, 0.0));
        meters.observe(&report(2_100, 1_050, 500), at(3_000));
        let second = meters.get(key.0, key.1).cloned().unwrap();
        assert_eq!(second.in_per_second, 1_000.0);
        assert_eq!(second.out_per_second, 500.0);
        assert_eq!(second.backpressure, 0.25);
        assert_eq!(second.watermark, Some(42));
        // 100 ms later: the newest counts, the rates as they were.
        meters.observe(&report(2_200, 1_100, 500), at(3_100));
        let third = meters.get(key.0, key.1).cloned().unwrap();
        assert_eq!((third.records_in, third.records_out), (2_200, 1_100));
        assert_eq!(third.in_per_second, 1_000.0);
        // The rates move on from the base sample (3 s), not from the skipped one.
        meters.observe(&report(4_100, 1_050 + 1_000, 500), at(4_000));
        assert_eq!(
            meters.get(key.0, key.1).cloned().unwrap().in_per_second,
            2_000.0
        );
        meters.forget_old(at(4_000 + 299_000));
        assert!(meters.get(key.0, key.1).is_some());
        // Looked for at most once a minute.
        meters.forget_old(at(4_000 + 300_000));
        assert!(meters.get(key.0, key.1).is_some());
        meters.forget_old(at(4_000 + 360_000));
        assert!(meters.get(key.0, key.1).is_none());
    }
}

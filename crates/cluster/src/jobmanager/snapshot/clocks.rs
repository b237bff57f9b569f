//! When each job and each subtask attempt entered its states, as the
//! leader saw it ([`Clocks`]): the times Flink's REST answers carry
//! (`start-time`, `end-time`, `duration`, `last-modification`, a job's
//! `timestamps` and a subtask's `status-duration`). Display only, like
//! [`Meters`](super::Meters): no decision reads them.
//!
//! The leader notes a change when it publishes, after every message it
//! handles, so a time is as exact as the message that changed the state. A
//! new leader knows only what it saw: a job it took over has its submission
//! time, and the states it entered since.

use std::collections::{BTreeMap, HashMap};

use holdfast_runtime::ids::{JobId, TaskId};
use holdfast_runtime::lifecycle::job::JobState;
use holdfast_runtime::lifecycle::task::TaskState;
use holdfast_runtime::master::JobExecution;
use holdfast_types::WallTime;

/// One job's times (ms since the Unix epoch).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct JobClock {
    /// The state it was in when last looked at.
    state: Option<JobState>,
    /// When it last entered each state.
    pub entered: BTreeMap<JobState, u64>,
    /// When its state or a task's state last changed.
    pub last_modification: u64,
    /// Each subtask's current attempt: its number and when it entered
    /// each state.
    pub tasks: BTreeMap<TaskId, AttemptClock>,
}

/// One subtask attempt's times (ms since the Unix epoch).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct AttemptClock {
    /// The attempt number.
    pub attempt: u32,
    /// The state it was in when last looked at.
    state: Option<TaskState>,
    /// When it entered each state, in the order it did.
    pub entered: Vec<(TaskState, u64)>,
}

impl JobClock {
    /// When it ended (entered a terminal state), if it did.
    pub(crate) fn end(&self) -> Option<u64> {
        let state = self.state?;
        state
            .is_terminal()
            .then(|| self.entered.get(&state).copied())
            .flatten()
    }
}

impl AttemptClock {
    /// When it was deployed (Flink's subtask `start-time`), if it was.
    pub(crate) fn start(&self) -> Option<u64> {
        self.entered
            .iter()
            .find(|(s, _)| *s == TaskState::Deploying)
            .or_else(|| self.entered.iter().find(|(s, _)| *s == TaskState::Running))
            .map(|(_, at)| *at)
    }

    /// When it ended (entered a terminal state), if it did.
    pub(crate) fn end(&self) -> Option<u64> {
        match self.entered.last() {
            Some((state, at)) if state.is_terminal() => Some(*at),
            _ => None,
        }
    }

    /// How long it spent in each state until `now` (ms); an end state
    /// (finished, canceled, failed) counts no time: the attempt is over.
    pub(crate) fn durations(&self, now: u64) -> BTreeMap<TaskState, u64> {
        let mut spent = BTreeMap::new();
        for (i, (state, at)) in self.entered.iter().enumerate() {
            let until = match self.entered.get(i + 1) {
                Some((_, next)) => *next,
                None if state.is_terminal() => *at,
                None => now,
            };
            *spent.entry(*state).or_default() += until.saturating_sub(*at);
        }
        spent
    }
}

/// Every job's clock on this leader.
#[derive(Debug, Default)]
pub(crate) struct Clocks {
    jobs: HashMap<JobId, JobClock>,
}

impl Clocks {
    /// Notes, at `now`, the states of `jobs` that changed since the last
    /// look, and forgets jobs no longer among them.
    pub(crate) fn observe<'a>(
        &mut self,
        jobs: impl IntoIterator<Item = &'a JobExecution>,
        now: WallTime,
    ) {
        let now = now.as_millis();
        let mut seen = Vec::new();
        for job in jobs {
            seen.push(job.id);
            let clock = self.jobs.entry(job.id).or_insert_with(|| JobClock {
                last_modification: job.submitted_at_ms,
                entered: BTreeMap::from([(JobState::Created, job.submitted_at_ms)]),
                ..JobClock::default()
            });
            let state = job.state();
            if clock.state != Some(state) {
                clock.state = Some(state);
                clock.entered.insert(state, now);
                clock.last_modification = now;
            }
            for (task, execution) in job.tasks() {
                let attempt = clock.tasks.entry(*task).or_default();
                if attempt.attempt != execution.attempt {
                    *attempt = AttemptClock {
                        attempt: execution.attempt,
                        ..AttemptClock::default()
                    };
                }
                if attempt.state != Some(execution.state) {
                    attempt.state = Some(execution.state);
                    attempt.entered.push((execution.state, now));
                    clock.last_modification = now;
                }
            }
        }
        self.jobs.retain(|id, _| seen.contains(id));
    }

    /// `job`'s clock, once it was observed.
    pub(crate) fn job(&self, job: JobId) -> Option<&JobClock> {
        self.jobs.get(&job)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock(entered: &[(TaskState, u64)]) -> AttemptClock {
        AttemptClock {
            attempt: 0,
            state: entered.last().map(|(s, _)| *s),
            entered: entered.to_vec(),
        }
    }

    #[test]
    fn an_attempt_starts_when_deployed_and_ends_when_terminal() {
        let running = clock(&[
            (TaskState::Scheduled, 100),
            (TaskState::Deploying, 150),
            (TaskState::Running, 400),
        ]);
        assert_eq!(running.start(), Some(150));
        assert_eq!(running.end(), None);
        let spent = running.durations(1_000);
        assert_eq!(spent[&TaskState::Scheduled], 50);
        assert_eq!(spent[&TaskState::Deploying], 250);
        assert_eq!(spent[&TaskState::Running], 600);

        let done = clock(&[
            (TaskState::Scheduled, 100),
            (TaskState::Running, 200),
            (TaskState::Finished, 900),
        ]);
        assert_eq!(done.start(), Some(200), "adopted: seen running first");
        assert_eq!(done.end(), Some(900));
        assert_eq!(done.durations(5_000)[&TaskState::Running], 700);
        assert_eq!(
            done.durations(5_000)[&TaskState::Finished],
            0,
            "an ended attempt's time does not grow"
        );
    }

    #[test]
    fn a_job_ends_only_in_a_terminal_state() {
        let mut job = JobClock {
            state: Some(JobState::Running),
            entered: BTreeMap::from([(JobState::Running, 10)]),
            ..JobClock::default()
        };
        assert_eq!(job.end(), None);
        job.state = Some(JobState::Canceled);
        job.entered.insert(JobState::Canceled, 90);
        assert_eq!(job.end(), Some(90));
    }
}

//! The savepoints a leader was asked for, by trigger id, for
//! `GET /jobs/{id}/savepoints/{triggerid}`: in progress, taken (where), or
//! failed (why). The newest [`KEPT`] are kept; a new leader knows none of
//! its predecessor's.

use std::collections::VecDeque;

use holdfast_runtime::ids::JobId;

use crate::rest::answers::SavepointStatus;

/// How many triggers are remembered.
pub(in crate::jobmanager) const KEPT: usize = 100;

struct Operation {
    request: u64,
    job: JobId,
    /// Its REST trigger id.
    trigger: String,
    status: SavepointStatus,
}

/// The savepoint triggers of a term.
#[derive(Default)]
pub(in crate::jobmanager) struct SavepointOps {
    operations: VecDeque<Operation>,
}

/// The REST trigger id the leader picks for request `request`: 32
/// hexadecimal digits, the shape of Flink's trigger ids.
pub(in crate::jobmanager) fn trigger_id(request: u64) -> String {
    format!("{request:032x}")
}

impl SavepointOps {
    /// Request `request` for `job` started, under the trigger id the
    /// client chose or else [`trigger_id`]; its trigger id.
    pub(in crate::jobmanager) fn begin(
        &mut self,
        request: u64,
        job: JobId,
        chosen: Option<String>,
    ) -> String {
        let trigger = chosen.unwrap_or_else(|| trigger_id(request));
        self.operations.push_back(Operation {
            request,
            job,
            trigger: trigger.clone(),
            status: SavepointStatus::in_progress(),
        });
        if self.operations.len() > KEPT {
            self.operations.pop_front();
        }
        trigger
    }

    /// Whether `trigger` is a remembered trigger of `job`.
    pub(in crate::jobmanager) fn knows(&self, job: JobId, trigger: &str) -> bool {
        self.operations
            .iter()
            .any(|o| o.job == job && o.trigger == trigger)
    }

    /// Request `request` ended: taken at `location`, or failed.
    pub(in crate::jobmanager) fn finish(&mut self, request: u64, result: Result<String, String>) {
        if let Some(op) = self.operations.iter_mut().find(|o| o.request == request) {
            op.status = match result {
                Ok(location) => SavepointStatus::completed(location),
                Err(reason) => SavepointStatus::failed(reason),
            };
        }
    }

    /// Every remembered trigger, by job and trigger id.
    pub(in crate::jobmanager) fn views(
        &self,
    ) -> impl Iterator<Item = ((JobId, String), SavepointStatus)> + '_ {
        self.operations
            .iter()
            .map(|o| ((o.job, o.trigger.clone()), o.status.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triggers_are_answered_and_the_oldest_forgotten() {
        let mut ops = SavepointOps::default();
        let job = JobId::from_u128(3);
        let id = ops.begin(7, job, None);
        assert_eq!(id, "00000000000000000000000000000007");
        assert!(ops.knows(job, &id));
        assert!(!ops.knows(JobId::from_u128(4), &id), "another job's");
        let chosen = "abcdef0123456789abcdef0123456789";
        assert_eq!(ops.begin(8, job, Some(chosen.into())), chosen);
        assert!(ops.knows(job, chosen));
        let view = |ops: &SavepointOps| ops.views().find(|(k, _)| k.1 == id).map(|(_, v)| v);
        assert_eq!(view(&ops), Some(SavepointStatus::in_progress()));
        ops.finish(7, Ok("/sp/savepoint-1".into()));
        assert_eq!(
            view(&ops),
            Some(SavepointStatus::completed("/sp/savepoint-1".into()))
        );
        for request in 100..100 + KEPT as u64 {
            ops.begin(request, job, None);
        }
        assert_eq!(view(&ops), None, "the oldest is forgotten");
        ops.finish(150, Err("expired".into()));
        assert!(
            ops.views()
                .any(|(k, v)| k.1 == trigger_id(150) && v.is_done())
        );
    }
}

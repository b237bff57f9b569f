//! The fence on the JobManager's calls: an epoch below the highest seen is
//! refused as stale; otherwise the call must come from the leader this
//! TaskManager is registered (or registering) with. Only an accepted
//! registration raises the fence — a newer leader is learnt from leader
//! retrieval, never from a caller's say-so, so no call can disable the
//! real leader.

use holdfast_types::{Epoch, MonoTime};

use super::core::TaskManagerCore;
use super::types::{CallKind, CallRejection, RegistrationId, TmCommand};
use crate::fencing::StaleEpoch;

impl TaskManagerCore {
    pub(super) fn on_call(
        &mut self,
        out: &mut Vec<TmCommand>,
        now: MonoTime,
        epoch: Epoch,
        registration: Option<RegistrationId>,
        kind: CallKind,
    ) {
        if let Some(highest) = self.fence.highest()
            && epoch < highest
        {
            let stale = StaleEpoch {
                got: epoch,
                highest,
            };
            out.push(TmCommand::Reject(CallRejection::Stale(stale)));
            return;
        }
        let accepted = match &self.registration {
            Some(r) => r.epoch == epoch && registration.as_ref().is_none_or(|id| *id == r.id),
            // The leader accepted our registration and calls before its
            // answer reached us: the epoch is the one we register with.
            None => self.registering == Some(epoch),
        };
        if !accepted {
            out.push(TmCommand::Reject(CallRejection::NotRegistered {
                epoch,
                registration,
            }));
            return;
        }
        if kind == CallKind::Heartbeat {
            self.heard(now, epoch);
        }
        out.push(TmCommand::Accept { epoch });
    }
}

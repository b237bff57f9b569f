//! Following the leader: a published leader, a registration with it (one
//! in flight at a time), its answer, and retries with backoff while the
//! leader does not accept it yet.

use std::time::Duration;

use holdfast_types::{Epoch, MonoTime};

use super::core::{Registration, TaskManagerCore};
use super::types::{
    LeaderRef, Notice, OnNoLeader, RegistrationAccepted, RegistrationRefused, TmCommand,
};
use crate::failure::{Failure, FailureKind};
use crate::fencing::Accepted;
use crate::master::AttemptRef;

/// The first delay before registering again; doubled per failure.
pub(super) const FIRST_BACKOFF: Duration = Duration::from_millis(50);
/// The longest delay before registering again.
pub const MAX_BACKOFF: Duration = Duration::from_secs(2);

impl TaskManagerCore {
    pub(super) fn on_leader_found(
        &mut self,
        out: &mut Vec<TmCommand>,
        now: MonoTime,
        leader: LeaderRef,
    ) {
        out.push(TmCommand::Notice(Notice::LeaderFound(leader.clone())));
        self.leader = Some(leader.clone());
        if let Some(registration) = &self.registration {
            if registration.epoch >= leader.epoch {
                return; // already registered with it (or a newer one)
            }
            let old = registration.epoch;
            let failed = if self.config.on_no_leader == OnNoLeader::FailTasks {
                let message = format!(
                    "a newer JobManager leader (epoch {}) was elected; tasks of the leader at epoch {old} stop",
                    leader.epoch
                );
                self.fail_tasks(
                    out,
                    |epoch| epoch < leader.epoch,
                    Failure::new(FailureKind::NewLeader, message),
                )
            } else {
                // Kept for the new leader: no leader holds them until it
                // registers this TaskManager, which must happen within the
                // same bound as after a silent leader.
                let wait = super::types::successor_wait(registration.session_timeout);
                self.orphaned.get_or_insert(super::core::Orphaned {
                    since: now,
                    until: now.plus(wait),
                });
                0
            };
            out.push(TmCommand::Notice(Notice::NewLeader {
                old,
                new: leader.epoch,
                failed,
                kept: self.live_tasks().saturating_sub(failed),
            }));
            self.registration = None;
            self.monitor = None;
        }
        if self.registering == Some(leader.epoch) {
            return; // a registration with it is in flight already
        }
        self.backoff = FIRST_BACKOFF;
        self.register(out, leader);
    }

    pub(super) fn register(&mut self, out: &mut Vec<TmCommand>, leader: LeaderRef) {
        self.registering = Some(leader.epoch);
        out.push(TmCommand::Register { leader });
    }

    pub(super) fn on_retry_due(&mut self, out: &mut Vec<TmCommand>, epoch: Epoch) {
        // Only if nothing registered or started registering since.
        if self.registration.is_none()
            && self.registering.is_none()
            && let Some(leader) = self.leader.clone().filter(|l| l.epoch == epoch)
        {
            self.register(out, leader);
        }
    }

    pub(super) fn on_registration_answered(
        &mut self,
        out: &mut Vec<TmCommand>,
        now: MonoTime,
        epoch: Epoch,
        reported: Vec<AttemptRef>,
        answer: Result<RegistrationAccepted, RegistrationRefused>,
    ) {
        if self.registering != Some(epoch) || self.registration.is_some() {
            return; // a newer leader came meanwhile
        }
        self.registering = None;
        let accepted = match answer {
            Ok(accepted) => accepted,
            Err(RegistrationRefused::Unusable { error }) => {
                out.push(TmCommand::Notice(Notice::RegistrationImpossible {
                    epoch,
                    error,
                }));
                return;
            }
            Err(refused) => {
                let retry = self.backoff;
                self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
                out.push(TmCommand::Notice(Notice::RegistrationFailed {
                    epoch,
                    refused,
                    retry,
                    first: retry == FIRST_BACKOFF,
                }));
                out.push(TmCommand::RetryRegistration {
                    epoch,
                    after: retry,
                });
                return;
            }
        };
        let fenced = match self.fence.check(epoch) {
            Ok(fenced) => fenced,
            Err(stale) => {
                // A newer leader registered us meanwhile: this registration
                // is void; retrieval reports the newer one.
                out.push(TmCommand::Notice(Notice::RegisteredWithStale(stale)));
                return;
            }
        };
        if let Accepted::NewLeader {
            previous: Some(previous),
        } = fenced
            && self.config.on_no_leader == OnNoLeader::FailTasks
        {
            let message = format!(
                "a newer JobManager leader (epoch {epoch}) was elected; tasks of epoch {previous} stop"
            );
            self.fail_tasks(
                out,
                |e| e < epoch,
                Failure::new(FailureKind::NewLeader, message),
            );
        }
        self.forget(out, reported);
        self.registrations += 1;
        out.push(TmCommand::Notice(Notice::Registered {
            jobmanager: accepted.jobmanager.clone(),
            epoch,
            id: accepted.id.clone(),
        }));
        let timeout = accepted.heartbeat_timeout.max(super::core::MIN_TIMEOUT);
        self.watch(now, epoch, accepted.heartbeat_interval, timeout);
        // A leader holds the tasks again: they no longer wait for one.
        self.orphaned = None;
        self.registration = Some(Registration {
            epoch,
            id: accepted.id,
            jobmanager: accepted.jobmanager,
            interval: accepted.heartbeat_interval,
            timeout,
            session_timeout: accepted
                .session_timeout
                .filter(|t| !t.is_zero())
                .unwrap_or(self.config.session_timeout),
        });
        self.backoff = FIRST_BACKOFF;
    }
}

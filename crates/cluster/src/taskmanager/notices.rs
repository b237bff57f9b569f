//! The core's [`Notice`]s as log lines a tired operator can act on (what
//! happened, what the TaskManager does about it), and the metrics that go
//! with them.

use holdfast_runtime::taskmanager::{MAX_BACKOFF, Notice, RegistrationRefused};

use super::actor::Actor;

impl Actor {
    pub(super) fn notice(&mut self, notice: Notice) {
        let metrics = &self.parts.options.metrics;
        match notice {
            Notice::LeaderFound(leader) => {
                tracing::info!(leader = %leader.address, epoch = %leader.epoch, "leading JobManager found");
            }
            Notice::NewLeader {
                old,
                new,
                failed,
                kept: _,
            } if failed > 0 => {
                tracing::warn!(old_epoch = %old, new_epoch = %new, failed,
                    "new JobManager leader: failing the previous leader's tasks (policy standard) and registering \
                     with the new one");
            }
            Notice::NewLeader { old, new, kept, .. } => {
                tracing::info!(old_epoch = %old, new_epoch = %new, tasks = kept,
                    "new JobManager leader: registering with it and reporting the running tasks for it to adopt \
                     (they keep running; it cancels only what it cannot adopt)");
            }
            Notice::NoLeader {
                connection,
                failed,
                fails_tasks: true,
                ..
            } => {
                tracing::warn!(connection = %connection,
                    "JobManager lost leadership: leader retrieval reports no leader; policy `standard` fails this \
                     TaskManager's tasks now, as Flink does; they are redeployed once a leader is known again");
                tracing::warn!(
                    failed,
                    "failed all tasks because the JobManager lost leadership (policy standard)"
                );
            }
            Notice::NoLeader {
                connection,
                running: 0,
                ..
            } => {
                tracing::info!(connection = %connection,
                    "no JobManager leader is published right now; waiting for one to register with");
            }
            Notice::NoLeader {
                connection,
                running,
                heartbeat_timeout,
                ..
            } => {
                tracing::info!(connection = %connection, tasks = running,
                    "no JobManager leader is published right now; the tasks keep running and records keep \
                     flowing; a newer leader adopts them; they fail only if the JobManager's heartbeats stop \
                     (heartbeat.timeout {heartbeat_timeout:?}) and no leader takes them over within its session \
                     timeout plus a margin");
            }
            Notice::RegistrationFailed {
                epoch,
                refused,
                retry,
                first,
            } => match refused {
                RegistrationRefused::NotLeader { jobmanager } => {
                    tracing::info!(jobmanager = %jobmanager, epoch = %epoch,
                        "the JobManager is not serving as leader yet; registering again in {retry:?}");
                }
                RegistrationRefused::Failed { jobmanager, error } if first => {
                    tracing::warn!(jobmanager = %jobmanager, epoch = %epoch, %error,
                        "registration with the JobManager failed; retrying every {MAX_BACKOFF:?} at most \
                         until it answers or another leader is elected (further failures are logged at debug)");
                }
                RegistrationRefused::Failed { jobmanager, error } => {
                    tracing::debug!(jobmanager = %jobmanager, epoch = %epoch, %error,
                        "registration with the JobManager failed again; retrying in {retry:?}");
                }
                // Not retried, so never in this notice: the core reports it
                // as `RegistrationImpossible`.
                RegistrationRefused::Unusable { error } => {
                    tracing::warn!(epoch = %epoch, %error, "cannot register with the published leader");
                }
            },
            Notice::RegistrationImpossible { epoch, error } => {
                tracing::warn!(epoch = %epoch, %error,
                    "cannot register: the published leader is not a JobManager this TaskManager can call; \
                     waiting for leader retrieval to publish another");
            }
            Notice::RegisteredWithStale(stale) => {
                tracing::info!(epoch = %stale.got, highest = %stale.highest,
                    "registered with a JobManager older than one already seen; waiting for the newer leader");
            }
            Notice::Registered {
                jobmanager,
                epoch,
                id,
            } => {
                metrics.registrations.inc();
                metrics.awaiting_successor.set(0);
                tracing::info!(jobmanager = %jobmanager, epoch = %epoch, slots = self.parts.options.slots,
                    registration = %id, "registered with the leading JobManager");
            }
            Notice::Paused { paused } => {
                tracing::info!(paused = ?paused,
                    "this TaskManager was paused; not blaming the JobManager for the silence");
            }
            Notice::JobManagerHeartbeatTimeout {
                jobmanager,
                epoch,
                timeout,
                failed,
                keep_until: None,
                ..
            } => {
                metrics.jobmanager_heartbeat_timeouts.inc();
                tracing::warn!(jobmanager = %jobmanager, epoch = %epoch, failed,
                    "JobManager heartbeat timed out after {timeout:?}: failed its tasks (policy standard); \
                     registering again with the leader retrieval reports (this is not a leadership change)");
            }
            Notice::JobManagerHeartbeatTimeout {
                jobmanager,
                epoch,
                timeout,
                kept,
                keep_until: Some(keep),
                ..
            } => {
                metrics.jobmanager_heartbeat_timeouts.inc();
                metrics.awaiting_successor.set(1);
                tracing::warn!(jobmanager = %jobmanager, epoch = %epoch, tasks = kept,
                    "JobManager heartbeat timed out after {timeout:?}: the tasks keep running and records keep \
                     flowing; registering again with the leader retrieval reports, or a successor once one is \
                     elected, which adopts them; if no leader registers this TaskManager within {keep:?} the tasks \
                     fail (the leader's session timeout plus a margin)");
            }
            Notice::NoSuccessor { waited, failed } => {
                metrics.awaiting_successor.set(0);
                tracing::error!(waited = ?waited, failed,
                    "no JobManager leader took the tasks over in time: failed them; they run again, from their \
                     job's latest completed checkpoint, once a leader is registered with");
            }
            Notice::ShuttingDown { .. } => {}
        }
    }
}

//! The term's answers to what the actor hands it while leading:
//! TaskManagers registering, reporting task states and answering
//! heartbeats, jobs cancelled, submitted (once stored) and recovered from
//! the HA store.

use holdfast_rpc::client::TaskManagerClient;
use holdfast_rpc::proto;
use holdfast_runtime::ids::{JobId, TaskManagerId};
use holdfast_runtime::master::MasterInput;
use holdfast_runtime::taskmanager::OnNoLeader;
use tonic::Status;

use super::Term;
use crate::control::ControlError;
use crate::job_store::StoredJob;
use crate::jobmanager::convert;
use crate::jobmanager::link::{Link, LinkParts};
use crate::jobmanager::snapshot::{self, LinkInfo};
use crate::rest::answers::ConnectionView;

impl Term {
    /// Registers TaskManager `tm` (its request checked by the actor),
    /// reached through `client`: a new link replaces any old one, and the
    /// core learns what it holds.
    pub(in crate::jobmanager) fn register(
        &mut self,
        tm: TaskManagerId,
        request: &proto::RegisterTaskManagerRequest,
        client: TaskManagerClient,
    ) -> proto::RegisterTaskManagerReply {
        let registration = format!("{:016x}", self.runtime.random_u64());
        let fence = (self.token.epoch, self.contender.clone());
        let info = LinkInfo {
            rpc: request.rpc_address.clone(),
            data_address: request.data_address.clone(),
            last_heard: self.runtime.now(),
            last_heard_wall: self.runtime.wall_now(),
            connection: None,
            hardware: request.hardware,
        };
        let link = Link::new(LinkParts {
            tm: tm.clone(),
            client,
            registration: registration.clone(),
            info,
            epoch: self.token.epoch,
            leading: self.leading.clone(),
            actor: self.actor.clone(),
            round_trips: self.metrics.taskmanager_heartbeat_round_trip.clone(),
        });
        self.links.insert(tm.clone(), link);
        tracing::info!(taskmanager = %tm, rpc = %request.rpc_address, data = %request.data_address,
            slots = request.slots, "TaskManager registered");
        let now = self.runtime.now();
        request
            .tasks
            .iter()
            .for_each(|t| self.meters.observe(t, now));
        let tasks = request.tasks.iter().filter_map(convert::report).collect();
        let running = request
            .running
            .iter()
            .filter_map(|r| convert::running(&tm, r))
            .collect();
        self.step(MasterInput::TaskManagerRegistered {
            tm,
            slots: request.slots,
            tasks,
            running,
        });
        proto::RegisterTaskManagerReply {
            registration_id: registration,
            fence: Some(fence.into()),
            heartbeat_interval_ms: self.heartbeat_interval.as_millis() as u64,
            heartbeat_timeout_ms: self.heartbeat_timeout.as_millis() as u64,
            session_timeout_ms: self.session_timeout.as_millis() as u64,
        }
    }

    /// A registered TaskManager's report of one attempt.
    pub(in crate::jobmanager) fn update(
        &mut self,
        request: &proto::UpdateTaskStateRequest,
    ) -> Result<proto::UpdateTaskStateReply, Status> {
        let tm = self.registered(&request.task_manager_id, &request.registration_id)?;
        let report = request
            .report
            .as_ref()
            .and_then(convert::report)
            .ok_or_else(|| Status::invalid_argument("report: missing or malformed"))?;
        self.step(MasterInput::TaskUpdate { tm, report });
        Ok(proto::UpdateTaskStateReply {})
    }

    /// The TaskManager `id`, if it is registered with this term as
    /// `registration` (a call from anyone else is refused).
    pub(super) fn registered(&self, id: &str, registration: &str) -> Result<TaskManagerId, Status> {
        match id.parse::<TaskManagerId>() {
            Ok(tm)
                if self
                    .links
                    .get(&tm)
                    .is_some_and(|link| link.registration == registration) =>
            {
                Ok(tm)
            }
            // (An id that does not parse was never registered either.)
            _ => Err(Status::failed_precondition(format!(
                "TaskManager {id:?} is not registered with registration {registration:?}"
            ))),
        }
    }

    /// A TaskManager answered a heartbeat of this term.
    pub(in crate::jobmanager) fn heartbeat_reply(
        &mut self,
        tm: TaskManagerId,
        reply: &proto::HeartbeatReply,
    ) {
        let mut changed = None;
        if let Some(link) = self.links.get_mut(&tm) {
            link.info.last_heard = self.runtime.now();
            link.info.last_heard_wall = self.runtime.wall_now();
            let before = link.info.connection.as_ref().map(|c| c.state.clone());
            link.info.connection = reply.connection.as_ref().map(|c| ConnectionView {
                state: c.state.clone(),
                lease_remaining_ms: c.lease_remaining_ms,
            });
            if let Some(now) = &link.info.connection {
                changed = Some((before, now.state.clone(), now.lease_remaining_ms));
            }
        }
        if !reply.connection_changes.is_empty() {
            self.observe_changes(&tm.to_string(), &reply.connection_changes);
        } else if let Some((before, now, lease)) = changed {
            self.observe_connection(&tm.to_string(), before.as_deref(), &now, lease);
        }
        let now = self.runtime.now();
        reply.tasks.iter().for_each(|t| self.meters.observe(t, now));
        self.meters.forget_old(now);
        let tasks = reply.tasks.iter().filter_map(convert::report).collect();
        self.step(MasterInput::HeartbeatReply { tm, tasks });
    }

    /// A user cancels `job`.
    pub(in crate::jobmanager) fn cancel(&mut self, job: JobId) -> Result<(), ControlError> {
        let execution = self.core.job(job).ok_or(ControlError::NotFound(job))?;
        if execution.state().is_terminal() {
            return Err(ControlError::Terminal {
                job,
                state: snapshot::job_state_name(execution.state()).to_owned(),
            });
        }
        tracing::info!(%job, "cancel requested");
        self.step(MasterInput::Cancel { job });
        Ok(())
    }

    /// A job submitted to this term, now stored: it runs.
    pub(in crate::jobmanager) fn submitted(&mut self, job: JobId, stored: StoredJob) {
        tracing::info!(%job, name = %stored.graph.name, "job submitted");
        self.stored.insert(job, stored.clone());
        // A job from a savepoint reads its restore point (the savepoint)
        // from the HA store, as a recovered one does.
        self.checkpoints_for(job, stored.restored_from.is_some());
        self.step(MasterInput::Submit {
            job,
            graph: stored.graph,
            submitted_at_ms: stored.submitted_at_ms,
        });
    }

    /// A job of the HA store, taken over by this term: it waits for the
    /// TaskManagers' reports to adopt its running attempts (see
    /// `takeover.rs`).
    pub(in crate::jobmanager) fn recovered(&mut self, job: JobId, stored: StoredJob) {
        if self.stored.contains_key(&job) {
            return;
        }
        if let Some(state) = &stored.ended {
            tracing::info!(%job, state, "a job the previous leader saw end is still stored; removing it, not running it");
            self.remove_ended(job);
            return;
        }
        let (graph, submitted_at_ms) = (stored.graph.clone(), stored.submitted_at_ms);
        self.stored.insert(job, stored);
        self.checkpoints_for(job, true);
        if self.on_no_leader == OnNoLeader::FailTasks {
            // `standard`: the TaskManagers failed the previous leader's
            // tasks; the job runs again at once.
            tracing::info!(%job, "recovered the job from the HA store; policy standard: running it again");
            self.step(MasterInput::Submit {
                job,
                graph,
                submitted_at_ms,
            });
            return;
        }
        tracing::info!(%job, name = %self.stored[&job].graph.name,
            "recovered the job from the HA store; waiting for the TaskManagers to report its running tasks, to \
             adopt them (jobmanager.adoption.timeout at the longest)");
        let awaits_floor = self.checkpoints.is_some();
        self.step(MasterInput::Recover {
            job,
            graph,
            submitted_at_ms,
            awaits_floor,
        });
    }
}

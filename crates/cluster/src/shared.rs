//! What the actors of both processes share: asking an actor from an RPC
//! handler (the handler sends the call with a reply channel and awaits the
//! answer; the actor owns all state), and reading their coordination
//! connection for reports.

use std::time::Duration;

use holdfast_ha::backend::Backend;
use holdfast_ha::connection::Connection;
use holdfast_ha::policy::ErrorPolicy;
use holdfast_runtime::taskmanager::OnNoLeader;
use tokio::sync::{mpsc, oneshot};
use tonic::{Response, Status};

/// What the error policy means for tasks when their leader is in doubt —
/// the one mapping both processes use: the TaskManagers keep their tasks
/// exactly when a new leader adopts them (a leader that adopted while the
/// TaskManagers failed their tasks, or the reverse, would restart or lose
/// work).
pub(crate) fn on_no_leader(policy: ErrorPolicy) -> OnNoLeader {
    match policy {
        ErrorPolicy::Standard => OnNoLeader::FailTasks,
        ErrorPolicy::Session | ErrorPolicy::Lease => OnNoLeader::KeepTasks,
    }
}

/// A connection's state and lease left, read when called.
pub(crate) type ConnectionReader = Box<dyn Fn() -> (String, Option<Duration>) + Send>;

/// Reads `connection`'s state name and the time left on its lease.
pub(crate) fn connection_reader<B: Backend>(connection: Connection<B>) -> ConnectionReader {
    Box::new(move || {
        let state = connection
            .state()
            .map_or("NOT_CONNECTED".to_owned(), |s| s.name().to_owned());
        let lease = connection
            .lease_deadline()
            .map(|deadline| deadline.since(connection.runtime().now()));
        (state, lease)
    })
}

/// Sends `make(reply)` to `actor` and awaits the answer; `who` names the
/// process in the error when it is shutting down.
pub(crate) async fn ask<M, T>(
    actor: &mpsc::UnboundedSender<M>,
    who: &str,
    make: impl FnOnce(oneshot::Sender<Result<T, Status>>) -> M,
) -> Result<Response<T>, Status> {
    let (reply, answer) = oneshot::channel();
    let gone = || Status::unavailable(format!("the {who} is shutting down"));
    actor.send(make(reply)).map_err(|_| gone())?;
    answer.await.map_err(|_| gone())?.map(Response::new)
}

/// The newest connection-state changes kept for heartbeat answers.
const CHANGES_KEPT: usize = 16;

/// A connection's latest state changes, each with when it happened (wall
/// clock), kept as they come by a task of their own, for the HA timeline.
#[derive(Clone, Default)]
pub(crate) struct ConnectionChanges {
    changes: std::sync::Arc<
        std::sync::Mutex<std::collections::VecDeque<holdfast_rpc::proto::ConnectionChange>>,
    >,
}

impl ConnectionChanges {
    /// Follows `connection`'s transitions from now on (and the latest
    /// before), until it closes.
    pub(crate) fn follow<B: Backend>(connection: &Connection<B>) -> ConnectionChanges {
        let changes = ConnectionChanges::default();
        let (last, mut events) = connection.subscribe();
        let runtime = connection.runtime().clone();
        let kept = changes.clone();
        let record = move |event: holdfast_ha::connection::ConnectionEvent| {
            let ago = runtime.now().since(event.at);
            let change = holdfast_rpc::proto::ConnectionChange {
                at_ms: runtime.wall_now().saturating_sub(ago).as_millis(),
                state: event.state.name().to_owned(),
                lease_remaining_ms: event
                    .lease_deadline
                    .map(|deadline| deadline.since(event.at).as_millis() as u64),
            };
            let mut list = holdfast_types::sync::lock(&kept.changes);
            list.push_back(change);
            while list.len() > CHANGES_KEPT {
                list.pop_front();
            }
        };
        if let Some(event) = last {
            record(event);
        }
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                record(event);
            }
        });
        changes
    }

    /// The kept changes, oldest first.
    pub(crate) fn latest(&self) -> Vec<holdfast_rpc::proto::ConnectionChange> {
        holdfast_types::sync::lock(&self.changes)
            .iter()
            .cloned()
            .collect()
    }
}

//! Performs the latch's I/O commands through the connection and feeds the
//! answers back as [`LatchInput`]s.

use std::sync::Arc;
use std::time::Duration;

use holdfast_types::sync::lock;
use tokio::sync::{RwLock, mpsc};

use super::latch::{LatchCommand, LatchInput, OpId};
use super::shell::ElectionOptions;
use crate::backend::{Backend, CoordError, CreateMode, NodeEvent, Op, OpResult};
use crate::connection::{Connection, SessionHandle};
use crate::types::{Epoch, LeaderRecord, SessionId};

/// How many times a publication is retried when `connection_info` changes
/// under it.
const PUBLISH_ATTEMPTS: usize = 5;
/// How long closing waits for the latch node's deletion.
const DELETE_TIMEOUT: Duration = Duration::from_secs(5);

pub(super) struct Perform<B: Backend> {
    pub(super) connection: Connection<B>,
    pub(super) options: Arc<ElectionOptions>,
    pub(super) inputs: mpsc::UnboundedSender<LatchInput>,
    /// `true` once leaving: creates hold the read side until they are
    /// answered, so leaving (the write side) waits for every create in
    /// flight, and none starts after — the node search then sees them all.
    pub(super) gate: Arc<RwLock<bool>>,
    /// Where a publication records the grant node's version.
    pub(super) shared: Arc<std::sync::Mutex<super::shell::Shared>>,
}

impl<B: Backend> Clone for Perform<B> {
    fn clone(&self) -> Self {
        Perform {
            connection: self.connection.clone(),
            options: self.options.clone(),
            inputs: self.inputs.clone(),
            gate: self.gate.clone(),
            shared: self.shared.clone(),
        }
    }
}

impl<B: Backend> Perform<B> {
    /// The connection's session if it is `session`.
    fn session(&self, session: SessionId) -> Result<SessionHandle<B>, CoordError> {
        self.connection
            .session()
            .filter(|handle| handle.id() == session)
            .ok_or(CoordError::SessionExpired)
    }

    fn path(&self, node: &str) -> String {
        format!("{}/{node}", self.options.latch_path)
    }

    /// Leaves the election: deletes our node(s), waiting up to
    /// [`DELETE_TIMEOUT`], then keeps trying in the background until they are
    /// gone or the session has ended (taking them with it).
    pub(super) async fn leave(&self, session: SessionId, node: Option<String>, prefix: String) {
        let this = self.clone();
        let mut deleting = tokio::spawn(async move {
            *this.gate.write().await = true;
            this.delete_ours(session, node, &prefix).await;
        });
        let runtime = self.connection.runtime().clone();
        let deadline = runtime.now().plus(DELETE_TIMEOUT);
        tokio::select! {
            _ = &mut deleting => {}
            () = runtime.sleep_until(deadline) => tracing::warn!(
                latch = %self.options.latch_path,
                "deleting our latch node takes longer than {DELETE_TIMEOUT:?}; still trying in the \
                 background until it is gone or our session ends"
            ),
        }
    }

    async fn delete_ours(&self, session: SessionId, node: Option<String>, prefix: &str) {
        loop {
            let Ok(handle) = self.session(session) else {
                return; // the session ended: its ephemeral nodes went with it
            };
            match self.try_delete_ours(&handle, node.as_deref(), prefix).await {
                Ok(()) => return,
                Err(error) => {
                    tracing::debug!(%error, "deleting our latch node failed; retrying");
                    let runtime = self.connection.runtime();
                    runtime
                        .sleep_until(runtime.now().plus(self.options.retry))
                        .await;
                }
            }
        }
    }

    async fn try_delete_ours(
        &self,
        handle: &SessionHandle<B>,
        node: Option<&str>,
        prefix: &str,
    ) -> Result<(), CoordError> {
        let mut ours: Vec<String> = node.map(str::to_owned).into_iter().collect();
        for name in owned_with_prefix(self, handle, prefix).await? {
            if !ours.contains(&name) {
                ours.push(name);
            }
        }
        for name in ours {
            match handle.delete(&self.path(&name), None).await {
                Ok(()) | Err(CoordError::NoNode(_)) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }
}

/// The latch nodes named with `prefix` that `handle`'s session owns, lowest
/// sequence first (a node of an older session of ours may share the prefix).
async fn owned_with_prefix<B: Backend>(
    with: &Perform<B>,
    handle: &SessionHandle<B>,
    prefix: &str,
) -> Result<Vec<String>, CoordError> {
    let mut owned = Vec::new();
    let names = match handle.children(&with.options.latch_path).await {
        Err(CoordError::NoNode(_)) => Vec::new(),
        other => other?,
    };
    for name in super::naming::sorted_latch_nodes(&names) {
        if !name.starts_with(prefix) {
            continue;
        }
        if let (Some((_, stat)), _) = handle.get(&with.path(&name), false).await?
            && stat.ephemeral_owner == handle.id().0
        {
            owned.push(name);
        }
    }
    Ok(owned)
}

/// Starts one command; its answer arrives later as an input.
pub(super) fn perform<B: Backend>(with: &Perform<B>, command: LatchCommand) {
    let with = with.clone();
    tokio::spawn(async move {
        let (op, answer) = match command {
            LatchCommand::Create {
                op,
                session,
                prefix,
            } => (op, create(&with, op, session, &prefix).await),
            LatchCommand::Find {
                op,
                session,
                prefix,
            } => (op, find(&with, op, session, &prefix).await),
            LatchCommand::List { op, session } => (op, list(&with, op, session).await),
            LatchCommand::Watch { op, session, node } => {
                (op, watch(&with, op, session, &node).await)
            }
            LatchCommand::ReadOwner { op, session, node } => {
                (op, owner(&with, op, session, &node).await)
            }
            LatchCommand::Publish { op, session, node } => {
                (op, publish(&with, op, session, &node).await)
            }
            LatchCommand::RetryAfter { op, after } => {
                let at = with.connection.runtime().now().plus(after);
                with.connection.runtime().sleep_until(at).await;
                (op, Ok(LatchInput::Retry(op)))
            }
            LatchCommand::Delete { .. }
            | LatchCommand::Granted { .. }
            | LatchCommand::Revoked { .. } => return,
        };
        let input = answer.unwrap_or_else(|error| LatchInput::Failed(op, error));
        let _ = with.inputs.send(input);
    });
}

type Answer = Result<LatchInput, CoordError>;

async fn create<B: Backend>(
    with: &Perform<B>,
    op: OpId,
    session: SessionId,
    prefix: &str,
) -> Answer {
    let gate = with.gate.read().await;
    if *gate {
        return Err(CoordError::Closed); // leaving: no new node
    }
    let handle = with.session(session)?;
    let data = with.options.contender.0.as_bytes();
    let (path, _) = handle
        .create(
            &with.path(prefix),
            data,
            CreateMode::EphemeralSequential,
            true,
        )
        .await?;
    Ok(LatchInput::Created(op, last_segment(&path)))
}

async fn find<B: Backend>(with: &Perform<B>, op: OpId, session: SessionId, prefix: &str) -> Answer {
    let handle = with.session(session)?;
    let found = owned_with_prefix(with, &handle, prefix)
        .await?
        .into_iter()
        .next();
    Ok(LatchInput::Found(op, found))
}

async fn list<B: Backend>(with: &Perform<B>, op: OpId, session: SessionId) -> Answer {
    Ok(LatchInput::Children(op, children(with, session).await?))
}

async fn children<B: Backend>(
    with: &Perform<B>,
    session: SessionId,
) -> Result<Vec<String>, CoordError> {
    match with
        .session(session)?
        .children(&with.options.latch_path)
        .await
    {
        Err(CoordError::NoNode(_)) => Ok(Vec::new()),
        other => other,
    }
}

async fn watch<B: Backend>(with: &Perform<B>, op: OpId, session: SessionId, node: &str) -> Answer {
    let handle = with.session(session)?;
    let (found, watch) = handle.get(&with.path(node), true).await?;
    if found.is_some()
        && let Some(watch) = watch
    {
        match watch.await {
            Ok(NodeEvent::Deleted | NodeEvent::Created | NodeEvent::DataChanged) => {}
            Err(_) => return Err(CoordError::SessionExpired),
        }
    }
    Ok(LatchInput::PredecessorGone(op))
}

async fn owner<B: Backend>(with: &Perform<B>, op: OpId, session: SessionId, node: &str) -> Answer {
    let (found, _) = with.session(session)?.get(&with.path(node), false).await?;
    let owner = found.map(|(_, stat)| SessionId(stat.ephemeral_owner));
    Ok(LatchInput::Owner(op, owner))
}

/// Publishes `connection_info` in one multi-op that also checks our latch
/// node exists, so a deposed leader's write fails. The created node's
/// `czxid` — the multi's own transaction id — is the epoch.
async fn publish<B: Backend>(
    with: &Perform<B>,
    op: OpId,
    session: SessionId,
    node: &str,
) -> Answer {
    let handle = with.session(session)?;
    let info_path = with.options.connection_info_path.clone();
    let record = LeaderRecord {
        address: with.options.address.clone(),
        session,
        contender: with.options.contender.clone(),
    };
    let grant_path = with.options.grant_path.clone();
    let mut last_error = CoordError::Other("publishing connection_info never ran".into());
    for _ in 0..PUBLISH_ATTEMPTS {
        let (existing, _) = handle.get(&info_path, false).await?;
        let (grant, _) = handle.get(&grant_path, false).await?;
        let mut ops = vec![Op::Check {
            path: with.path(node),
            version: None,
        }];
        if let Some((_, stat)) = existing {
            ops.push(Op::Delete {
                path: info_path.clone(),
                version: Some(stat.version),
            });
        }
        ops.push(Op::Create {
            path: info_path.clone(),
            data: record.encode(),
            mode: CreateMode::Ephemeral,
        });
        ops.push(match grant {
            Some((_, stat)) => Op::SetData {
                path: grant_path.clone(),
                data: record.encode(),
                version: Some(stat.version),
            },
            None => Op::Create {
                path: grant_path.clone(),
                data: record.encode(),
                mode: CreateMode::Persistent,
            },
        });
        match handle.multi(ops).await {
            Ok(results) => {
                let epoch = results.iter().find_map(|result| match result {
                    OpResult::Created { path, stat } if *path == info_path && stat.czxid > 0 => {
                        Some(stat.czxid)
                    }
                    _ => None,
                });
                let version = match results.last() {
                    Some(OpResult::Set { stat }) => Some(stat.version),
                    Some(OpResult::Created { .. }) => Some(0),
                    _ => None,
                };
                return match (epoch, version) {
                    (Some(epoch), Some(version)) => {
                        let epoch = Epoch(epoch);
                        lock(&with.shared).grant_version = Some((epoch, version));
                        Ok(LatchInput::Published(op, epoch))
                    }
                    _ => Err(CoordError::Other(format!(
                        "publishing connection_info returned {results:?}"
                    ))),
                };
            }
            // Someone changed connection_info or the grant node between our
            // reads and the write: read again. A failed check on our own
            // node is final.
            Err(CoordError::MultiFailed { index, source }) if index > 0 => {
                last_error = CoordError::MultiFailed { index, source };
            }
            Err(error) => return Err(error),
        }
    }
    Err(last_error)
}

fn last_segment(path: &str) -> String {
    path.rsplit('/').next().unwrap_or(path).to_owned()
}

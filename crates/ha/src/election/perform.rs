//! Performs the latch's I/O commands through the connection and feeds the
//! answers back as [`LatchInput`]s.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

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
}

impl<B: Backend> Clone for Perform<B> {
    fn clone(&self) -> Self {
        Perform {
            connection: self.connection.clone(),
            options: self.options.clone(),
            inputs: self.inputs.clone(),
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

    pub(super) async fn delete(&self, session: SessionId, node: &str) {
        let Ok(handle) = self.session(session) else {
            return;
        };
        let path = self.path(node);
        match tokio::time::timeout(DELETE_TIMEOUT, handle.delete(&path, None)).await {
            Ok(Ok(())) | Ok(Err(CoordError::NoNode(_))) => {}
            Ok(Err(error)) => {
                tracing::warn!(%path, %error, "could not delete our latch node; it goes when the session ends")
            }
            Err(_) => {
                tracing::warn!(%path, "deleting our latch node timed out; it goes when the session ends")
            }
        }
    }
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
    let children = children(with, session).await?;
    Ok(LatchInput::Found(
        op,
        children.into_iter().find(|name| name.starts_with(prefix)),
    ))
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
    if found.is_some() {
        if let Some(watch) = watch {
            match watch.await {
                Ok(NodeEvent::Deleted | NodeEvent::Created | NodeEvent::DataChanged) => {}
                Err(_) => return Err(CoordError::SessionExpired),
            }
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
    let mut last_error = CoordError::Other("publishing connection_info never ran".into());
    for _ in 0..PUBLISH_ATTEMPTS {
        let (existing, _) = handle.get(&info_path, false).await?;
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
        match handle.multi(ops).await {
            Ok(results) => {
                return match results.last() {
                    Some(OpResult::Created { stat, .. }) if stat.czxid > 0 => {
                        Ok(LatchInput::Published(op, Epoch(stat.czxid)))
                    }
                    other => Err(CoordError::Other(format!(
                        "publishing connection_info returned {other:?}"
                    ))),
                };
            }
            // Someone changed connection_info between our read and write:
            // read again. A failed check on our own node is final.
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

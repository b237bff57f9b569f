//! Conditional multi-ops: every op or none, and the index of the first one
//! that failed.
//!
//! A check without a version is sent with version -1, which ZooKeeper reads
//! as "exists, at any version" (the server skips the version comparison for
//! -1 but still fails with `NoNode`); `zookeeper-client` passes the number
//! through unchanged.

use holdfast_ha::backend::{CoordError, CreateMode, Op, OpResult};
use zookeeper_client::{MultiWriteError, MultiWriteResult};

use crate::nodes::{created_stat, zk_mode};
use crate::session::{ZkSession, stat};

/// The version ZooKeeper reads as "any version".
const ANY_VERSION: i32 = -1;

/// The path an op works on.
fn op_path(op: &Op) -> &str {
    match op {
        Op::Check { path, .. }
        | Op::Create { path, .. }
        | Op::SetData { path, .. }
        | Op::Delete { path, .. } => path,
    }
}

pub(crate) async fn multi(session: &ZkSession, ops: &[Op]) -> Result<Vec<OpResult>, CoordError> {
    let client = session.client()?;
    let mut writer = client.new_multi_writer();
    for (index, op) in ops.iter().enumerate() {
        let added = match op {
            Op::Check { path, version } => {
                writer.add_check_version(path, version.unwrap_or(ANY_VERSION))
            }
            Op::Create { path, data, mode } => {
                writer.add_create(path, data, &zk_mode(*mode).with_acls(session.acls))
            }
            Op::SetData {
                path,
                data,
                version,
            } => writer.add_set_data(path, data, *version),
            Op::Delete { path, version } => writer.add_delete(path, *version),
        };
        // Only a malformed path fails here, before anything is sent.
        added.map_err(|error| CoordError::MultiFailed {
            index,
            source: Box::new(CoordError::Other(format!("{}: {error}", op_path(op)))),
        })?;
    }
    let results = match writer.commit().await {
        Ok(results) => results,
        Err(MultiWriteError::OperationFailed { index, source }) => {
            let path = ops.get(index).map_or("", op_path);
            let source = Box::new(ZkSession::error(&client, source, path));
            return Err(CoordError::MultiFailed { index, source });
        }
        Err(MultiWriteError::RequestFailed { source }) => {
            return Err(ZkSession::error(&client, source, "multi"));
        }
    };
    if results.len() != ops.len() {
        return Err(CoordError::Other(format!(
            "a multi of {} ops returned {} results",
            ops.len(),
            results.len()
        )));
    }
    let mut answers = Vec::with_capacity(results.len());
    for (op, result) in ops.iter().zip(results) {
        answers.push(match result {
            MultiWriteResult::Check => OpResult::Checked,
            MultiWriteResult::Delete => OpResult::Deleted,
            MultiWriteResult::SetData { stat: set } => OpResult::Set { stat: stat(&set) },
            MultiWriteResult::Create {
                path,
                stat: created,
            } => {
                let mode = match op {
                    Op::Create { mode, .. } => *mode,
                    _ => CreateMode::Persistent,
                };
                let stat = created_stat(&client, &path, mode, &created).await?;
                OpResult::Created { path, stat }
            }
            other => {
                return Err(CoordError::Other(format!(
                    "unexpected multi result {other:?}"
                )));
            }
        });
    }
    Ok(answers)
}

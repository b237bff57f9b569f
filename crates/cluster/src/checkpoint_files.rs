//! Where checkpoint files go in the checkpoint storage:
//!
//! ```text
//! <execution.checkpointing.dir>/<job>/chk-<id>/<vertex>-<subtask>-<attempt>.state   one per attempt with state (TaskManagers write them)
//! <execution.checkpointing.dir>/<job>/chk-<id>/<attempt tag>-<id>-<operator>[-<n>].run   a full snapshot's runs (a disk-backed state), the checkpoint's own
//! <execution.checkpointing.dir>/<job>/chk-<id>/_metadata                            JSON, written last by the leader; the HA pointer names it
//! <execution.checkpointing.dir>/<job>/shared/<attempt>/<id>-<operator>.run             incremental checkpoints' runs, reused by later checkpoints
//! ```
//!
//! The metadata's content and its rules are the recovery core's
//! ([`holdfast_runtime::recovery::Metadata`]); these are the storage paths.

use holdfast_runtime::ids::{ExecutionAttemptId, JobId};
use holdfast_runtime::recovery::checkpoint_dir_name;
use holdfast_storage::{BadPath, StoragePath};
use holdfast_types::CheckpointId;

/// `<job>/chk-<id>`.
pub(crate) fn checkpoint_dir(job: JobId, id: CheckpointId) -> Result<StoragePath, BadPath> {
    StoragePath::root()
        .child(&job.to_string())?
        .child(&checkpoint_dir_name(id))
}

/// `<job>/chk-<id>/_metadata`.
pub(crate) fn metadata_path(job: JobId, id: CheckpointId) -> Result<StoragePath, BadPath> {
    checkpoint_dir(job, id)?.child("_metadata")
}

/// `<job>/chk-<id>/<vertex>-<subtask>-<attempt>.state`: where a
/// TaskManager writes an attempt's state.
pub(crate) fn state_path(
    job: JobId,
    id: CheckpointId,
    attempt: ExecutionAttemptId,
) -> Result<StoragePath, BadPath> {
    checkpoint_dir(job, id)?.child(&format!(
        "{}-{}-{}.state",
        attempt.task.vertex, attempt.task.subtask, attempt.attempt
    ))
}

/// `<dir of state>/<name>`: one of a snapshot's own files, beside its
/// state file `state` (`name` as the task named it: one path segment
/// ending in `.run`, so that it can be neither the state file nor the
/// metadata).
pub(crate) fn own_path(state: &StoragePath, name: &str) -> Result<StoragePath, BadPath> {
    check_own_name(name)?;
    let dir = state.parent().ok_or_else(|| BadPath {
        path: state.as_str().chars().take(200).collect(),
        reason: "a state file is in a directory",
    })?;
    dir.child(name)
}

/// Refuses an own file's name that is not one path segment ending in
/// `.run`.
pub(crate) fn check_own_name(name: &str) -> Result<(), BadPath> {
    if !holdfast_runtime::recovery::is_own_file_name(name) {
        return Err(BadPath {
            path: name.chars().take(200).collect(),
            reason: "a snapshot's own file is named `<name>.run`, beside its state file",
        });
    }
    Ok(())
}

/// `<job>/<name>`: a shared file of an incremental checkpoint (`name` as
/// the task named it, `shared/…`).
pub(crate) fn shared_path(job: JobId, name: &str) -> Result<StoragePath, BadPath> {
    if !name.starts_with("shared/") {
        return Err(BadPath {
            path: name.chars().take(200).collect(),
            reason: "a shared file's name starts with `shared/`",
        });
    }
    StoragePath::root().child(&job.to_string())?.join(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_the_job_the_checkpoint_and_the_attempt() {
        let job = JobId::from_u128(7);
        let attempt = ExecutionAttemptId::new(holdfast_runtime::ids::TaskId::new(1, 2), 3);
        let state = state_path(job, CheckpointId(5), attempt).unwrap();
        assert_eq!(state.as_str(), format!("{job}/chk-5/1-2-3.state"));
        let metadata = metadata_path(job, CheckpointId(5)).unwrap();
        assert_eq!(metadata.as_str(), format!("{job}/chk-5/_metadata"));
        let shared = shared_path(job, "shared/1-2-3/5-sum.run").unwrap();
        assert_eq!(shared.as_str(), format!("{job}/shared/1-2-3/5-sum.run"));
        for outside in ["chk-5/_metadata", "shared/../../x", "/shared/x", "shared"] {
            assert!(shared_path(job, outside).is_err(), "{outside}");
        }
        let own = own_path(&state, "t-5-sum.run").unwrap();
        assert_eq!(own.as_str(), format!("{job}/chk-5/t-5-sum.run"));
        for bad in [
            "_metadata",
            "1-2-3.state",
            ".run",
            "../chk-4/x.run",
            "a/b.run",
            "..\\x.run",
            "",
        ] {
            assert!(own_path(&state, bad).is_err(), "{bad}");
        }
    }
}

//! Where a restore finds the files beside a state file, on a real S3
//! server (SeaweedFS from the test kit): a span of a shared file fetched a
//! piece at a time, a snapshot's own file beside its state file (in a
//! checkpoint's directory and in a savepoint's), a local copy read in
//! place, and names that would leave their directory refused.

use std::io::Read;
use std::sync::Arc;

use holdfast_executor::{PartFile, StateSource, StoredState};
use holdfast_runtime::ids::{ExecutionAttemptId, JobId, TaskId};
use holdfast_storage::{CheckpointStorage, StoragePath};
use holdfast_testkit::S3Server;
use holdfast_types::CheckpointId;

use super::{FETCH_PIECE, Storages};
use crate::checkpoint_files::{own_path, shared_path, state_path};
use crate::taskmanager::local_state::LocalState;

fn bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8 ^ seed).collect()
}

fn stored(source: StateSource) -> Arc<dyn StoredState> {
    match source {
        StateSource::Stored(file) => file,
        other => panic!("not a stored state file: {other:?}"),
    }
}

/// `range` of `file` as a local span, read back: (its bytes, staged).
fn span(
    file: &Arc<dyn StoredState>,
    part: PartFile<'_>,
    range: std::ops::Range<u64>,
    staging: &std::path::Path,
) -> Result<(Vec<u8>, bool), String> {
    let span = file.local_span(part, range.clone(), staging)?;
    let mut read = Vec::new();
    let mut local = std::fs::File::open(span.path()).map_err(|e| e.to_string())?;
    local.read_to_end(&mut read).map_err(|e| e.to_string())?;
    let from = (range.start - span.starts_at()) as usize;
    let wanted = read
        .get(from..from + (range.end - range.start) as usize)
        .ok_or("the span is short")?
        .to_vec();
    Ok((wanted, span.is_staged()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_beside_a_state_file_are_fetched_whole_from_where_it_is() {
    let server = S3Server::start().unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap();
    let local = Arc::new(LocalState::open(dir.path().join("local").join("tm-1"), false).unwrap());
    let storages = Storages::new(server.options(), Some(Arc::clone(&local)));
    let job = JobId::from_u128(5);
    let root = format!("s3://{}/checkpoints", server.bucket());
    let storage = storages.open(job, &root).unwrap();

    // A shared run of a little over two pieces, and a snapshot's own run
    // beside its state file.
    let attempt = ExecutionAttemptId::new(TaskId::new(1, 0), 0);
    let state = state_path(job, CheckpointId(2), attempt).unwrap();
    let shared = shared_path(job, "shared/t/1-sum.run").unwrap();
    let own = own_path(&state, "t-2-sum.run").unwrap();
    let shared_bytes = bytes(2 * FETCH_PIECE as usize + 123, 0);
    let own_bytes = bytes(70_000, 7);
    storage.put(&state, b"state".to_vec().into()).await.unwrap();
    storage
        .put(&shared, shared_bytes.clone().into())
        .await
        .unwrap();
    storage.put(&own, own_bytes.clone().into()).await.unwrap();
    // The same files as a savepoint of their own elsewhere in the bucket.
    let savepoint: StoragePath = "savepoints/sp-2".parse().unwrap();
    let opened = storages
        .open(JobId::from_u128(6), &format!("s3://{}", server.bucket()))
        .unwrap();
    let sp_state = savepoint.child("1-0-0.state").unwrap();
    opened
        .put(&sp_state, b"state".to_vec().into())
        .await
        .unwrap();
    opened
        .put(
            &savepoint.child("t-2-sum.run").unwrap(),
            own_bytes.clone().into(),
        )
        .await
        .unwrap();

    let in_checkpoint = stored(storages.state_file(&storage, state.as_str()).unwrap());
    let in_savepoint = stored(
        storages
            .state_file(&storage, &format!("s3://{}/{sp_state}", server.bucket()))
            .unwrap(),
    );
    let staging = dir.path().join("staging");
    let (local, shared_len) = (Arc::clone(&local), shared_bytes.len() as u64);
    tokio::task::spawn_blocking(move || {
        // Fetched a piece at a time into a file of its own, whole.
        let range = 5..shared_len - 3;
        let (read, staged) = span(
            &in_checkpoint,
            PartFile::Shared("shared/t/1-sum.run"),
            range.clone(),
            &staging,
        )
        .unwrap();
        assert!(staged, "fetched into the staging directory");
        assert!(
            read == shared_bytes[range.start as usize..range.end as usize],
            "the span of {} bytes is the file's",
            range.end - range.start
        );
        // Own files beside the state file: a checkpoint's, a savepoint's.
        for file in [&in_checkpoint, &in_savepoint] {
            let (read, _) = span(file, PartFile::Own("t-2-sum.run"), 0..70_000, &staging).unwrap();
            assert!(read == own_bytes, "{}", file.location());
            assert_eq!(
                file.read_range(PartFile::Own("t-2-sum.run"), 10..20)
                    .unwrap(),
                own_bytes[10..20]
            );
        }
        // A local copy is read in place (not staged).
        local.put(&own, &own_bytes).unwrap();
        let (read, staged) = span(
            &in_checkpoint,
            PartFile::Own("t-2-sum.run"),
            0..70_000,
            &staging,
        )
        .unwrap();
        assert!(!staged && read == own_bytes, "the local copy, in place");
        // Names that would leave the state file's directory, or name it.
        for bad in ["../chk-1/t.run", "a/b.run", "1-0-0.state", "_metadata"] {
            let refused = in_checkpoint
                .local_span(PartFile::Own(bad), 0..1, &staging)
                .unwrap_err();
            assert!(refused.contains(bad), "{bad}: {refused}");
        }
        let missing = in_savepoint
            .local_span(PartFile::Own("none.run"), 0..1, &staging)
            .unwrap_err();
        assert!(missing.contains("none.run"), "{missing}");
        assert!(
            std::fs::read_dir(&staging).unwrap().next().is_none(),
            "every staged span was deleted when dropped"
        );
    })
    .await
    .unwrap();
}

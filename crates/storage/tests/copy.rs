//! `Storage::copy_to`: a file copied from one storage to another — inside
//! one bucket of a real S3 server (SeaweedFS from the test kit) by the
//! store itself, from a local directory through `put_file` (to a local
//! directory and, in parts, to a bucket), from a bucket to elsewhere by
//! reading and writing — arrives whole; a missing source is a typed
//! not-found.

use bytes::Bytes;
use holdfast_storage::{CheckpointStorage, Opener, StorageError, StoragePath};
use holdfast_testkit::S3Server;

fn path(text: &str) -> StoragePath {
    text.parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_arrive_whole_within_a_bucket_and_across_storages() {
    let server = S3Server::start().unwrap_or_else(|e| panic!("{e}"));
    let local = tempfile::tempdir().unwrap();
    let opener = Opener::new(server.options());
    let open = |text: String| opener.open(&text.parse().unwrap()).unwrap();
    let checkpoints = open(format!("s3://{}/checkpoints", server.bucket()));
    let savepoint = open(format!("s3://{}/savepoints/sp-1", server.bucket()));
    let on_disk = open(local.path().join("sp-2").display().to_string());

    let state = path("job/chk-3/0-0-0.state");
    let bytes = Bytes::from((0..200_000u32).map(|i| (i % 251) as u8).collect::<Vec<_>>());
    checkpoints.put(&state, bytes.clone()).await.unwrap();

    // Within the bucket (the store copies), then out of it and back in.
    checkpoints
        .copy_to(&state, &savepoint, &path("0-0-0.state"))
        .await
        .unwrap();
    assert_eq!(savepoint.get(&path("0-0-0.state")).await.unwrap(), bytes);
    savepoint
        .copy_to(&path("0-0-0.state"), &on_disk, &path("0-0-0.state"))
        .await
        .unwrap();
    assert_eq!(on_disk.get(&path("0-0-0.state")).await.unwrap(), bytes);
    on_disk
        .copy_to(&path("0-0-0.state"), &checkpoints, &path("back.state"))
        .await
        .unwrap();
    assert_eq!(checkpoints.get(&path("back.state")).await.unwrap(), bytes);
    // Local to local, larger than a piece (the kernel copies it).
    let big = Bytes::from(
        (0..(12u32 << 20))
            .map(|i| (i % 253) as u8)
            .collect::<Vec<_>>(),
    );
    let other_disk = open(local.path().join("sp-3").display().to_string());
    on_disk.put(&path("big.run"), big.clone()).await.unwrap();
    on_disk
        .copy_to(&path("big.run"), &other_disk, &path("big.run"))
        .await
        .unwrap();
    assert_eq!(other_disk.get(&path("big.run")).await.unwrap(), big);
    // Local to a bucket, in parts.
    on_disk
        .copy_to(&path("big.run"), &savepoint, &path("big.run"))
        .await
        .unwrap();
    assert_eq!(savepoint.get(&path("big.run")).await.unwrap(), big);

    for (source, target) in [(&checkpoints, &savepoint), (&on_disk, &checkpoints)] {
        let error = source
            .copy_to(&path("none.state"), target, &path("x.state"))
            .await
            .unwrap_err();
        assert!(matches!(error, StorageError::NotFound { .. }), "{error}");
    }
}

//! `LocalStorage` against a real directory: writes are durable and read
//! back, listing and deleting are by prefix and idempotent, bad places and
//! missing files are named.

use bytes::Bytes;
use holdfast_storage::{CheckpointStorage, LocalStorage, StorageError, StoragePath};

fn path(text: &str) -> StoragePath {
    text.parse().expect("a valid path")
}

#[tokio::test]
async fn files_are_written_read_listed_and_deleted_by_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let storage = LocalStorage::new(dir.path().join("checkpoints")).unwrap();
    let files = [
        "job-1/chk-1/_metadata",
        "job-1/chk-1/0-0-0.state",
        "job-1/chk-2/_metadata",
        "job-2/chk-1/_metadata",
    ];
    for (i, file) in files.iter().enumerate() {
        storage
            .put(&path(file), Bytes::from(format!("state {i}")))
            .await
            .unwrap();
    }
    // On disk where the layout says, with no temporary files left, and
    // where `local_path` says.
    let state = path("job-1/chk-1/0-0-0.state");
    assert_eq!(
        storage.local_path(&state),
        storage.root().join("job-1/chk-1/0-0-0.state")
    );
    let on_disk = std::fs::read(storage.local_path(&state)).unwrap();
    assert_eq!(on_disk, b"state 1");
    let names: Vec<_> = std::fs::read_dir(storage.local_path(&path("job-1/chk-1")))
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert_eq!(
        storage.get(&path("job-1/chk-2/_metadata")).await.unwrap(),
        Bytes::from("state 2")
    );
    // A put replaces.
    storage
        .put(&path("job-1/chk-2/_metadata"), Bytes::from("again"))
        .await
        .unwrap();
    assert_eq!(
        storage.get(&path("job-1/chk-2/_metadata")).await.unwrap(),
        Bytes::from("again")
    );
    assert_eq!(
        storage.list(&path("job-1")).await.unwrap(),
        [
            path("job-1/chk-1/0-0-0.state"),
            path("job-1/chk-1/_metadata"),
            path("job-1/chk-2/_metadata"),
        ]
    );
    assert_eq!(storage.list(&StoragePath::root()).await.unwrap().len(), 4);

    storage.delete_all(&path("job-1/chk-1")).await.unwrap();
    assert_eq!(
        storage.list(&path("job-1")).await.unwrap(),
        [path("job-1/chk-2/_metadata")]
    );
    assert!(
        !storage.root().join("job-1/chk-1").exists(),
        "empty directories go too"
    );
    // Deleting again, or what never was, is no error.
    storage.delete_all(&path("job-1/chk-1")).await.unwrap();
    storage.delete_all(&path("job-9")).await.unwrap();
    assert_eq!(storage.list(&path("job-2")).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_missing_file_and_an_unusable_directory_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let storage = LocalStorage::new(dir.path()).unwrap();
    let error = storage
        .get(&path("job-1/chk-7/_metadata"))
        .await
        .unwrap_err();
    assert!(matches!(error, StorageError::NotFound { .. }), "{error}");
    assert!(
        error.to_string().contains("job-1/chk-7/_metadata"),
        "{error}"
    );

    // A root below a regular file cannot be made (even as root).
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let error = LocalStorage::new(file.join("checkpoints")).unwrap_err();
    assert!(matches!(error, StorageError::Root { .. }), "{error}");
    assert!(error.to_string().contains("a-file"), "{error}");

    // A file where a directory must go: the write fails naming the path.
    storage.put(&path("job-1"), Bytes::from("x")).await.unwrap();
    let error = storage
        .put(&path("job-1/chk-1/_metadata"), Bytes::from("y"))
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("writing job-1/chk-1/_metadata"),
        "{error}"
    );
    // The root itself is no file.
    assert!(
        storage
            .put(&StoragePath::root(), Bytes::new())
            .await
            .is_err()
    );
}

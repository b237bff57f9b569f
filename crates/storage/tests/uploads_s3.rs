//! `S3Storage`'s multipart uploads held open (what the exactly-once file
//! sink writes through) on a real S3 server (SeaweedFS from the test kit).

use bytes::Bytes;
use holdfast_storage::{CheckpointStorage, S3Bucket, S3Storage, StoragePath};
use holdfast_testkit::S3Server;

fn storage(server: &S3Server, prefix: &str) -> S3Storage {
    let bucket = S3Bucket::connect(server.bucket(), &server.options()).unwrap();
    S3Storage::new(bucket, prefix)
}

fn path(text: &str) -> StoragePath {
    text.parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_is_invisible_until_completed_and_completing_twice_is_fine() {
    let server = S3Server::start().unwrap_or_else(|e| panic!("{e}"));
    let storage = storage(&server, "out");
    let file = path("part-0-w-0");
    let id = storage.start_upload(&file).await.unwrap();
    let first = Bytes::from(vec![b'a'; 5 * 1024 * 1024]);
    let tags = vec![
        storage
            .upload_part(&file, &id, 0, first.clone())
            .await
            .unwrap(),
        storage
            .upload_part(&file, &id, 1, Bytes::from("tail\n"))
            .await
            .unwrap(),
    ];
    // Open: listed, no object yet.
    let open = storage.open_uploads("part-0-").await.unwrap();
    assert_eq!(open.len(), 1, "{open:?}");
    assert_eq!(
        (open[0].path.clone(), open[0].id.clone()),
        (file.clone(), id.clone())
    );
    assert!(storage.get(&file).await.unwrap_err().is_not_found());
    assert!(storage.list(&StoragePath::root()).await.unwrap().is_empty());

    storage.complete_upload(&file, &id, &tags).await.unwrap();
    let whole = storage.get(&file).await.unwrap();
    assert_eq!(whole.len(), first.len() + 5);
    assert!(whole.ends_with(b"tail\n"));
    assert!(storage.open_uploads("").await.unwrap().is_empty());
    // A commit repeated after a restore.
    storage.complete_upload(&file, &id, &tags).await.unwrap();
    assert_eq!(storage.get(&file).await.unwrap(), whole);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aborted_uploads_leave_nothing_and_listing_is_by_name_prefix() {
    let server = S3Server::start().unwrap_or_else(|e| panic!("{e}"));
    let storage = storage(&server, "jobs/out");
    let other = self::storage(&server, "jobs/elsewhere");
    let mut started = Vec::new();
    for name in ["part-1-a-0", "part-1-a-1", "part-10-b-0", "part-2-c-0"] {
        let file = path(name);
        let id = storage.start_upload(&file).await.unwrap();
        storage
            .upload_part(&file, &id, 0, Bytes::from(name))
            .await
            .unwrap();
        started.push((file, id));
    }
    other.start_upload(&path("part-1-z-0")).await.unwrap();
    let mut names: Vec<String> = storage
        .open_uploads("part-1-")
        .await
        .unwrap()
        .into_iter()
        .map(|u| u.path.as_str().to_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["part-1-a-0", "part-1-a-1"]);
    assert_eq!(storage.open_uploads("").await.unwrap().len(), 4);

    for (file, id) in &started {
        storage.abort_upload(file, id).await.unwrap();
    }
    assert!(storage.open_uploads("").await.unwrap().is_empty());
    assert_eq!(other.open_uploads("").await.unwrap().len(), 1);
    // Aborting again, and completing an aborted upload.
    let (file, id) = &started[0];
    storage.abort_upload(file, id).await.unwrap();
    let error = storage
        .complete_upload(file, id, &["x".into()])
        .await
        .unwrap_err();
    assert!(error.to_string().contains("part-1-a-0"), "{error}");
    assert!(storage.list(&StoragePath::root()).await.unwrap().is_empty());
}

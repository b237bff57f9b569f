//! What an S3 store that refuses or fails does to `S3Storage`, on a real S3
//! server (SeaweedFS from the test kit): wrong credentials and a missing
//! bucket fail at once, naming the bucket, the key and the server's
//! reason; throttling (`503 SlowDown`) is retried until it passes; an
//! unreachable server fails within the retry deadline, naming what was
//! written; a file's upload that fails partway is aborted, leaving neither
//! an object nor an open upload.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use holdfast_storage::{CheckpointStorage, S3Bucket, S3Options, S3Storage, Secret, StoragePath};
use holdfast_testkit::S3Server;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The server's options, with requests sent to `endpoint`.
fn options(server: &S3Server, endpoint: String) -> S3Options {
    S3Options {
        endpoint: Some(endpoint),
        ..server.options()
    }
}

fn storage(bucket: &str, options: &S3Options) -> S3Storage {
    S3Storage::new(S3Bucket::connect(bucket, options).unwrap(), "checkpoints")
}

fn file() -> StoragePath {
    "job/chk-1/0-0-0.state".parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_credentials_and_a_missing_bucket_fail_at_once_naming_bucket_key_and_reason() {
    let server = S3Server::start().unwrap_or_else(|e| panic!("{e}"));
    let mut wrong = options(&server, server.endpoint());
    wrong.secret_key = Some(Secret::new("not-the-secret"));
    let started = Instant::now();
    let error = storage(server.bucket(), &wrong)
        .put(&file(), Bytes::from("state"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "a refusal is not retried for long"
    );
    assert!(
        error.contains(server.bucket()) && error.contains("job/chk-1/0-0-0.state"),
        "{error}"
    );
    assert!(
        error.contains("403") || error.contains("Forbidden"),
        "{error}"
    );
    assert!(
        !error.contains(server.secret_key()) && !error.contains("not-the-secret"),
        "{error}"
    );

    let error = storage("no-such-bucket", &options(&server, server.endpoint()))
        .put(&file(), Bytes::from("state"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("no-such-bucket") && error.contains("NoSuchBucket"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttling_is_retried_until_the_store_takes_the_write() {
    let server = S3Server::start().unwrap_or_else(|e| panic!("{e}"));
    let front = SlowDown::start(server.addr(), 3).await;
    let storage = storage(server.bucket(), &options(&server, front.endpoint()));
    storage.put(&file(), Bytes::from("state")).await.unwrap();
    assert_eq!(
        front.refused(),
        3,
        "three 503 SlowDown answers, then the write"
    );
    assert_eq!(storage.get(&file()).await.unwrap(), Bytes::from("state"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_store_fails_within_the_retry_deadline() {
    let server = S3Server::start().unwrap_or_else(|e| panic!("{e}"));
    // A port nobody listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let mut options = options(&server, endpoint);
    options.retry_deadline = Duration::from_secs(2);
    let started = Instant::now();
    let error = storage(server.bucket(), &options)
        .put(&file(), Bytes::from("state"))
        .await
        .unwrap_err()
        .to_string();
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(500) && took < Duration::from_secs(10),
        "{took:?}"
    );
    assert!(
        error.contains("job/chk-1/0-0-0.state") && error.contains("retries"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_upload_failing_partway_is_aborted_and_leaves_nothing() {
    let server = S3Server::start().unwrap_or_else(|e| panic!("{e}"));
    let front = CutPart::start(server.addr(), b"partNumber=2").await;
    let mut through = options(&server, front.endpoint());
    through.retry_deadline = Duration::from_secs(2);
    let storage = storage(server.bucket(), &through);
    // Three parts: the first goes up, the second never does.
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("part.run");
    std::fs::write(&local, vec![7u8; 2 * holdfast_storage::s3::FILE_PART + 1]).unwrap();
    let at: StoragePath = "job/shared/x/0-sum.run".parse().unwrap();
    let error = storage.put_file(&at, &local).await.unwrap_err().to_string();
    assert!(error.contains("job/shared/x/0-sum.run"), "{error}");
    assert!(front.cut() > 0, "the second part was cut");
    // Neither an object nor an upload left to be billed.
    let direct = self::storage(server.bucket(), &server.options());
    assert!(direct.size(&at).await.unwrap_err().is_not_found());
    let open = direct.open_uploads("").await.unwrap();
    assert!(open.is_empty(), "uploads left open: {open:?}");
    // The same file goes up whole without the fault.
    assert_eq!(
        direct.put_file(&at, &local).await.unwrap(),
        2 * holdfast_storage::s3::FILE_PART as u64 + 1
    );
}

/// A TCP front that relays to the server, but drops any connection whose
/// client sends `needle` (a request for one part of an upload), every
/// time it is retried.
struct CutPart {
    addr: std::net::SocketAddr,
    cut: Arc<AtomicUsize>,
}

impl CutPart {
    async fn start(upstream: std::net::SocketAddr, needle: &'static [u8]) -> CutPart {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let cut = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&cut);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(upstream).await else {
                    continue;
                };
                let count = Arc::clone(&count);
                tokio::spawn(async move {
                    let (mut from_client, mut to_client) = client.into_split();
                    let (mut from_server, mut to_server) = server.into_split();
                    let back = tokio::spawn(async move {
                        let _ = tokio::io::copy(&mut from_server, &mut to_client).await;
                    });
                    let mut buf = vec![0u8; 64 * 1024];
                    loop {
                        let n = match from_client.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        if buf[..n].windows(needle.len()).any(|w| w == needle) {
                            count.fetch_add(1, Ordering::SeqCst);
                            break;
                        }
                        if to_server.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                    back.abort();
                });
            }
        });
        CutPart { addr, cut }
    }

    fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn cut(&self) -> usize {
        self.cut.load(Ordering::SeqCst)
    }
}

/// An HTTP front that answers the first `refuse` requests with S3's
/// `503 SlowDown` (closing the connection), then relays every new
/// connection to the server.
struct SlowDown {
    addr: std::net::SocketAddr,
    refused: Arc<AtomicUsize>,
}

impl SlowDown {
    async fn start(upstream: std::net::SocketAddr, refuse: usize) -> SlowDown {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let refused = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&refused);
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let count = Arc::clone(&count);
                tokio::spawn(async move {
                    if count.load(Ordering::SeqCst) < refuse {
                        // Read the request's head (a small PUT fits), answer 503.
                        let mut buf = vec![0u8; 64 * 1024];
                        let _ = client.read(&mut buf).await;
                        count.fetch_add(1, Ordering::SeqCst);
                        let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>";
                        let answer = format!(
                            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                            body.len()
                        );
                        let _ = client.write_all(answer.as_bytes()).await;
                        let _ = client.shutdown().await;
                        return;
                    }
                    if let Ok(mut server) = TcpStream::connect(upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
            }
        });
        SlowDown { addr, refused }
    }

    fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn refused(&self) -> usize {
        self.refused.load(Ordering::SeqCst)
    }
}

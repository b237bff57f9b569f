//! The storage conformance suite (`holdfast_storage::conformance`) against
//! `S3Storage` on a real S3 server (SeaweedFS, started by the test kit on
//! free ports; the test fails, saying how to install it, when it cannot
//! start). Every fixture is a fresh prefix of the server's bucket, every
//! `open` a new client (as a restarted process would make).

use holdfast_storage::conformance::Fixture;
use holdfast_storage::{S3Bucket, S3Storage};
use holdfast_testkit::S3Server;

struct S3Fixture {
    server: S3Server,
    prefix: String,
}

fn fixture() -> S3Fixture {
    let server = S3Server::start().unwrap_or_else(|error| panic!("{error}"));
    S3Fixture {
        server,
        prefix: "checkpoints/conformance".to_owned(),
    }
}

impl Fixture for S3Fixture {
    type Storage = S3Storage;

    async fn open(&self) -> S3Storage {
        let bucket = S3Bucket::connect(self.server.bucket(), &self.server.options())
            .unwrap_or_else(|error| panic!("opening the bucket: {error}"));
        S3Storage::new(bucket, &self.prefix)
    }
}

holdfast_storage::conformance_suite!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)],
    fixture()
);

//! The storage conformance suite (`holdfast_storage::conformance`) against
//! `LocalStorage`: every fixture is a fresh temporary directory, every
//! `open` a new `LocalStorage` on it (as a restarted process would make).

use holdfast_storage::LocalStorage;
use holdfast_storage::conformance::Fixture;

struct LocalFixture {
    dir: tempfile::TempDir,
}

fn fixture() -> LocalFixture {
    LocalFixture {
        dir: tempfile::tempdir().expect("a temporary directory"),
    }
}

impl Fixture for LocalFixture {
    type Storage = LocalStorage;

    async fn open(&self) -> LocalStorage {
        // Below the temporary directory, so `LocalStorage::new` makes it.
        let root = self.dir.path().join("checkpoints");
        LocalStorage::new(&root)
            .unwrap_or_else(|error| panic!("opening {}: {error}", root.display()))
    }
}

holdfast_storage::conformance_suite!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)],
    fixture()
);

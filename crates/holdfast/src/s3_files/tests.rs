//! [`S3Parts`]' transactions on a real S3 server (SeaweedFS from the test
//! kit): what becomes visible when, what a restore completes and aborts,
//! and that no upload is ever left open.

use std::sync::Arc;
use std::time::Duration;

use holdfast_dataflow::sink::RollingPolicy;
use holdfast_storage::{CheckpointStorage, S3Bucket, S3Storage, StorageError, StoragePath};
use holdfast_testkit::S3Server;

use super::parts::{OpenDir, PART_BYTES, S3Parts, S3PartsState};

struct Server {
    s3: S3Server,
    runtime: Arc<tokio::runtime::Runtime>,
}

impl OpenDir for Server {
    fn open(&self, location: &str) -> Result<S3Storage, StorageError> {
        let prefix = location
            .strip_prefix(&format!("s3://{}/", self.s3.bucket()))
            .unwrap_or_else(|| panic!("{location} is not in the test's bucket"));
        let options = self.s3.options();
        Ok(S3Storage::new(
            S3Bucket::connect(self.s3.bucket(), &options)?,
            prefix,
        ))
    }
}

impl Server {
    fn start() -> Server {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        Server {
            s3: S3Server::start().unwrap_or_else(|e| panic!("{e}")),
            runtime: Arc::new(runtime),
        }
    }

    fn dir(&self, name: &str) -> String {
        format!("s3://{}/{name}", self.s3.bucket())
    }

    fn parts(
        &self,
        dir: &str,
        subtask: u32,
        writer: &str,
        states: &[(u32, &S3PartsState)],
        others: &[u32],
        completed: Option<u64>,
    ) -> S3Parts {
        let _inside = self.runtime.enter();
        S3Parts::take_over(
            self,
            &self.dir(dir),
            Arc::clone(&self.runtime),
            subtask,
            writer,
            RollingPolicy::default(),
            states,
            others,
            completed,
        )
        .unwrap()
    }

    /// The committed objects of `dir` and their lines.
    fn committed(&self, dir: &str) -> Vec<(String, Vec<String>)> {
        let storage = self.open(&self.dir(dir)).unwrap();
        self.runtime.block_on(async {
            let mut out = Vec::new();
            for name in storage.list(&StoragePath::root()).await.unwrap() {
                let bytes = storage.get(&name).await.unwrap();
                let text = String::from_utf8(bytes.to_vec()).unwrap();
                out.push((
                    name.as_str().to_owned(),
                    text.lines().map(str::to_owned).collect(),
                ));
            }
            out
        })
    }

    fn open_uploads(&self) -> usize {
        let root = self.open(&self.dir("")).unwrap();
        self.runtime.block_on(root.open_uploads("")).unwrap().len()
    }
}

fn lines(parts: &mut S3Parts, from: u32, to: u32) {
    for i in from..to {
        parts
            .write(format!("line {i}").as_bytes(), Duration::ZERO)
            .unwrap();
    }
}

fn all_lines(committed: &[(String, Vec<String>)]) -> Vec<String> {
    let mut all: Vec<String> = committed.iter().flat_map(|(_, l)| l.clone()).collect();
    all.sort();
    all
}

fn expected(from: u32, to: u32) -> Vec<String> {
    let mut all: Vec<String> = (from..to).map(|i| format!("line {i}")).collect();
    all.sort();
    all
}

#[test]
fn a_part_file_appears_only_when_its_checkpoint_completes() {
    let server = Server::start();
    let mut parts = server.parts("out", 0, "a", &[], &[], None);
    lines(&mut parts, 0, 100);
    let state = parts.snapshot(1).unwrap();
    assert_eq!(state.pending[&1].len(), 1, "{state:?}");
    assert!(
        server.committed("out").is_empty(),
        "nothing visible before the commit"
    );
    assert_eq!(server.open_uploads(), 1);
    parts.commit(1).unwrap();
    let committed = server.committed("out");
    assert_eq!(committed.len(), 1);
    assert!(committed[0].0.starts_with("part-0-a-"), "{committed:?}");
    assert_eq!(all_lines(&committed), expected(0, 100));
    // A commit heard twice, and a snapshot with nothing new.
    parts.commit(1).unwrap();
    assert!(parts.snapshot(2).unwrap().pending.is_empty());
    parts.commit(2).unwrap();
    assert_eq!(server.committed("out").len(), 1);
    assert_eq!(server.open_uploads(), 0);
}

#[test]
fn a_restore_completes_the_restored_checkpoint_and_aborts_everything_after_it() {
    let server = Server::start();
    let mut crashed = server.parts("out", 0, "a", &[], &[], None);
    lines(&mut crashed, 0, 50);
    let restored = crashed.snapshot(1).unwrap();
    // Checkpoint 1 completes, but the crash comes before its commit; the
    // lines of checkpoint 2 (never completed) and an open part file too.
    lines(&mut crashed, 50, 80);
    crashed.snapshot(2).unwrap();
    lines(&mut crashed, 80, 90);
    crashed.close().unwrap();
    drop(crashed);
    assert_eq!(server.open_uploads(), 3);

    let mut again = server.parts("out", 0, "b", &[(0, &restored)], &[], Some(1));
    assert_eq!(
        server.open_uploads(),
        0,
        "what checkpoint 1 did not have is aborted"
    );
    assert_eq!(all_lines(&server.committed("out")), expected(0, 50));
    // The restored attempt writes the rest, exactly once in all.
    lines(&mut again, 50, 120);
    again.snapshot(3).unwrap();
    again.commit(3).unwrap();
    assert_eq!(all_lines(&server.committed("out")), expected(0, 120));
    // Restoring again from checkpoint 1 (completed before): harmless.
    server.parts("out", 0, "c", &[(0, &restored)], &[], Some(1));
    assert_eq!(all_lines(&server.committed("out")), expected(0, 120));
}

#[test]
fn large_part_files_go_up_in_parts_and_read_back_whole() {
    let server = Server::start();
    let mut parts = server.parts("big", 1, "a", &[], &[], None);
    let line = "x".repeat(1000);
    let count = (2 * PART_BYTES / 1001 + 10) as u32;
    for _ in 0..count {
        parts.write(line.as_bytes(), Duration::ZERO).unwrap();
    }
    let state = parts.snapshot(1).unwrap();
    assert!(
        state.pending[&1][0].parts.len() >= 3,
        "{:?}",
        state.pending[&1][0].parts.len()
    );
    parts.commit(1).unwrap();
    let committed = server.committed("big");
    assert_eq!(committed[0].1.len(), count as usize);
    assert!(committed[0].1.iter().all(|l| *l == line));
}

#[test]
fn a_rescaled_subtask_takes_over_its_old_subtasks_uploads_and_nobody_elses() {
    let server = Server::start();
    // Three old subtasks; checkpoint 1 completed, 2 did not.
    let mut states = Vec::new();
    for old in 0..3 {
        let mut parts = server.parts("out", old, "old", &[], &[], None);
        lines(&mut parts, old * 100, old * 100 + 10);
        states.push(parts.snapshot(1).unwrap());
        lines(&mut parts, old * 100 + 10, old * 100 + 20);
        parts.snapshot(2).unwrap();
    }
    assert_eq!(server.open_uploads(), 6);
    // New subtask 0 of 2 takes over old 0 and old 2 (2 wraps to 0).
    let _zero = server.parts(
        "out",
        0,
        "new",
        &[(0, &states[0]), (2, &states[2])],
        &[],
        Some(1),
    );
    assert_eq!(
        server.open_uploads(),
        2,
        "old subtask 1's uploads are new subtask 1's"
    );
    let _one = server.parts("out", 1, "new", &[(1, &states[1])], &[], Some(1));
    assert_eq!(server.open_uploads(), 0);
    let mut want: Vec<String> = [0u32, 100, 200]
        .iter()
        .flat_map(|base| (*base..base + 10).map(|i| format!("line {i}")))
        .collect();
    want.sort();
    assert_eq!(all_lines(&server.committed("out")), want);
}

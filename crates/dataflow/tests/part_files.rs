//! The exactly-once file sink's part files against a real directory:
//! nothing is visible before its checkpoint completes, commits are
//! idempotent, and a restore commits exactly what a completed checkpoint
//! had pending and drops everything else of the subtask.

use std::path::Path;
use std::time::Duration;

use holdfast_dataflow::sink::{PartFiles, RollingPolicy};

fn at(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// The visible (committed) files of `dir` and their lines, sorted.
fn visible(dir: &Path) -> (Vec<String>, Vec<String>) {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    let mut lines: Vec<String> = names
        .iter()
        .flat_map(|n| {
            std::fs::read_to_string(dir.join(n))
                .unwrap()
                .lines()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    lines.sort();
    (names, lines)
}

fn hidden(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    names.sort();
    names
}

fn write(files: &mut PartFiles, lines: std::ops::Range<u32>, now: Duration) {
    for i in lines {
        files.write(format!("line {i:03}").as_bytes(), now).unwrap();
    }
}

fn expected(lines: std::ops::Range<u32>) -> Vec<String> {
    lines.map(|i| format!("line {i:03}")).collect()
}

#[test]
fn output_is_visible_only_once_its_checkpoint_completes() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = PartFiles::new(dir.path(), 0, "a1", RollingPolicy::default()).unwrap();
    write(&mut files, 0..10, at(0));
    assert_eq!(visible(dir.path()).0.len(), 0);
    assert_eq!(hidden(dir.path()), [".part-0-a1-0.inprogress"]);
    let state = files.snapshot(1).unwrap();
    assert_eq!(state.pending[&1], [".part-0-a1-0.pending"]);
    assert_eq!(hidden(dir.path()), [".part-0-a1-0.pending"]);
    assert_eq!(visible(dir.path()).0.len(), 0, "pending is not committed");
    write(&mut files, 10..15, at(1));
    files.commit(1).unwrap();
    assert_eq!(
        visible(dir.path()),
        (vec!["part-0-a1-0".to_owned()], expected(0..10))
    );
    // Again (a notification that came twice): nothing changes.
    files.commit(1).unwrap();
    assert_eq!(visible(dir.path()).1, expected(0..10));
    // A checkpoint whose completion was never heard is committed with the
    // next one that completes.
    files.snapshot(2).unwrap();
    write(&mut files, 15..20, at(2));
    files.snapshot(3).unwrap();
    files.commit(3).unwrap();
    assert_eq!(visible(dir.path()).1, expected(0..20));
    assert_eq!(files.committed().unwrap().len(), 3);
    assert!(hidden(dir.path()).is_empty());
}

#[test]
fn part_files_roll_by_size_and_by_age() {
    let dir = tempfile::tempdir().unwrap();
    let rolling = RollingPolicy {
        max_bytes: 30,
        max_age: Duration::from_secs(60),
    };
    let mut files = PartFiles::new(dir.path(), 3, "w", rolling).unwrap();
    // 9 bytes a line: a file rolls once it holds 36 bytes (4 lines).
    write(&mut files, 0..10, at(0));
    write(&mut files, 10..11, at(61)); // the open file is older than 60 s
    files.snapshot(1).unwrap();
    files.commit(1).unwrap();
    let (names, lines) = visible(dir.path());
    assert_eq!(
        names,
        ["part-3-w-0", "part-3-w-1", "part-3-w-2", "part-3-w-3"]
    );
    assert_eq!(lines, expected(0..11));
    let last = std::fs::read_to_string(dir.path().join("part-3-w-3")).unwrap();
    assert_eq!(last, "line 010\n", "the age rolled it: alone in its file");
}

#[test]
fn a_restore_commits_what_a_completed_checkpoint_had_pending_and_drops_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    // Attempt 1 writes 0..10, checkpoint 5 takes them; it writes 10..15 and
    // crashes before checkpoint 5's completion reached it.
    let mut first = PartFiles::new(dir.path(), 0, "attempt-1", RollingPolicy::default()).unwrap();
    write(&mut first, 0..10, at(0));
    let state = first.snapshot(5).unwrap();
    write(&mut first, 10..15, at(1));
    drop(first);
    // Another subtask's hidden files are not this one's to delete.
    std::fs::write(dir.path().join(".part-1-x-0.inprogress"), "other").unwrap();
    // Attempt 2 restores checkpoint 5, which completed.
    let mut second = PartFiles::restore(
        dir.path(),
        0,
        "attempt-2",
        RollingPolicy::default(),
        Some(&state),
        Some(5),
    )
    .unwrap();
    assert_eq!(
        visible(dir.path()).1,
        expected(0..10),
        "exactly checkpoint 5's"
    );
    assert_eq!(hidden(dir.path()), [".part-1-x-0.inprogress"]);
    // The source replays from checkpoint 5's position: 10..15 again, once.
    write(&mut second, 10..15, at(2));
    second.snapshot(6).unwrap();
    second.commit(6).unwrap();
    // A commit of the restored checkpoint that runs again is harmless.
    second.commit(5).unwrap();
    assert_eq!(visible(dir.path()).1, expected(0..15));

    // A restore from a checkpoint that did not complete commits nothing of
    // it (its records come again from the older position).
    let mut third = PartFiles::new(dir.path(), 0, "attempt-3", RollingPolicy::default()).unwrap();
    write(&mut third, 100..103, at(3));
    let unfinished = third.snapshot(7).unwrap();
    drop(third);
    PartFiles::restore(
        dir.path(),
        0,
        "attempt-4",
        RollingPolicy::default(),
        Some(&unfinished),
        None,
    )
    .unwrap();
    assert_eq!(visible(dir.path()).1, expected(0..15));
    assert_eq!(hidden(dir.path()), [".part-1-x-0.inprogress"]);
}

#[test]
fn a_job_resumed_into_another_directory_commits_the_savepoints_files_where_they_were_written() {
    let (old, new) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut first = PartFiles::new(old.path(), 0, "attempt-1", RollingPolicy::default()).unwrap();
    write(&mut first, 0..10, at(0));
    // A stop-with-savepoint: its files pending, the job gone before it
    // heard that the savepoint completed.
    let state = first.snapshot(7).unwrap();
    drop(first);
    let mut resumed = PartFiles::restore(
        new.path(),
        0,
        "attempt-2",
        RollingPolicy::default(),
        Some(&state),
        Some(7),
    )
    .expect("the savepoint's files are committed in the old directory");
    assert_eq!(visible(old.path()).1, expected(0..10));
    assert!(hidden(old.path()).is_empty(), "{:?}", hidden(old.path()));
    write(&mut resumed, 10..12, at(1));
    resumed.snapshot(8).unwrap();
    resumed.commit(8).unwrap();
    assert_eq!(visible(new.path()).1, expected(10..12));

    // A state written before the directory was recorded: the restored
    // sink's own directory.
    let legacy = holdfast_dataflow::sink::PartFilesState { dir: None, ..state };
    let error = PartFiles::restore(
        new.path(),
        1,
        "attempt-3",
        RollingPolicy::default(),
        Some(&legacy),
        Some(7),
    )
    .err()
    .expect("the files are not in the new directory, and were not committed there");
    assert!(
        error
            .to_string()
            .contains(&new.path().display().to_string()),
        "{error}"
    );
}

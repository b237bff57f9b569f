//! The checks of the storage conformance suite. Each returns `Err` with what
//! went wrong; none panics (a fixture may, when it cannot open a storage).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::Fixture;
use crate::MAX_SEGMENT;
use crate::{CheckpointStorage, StorageError, StoragePath};

/// A check's verdict.
pub type Verdict = Result<(), String>;

macro_rules! ensure {
    ($cond:expr, $($message:tt)+) => {
        if !$cond {
            return Err(format!($($message)+));
        }
    };
}

fn path(text: &str) -> Result<StoragePath, String> {
    text.parse()
        .map_err(|error| format!("the check's own path: {error}"))
}

fn paths(texts: &[&str]) -> Result<Vec<StoragePath>, String> {
    texts.iter().map(|text| path(text)).collect()
}

async fn put<S: CheckpointStorage>(storage: &S, at: &StoragePath, bytes: Bytes) -> Verdict {
    storage
        .put(at, bytes)
        .await
        .map_err(|error| format!("put {at}: {error}"))
}

/// Puts `bytes(path)` at every path, one after the other.
async fn put_all<S: CheckpointStorage>(storage: &S, at: &[StoragePath]) -> Verdict {
    for path in at {
        put(storage, path, content(path)).await?;
    }
    Ok(())
}

/// What the checks write at `path`: its own name, so that a file read from
/// the wrong place shows.
fn content(path: &StoragePath) -> Bytes {
    Bytes::from(format!("the file at {path}"))
}

/// Checks that `path` holds exactly `expected`, by `get` and by `size`.
async fn holds<S: CheckpointStorage>(storage: &S, path: &StoragePath, expected: &[u8]) -> Verdict {
    let got = storage
        .get(path)
        .await
        .map_err(|error| format!("get {path}: {error}"))?;
    ensure!(
        got.as_ref() == expected,
        "get {path} gave {} bytes{}, expected {} bytes{}",
        got.len(),
        preview(&got),
        expected.len(),
        preview(expected)
    );
    let size = storage
        .size(path)
        .await
        .map_err(|error| format!("size {path}: {error}"))?;
    ensure!(
        size == expected.len() as u64,
        "size {path} is {size}, expected {}",
        expected.len()
    );
    Ok(())
}

fn preview(bytes: &[u8]) -> String {
    if bytes.len() <= 64 {
        format!(" ({:?})", String::from_utf8_lossy(bytes))
    } else {
        String::new()
    }
}

/// Checks that `get` and `size` of `path` are [`StorageError::NotFound`]
/// naming `path`.
async fn missing<S: CheckpointStorage>(storage: &S, path: &StoragePath) -> Verdict {
    let got = storage.get(path).await;
    is_not_found("get", path, got.map(|bytes| bytes.len() as u64))?;
    is_not_found("size", path, storage.size(path).await)
}

fn is_not_found(operation: &str, path: &StoragePath, result: Result<u64, StorageError>) -> Verdict {
    match result {
        Err(StorageError::NotFound { path: named, .. }) if named == *path => Ok(()),
        Err(error @ StorageError::NotFound { .. }) => Err(format!(
            "{operation} {path}: a NotFound naming another path: {error}"
        )),
        Err(error) => Err(format!(
            "{operation} {path} failed with {error:?}, not StorageError::NotFound"
        )),
        Ok(size) => Err(format!(
            "{operation} {path} found {size} bytes where there is no file"
        )),
    }
}

async fn listed<S: CheckpointStorage>(
    storage: &S,
    prefix: &StoragePath,
) -> Result<Vec<StoragePath>, String> {
    storage
        .list(prefix)
        .await
        .map_err(|error| format!("list {prefix:?}: {error}"))
}

/// Checks that `list(prefix)` is exactly `expected` (sorted).
async fn lists<S: CheckpointStorage>(
    storage: &S,
    prefix: &StoragePath,
    expected: &[StoragePath],
) -> Verdict {
    let got = listed(storage, prefix).await?;
    let mut sorted = expected.to_vec();
    sorted.sort();
    ensure!(
        got == sorted,
        "list {prefix:?} gave {}, expected {}",
        names(&got),
        names(&sorted)
    );
    Ok(())
}

fn names(paths: &[StoragePath]) -> String {
    let names: Vec<_> = paths.iter().map(StoragePath::as_str).collect();
    format!("{names:?}")
}

async fn delete_all<S: CheckpointStorage>(storage: &S, prefix: &StoragePath) -> Verdict {
    storage
        .delete_all(prefix)
        .await
        .map_err(|error| format!("delete_all {prefix:?}: {error}"))
}

/// Bytes of every value, in an order that does not repeat within `len`
/// for any short period (so a dropped or repeated chunk shows).
fn pattern(len: usize) -> Bytes {
    let mut state = 0x9e37_79b9_u32;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state.to_le_bytes()[0]
        })
        .collect::<Vec<u8>>()
        .into()
}

/// `put` then `get` gives the very bytes back — a small file with every
/// byte value, an empty file, a file of several MiB — and `size` their
/// length.
pub async fn a_put_is_read_back_whole<F: Fixture>(fixture: &F) -> Verdict {
    let storage = fixture.open().await;
    let every_byte: Bytes = (0..=255u8).collect::<Vec<u8>>().into();
    let files = [
        (path("job/chk-1/_metadata")?, every_byte),
        (path("job/chk-1/0-0-0.state")?, Bytes::new()),
        (path("job/chk-1/1-0-0.state")?, pattern(6 * 1024 * 1024 + 7)),
    ];
    for (at, bytes) in &files {
        put(&storage, at, bytes.clone()).await?;
    }
    for (at, bytes) in &files {
        holds(&storage, at, bytes).await?;
    }
    Ok(())
}

/// `put_file` stores a local file's very bytes (an empty file, a small
/// one, one of several upload parts), returns its size, and replaces what
/// was at the path whole (a shorter file leaves no tail); a local file that
/// is not there is an error naming it, and nothing appears at the path.
pub async fn a_file_put_is_read_back_whole<F: Fixture>(fixture: &F) -> Verdict {
    let storage = fixture.open().await;
    let dir = std::env::temp_dir().join(format!(
        "holdfast-put-file-{}-{:x}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    std::fs::create_dir_all(&dir).map_err(|e| format!("the check's own directory: {e}"))?;
    let verdict = async {
        let files = [
            ("job/shared/a.run", Bytes::from_static(b"one small run")),
            ("job/shared/empty.run", Bytes::new()),
            (
                "job/shared/parts.run",
                pattern(2 * crate::s3::FILE_PART + 12_345),
            ),
            ("job/shared/a.run", Bytes::from_static(b"shorter")),
        ];
        for (n, (at, bytes)) in files.iter().enumerate() {
            let (at, local) = (path(at)?, dir.join(format!("{n}.run")));
            std::fs::write(&local, bytes).map_err(|e| format!("the check's own file: {e}"))?;
            let size = storage
                .put_file(&at, &local)
                .await
                .map_err(|error| format!("put_file {at}: {error}"))?;
            ensure!(
                size == bytes.len() as u64,
                "put_file {at} said {size} bytes, the file has {}",
                bytes.len()
            );
            holds(&storage, &at, bytes).await?;
        }
        let (at, local) = (path("job/shared/never.run")?, dir.join("not-there.run"));
        match storage.put_file(&at, &local).await {
            Err(error @ StorageError::Io { .. })
                if error.to_string().contains(&local.display().to_string()) => {}
            Err(error) => {
                return Err(format!(
                    "put_file of a missing local file failed without naming it: {error:?}"
                ));
            }
            Ok(size) => {
                return Err(format!(
                    "put_file of a missing local file stored {size} bytes"
                ));
            }
        }
        missing(&storage, &at).await?;
        lists(
            &storage,
            &path("job/shared")?,
            &paths(&[
                "job/shared/a.run",
                "job/shared/empty.run",
                "job/shared/parts.run",
            ])?,
        )
        .await
    }
    .await;
    let _ = std::fs::remove_dir_all(&dir);
    verdict
}

/// A `put` at a path that holds a file replaces the whole file: a longer
/// one, then a shorter one (no tail of the old bytes is left), then an
/// empty one; the path is listed once.
pub async fn a_put_replaces_the_whole_file<F: Fixture>(fixture: &F) -> Verdict {
    let storage = fixture.open().await;
    let at = path("job/chk-1/_metadata")?;
    for version in [
        &b"the first version of the metadata"[..],
        &b"a second, longer version of the metadata, written over the first"[..],
        &b"v3"[..],
        &b""[..],
        &b"the last version"[..],
    ] {
        put(&storage, &at, Bytes::copy_from_slice(version)).await?;
        holds(&storage, &at, version).await?;
    }
    lists(&storage, &StoragePath::root(), std::slice::from_ref(&at)).await
}

/// `get` and `size` of a path with no file are [`StorageError::NotFound`]
/// naming the path (not an I/O error: a restoring leader tells a missing
/// file from a broken store by it) — in an empty storage, in a directory
/// that exists, in one that does not, for a directory itself, and for a
/// file just deleted.
pub async fn a_missing_file_is_a_typed_not_found<F: Fixture>(fixture: &F) -> Verdict {
    let storage = fixture.open().await;
    missing(&storage, &path("job/chk-7/_metadata")?).await?;
    let state = path("job/chk-1/0-0-0.state")?;
    put(&storage, &state, content(&state)).await?;
    for absent in [
        "job/chk-1/_metadata",
        "job/chk-2/_metadata",
        "job/chk-1",
        "job",
        "job/chk-1/0-0-0.state/deeper",
    ] {
        missing(&storage, &path(absent)?).await?;
    }
    delete_all(&storage, &path("job/chk-1")?).await?;
    missing(&storage, &state).await
}

/// The root is a directory, not a file: `put` of it fails and writes
/// nothing; `get` and `size` of it fail.
pub async fn the_root_is_not_a_file<F: Fixture>(fixture: &F) -> Verdict {
    let storage = fixture.open().await;
    let root = StoragePath::root();
    let put = storage.put(&root, Bytes::from("x")).await;
    ensure!(put.is_err(), "a put of the root succeeded");
    ensure!(
        storage.get(&root).await.is_err(),
        "a get of the root succeeded"
    );
    ensure!(
        storage.size(&root).await.is_err(),
        "a size of the root succeeded"
    );
    lists(&storage, &root, &[]).await
}

/// `list` gives every file below a prefix, and only those: by whole
/// segments (`job-a` is no prefix of `job-ab`, nor `chk-1` of `chk-10`),
/// sorted whatever the order of the writes; the root lists everything; a
/// prefix with nothing below it — missing, or a file's own path — lists
/// nothing.
pub async fn list_names_every_file_below_a_prefix_sorted<F: Fixture>(fixture: &F) -> Verdict {
    let storage = fixture.open().await;
    let all = paths(&[
        "job-a/chk-2/_metadata",
        "job-b/chk-1/_metadata",
        "job-a/chk-1/_metadata",
        "top-level",
        "job-a/chk-10/_metadata",
        "job-ab/chk-1/_metadata",
        "job-a/chk-1/1-0-0.state",
        "job-a/chk-1x/_metadata",
        "job-a/chk-1/0-0-0.state",
    ])?;
    put_all(&storage, &all).await?;
    lists(&storage, &StoragePath::root(), &all).await?;
    let below = |prefix: &str| -> Vec<StoragePath> {
        all.iter()
            .filter(|p| p.as_str().starts_with(&format!("{prefix}/")))
            .cloned()
            .collect()
    };
    for prefix in ["job-a", "job-a/chk-1", "job-ab", "job-b/chk-1"] {
        lists(&storage, &path(prefix)?, &below(prefix)).await?;
    }
    ensure!(
        below("job-a").len() == 6 && below("job-a/chk-1").len() == 3,
        "the check's own layout is off"
    );
    for nothing_below in [
        "job-c",
        "job-a/chk-3",
        "job-a/chk",
        "job-a/chk-1/_metadata",
        "top-level",
        "job-a/chk-1/_metadata/deeper",
    ] {
        lists(&storage, &path(nothing_below)?, &[]).await?;
    }
    Ok(())
}

/// `delete_all` of a checkpoint's directory removes every file below it
/// and nothing else — not `chk-10` beside `chk-1`, not `job-ab` beside
/// `job-a` — and a file can be written there again; `delete_all` of the
/// root empties the storage.
pub async fn delete_all_removes_a_directory_and_nothing_beside_it<F: Fixture>(
    fixture: &F,
) -> Verdict {
    let storage = fixture.open().await;
    let doomed = paths(&[
        "job-a/chk-1/_metadata",
        "job-a/chk-1/0-0-0.state",
        "job-a/chk-1/1-0-0.state",
    ])?;
    let kept = paths(&[
        "job-a/chk-10/_metadata",
        "job-a/chk-1x/_metadata",
        "job-a/chk-2/_metadata",
        "job-ab/chk-1/_metadata",
        "job-b/chk-1/_metadata",
    ])?;
    put_all(&storage, &doomed).await?;
    put_all(&storage, &kept).await?;

    delete_all(&storage, &path("job-a/chk-1")?).await?;
    for gone in &doomed {
        missing(&storage, gone).await?;
    }
    lists(&storage, &StoragePath::root(), &kept).await?;
    for file in &kept {
        holds(&storage, file, &content(file)).await?;
    }

    // The directory can be used again (a retried checkpoint id never is,
    // but a new job with a reused name would).
    put(&storage, &doomed[0], Bytes::from("again")).await?;
    holds(&storage, &doomed[0], b"again").await?;

    delete_all(&storage, &path("job-a")?).await?;
    lists(&storage, &StoragePath::root(), &kept[3..]).await?;
    delete_all(&storage, &StoragePath::root()).await?;
    lists(&storage, &StoragePath::root(), &[]).await?;
    for file in &kept {
        missing(&storage, file).await?;
    }
    Ok(())
}

/// `delete_all` of what is not there is no error — a retried delete (after
/// a crash, by a new leader), a directory that never was, a path below a
/// file, the root of an empty storage — and changes nothing.
pub async fn delete_all_of_what_is_not_there_succeeds<F: Fixture>(fixture: &F) -> Verdict {
    let storage = fixture.open().await;
    delete_all(&storage, &StoragePath::root()).await?;
    delete_all(&storage, &path("job/chk-1")?).await?;
    let kept = path("job/chk-2/_metadata")?;
    let doomed = path("job/chk-1/_metadata")?;
    put_all(&storage, &[kept.clone(), doomed]).await?;
    for prefix in [
        "job/chk-1",
        "job/chk-1",
        "job/chk-3",
        "other-job",
        "job/chk-2/_metadata/deeper",
    ] {
        delete_all(&storage, &path(prefix)?).await?;
    }
    lists(&storage, &StoragePath::root(), std::slice::from_ref(&kept)).await?;
    holds(&storage, &kept, &content(&kept)).await
}

/// Segments that are valid [`StoragePath`] segments but easy for a storage
/// to mangle: dots where a filesystem gives them meaning, a leading dash,
/// two names that differ in case only, digits only, the longest segment
/// ([`MAX_SEGMENT`](crate::MAX_SEGMENT) bytes).
fn unusual_segments() -> Vec<String> {
    let mut segments: Vec<String> = [
        ".hidden",
        "...",
        "..name",
        "name..",
        "-leading-dash",
        "_underscore",
        "Case",
        "case",
        "00000000000000000042",
        "every-ABC.xyz_0189",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    segments.push("x".repeat(MAX_SEGMENT));
    segments
}

/// Every valid [`StoragePath`] names one file that round-trips: `put`,
/// `get` gives its bytes, `list` gives the very path back (not an encoded
/// or case-folded form of it), and `delete_all` of its directory removes
/// it — also for names a filesystem treats specially.
pub async fn every_valid_path_round_trips<F: Fixture>(fixture: &F) -> Verdict {
    let storage = fixture.open().await;
    let mut files = Vec::new();
    for segment in unusual_segments() {
        let file = StoragePath::root()
            .child("names")
            .and_then(|p| p.child(&segment))
            .map_err(|error| format!("{segment:?} is no valid segment: {error}"))?;
        let inside = StoragePath::root()
            .child("dirs")
            .and_then(|p| p.child(&segment))
            .and_then(|p| p.child("_metadata"))
            .map_err(|error| format!("{segment:?} is no valid segment: {error}"))?;
        files.push(file);
        files.push(inside);
    }
    put_all(&storage, &files).await?;
    lists(&storage, &StoragePath::root(), &files).await?;
    for file in &files {
        holds(&storage, file, &content(file)).await?;
    }
    for segment in unusual_segments() {
        let dir = path("dirs")?
            .child(&segment)
            .map_err(|error| error.to_string())?;
        delete_all(&storage, &dir).await?;
        lists(&storage, &dir, &[]).await?;
    }
    let names = path("names")?;
    let left: Vec<_> = files
        .iter()
        .filter(|file| file.as_str().starts_with("names/"))
        .cloned()
        .collect();
    lists(&storage, &StoragePath::root(), &left).await?;
    delete_all(&storage, &names).await?;
    lists(&storage, &StoragePath::root(), &[]).await?;
    for file in &files {
        missing(&storage, file).await?;
    }
    Ok(())
}

/// Nothing that could leave the storage's root parses as a [`StoragePath`]
/// — `..` anywhere, absolute paths, empty segments (`a//b`, a trailing
/// `/`), `.`, `\`, control characters, an over-long segment — nor any
/// character outside the portable set (`#`, `:`, `%`, spaces, non-ASCII…),
/// neither as text nor through [`StoragePath::child`]; names that merely
/// contain dots do parse.
pub async fn only_portable_paths_inside_the_root_parse<F: Fixture>(_fixture: &F) -> Verdict {
    for bad in [
        "..",
        "../x",
        "job/../../etc/passwd",
        "job/..",
        "/etc/passwd",
        "/",
        "//x",
        "a//b",
        "a/",
        ".",
        "./a",
        "a/./b",
        "..\\x",
        "a\\b",
        "a\0b",
        "a\nb",
        "a\u{7f}b",
        "chk-1#2",
        "job/colon:",
        "with space",
        "percent%2E%2E",
        "question?",
        "star*",
        "tilde~",
        "ünïcødé",
    ] {
        ensure!(
            bad.parse::<StoragePath>().is_err(),
            "{bad:?} parsed as a storage path"
        );
    }
    let long = "x".repeat(MAX_SEGMENT + 1);
    ensure!(
        long.parse::<StoragePath>().is_err(),
        "a segment of {} bytes parsed",
        long.len()
    );
    let job = path("job")?;
    for bad in ["..", ".", "", "/x", "x/", "a//b", "../x", "a\\b", "x#1"] {
        ensure!(
            job.child(bad).is_err(),
            "job.child({bad:?}) made a storage path"
        );
    }
    for good in ["...", "..a", "a..", ".hidden", "a/b..c/d", "Job-1_x.state"] {
        let parsed = good
            .parse::<StoragePath>()
            .map_err(|error| format!("{good:?} did not parse: {error}"))?;
        ensure!(
            parsed.as_str() == good,
            "{good:?} parsed as {:?}",
            parsed.as_str()
        );
    }
    Ok(())
}

/// Many writers at once — several handles (TaskManagers), several writes
/// each, most into one directory none of them made yet — all land, each
/// file with its own bytes, and nothing else shows (no temporary files).
pub async fn concurrent_writers_to_different_paths_all_land<F: Fixture>(fixture: &F) -> Verdict {
    let mut expected = BTreeMap::new();
    let mut writers = tokio::task::JoinSet::new();
    for writer in 0..4 {
        let storage = Arc::new(fixture.open().await);
        for file in 0..8 {
            let dir = if file % 4 == 3 { "chk-2" } else { "chk-1" };
            let at = path(&format!("job/{dir}/{writer}-{file}-0.state"))?;
            let bytes = Bytes::from(format!("{at}: {}", "state ".repeat(100 * file + writer)));
            expected.insert(at.clone(), bytes.clone());
            let storage = Arc::clone(&storage);
            writers.spawn(async move { storage.put(&at, bytes).await.map_err(|e| e.to_string()) });
        }
    }
    while let Some(joined) = writers.join_next().await {
        joined
            .map_err(|error| format!("a writer panicked: {error}"))?
            .map_err(|error| format!("a concurrent put failed: {error}"))?;
    }
    let reader = fixture.open().await;
    let all: Vec<_> = expected.keys().cloned().collect();
    lists(&reader, &StoragePath::root(), &all).await?;
    for (at, bytes) in &expected {
        holds(&reader, at, bytes).await?;
    }
    Ok(())
}

/// The leader deletes one checkpoint's directory (aborted, retired) while
/// TaskManagers write the next one's files into the same job directory —
/// also when the deleted directory was the job directory's only one: every
/// write succeeds and lands, the deleted files are gone. The writes start
/// at another phase of the delete each round (its length measured in the
/// round before), so that some land before, during and after each of its
/// steps.
pub async fn writes_beside_a_concurrent_delete_all_land<F: Fixture>(fixture: &F) -> Verdict {
    const ROUNDS: u32 = 20;
    const DELETED: u32 = 16;
    const WRITTEN: u32 = 6;
    let leader = Arc::new(fixture.open().await);
    let mut task_managers = Vec::new();
    for _ in 0..2 {
        task_managers.push(Arc::new(fixture.open().await));
    }
    let files_of = |id: u32, count: u32| -> Result<Vec<StoragePath>, String> {
        (0..count)
            .map(|file| path(&format!("job/chk-{id}/{file}-0-0.state")))
            .collect()
    };
    put_all(&*leader, &files_of(1, DELETED)?).await?;
    let mut delete_takes = Duration::ZERO;
    for id in 1..=ROUNDS {
        let next = files_of(id + 1, WRITTEN)?;
        let mut work = tokio::task::JoinSet::new();
        let (storage, dir) = (Arc::clone(&leader), path(&format!("job/chk-{id}"))?);
        let deleting = tokio::spawn(async move {
            let started = Instant::now();
            let deleted = storage.delete_all(&dir).await;
            (
                deleted.map_err(|e| format!("delete_all {dir}: {e}")),
                started.elapsed(),
            )
        });
        // The first write starts 0, ¼, ½, ¾ or 1 delete-time after the
        // delete, the others follow within half a delete-time.
        let phase = f64::from(id % 5) / 4.0;
        for (index, at) in (0..).zip(&next) {
            let storage = Arc::clone(&task_managers[index as usize % task_managers.len()]);
            let after = phase + f64::from(index) / f64::from(2 * WRITTEN);
            let start = delete_takes.mul_f64(after);
            let (at, bytes) = (at.clone(), content(at));
            work.spawn(async move {
                tokio::time::sleep(start).await;
                storage
                    .put(&at, bytes)
                    .await
                    .map_err(|e| format!("put {at}: {e}"))
            });
        }
        while let Some(joined) = work.join_next().await {
            joined
                .map_err(|error| format!("a writer panicked: {error}"))?
                .map_err(|error| format!("round {id}, beside a delete: {error}"))?;
        }
        let (deleted, took) = deleting
            .await
            .map_err(|error| format!("the delete panicked: {error}"))?;
        deleted.map_err(|error| format!("round {id}: {error}"))?;
        delete_takes = took;
        lists(&*leader, &path("job")?, &next).await?;
        for at in &next {
            holds(&*leader, at, &content(at)).await?;
        }
        // The next round deletes a directory as full as the first.
        put_all(&*leader, &files_of(id + 1, DELETED)?[WRITTEN as usize..]).await?;
    }
    Ok(())
}

/// A write is seen at once by another handle on the same place, and by a
/// handle opened after the writer's is gone (a restarted process, a new
/// leader reading `_metadata`); an overwrite and a delete too — no handle
/// serves what it cached.
pub async fn a_fresh_handle_sees_every_write_and_delete<F: Fixture>(fixture: &F) -> Verdict {
    let metadata = path("job/chk-1/_metadata")?;
    let state = path("job/chk-1/0-0-0.state")?;
    let first = fixture.open().await;
    put_all(&first, &[metadata.clone(), state.clone()]).await?;
    holds(&first, &metadata, &content(&metadata)).await?;

    let second = fixture.open().await;
    holds(&second, &metadata, &content(&metadata)).await?;
    put(&second, &metadata, Bytes::from("rewritten")).await?;
    holds(&first, &metadata, b"rewritten").await?;
    drop(first);
    drop(second);

    let restarted = fixture.open().await;
    holds(&restarted, &metadata, b"rewritten").await?;
    holds(&restarted, &state, &content(&state)).await?;
    lists(
        &restarted,
        &StoragePath::root(),
        &[metadata.clone(), state.clone()],
    )
    .await?;

    let other = fixture.open().await;
    delete_all(&other, &path("job/chk-1")?).await?;
    missing(&restarted, &metadata).await?;
    lists(&restarted, &StoragePath::root(), &[]).await?;
    drop(other);
    drop(restarted);
    let again = fixture.open().await;
    missing(&again, &state).await?;
    lists(&again, &StoragePath::root(), &[]).await
}

/// `put_new` writes a file where there is none, and never replaces one:
/// a second `put_new` is [`StorageError::AlreadyExists`] naming the path
/// and leaves the first bytes; of eight handles creating the same file at
/// once exactly one succeeds and its bytes are what is read; a file
/// deleted can be created again.
pub async fn put_new_creates_once_and_one_of_concurrent_creators_wins<F: Fixture>(
    fixture: &F,
) -> Verdict {
    let metadata = path("job/chk-7/_metadata")?;
    let storage = fixture.open().await;
    storage
        .put_new(&metadata, Bytes::from("first"))
        .await
        .map_err(|e| format!("put_new {metadata} where nothing is: {e}"))?;
    match storage.put_new(&metadata, Bytes::from("second")).await {
        Err(StorageError::AlreadyExists { path: named, .. }) if named == metadata => {}
        other => {
            return Err(format!(
                "a second put_new {metadata} gave {other:?}, not AlreadyExists"
            ));
        }
    }
    holds(&storage, &metadata, b"first").await?;

    let contested = path("job/chk-8/_metadata")?;
    let mut creators = tokio::task::JoinSet::new();
    for creator in 0..8u8 {
        let (handle, at) = (fixture.open().await, contested.clone());
        creators.spawn(async move {
            let bytes = Bytes::from(format!("creator {creator}"));
            (bytes.clone(), handle.put_new(&at, bytes).await)
        });
    }
    let mut winners = Vec::new();
    while let Some(joined) = creators.join_next().await {
        match joined.map_err(|e| format!("a creator panicked: {e}"))? {
            (bytes, Ok(())) => winners.push(bytes),
            (_, Err(StorageError::AlreadyExists { .. })) => {}
            (_, Err(error)) => {
                return Err(format!("a concurrent put_new failed otherwise: {error}"));
            }
        }
    }
    ensure!(
        winners.len() == 1,
        "{} of 8 concurrent put_new {contested} succeeded, not exactly one",
        winners.len()
    );
    holds(&storage, &contested, &winners[0]).await?;

    delete_all(&storage, &path("job/chk-7")?).await?;
    storage
        .put_new(&metadata, Bytes::from("again"))
        .await
        .map_err(|e| format!("put_new {metadata} after its delete: {e}"))?;
    holds(&storage, &metadata, b"again").await
}

/// `get_range` reads exactly the bytes asked for (a shared file's section);
/// `delete` removes one file and nothing whose name it prefixes, and
/// deleting it again succeeds.
pub async fn a_range_reads_just_its_bytes_and_delete_removes_one_file<F: Fixture>(
    fixture: &F,
) -> Verdict {
    let storage = fixture.open().await;
    let run = path("job/shared/a/1-op.run")?;
    let longer = path("job/shared/a/1-op.run2")?;
    let bytes: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
    put(&storage, &run, Bytes::from(bytes.clone())).await?;
    put(&storage, &longer, content(&longer)).await?;
    for range in [0..1, 17..4_113, 9_999..10_000, 0..10_000] {
        let got = storage
            .get_range(&run, range.clone())
            .await
            .map_err(|error| format!("get_range {run} {range:?}: {error}"))?;
        ensure!(
            got[..] == bytes[range.start as usize..range.end as usize],
            "get_range {run} {range:?} read {} other bytes",
            got.len()
        );
    }
    let missing = path("job/shared/a/none.run")?;
    match storage.get_range(&missing, 0..1).await {
        Err(StorageError::NotFound { .. }) => {}
        other => {
            return Err(format!(
                "get_range of a missing file: {other:?}, not NotFound"
            ));
        }
    }
    storage
        .delete(&run)
        .await
        .map_err(|error| format!("delete {run}: {error}"))?;
    match storage.get(&run).await {
        Err(StorageError::NotFound { .. }) => {}
        other => return Err(format!("{run} after its delete: {other:?}")),
    }
    holds(&storage, &longer, &content(&longer)).await?;
    storage
        .delete(&run)
        .await
        .map_err(|error| format!("delete {run} again: {error}"))?;
    Ok(())
}

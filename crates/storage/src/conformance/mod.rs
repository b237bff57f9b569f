//! The conformance suite every [`CheckpointStorage`] must pass, in the
//! library so that every implementation runs the very same checks:
//! [`LocalStorage`](crate::LocalStorage) in `tests/conformance_local.rs`,
//! [`S3Storage`](crate::S3Storage) on a real S3 server (SeaweedFS) in
//! `tests/conformance_s3.rs`.
//!
//! An implementation provides a [`Fixture`]: a place that starts empty and
//! a way to open a storage on it, as many times as a check likes (each
//! handle is a "process": the JobManager, a TaskManager, the same process
//! after a restart). The checks in [`checks`] are plain async functions over
//! a fixture, returning what went wrong; the
//! [`conformance_suite!`](crate::conformance_suite) macro turns each into a
//! test:
//!
//! ```ignore
//! holdfast_storage::conformance_suite!(
//!     #[tokio::test(flavor = "multi_thread", worker_threads = 2)],
//!     my_storage_tests::fixture().await
//! );
//! ```
//!
//! # What the rest of holdfast relies on
//!
//! A TaskManager `put`s one state file per attempt and checkpoint
//! (`<job>/chk-<id>/<vertex>-<subtask>-<attempt>.state`); the leader `put`s
//! the checkpoint's `_metadata` beside them, `get`s it back when a job
//! restores (possibly a new leader, another process), and `delete_all`s a
//! checkpoint's directory when it is aborted or retired — while the
//! TaskManagers write the next checkpoint's files into the same job
//! directory. So:
//!
//! | contract | check |
//! |---|---|
//! | `put` then `get` gives the very bytes (empty, small, several MiB); `size` their length | [`a_put_is_read_back_whole`](checks::a_put_is_read_back_whole) |
//! | `put_file` stores a local file's very bytes (empty, small, several upload parts) and its size, replaces a longer file whole; a local file that is not there is an error naming it, and nothing appears | [`a_file_put_is_read_back_whole`](checks::a_file_put_is_read_back_whole) |
//! | `put` replaces the whole file, never leaves a tail of the old one, never lists it twice | [`a_put_replaces_the_whole_file`](checks::a_put_replaces_the_whole_file) |
//! | `get`/`size` of a missing file, of a file in a missing directory, of a directory, of a deleted file: [`StorageError::NotFound`] naming the path | [`a_missing_file_is_a_typed_not_found`](checks::a_missing_file_is_a_typed_not_found) |
//! | the root is no file: `put`/`get` of it fail, nothing appears | [`the_root_is_not_a_file`](checks::the_root_is_not_a_file) |
//! | `list` gives every file below a prefix, by whole segments (`chk-1` is no prefix of `chk-10`), sorted; a missing prefix lists nothing | [`list_names_every_file_below_a_prefix_sorted`](checks::list_names_every_file_below_a_prefix_sorted) |
//! | `delete_all` removes a directory's files, by whole segments, and nothing beside it; a new file can go there again | [`delete_all_removes_a_directory_and_nothing_beside_it`](checks::delete_all_removes_a_directory_and_nothing_beside_it) |
//! | `delete_all` of what is not there (again, never was, a file's own path, the empty root) succeeds | [`delete_all_of_what_is_not_there_succeeds`](checks::delete_all_of_what_is_not_there_succeeds) |
//! | every valid [`StoragePath`] names one file that round-trips: `put`, `get`, `list` gives the same path back (names differing in case only are two files), `delete_all` removes it | [`every_valid_path_round_trips`](checks::every_valid_path_round_trips) |
//! | `..`, absolute paths, empty segments and characters outside ASCII letters, digits, `.`, `_`, `-` do not parse: nothing can leave the root, every name is stored as it is | [`only_portable_paths_inside_the_root_parse`](checks::only_portable_paths_inside_the_root_parse) |
//! | concurrent writers to different paths (some in one new directory) all land | [`concurrent_writers_to_different_paths_all_land`](checks::concurrent_writers_to_different_paths_all_land) |
//! | writes into a job's directory while another checkpoint's directory is deleted all land | [`writes_beside_a_concurrent_delete_all_land`](checks::writes_beside_a_concurrent_delete_all_land) |
//! | `put_new` creates where nothing is, never replaces (`AlreadyExists` naming the path), of 8 concurrent creators exactly one wins | [`put_new_creates_once_and_one_of_concurrent_creators_wins`](checks::put_new_creates_once_and_one_of_concurrent_creators_wins) |
//! | a write is seen at once by another handle and by a handle opened later (a restart, a new leader); so is a delete | [`a_fresh_handle_sees_every_write_and_delete`](checks::a_fresh_handle_sees_every_write_and_delete) |
//!
//! Not checked here, because no test can: that a `put` which returned `Ok`
//! survives a crash of the machine (`LocalStorage` syncs the file and its
//! directories; a remote store must acknowledge only what it stored
//! durably).
//!
//! # What an S3-compatible implementation does to pass
//!
//! [`S3Storage`](crate::S3Storage), on `object_store`'s `AmazonS3`, runs
//! this suite against a real S3-compatible server started by its tests
//! (as the HA tests start a real ZooKeeper), failing loudly when there is
//! none. It passes by:
//!
//! - **Fixture.** Every fixture gets a prefix of its own (a fresh random
//!   one in a shared bucket): the checks assume an empty place, and a
//!   server may show a deleted prefix in delimiter listings for minutes.
//!   [`Fixture::open`] builds a new client each time (no state shared in
//!   memory between handles).
//! - **Keys.** A [`StoragePath`] maps to `<prefix>/<path>` one to one, and
//!   back: `list` must return exactly the paths that were put. Segments
//!   are made of ASCII letters, digits, `.`, `_` and `-` only (no
//!   encoding changes them), and case matters. A segment may be 240
//!   bytes ([`MAX_SEGMENT`](crate::MAX_SEGMENT)); keep the prefix
//!   short enough that a key stays within S3's 1,024 bytes.
//! - **put** is one `PUT` (a multipart upload, completed, for large
//!   files): atomic — a reader sees the old bytes or the new, never part —
//!   and `Ok` only once the server acknowledged it. A `put` of the root
//!   path is an error, not an object named like the prefix.
//! - **get / size**: `GET` / `HEAD`; HTTP 404 (`object_store::Error::NotFound`)
//!   must become [`StorageError::NotFound`], never [`StorageError::Io`]:
//!   a restoring leader tells a missing file from an unreachable store by
//!   it. A "directory" (a prefix with objects below) is no object: 404.
//! - **list** is a recursive listing of `<prefix>/<path>/` (with the
//!   slash: by whole segments, or `chk-1` would list `chk-10`), through
//!   every page (more than 1,000 keys), keys made relative to the
//!   storage's prefix again, sorted.
//! - **delete_all** lists as above and deletes in bulk; a key already gone
//!   (404, or absent from the bulk answer) is no error. It never deletes
//!   outside `<prefix>/<path>/`; S3 has no directories to clean up.
//! - **No caching**: a handle must see another handle's write or delete at
//!   once (S3 is strongly consistent for this; a server that is not fails
//!   the last check).
//! - **put_file** reads the local file a part at a time (5 MiB,
//!   [`FILE_PART`](crate::s3::FILE_PART)): one `PUT` up to a part, a
//!   multipart upload above (aborted if it fails), so that a file larger
//!   than memory goes up holding one part.
//! - **put_new** is a `PUT` with `If-None-Match: *`: a `412` (or a
//!   conflict) is [`StorageError::AlreadyExists`](crate::StorageError::AlreadyExists).
//!
//! [`CheckpointStorage`]: crate::CheckpointStorage
//! [`StorageError::NotFound`]: crate::StorageError::NotFound
//! [`StorageError::Io`]: crate::StorageError::Io
//! [`StoragePath`]: crate::StoragePath

pub mod checks;

use std::future::Future;

use crate::CheckpointStorage;

/// What the suite needs from an implementation under test.
pub trait Fixture: Send + Sync + 'static {
    /// The implementation.
    type Storage: CheckpointStorage;

    /// A new handle on the fixture's place, as a process that starts (or
    /// restarts) would open it. Every handle of one fixture sees the same
    /// files; a new fixture's place is empty. Panics (with why) if the
    /// storage cannot be opened: the check fails loudly.
    fn open(&self) -> impl Future<Output = Self::Storage> + Send;
}

/// Runs every check of the suite against a fixture, one test each.
///
/// The first argument is the test attribute to use (the checks spawn
/// tasks: a multi-threaded runtime lets writers race for real), the second
/// an expression (evaluated inside each test, may `.await`) that yields
/// the fixture.
#[macro_export]
macro_rules! conformance_suite {
    (#[$attr:meta], $fixture:expr) => {
        $crate::conformance_suite!(@each #[$attr], $fixture,
            a_put_is_read_back_whole,
            a_file_put_is_read_back_whole,
            a_put_replaces_the_whole_file,
            a_missing_file_is_a_typed_not_found,
            the_root_is_not_a_file,
            list_names_every_file_below_a_prefix_sorted,
            delete_all_removes_a_directory_and_nothing_beside_it,
            delete_all_of_what_is_not_there_succeeds,
            every_valid_path_round_trips,
            only_portable_paths_inside_the_root_parse,
            concurrent_writers_to_different_paths_all_land,
            writes_beside_a_concurrent_delete_all_land,
            a_fresh_handle_sees_every_write_and_delete,
            put_new_creates_once_and_one_of_concurrent_creators_wins,
            a_range_reads_just_its_bytes_and_delete_removes_one_file,
        );
    };
    (@each #[$attr:meta], $fixture:expr, $($check:ident),* $(,)?) => {
        $(
            #[$attr]
            async fn $check() {
                let fixture = $fixture;
                if let Err(failure) = $crate::conformance::checks::$check(&fixture).await {
                    panic!("{}: {failure}", stringify!($check));
                }
            }
        )*
    };
}

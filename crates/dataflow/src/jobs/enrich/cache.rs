//! The lookup table shared by every `enrich` subtask of this process
//! ([`SharedTable`]): loaded once on a background thread (which inherits the
//! task threads' lower priority, so heartbeats and ZooKeeper traffic keep
//! their CPU), reloaded on a schedule while the old table keeps serving, and
//! observable while it loads ([`loads`]) for progress bars, logs and
//! metrics. This is the incident's "daily cache" done without stalling
//! anything.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, Weak};
use std::time::{Duration, Instant};

use holdfast_types::sync::{lock, unpoisoned};

use crate::jobs::enrich::table::{self, Table};

/// A table load as observed now.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadProgress {
    /// The table file.
    pub path: PathBuf,
    /// Bytes of the file read by the load in progress (or the last one).
    pub bytes_read: u64,
    /// The file's size.
    pub total_bytes: u64,
    /// Entries loaded so far.
    pub entries: u64,
    /// Whether a load is in progress.
    pub loading: bool,
    /// Loads completed (1 after the first load, more after reloads).
    pub loads: u64,
    /// How long the last completed load took.
    pub last_duration: Option<Duration>,
}

/// Why the first load of a [`SharedTable`] failed; every waiter gets it
/// (the enrich tasks fail, and the job restarts per its restart strategy).
/// A failed reload is not one: the table loaded before keeps serving.
#[derive(Clone, Debug, thiserror::Error)]
pub enum LoadError {
    /// The table file could not be loaded.
    #[error(transparent)]
    Table(Arc<table::TableError>),
    /// The loader thread could not be started.
    #[error("cannot start the table loader thread: {0}")]
    Spawn(#[source] Arc<std::io::Error>),
}

#[derive(Debug)]
struct State {
    table: Option<Arc<Table>>,
    failure: Option<LoadError>,
    progress: LoadProgress,
    stopped: bool,
}

/// A table shared by the subtasks of this process that read the same file
/// with the same reload schedule. Dropping the last handle stops its loader.
#[derive(Debug)]
pub struct SharedTable {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    state: Mutex<State>,
    changed: Condvar,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }
}

type Registry = Mutex<HashMap<(PathBuf, Option<Duration>), Weak<SharedTable>>>;

fn registry() -> &'static Registry {
    static TABLES: OnceLock<Registry> = OnceLock::new();
    TABLES.get_or_init(Registry::default)
}

/// The loads of every table alive in this process.
pub fn loads() -> Vec<LoadProgress> {
    let tables = lock(registry());
    tables
        .values()
        .filter_map(Weak::upgrade)
        .map(|t| t.inner.lock().progress.clone())
        .collect()
}

/// The shared table of `path` reloaded every `reload` (never if `None`):
/// the live one if there is, else a new one whose first load starts now.
pub fn acquire(path: &Path, reload: Option<Duration>) -> Arc<SharedTable> {
    let mut tables = lock(registry());
    tables.retain(|_, t| t.strong_count() > 0);
    let key = (path.to_path_buf(), reload);
    if let Some(live) = tables.get(&key).and_then(Weak::upgrade) {
        return live;
    }
    let inner = Arc::new(Inner {
        state: Mutex::new(State {
            table: None,
            failure: None,
            progress: LoadProgress {
                path: path.to_path_buf(),
                bytes_read: 0,
                total_bytes: 0,
                entries: 0,
                loading: true,
                loads: 0,
                last_duration: None,
            },
            stopped: false,
        }),
        changed: Condvar::new(),
    });
    let shared = Arc::new(SharedTable {
        inner: Arc::clone(&inner),
    });
    tables.insert(key, Arc::downgrade(&shared));
    let path = path.to_path_buf();
    let spawned = std::thread::Builder::new()
        .name("enrich-table-loader".into())
        .spawn(move || loader(&inner, &path, reload));
    if let Err(error) = spawned {
        let mut state = shared.inner.lock();
        state.failure = Some(LoadError::Spawn(Arc::new(error)));
        state.progress.loading = false;
    }
    shared
}

impl SharedTable {
    /// The table now, if one loaded.
    pub fn current(&self) -> Option<Arc<Table>> {
        self.inner.lock().table.clone()
    }

    /// Waits up to `timeout` for the first load: `Ok(Some)` when loaded,
    /// `Ok(None)` if still loading, `Err` if it failed.
    pub fn wait(&self, timeout: Duration) -> Result<Option<Arc<Table>>, LoadError> {
        let state = self.inner.lock();
        let (state, _) = unpoisoned(
            self.inner
                .changed
                .wait_timeout_while(state, timeout, |s| s.table.is_none() && s.failure.is_none()),
        );
        match (&state.table, &state.failure) {
            (Some(table), _) => Ok(Some(Arc::clone(table))),
            (None, Some(failure)) => Err(failure.clone()),
            (None, None) => Ok(None),
        }
    }

    /// The load's progress now.
    pub fn progress(&self) -> LoadProgress {
        self.inner.lock().progress.clone()
    }
}

impl Drop for SharedTable {
    fn drop(&mut self) {
        self.inner.lock().stopped = true;
        self.inner.changed.notify_all();
    }
}

fn loader(inner: &Inner, path: &Path, reload: Option<Duration>) {
    loop {
        let started = Instant::now();
        inner.lock().progress.loading = true;
        let mut next_decile = 1;
        let result = table::load(path, |read, total, entries| {
            let mut state = inner.lock();
            state.progress.bytes_read = read;
            state.progress.total_bytes = total;
            state.progress.entries = entries;
            let stopped = state.stopped;
            drop(state);
            if total > 0 && read * 10 >= total * next_decile && next_decile < 10 {
                tracing::info!(table = %path.display(), entries,
                    "loading lookup table: {}% after {:.1} s (the table in use, if any, keeps serving)",
                    read * 100 / total, started.elapsed().as_secs_f64());
                next_decile = read * 10 / total + 1;
            }
            !stopped
        });
        let elapsed = started.elapsed();
        let mut state = inner.lock();
        state.progress.loading = false;
        match result {
            Ok((table, report)) => {
                let next = reload.map_or_else(
                    || "no reload scheduled".to_owned(),
                    |r| format!("next reload in {}", humanize(r)),
                );
                tracing::info!(table = %path.display(), entries = table.len(), attributes = table.attributes(),
                    malformed = report.malformed, seconds = elapsed.as_secs_f64(),
                    "loaded lookup table in {:.2} s; {next}", elapsed.as_secs_f64());
                if let Some((line, why)) = &report.first_malformed {
                    tracing::warn!(table = %path.display(), malformed = report.malformed,
                        "skipped {} malformed line(s) of the lookup table (first: line {line}: {why}); \
                         those keys enrich as \"unknown\"", report.malformed);
                }
                state.table = Some(Arc::new(table));
                state.failure = None;
                state.progress.loads += 1;
                state.progress.last_duration = Some(elapsed);
            }
            Err(table::TableError::Stopped { .. }) => return,
            Err(error) => {
                if state.table.is_some() {
                    tracing::warn!(table = %path.display(), %error,
                        "reloading the lookup table failed; the table loaded before keeps serving{}",
                        reload.map_or_else(String::new, |r| format!(", next attempt in {}", humanize(r))));
                } else {
                    tracing::error!(table = %path.display(), %error,
                        "cannot load the lookup table: the enrich tasks fail and the job restarts per its \
                         restart strategy");
                    state.failure = Some(LoadError::Table(Arc::new(error)));
                }
            }
        }
        inner.changed.notify_all();
        let Some(interval) = reload else { return };
        let (state, _) = unpoisoned(
            inner
                .changed
                .wait_timeout_while(state, interval, |s| !s.stopped),
        );
        if state.stopped {
            return;
        }
    }
}

fn humanize(d: Duration) -> String {
    let secs = d.as_secs();
    if secs >= 3600 && secs.is_multiple_of(3600) {
        format!("{} h", secs / 3600)
    } else if secs >= 60 && secs.is_multiple_of(60) {
        format!("{} min", secs / 60)
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::enrich::table::generate;

    #[test]
    fn one_load_serves_every_holder_and_a_reload_swaps_the_table() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.tsv");
        generate(&path, 100, 3, |_, _| {}).unwrap();
        let a = acquire(&path, Some(Duration::from_millis(50)));
        let b = acquire(&path, Some(Duration::from_millis(50)));
        assert!(
            Arc::ptr_eq(&a, &b),
            "same file and schedule share one table"
        );
        let first = a.wait(Duration::from_secs(30)).unwrap().expect("loaded");
        assert_eq!(first.len(), 100);
        generate(&path, 200, 3, |_, _| {}).unwrap();
        // Wait for the reload (an event: the table changes), with a deadline.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let state = a.inner.lock();
            let (state, _) = a
                .inner
                .changed
                .wait_timeout_while(state, Duration::from_secs(1), |s| {
                    s.table.as_ref().is_none_or(|t| t.len() != 200)
                })
                .unwrap();
            if state.table.as_ref().is_some_and(|t| t.len() == 200) {
                assert!(state.progress.loads >= 2);
                break;
            }
            assert!(Instant::now() < deadline, "no reload within 30 s");
        }
        assert_eq!(first.len(), 100, "a holder of the old table keeps it");
        assert!(loads().iter().any(|l| l.path == path));
    }

    #[test]
    fn a_failed_first_load_is_reported_to_waiters() {
        let a = acquire(Path::new("/nonexistent/enrich-table.tsv"), None);
        let error = a.wait(Duration::from_secs(30)).unwrap_err();
        assert!(
            error.to_string().contains("/nonexistent/enrich-table.tsv"),
            "{error}"
        );
    }
}

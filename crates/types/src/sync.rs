//! How holdfast treats a poisoned lock: it goes on with the data.
//!
//! A `std::sync` lock is *poisoned* when a thread panicked while holding it,
//! and every later `lock()` returns an error. holdfast's locks guard
//! bookkeeping — tables of attempts, connection states, counters, queues —
//! whose every update is a single step, so a panic mid-update cannot leave
//! them half-changed in a way later readers would misread. A task's code
//! runs on threads of the process that also serves RPC, heartbeats and the
//! HA session: a panicking task thread must not take the process's
//! bookkeeping down with it by turning every later lock into a panic. So
//! every lock in holdfast is taken through [`lock`], and every condition
//! variable wait goes through [`unpoisoned`], which both take the guard
//! out of the poison error.
//!
//! ```
//! use std::sync::{Condvar, Mutex};
//! use std::time::Duration;
//!
//! use holdfast_types::sync::{lock, unpoisoned};
//!
//! let ready = Mutex::new(false);
//! let changed = Condvar::new();
//! *lock(&ready) = true;
//! let (ready, _) = unpoisoned(changed.wait_timeout_while(
//!     lock(&ready),
//!     Duration::from_millis(1),
//!     |ready| !*ready,
//! ));
//! assert!(*ready);
//! ```

use std::sync::{LockResult, Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, going on with the data if another thread panicked while
/// holding it (see the [module docs](self) for why that is safe here).
pub fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    unpoisoned(mutex.lock())
}

/// What a lock operation returned, taken out of the poison error if it is
/// one: for `Condvar::wait`, `wait_timeout`, `wait_timeout_while` and
/// `RwLock::read` / `write`, whose results [`lock`] does not cover.
pub fn unpoisoned<G>(result: LockResult<G>) -> G {
    result.unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Condvar, RwLock};
    use std::time::Duration;

    #[test]
    fn a_poisoned_mutex_still_locks_with_its_data() {
        let table = Arc::new(Mutex::new(vec![1]));
        let held = Arc::clone(&table);
        let _ = std::thread::spawn(move || {
            let mut guard = held.lock().unwrap();
            guard.push(2);
            panic!("poison it");
        })
        .join();
        assert!(table.is_poisoned());
        assert_eq!(*lock(&table), [1, 2]);
        lock(&table).push(3);
        assert_eq!(*lock(&table), [1, 2, 3]);
    }

    #[test]
    fn waits_and_rwlocks_on_poisoned_locks_go_on() {
        let state = Arc::new((Mutex::new(0), Condvar::new()));
        let held = Arc::clone(&state);
        let _ = std::thread::spawn(move || {
            let _guard = held.0.lock().unwrap();
            panic!("poison it");
        })
        .join();
        let (mutex, changed) = &*state;
        let (guard, timeout) =
            unpoisoned(
                changed.wait_timeout_while(lock(mutex), Duration::from_millis(1), |n| *n == 0),
            );
        assert!(timeout.timed_out());
        assert_eq!(*guard, 0);
        drop(guard);

        let rw = Arc::new(RwLock::new(5));
        let held = Arc::clone(&rw);
        let _ = std::thread::spawn(move || {
            let _guard = held.write().unwrap();
            panic!("poison it");
        })
        .join();
        *unpoisoned(rw.write()) += 1;
        assert_eq!(*unpoisoned(rw.read()), 6);
    }
}

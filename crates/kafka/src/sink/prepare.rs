//! [`Preparer`]: the next transaction's producer made ahead, on a thread of
//! its own, so that a barrier does not wait for it on the task thread.
//!
//! ```text
//!  Begin {…}-k succeeded ─► start preparing {…}-(k+1) ─► thread: create, init, begin, describe
//!  Begin {name, reserve} ─► name = {…}-(k+1), reserve empty ─► wait for it (normally ready): use it
//!                        └► anything else ─► discard it (through the closer), create on the task thread
//!  preparation failed ─► create on the task thread, as without a preparer
//! ```
//!
//! The core ([`SinkTxnCore`](crate::txn::SinkTxnCore)) still decides every
//! name; preparing is how the shell carries out the `Begin` it expects
//! next, and a `Begin` it did not expect costs what it cost before.
//!
//! Why preparing `{…}-(k+1)` before barrier `k + 1` is safe:
//! - `init_transactions` on `k + 1` fences only earlier sessions of
//!   `k + 1`. In this attempt the transactions not committed are the one
//!   open now (`k`) and the pending ones, and the shell never prepares a
//!   name the core holds pending. (Checkpoint ids grow — the cluster's
//!   from its HA counter, a `LocalRun`'s from past the checkpoint it was
//!   restored from — so pending names are all below `k`; the guard stays
//!   for any caller that numbers otherwise: preparing a pending `k + 1`
//!   would fence a transaction a checkpoint promised, and lose it.) An
//!   earlier attempt's
//!   session of `k + 1` is fenced by the restore's sweep anyway, and would
//!   be by the `Begin` at barrier `k + 1` without a preparer: the
//!   preparation fences what that `Begin` would have fenced, earlier.
//! - Names stay dense: `k + 1` is known to the coordinator one step above
//!   the known `k`; a restore's sweep finds it (empty: nothing to abort)
//!   and goes on upward as before. A skipped barrier reserves `k + 1` again
//!   (`InitProducerId`), fencing the discarded prepared session.
//! - `begin_transaction` is local in librdkafka: it only moves the
//!   producer's own state to "in transaction" and wakes its broker threads
//!   (`rd_kafka_txn_op_begin_transaction`, `rdkafka_txnmgr.c`, in the
//!   librdkafka 2.12.1 that `rdkafka-sys` 4.10 builds). Nothing is sent
//!   until the first record registers its partition
//!   (`rd_kafka_txn_add_partition` from the produce path, then
//!   `AddPartitionsToTxn`), which is when the coordinator's transaction
//!   becomes `Ongoing` and its `transaction.timeout.ms` clock starts
//!   (Kafka's coordinator times out `Ongoing` transactions only, from
//!   their start: `TransactionStateManager::timedOutTransactions`). A
//!   prepared producer that waits for its barrier holds no broker-side
//!   transaction and runs down no timeout; the test broker shows its id
//!   `Empty` (`tests/sink_local.rs`).
//! - The prepared session is checked like any other: the barrier's
//!   describe after the flush must show it `Ongoing` with the pair this
//!   preparation read, so a session fenced between preparing and writing
//!   fails the barrier instead of losing records.
//!
//! A known window: a preparation still working when it is discarded (the
//! shell dropped with its task, or a `Begin` that waited its limit for it)
//! is abandoned without waiting, and its `init_transactions` stops within
//! one slice ([`INIT_SLICE`]) — but an `InitProducerId` already sent can
//! still land after that. It fences `k + 1` only. A restored attempt (or
//! the task thread's own fallback) that initialised `k + 1` and wrote into
//! it within those milliseconds finds it fenced at its barrier: a failure
//! and a restart, no loss; fencing a *pending* `k + 1` would take a whole
//! restore and barrier within the window. A preparation that failed has
//! dropped its producer before it reports, so the fallback never races it.
//!
//! A zombie is the wider case: an attempt whose TaskManager was cut off
//! or paused (SIGSTOP) while its preparation of `k + 1` was under way,
//! after barrier `k`, whose checkpoint never completed. The restored
//! attempt starts again from an earlier checkpoint and, like the zombie,
//! writes its next transaction under a name at or above `k + 1`; if the
//! zombie's `InitProducerId` for that name lands after the restored
//! attempt's barrier promised the transaction, the promise is broken and
//! the restore after that fails as lost (`TxnFailure::Lost`), without a
//! further restart. Without a preparer the same holds for a zombie stopped
//! in the `Begin` of barrier `k + 1` itself; preparing moves that ~50 ms
//! window from the barrier to right after barrier `k`. A zombie's own
//! TaskManager cancels it at its heartbeat timeout, which ends the
//! preparation within one [`INIT_SLICE`]; only a request already sent,
//! held by a paused process, can land later.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use holdfast_types::sync::{lock, unpoisoned};

/// How long one `init_transactions` call of a preparation may block
/// before it checks whether it is still wanted (it resumes where it was).
pub(crate) const INIT_SLICE: Duration = Duration::from_millis(100);

/// What the thread preparing one name reports.
enum State<T> {
    /// Still working.
    Working,
    /// Done: what it made, or why it could not.
    Done(Result<T, String>),
    /// No longer wanted: what it makes is discarded where it is made.
    Abandoned,
}

/// One preparation's state, shared with its thread.
struct Slot<T> {
    state: Mutex<State<T>>,
    changed: Condvar,
}

impl<T> Slot<T> {
    fn abandoned(&self) -> bool {
        matches!(*lock(&self.state), State::Abandoned)
    }
}

/// A name being prepared.
struct Ahead<T> {
    name: String,
    slot: Arc<Slot<T>>,
}

/// What [`Preparer::take`] found for a name.
#[derive(Debug)]
pub(crate) enum Taken<T> {
    /// Prepared for this name.
    Ready(T),
    /// Preparing this name failed or did not finish in time: why.
    Failed(String),
    /// Nothing was prepared for this name.
    Nothing,
}

/// Whatever a preparation made that nobody takes goes here (the shell:
/// the closer), never dropped on the task thread.
type Discard<T> = Arc<dyn Fn(T) + Send + Sync>;

/// One name prepared ahead at a time, each on a thread of its own.
pub(crate) struct Preparer<T: Send + 'static> {
    ahead: Option<Ahead<T>>,
    discard: Discard<T>,
}

impl<T: Send + 'static> Preparer<T> {
    /// A preparer that hands what nobody takes to `discard`.
    pub(crate) fn new(discard: impl Fn(T) + Send + Sync + 'static) -> Preparer<T> {
        Preparer {
            ahead: None,
            discard: Arc::new(discard),
        }
    }

    /// Starts preparing `name` with `work` on a new thread, discarding
    /// whatever was prepared before. `work` is given a check that says
    /// when its result is no longer wanted (it may stop early then).
    pub(crate) fn start(
        &mut self,
        name: String,
        work: impl FnOnce(&dyn Fn() -> bool) -> Result<T, String> + Send + 'static,
    ) {
        self.discard();
        let slot = Arc::new(Slot {
            state: Mutex::new(State::Working),
            changed: Condvar::new(),
        });
        let (theirs, discard) = (Arc::clone(&slot), Arc::clone(&self.discard));
        let spawned = std::thread::Builder::new()
            .name("kafka-sink-prepare".into())
            .spawn(move || {
                let made = work(&|| theirs.abandoned());
                let mut state = lock(&theirs.state);
                if matches!(*state, State::Abandoned) {
                    drop(state);
                    if let Ok(made) = made {
                        discard(made);
                    }
                } else {
                    *state = State::Done(made);
                    theirs.changed.notify_all();
                }
            });
        if let Err(error) = spawned {
            *lock(&slot.state) = State::Done(Err(format!("could not start a thread: {error}")));
        }
        self.ahead = Some(Ahead { name, slot });
    }

    /// What was prepared for `name`, waiting up to `within` for it; what
    /// was prepared for another name is discarded. Either way nothing is
    /// prepared afterwards.
    pub(crate) fn take(&mut self, name: &str, within: Duration) -> Taken<T> {
        let Some(ahead) = self.ahead.take_if(|ahead| ahead.name == name) else {
            self.discard();
            return Taken::Nothing;
        };
        let (mut state, _) = unpoisoned(ahead.slot.changed.wait_timeout_while(
            lock(&ahead.slot.state),
            within,
            |state| matches!(state, State::Working),
        ));
        match std::mem::replace(&mut *state, State::Abandoned) {
            State::Done(Ok(made)) => Taken::Ready(made),
            State::Done(Err(cause)) => Taken::Failed(cause),
            State::Working | State::Abandoned => {
                Taken::Failed(format!("not prepared within {within:?}"))
            }
        }
    }

    /// Discards what is prepared or being prepared, without waiting: a
    /// preparation still working discards its own result when it ends.
    pub(crate) fn discard(&mut self) {
        if let Some(ahead) = self.ahead.take() {
            let old = std::mem::replace(&mut *lock(&ahead.slot.state), State::Abandoned);
            if let State::Done(Ok(made)) = old {
                (self.discard)(made);
            }
        }
    }
}

impl<T: Send + 'static> Drop for Preparer<T> {
    fn drop(&mut self) {
        self.discard();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn preparer() -> (Preparer<u32>, mpsc::Receiver<u32>) {
        let (send, discarded) = mpsc::channel();
        let send = Mutex::new(send);
        let preparer = Preparer::new(move |made| {
            let _ = lock(&send).send(made);
        });
        (preparer, discarded)
    }

    const LONG: Duration = Duration::from_secs(10);

    #[test]
    fn the_name_prepared_is_taken_once_and_nothing_is_discarded() {
        let (mut preparer, discarded) = preparer();
        preparer.start("t-0-2".into(), |_| Ok(2));
        assert!(matches!(preparer.take("t-0-2", LONG), Taken::Ready(2)));
        assert!(matches!(preparer.take("t-0-2", LONG), Taken::Nothing));
        drop(preparer);
        assert!(discarded.try_recv().is_err());
    }

    #[test]
    fn another_name_discards_what_was_prepared_and_gets_nothing() {
        let (mut preparer, discarded) = preparer();
        preparer.start("t-0-2".into(), |_| Ok(2));
        // Whether it finished before the take or after, it is discarded.
        assert!(matches!(preparer.take("t-0-4", LONG), Taken::Nothing));
        assert_eq!(discarded.recv_timeout(LONG), Ok(2));
    }

    #[test]
    fn a_failed_preparation_says_why() {
        let (mut preparer, _) = preparer();
        preparer.start("t-0-2".into(), |_| Err("broker away".into()));
        assert!(
            matches!(preparer.take("t-0-2", LONG), Taken::Failed(cause) if cause == "broker away")
        );
    }

    #[test]
    fn a_preparation_not_done_in_time_fails_and_discards_its_result_when_it_ends() {
        let (mut preparer, discarded) = preparer();
        let (go, wait) = mpsc::channel::<()>();
        preparer.start("t-0-2".into(), move |_| {
            let _ = wait.recv();
            Ok(2)
        });
        let taken = preparer.take("t-0-2", Duration::from_millis(20));
        assert!(matches!(taken, Taken::Failed(_)), "{taken:?}");
        go.send(()).unwrap();
        assert_eq!(discarded.recv_timeout(LONG), Ok(2));
    }

    #[test]
    fn dropping_does_not_wait_and_the_work_is_told_it_is_abandoned() {
        let (mut preparer, discarded) = preparer();
        let (told, abandoned) = mpsc::channel();
        preparer.start("t-0-2".into(), move |unwanted| {
            while !unwanted() {
                std::thread::sleep(Duration::from_millis(1));
            }
            let _ = told.send(());
            Ok(2)
        });
        let start = std::time::Instant::now();
        drop(preparer);
        assert!(start.elapsed() < Duration::from_secs(1));
        assert_eq!(abandoned.recv_timeout(LONG), Ok(()));
        assert_eq!(discarded.recv_timeout(LONG), Ok(2));
    }

    #[test]
    fn starting_again_discards_the_earlier_preparation() {
        let (mut preparer, discarded) = preparer();
        preparer.start("t-0-2".into(), |_| Ok(2));
        std::thread::sleep(Duration::from_millis(20));
        preparer.start("t-0-3".into(), |_| Ok(3));
        assert_eq!(discarded.recv_timeout(LONG), Ok(2));
        assert!(matches!(preparer.take("t-0-3", LONG), Taken::Ready(3)));
    }
}

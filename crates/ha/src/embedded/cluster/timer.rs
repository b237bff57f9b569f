//! The cluster's timer task: processes deadlines on time, until the
//! cluster is gone.

use std::sync::{Arc, Weak};

use holdfast_types::sync::lock;
use tokio::sync::Notify;

use super::Shared;
use crate::time::MonoTime;

/// The timer task's bookkeeping.
#[derive(Debug, Default)]
pub(super) struct Timer {
    started: bool,
    /// The deadline the task sleeps until, if any.
    armed: Option<MonoTime>,
}

/// Makes sure the timer task wakes by `deadline`: starts it on the current
/// tokio runtime (if there is none, deadlines wait for the next call), or
/// wakes it if it sleeps until later.
pub(super) fn arm(shared: &Arc<Shared>, deadline: MonoTime) {
    let mut timer = lock(&shared.timer);
    if !timer.started {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        timer.started = true;
        handle.spawn(run(Arc::downgrade(shared), Arc::clone(&shared.wake)));
    } else if timer.armed.is_none_or(|armed| deadline < armed) {
        shared.wake.notify_one();
    }
}

async fn run(shared: Weak<Shared>, wake: Arc<Notify>) {
    loop {
        let sleep = {
            let Some(shared) = shared.upgrade() else {
                return;
            };
            let now = shared.runtime.now();
            // Timer first, then server (`with` never holds both): an `arm`
            // for a new deadline waits until `armed` tells it what we will
            // sleep until, and wakes us if its deadline is earlier.
            let mut timer = lock(&shared.timer);
            let next = {
                let mut server = shared.lock_server();
                server.catch_up(now);
                server.next_deadline()
            };
            timer.armed = next;
            drop(timer);
            next.map(|deadline| shared.runtime.sleep_until(deadline))
        };
        match sleep {
            Some(sleep) => {
                tokio::select! {
                    () = sleep => {}
                    () = wake.notified() => {}
                }
            }
            None => wake.notified().await,
        }
    }
}

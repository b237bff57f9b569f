//! [`Interrupt`]: how a task's cancel handler wakes the task's blocked
//! exchange calls.
//!
//! Every blocking wait in this crate is a `Condvar` wait whose loop checks
//! [`Interrupt::is_triggered`] while holding the condvar's mutex. A waiter
//! registers itself; [`Interrupt::trigger`] sets the flag first, then locks
//! each waiter's mutex and notifies its condvar, so a wake-up cannot fall
//! between a waiter's check and its wait.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use holdfast_types::sync::lock;

/// Something blocked on a condvar that an interrupt must wake.
pub(crate) trait InterruptWake: Send + Sync {
    /// Lock the condvar's mutex, then notify all its waiters.
    fn wake_interrupted(&self);
}

/// A one-shot cancel signal for one task attempt. Clone it into the cancel
/// handler; [`trigger`](Interrupt::trigger) makes every blocked or later
/// `send` and `next` that was given it return
/// [`ExchangeError::Interrupted`](crate::ExchangeError::Interrupted).
#[derive(Clone, Default)]
pub struct Interrupt {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    triggered: AtomicBool,
    waiters: Mutex<Vec<Weak<dyn InterruptWake>>>,
}

impl Interrupt {
    /// A fresh, untriggered interrupt.
    pub fn new() -> Interrupt {
        Interrupt::default()
    }

    /// Triggers the interrupt (idempotent) and wakes every waiter.
    pub fn trigger(&self) {
        self.inner.triggered.store(true, Ordering::SeqCst);
        let waiters: Vec<_> = lock(&self.inner.waiters)
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for waiter in waiters {
            waiter.wake_interrupted();
        }
    }

    /// Whether [`trigger`](Interrupt::trigger) was called.
    pub fn is_triggered(&self) -> bool {
        self.inner.triggered.load(Ordering::SeqCst)
    }

    /// Wakes `waiter` on a later trigger (forgotten once it is dropped).
    pub(crate) fn register(&self, waiter: Weak<dyn InterruptWake>) {
        let mut waiters = lock(&self.inner.waiters);
        waiters.retain(|w| w.strong_count() > 0);
        waiters.push(waiter);
    }
}

impl fmt::Debug for Interrupt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Interrupt")
            .field("triggered", &self.is_triggered())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    struct Counter(AtomicUsize);

    impl InterruptWake for Counter {
        fn wake_interrupted(&self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn trigger_wakes_live_waiters_and_forgets_dropped_ones() {
        let interrupt = Interrupt::new();
        let live = Arc::new(Counter(AtomicUsize::new(0)));
        let dropped = Arc::new(Counter(AtomicUsize::new(0)));
        interrupt.register(Arc::downgrade(&live) as Weak<dyn InterruptWake>);
        interrupt.register(Arc::downgrade(&dropped) as Weak<dyn InterruptWake>);
        drop(dropped);
        assert!(!interrupt.is_triggered());
        interrupt.clone().trigger();
        assert!(interrupt.is_triggered());
        assert_eq!(live.0.load(Ordering::SeqCst), 1);
    }
}

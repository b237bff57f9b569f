//! Credit-based flow control of a remote channel, sans I/O.
//!
//! ```text
//!  consumer TaskManager                         producer TaskManager
//!  ReceiveWindow(capacity)                      SendWindow
//!   Request{credit = capacity}  ─────────────►   credit = capacity
//!                               ◄── Batch ────   credit -= 1 (never below 0:
//!   on_batch(): outstanding -= 1                  a batch waits for credit)
//!   task pops; credits_to_return()                watermarks / End: no credit
//!   Credit{n}                   ─────────────►   credit += n (never above the
//!                                                 consumer's initial window)
//! ```
//!
//! Invariant, per channel: batches in flight + batches queued at the
//! consumer + credits the producer holds = the consumer's capacity. So each
//! side buffers at most `capacity` batches: memory is bounded by
//! construction, and a peer that breaks the rule is caught here.

use crate::event::Event;

/// How a peer broke the credit rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CreditError {
    /// The producer sent a batch the consumer had given no credit for.
    #[error("the producer sent a batch without credit (window of {window})")]
    NoCredit {
        /// The consumer's window.
        window: u32,
    },
    /// The consumer returned more credit than it ever granted.
    #[error("the consumer granted {granted} credits, more than its window of {window}")]
    TooMuch {
        /// Credits held after the grant.
        granted: u64,
        /// The consumer's window.
        window: u32,
    },
}

/// The producer side: may it send the next event?
#[derive(Debug)]
pub(crate) struct SendWindow {
    credit: u32,
    window: u32,
}

impl SendWindow {
    /// A window opened by a request carrying `initial` credits.
    pub(crate) fn new(initial: u32) -> SendWindow {
        SendWindow {
            credit: initial,
            window: initial,
        }
    }

    /// Whether `event` may go now: batches need a credit, nothing else does.
    pub(crate) fn admits(&self, event: &Event) -> bool {
        !event.is_batch() || self.credit > 0
    }

    /// `event` went out.
    pub(crate) fn on_sent(&mut self, event: &Event) {
        if event.is_batch() {
            debug_assert!(self.credit > 0, "a batch was sent without credit");
            self.credit = self.credit.saturating_sub(1);
        }
    }

    /// The consumer returned `n` credits.
    pub(crate) fn grant(&mut self, n: u32) -> Result<(), CreditError> {
        let granted = u64::from(self.credit) + u64::from(n);
        if granted > u64::from(self.window) {
            return Err(CreditError::TooMuch {
                granted,
                window: self.window,
            });
        }
        self.credit += n;
        Ok(())
    }

    /// Credits held now.
    #[cfg(test)]
    pub(crate) fn credit(&self) -> u32 {
        self.credit
    }
}

/// The consumer side: how many batches may still arrive, and how many
/// credits to give back.
#[derive(Debug)]
pub(crate) struct ReceiveWindow {
    window: u32,
    outstanding: u32,
    returned_for: u64,
}

impl ReceiveWindow {
    /// A window of `window` batches, all granted with the request.
    pub(crate) fn new(window: u32) -> ReceiveWindow {
        ReceiveWindow {
            window,
            outstanding: window,
            returned_for: 0,
        }
    }

    /// A batch arrived.
    pub(crate) fn on_batch(&mut self) -> Result<(), CreditError> {
        if self.outstanding == 0 {
            return Err(CreditError::NoCredit {
                window: self.window,
            });
        }
        self.outstanding -= 1;
        Ok(())
    }

    /// Credits to return now that the task has popped `popped_total`
    /// batches in all; 0 when there is nothing new.
    pub(crate) fn credits_to_return(&mut self, popped_total: u64) -> u32 {
        let fresh = popped_total.saturating_sub(self.returned_for);
        let fresh = u32::try_from(fresh).unwrap_or(u32::MAX);
        self.returned_for += u64::from(fresh);
        self.outstanding = self.outstanding.saturating_add(fresh);
        fresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Batch;

    fn batch() -> Event {
        Event::Batch(Batch::Encoded {
            records: 1,
            bytes: bytes::Bytes::new(),
        })
    }

    #[test]
    fn a_sender_spends_one_credit_per_batch_and_none_on_other_events() {
        let mut send = SendWindow::new(2);
        for _ in 0..2 {
            assert!(send.admits(&batch()));
            send.on_sent(&batch());
        }
        assert!(!send.admits(&batch()));
        assert!(send.admits(&Event::Watermark(1)));
        assert!(send.admits(&Event::End));
        send.on_sent(&Event::Watermark(1));
        assert_eq!(send.credit(), 0);
        send.grant(1).unwrap();
        assert!(send.admits(&batch()));
    }

    #[test]
    fn a_sender_refuses_credit_beyond_the_window() {
        let mut send = SendWindow::new(2);
        send.on_sent(&batch());
        assert_eq!(
            send.grant(2),
            Err(CreditError::TooMuch {
                granted: 3,
                window: 2
            })
        );
        assert_eq!(send.credit(), 1);
    }

    #[test]
    fn a_receiver_allows_window_batches_and_returns_credit_per_pop() {
        let mut receive = ReceiveWindow::new(3);
        for _ in 0..3 {
            receive.on_batch().unwrap();
        }
        assert_eq!(receive.on_batch(), Err(CreditError::NoCredit { window: 3 }));
        assert_eq!(receive.credits_to_return(0), 0);
        assert_eq!(receive.credits_to_return(2), 2);
        assert_eq!(receive.credits_to_return(2), 0);
        receive.on_batch().unwrap();
        receive.on_batch().unwrap();
        assert!(receive.on_batch().is_err());
    }

    #[test]
    fn both_sides_together_never_buffer_more_than_the_window() {
        // A scripted exchange: the producer always has data, the consumer
        // pops one batch every third step.
        let window = 4;
        let mut send = SendWindow::new(window);
        let mut receive = ReceiveWindow::new(window);
        let (mut queued, mut popped) = (0u64, 0u64);
        for step in 0..300 {
            while send.admits(&batch()) {
                send.on_sent(&batch());
                receive.on_batch().unwrap();
                queued += 1;
            }
            assert!(queued <= u64::from(window));
            if step % 3 == 0 && queued > 0 {
                queued -= 1;
                popped += 1;
                let n = receive.credits_to_return(popped);
                send.grant(n).unwrap();
            }
        }
        assert!(popped > 50);
    }
}

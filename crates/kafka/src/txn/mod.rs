//! The exactly-once sink's transactions, as values and a sans-IO core.
//!
//! Each sink subtask writes into one Kafka transaction at a time, under a
//! transactional id of its own: `{prefix}-{subtask}-{k}`, `k` being the id
//! of the checkpoint whose barrier opened it (the restored checkpoint's id
//! for an attempt's first one). At a barrier the transaction is flushed
//! and becomes *pending*: its id and producer session ([`ProducerPair`])
//! go into the checkpoint ([`SinkTxnState`]), so that whoever restores
//! that checkpoint can commit it even when the process that opened it is
//! dead. [`SinkTxnCore`] decides what to do; the shell only carries out
//! its [`TxnCommand`]s and reports each one's outcome as a [`TxnInput`].
//!
//! Why `k` is a checkpoint id: names then follow the checkpoints, so a
//! restore from checkpoint `n` knows every name below `n` is settled
//! (committed with the state, or empty), and every barrier rolls to a new
//! name with gaps reserved, so the names an earlier attempt used above `n`
//! are found by probing upward to the first unknown one. No lingering
//! transaction is left to hold back `read_committed` readers.

mod core;
mod state;
mod timeout;

pub use self::core::{Phase, SinkTxnCore, TxnCommand, TxnInput};
pub use state::{
    CommitOutcome, DescribedState, FlushReport, PendingTxn, ProducerPair, STATE_VERSION,
    SinkTxnState, StateError, TopicPartition, TxnDescription, TxnFailure, TxnNames,
};
pub use timeout::{TimeoutBudget, TimeoutTooShort};

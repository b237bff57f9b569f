//! What a connector subtask reports of the external system it reads or
//! writes ([`ConnectorStatus`]): a source's splits (a Kafka partition) with
//! its position, the split's end and the lag between them; a sink's
//! transactions with their age. The attempt's code sets it on its
//! [`TaskMeters`](crate::TaskMeters); the executor reports it in its
//! snapshots and the JobManager shows it on the job's page. Display only:
//! no decision reads it.

/// One connector operator's status in one attempt.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConnectorStatus {
    /// The operator's name.
    pub operator: String,
    /// The splits a source reads (empty for a sink).
    pub splits: Vec<SplitStatus>,
    /// The transactions a sink has not committed yet (empty for a source,
    /// and for a sink that does not write in transactions).
    pub transactions: Vec<TransactionStatus>,
}

/// One split a source reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SplitStatus {
    /// The split's name (`topic/partition` for Kafka).
    pub name: String,
    /// The position the source reads next (an offset), once known.
    pub position: Option<i64>,
    /// Where the split ends now (for Kafka its last stable offset: what a
    /// read_committed reader can reach), once the system said.
    pub end: Option<i64>,
    /// Records between the position and the end, once both are known.
    pub lag: Option<i64>,
    /// Whether the source read the split to the end it stops at (a bounded
    /// read).
    pub finished: bool,
}

/// One transaction a sink has not committed yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransactionStatus {
    /// Its id (for Kafka the transactional id).
    pub id: String,
    /// When it began (ms since the Unix epoch, the TaskManager's clock).
    pub started_ms: i64,
    /// Whether the sink writes into it or it waits for its checkpoint.
    pub state: TransactionState,
}

/// Where a sink's transaction is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransactionState {
    /// The sink writes into it now.
    Open,
    /// Flushed at a barrier; committed when its checkpoint completes.
    AwaitingCommit,
}

impl TransactionState {
    /// Its name in reports: `open` or `awaiting-commit`.
    pub fn name(self) -> &'static str {
        match self {
            TransactionState::Open => "open",
            TransactionState::AwaitingCommit => "awaiting-commit",
        }
    }

    /// The state named `name` (as [`name`](Self::name) writes it).
    pub fn from_name(name: &str) -> Option<TransactionState> {
        match name {
            "open" => Some(TransactionState::Open),
            "awaiting-commit" => Some(TransactionState::AwaitingCommit),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transaction_states_round_trip_their_names() {
        for state in [TransactionState::Open, TransactionState::AwaitingCommit] {
            assert_eq!(TransactionState::from_name(state.name()), Some(state));
        }
        assert_eq!(TransactionState::from_name("committed"), None);
    }
}

//! What an `EndTxn` answer means, under transaction protocol version 1
//! (Kafka's `TransactionCoordinator.endTransaction`):
//!
//! | answer | meaning |
//! |---|---|
//! | `NONE` | decided (markers follow), or already completed with this session |
//! | `CONCURRENT_TRANSACTIONS`, `NOT_COORDINATOR`, `COORDINATOR_NOT_AVAILABLE`, `COORDINATOR_LOAD_IN_PROGRESS` | try again (look the coordinator up again) |
//! | `PRODUCER_FENCED`, `INVALID_PRODUCER_EPOCH` | the session moved on: timed out, or fenced — lost |
//! | `INVALID_TXN_STATE` | aborted, or never held data — lost |
//! | `INVALID_PRODUCER_ID_MAPPING`, `TRANSACTIONAL_ID_NOT_FOUND` | expired or never known — lost |
//! | anything else (not authorised, unsupported version, a code this client does not know) | refused: nothing says the transaction is gone, so the commit is tried again after a restart, never declared lost |

use kafka_protocol::ResponseError;

/// What an `EndTxn` answer means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EndTxnAnswer {
    /// Committed (or aborted, as asked): now or before.
    Done,
    /// Not yet: ask again (the answer's name).
    Retry(String),
    /// The coordinator will never complete it as asked (the answer's name).
    Lost(String),
    /// Refused for a reason that does not say the transaction is gone
    /// (the answer's name): not committed now, maybe later.
    Refused(String),
}

/// Whether a Kafka error code asks to try again (after looking the
/// coordinator up again).
pub fn is_retriable(code: i16) -> bool {
    matches!(
        ResponseError::try_from_code(code),
        Some(
            ResponseError::ConcurrentTransactions
                | ResponseError::NotCoordinator
                | ResponseError::CoordinatorNotAvailable
                | ResponseError::CoordinatorLoadInProgress
                | ResponseError::RequestTimedOut
        )
    )
}

/// Classifies an `EndTxn` error code.
pub fn answer_to_end_txn(code: i16) -> EndTxnAnswer {
    if is_retriable(code) {
        return EndTxnAnswer::Retry(code_name(code));
    }
    match ResponseError::try_from_code(code) {
        None => EndTxnAnswer::Done,
        Some(
            ResponseError::ProducerFenced
            | ResponseError::InvalidProducerEpoch
            | ResponseError::InvalidTxnState
            | ResponseError::InvalidProducerIdMapping
            | ResponseError::TransactionalIdNotFound,
        ) => EndTxnAnswer::Lost(code_name(code)),
        Some(_) => EndTxnAnswer::Refused(code_name(code)),
    }
}

/// A Kafka error code as `Name (code)`.
pub fn code_name(code: i16) -> String {
    match ResponseError::try_from_code(code) {
        None => "None (0)".to_owned(),
        Some(ResponseError::Unknown(code)) => format!("an unknown error ({code})"),
        Some(error) => format!("{error} ({code})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_answer_of_the_table_is_classified() {
        assert_eq!(answer_to_end_txn(0), EndTxnAnswer::Done);
        for retry in [51, 16, 15, 14, 7] {
            assert!(
                matches!(answer_to_end_txn(retry), EndTxnAnswer::Retry(_)),
                "{retry}"
            );
        }
        for lost in [90, 47, 48, 49, 105] {
            assert!(
                matches!(answer_to_end_txn(lost), EndTxnAnswer::Lost(_)),
                "{lost}"
            );
        }
        // Not authorised, unsupported version, unknown codes: nothing says
        // the transaction is gone.
        for refused in [53, 35, -1, 999] {
            assert!(
                matches!(answer_to_end_txn(refused), EndTxnAnswer::Refused(_)),
                "{refused}"
            );
        }
        assert_eq!(code_name(90), "ProducerFenced (90)");
    }
}

//! The transaction requests librdkafka cannot send, spoken with the
//! `kafka-protocol` codec over a blocking connection: find a transaction's
//! coordinator, describe a transaction, commit a transaction of another
//! process's producer session (`EndTxn` v3, the last version under
//! transaction protocol version 1 — v5 would apply version-2 rules to a
//! version-1 transaction), and fence or create a transactional id
//! (`InitProducerId`, which aborts what it holds).
//!
//! [`TxnWire::commit`], [`TxnWire::sweep`] and [`TxnWire::reserve`] retry what the protocol calls
//! retriable (coordinator moving or loading, a transaction still
//! completing) until a deadline, looking the coordinator up again each
//! time; everything else is an answer.

mod answers;
mod conn;

use std::time::{Duration, Instant};

use kafka_protocol::ResponseError;
use kafka_protocol::messages::{
    ApiKey, DescribeTransactionsRequest, DescribeTransactionsResponse, EndTxnRequest,
    EndTxnResponse, FindCoordinatorRequest, FindCoordinatorResponse, InitProducerIdRequest,
    InitProducerIdResponse, ProducerId, TransactionalId,
};
use kafka_protocol::protocol::StrBytes;

pub use answers::{EndTxnAnswer, answer_to_end_txn, code_name, is_retriable};
use conn::Conn;

use crate::txn::{
    CommitOutcome, DescribedState, PendingTxn, ProducerPair, TopicPartition, TxnDescription,
};

/// `EndTxn` v3: transaction protocol version 1.
const END_TXN_VERSION: i16 = 3;
/// `FindCoordinator` v3 (one key, flexible).
const FIND_COORDINATOR_VERSION: i16 = 3;
/// `InitProducerId` v3.
const INIT_PRODUCER_ID_VERSION: i16 = 3;
/// How long to wait between retries.
const BACKOFF: Duration = Duration::from_millis(100);

/// A request that did not get an answer.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The broker's name does not resolve.
    #[error("broker {broker}: the name does not resolve to an address")]
    Resolve {
        /// The broker.
        broker: String,
    },
    /// Connecting, sending or receiving failed.
    #[error("broker {broker}: {source}")]
    Io {
        /// The broker.
        broker: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A request could not be encoded or a response decoded.
    #[error("broker {broker}: malformed Kafka protocol data: {source}")]
    Codec {
        /// The broker.
        broker: String,
        /// Why.
        #[source]
        source: CodecError,
    },
    /// The broker sent something that is not an answer to the request.
    #[error("broker {broker} sent {what}")]
    Garbage {
        /// The broker.
        broker: String,
        /// What was wrong.
        what: String,
    },
    /// The broker answered with an error this request does not retry.
    #[error("broker {broker} answered {what} with {error}")]
    Refused {
        /// The broker.
        broker: String,
        /// The request.
        what: &'static str,
        /// The answer (`NAME (code)`).
        error: String,
        /// The answer's code.
        code: i16,
    },
    /// No broker in the list answered.
    #[error("no broker of {brokers} answered: {last}")]
    NoBroker {
        /// The bootstrap list.
        brokers: String,
        /// The last error.
        last: String,
    },
    /// Retriable answers until the deadline.
    #[error("gave up after {waited:?}: {last}")]
    Deadline {
        /// How long it tried.
        waited: Duration,
        /// The last answer.
        last: String,
    },
}

/// A name a sweep fenced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fenced {
    /// The transactional id.
    pub name: String,
    /// Whether it held an open transaction (which the fence aborted).
    pub aborted: bool,
}

/// The codec's own error, as text with its chain (the codec reports
/// `anyhow` errors, which are not `std::error::Error`).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CodecError(pub String);

/// Transaction requests to one Kafka cluster.
#[derive(Clone, Debug)]
pub struct TxnWire {
    bootstrap: Vec<String>,
    timeout: Duration,
}

impl TxnWire {
    /// Requests to the cluster behind `bootstrap` (`HOST:PORT` each), each
    /// connection and answer waited for at most `timeout`.
    pub fn new(bootstrap: Vec<String>, timeout: Duration) -> TxnWire {
        TxnWire { bootstrap, timeout }
    }

    /// The broker that coordinates transactional id `name`.
    pub fn coordinator(&self, name: &str) -> Result<String, WireError> {
        let mut last = String::new();
        for broker in &self.bootstrap {
            let mut conn = match Conn::open(broker, self.timeout) {
                Ok(conn) => conn,
                Err(error) => {
                    last = error.to_string();
                    continue;
                }
            };
            let request = FindCoordinatorRequest::default()
                .with_key_type(1)
                .with_key(StrBytes::from_string(name.to_owned()));
            let response: FindCoordinatorResponse =
                match conn.call(ApiKey::FindCoordinator, &request, FIND_COORDINATOR_VERSION) {
                    Ok(response) => response,
                    // This broker went away mid-request: ask the next one.
                    Err(error @ WireError::Io { .. }) => {
                        last = error.to_string();
                        continue;
                    }
                    Err(error) => return Err(error),
                };
            if response.error_code != 0 {
                return Err(WireError::Refused {
                    broker: broker.clone(),
                    what: "FindCoordinator",
                    error: code_name(response.error_code),
                    code: response.error_code,
                });
            }
            return Ok(format!("{}:{}", response.host.as_str(), response.port));
        }
        Err(WireError::NoBroker {
            brokers: self.bootstrap.join(","),
            last,
        })
    }

    /// `EndTxn` for `name` held by `pair`, once.
    pub fn end_txn(
        &self,
        name: &str,
        pair: ProducerPair,
        commit: bool,
    ) -> Result<EndTxnAnswer, WireError> {
        let mut conn = Conn::open(&self.coordinator(name)?, self.timeout)?;
        let request = EndTxnRequest::default()
            .with_transactional_id(TransactionalId(StrBytes::from_string(name.to_owned())))
            .with_producer_id(ProducerId(pair.id))
            .with_producer_epoch(pair.epoch)
            .with_committed(commit);
        let response: EndTxnResponse = conn.call(ApiKey::EndTxn, &request, END_TXN_VERSION)?;
        Ok(answer_to_end_txn(response.error_code))
    }

    /// Commits `pending` by its id and session, retrying retriable answers
    /// until `within` has passed.
    pub fn commit(&self, pending: &PendingTxn, within: Duration) -> CommitOutcome {
        let started = Instant::now();
        loop {
            let last = match self.end_txn(&pending.name, pending.pair, true) {
                Ok(EndTxnAnswer::Done) => return CommitOutcome::Committed,
                Ok(EndTxnAnswer::Lost(answer)) => return CommitOutcome::Lost { answer },
                Ok(EndTxnAnswer::Refused(answer)) => {
                    return CommitOutcome::Unreachable {
                        cause: format!("the coordinator refused the commit with {answer}"),
                    };
                }
                Ok(EndTxnAnswer::Retry(answer)) => answer,
                Err(error) => error.to_string(),
            };
            if started.elapsed() + BACKOFF > within {
                return CommitOutcome::Unreachable {
                    cause: format!("gave up after {:?}: {last}", started.elapsed()),
                };
            }
            std::thread::sleep(BACKOFF);
        }
    }

    /// What the coordinator holds for `name` (`None`: it does not know
    /// the id, and nothing was created by asking).
    pub fn describe(&self, name: &str) -> Result<Option<TxnDescription>, WireError> {
        let coordinator = self.coordinator(name)?;
        let mut conn = Conn::open(&coordinator, self.timeout)?;
        let request =
            DescribeTransactionsRequest::default().with_transactional_ids(vec![TransactionalId(
                StrBytes::from_string(name.to_owned()),
            )]);
        let response: DescribeTransactionsResponse =
            conn.call(ApiKey::DescribeTransactions, &request, 0)?;
        let state = response
            .transaction_states
            .into_iter()
            .next()
            .ok_or_else(|| WireError::Garbage {
                broker: coordinator.clone(),
                what: "a DescribeTransactions answer without the id".into(),
            })?;
        match ResponseError::try_from_code(state.error_code) {
            None => {}
            Some(ResponseError::TransactionalIdNotFound) => return Ok(None),
            Some(_) => {
                return Err(WireError::Refused {
                    broker: coordinator,
                    what: "DescribeTransactions",
                    error: code_name(state.error_code),
                    code: state.error_code,
                });
            }
        }
        let mut partitions: Vec<TopicPartition> = state
            .topics
            .iter()
            .flat_map(|topic| {
                topic.partitions.iter().map(|partition| TopicPartition {
                    topic: topic.topic.0.as_str().to_owned(),
                    partition: *partition,
                })
            })
            .collect();
        partitions.sort();
        Ok(Some(TxnDescription {
            state: match state.transaction_state.as_str() {
                "Empty" => DescribedState::Empty,
                "Ongoing" => DescribedState::Ongoing,
                other => DescribedState::Other(other.to_owned()),
            },
            pair: ProducerPair {
                id: state.producer_id.0,
                epoch: state.producer_epoch,
            },
            partitions,
        }))
    }

    /// Fences `subtask`'s names from `k = from` upward (`names`' scheme)
    /// up to the first one the coordinator does not know: a new session
    /// (`InitProducerId`) aborts what each holds and shuts out every older
    /// producer of it. Asking about an unknown id creates nothing. Retries
    /// retriable answers for each name until `within` has passed since
    /// that name's first try. Returns the names fenced, each saying
    /// whether it held an open transaction.
    pub fn sweep(
        &self,
        names: &crate::txn::TxnNames,
        subtask: u32,
        from: u64,
        within: Duration,
    ) -> Result<Vec<Fenced>, WireError> {
        let mut fenced = Vec::new();
        for k in from.. {
            let name = names.name(subtask, k);
            let known = self.retrying(within, &name, || {
                let Some(described) = self.describe(&name)? else {
                    return Ok(None);
                };
                self.init_producer_id(&name)?;
                Ok(Some(described.state == DescribedState::Ongoing))
            })?;
            let Some(aborted) = known else {
                break;
            };
            fenced.push(Fenced { name, aborted });
        }
        Ok(fenced)
    }

    /// Creates each id of `names` (or fences it, if it exists): an empty
    /// session, no transaction. Retries retriable answers for each name
    /// until `within` has passed since its first try.
    pub fn reserve(&self, names: &[String], within: Duration) -> Result<(), WireError> {
        for name in names {
            self.retrying(within, name, || self.init_producer_id(name))?;
        }
        Ok(())
    }

    /// Runs `step` until it succeeds, fails for good, or `within` has
    /// passed.
    fn retrying<T>(
        &self,
        within: Duration,
        name: &str,
        mut step: impl FnMut() -> Result<T, WireError>,
    ) -> Result<T, WireError> {
        let started = Instant::now();
        loop {
            let last = match step() {
                Ok(value) => return Ok(value),
                Err(WireError::Refused { error, code, .. }) if is_retriable(code) => error,
                Err(
                    error @ (WireError::Refused { .. }
                    | WireError::Garbage { .. }
                    | WireError::Codec { .. }),
                ) => return Err(error),
                Err(error) => error.to_string(),
            };
            if started.elapsed() + BACKOFF > within {
                return Err(WireError::Deadline {
                    waited: started.elapsed(),
                    last: format!("{name}: {last}"),
                });
            }
            std::thread::sleep(BACKOFF);
        }
    }

    /// A new session for `name`: aborts what it holds, fences older
    /// producers, creates the id if it is new.
    fn init_producer_id(&self, name: &str) -> Result<ProducerPair, WireError> {
        let coordinator = self.coordinator(name)?;
        let mut conn = Conn::open(&coordinator, self.timeout)?;
        let request = InitProducerIdRequest::default()
            .with_transactional_id(Some(TransactionalId(StrBytes::from_string(
                name.to_owned(),
            ))))
            .with_transaction_timeout_ms(60_000)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1);
        let response: InitProducerIdResponse =
            conn.call(ApiKey::InitProducerId, &request, INIT_PRODUCER_ID_VERSION)?;
        if response.error_code != 0 {
            return Err(WireError::Refused {
                broker: coordinator,
                what: "InitProducerId",
                error: code_name(response.error_code),
                code: response.error_code,
            });
        }
        Ok(ProducerPair {
            id: response.producer_id.0,
            epoch: response.producer_epoch,
        })
    }
}

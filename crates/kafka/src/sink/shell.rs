//! The exactly-once writer's shell: carries out [`SinkTxnCore`]'s commands
//! with librdkafka producers and [`TxnWire`], and feeds each outcome back —
//! the one place they are executed. After each `Begin` it prepares the
//! producer of the name the next barrier normally brings, off the task
//! thread ([`Preparer`], whose docs say why that is safe).

use std::collections::{BTreeMap, VecDeque};

use std::sync::Arc;
use std::time::Instant;

use holdfast_dataflow::OperatorContext;
use holdfast_dataflow::metrics::ConnectorMetrics;
use holdfast_dataflow::time::Clock;
use holdfast_executor::{TaskFailure, TransactionState, TransactionStatus};

use super::SinkOptions;
use super::closer::Closer;
use super::prepare::{INIT_SLICE, Preparer, Taken};
use super::producer::SinkProducer;
use crate::metrics::{SINK_BEGIN_MICROS, SINK_BEGINS, SINK_OPEN_SINCE, SINK_TRANSACTIONS};
use crate::txn::{
    CommitOutcome, DescribedState, FlushReport, Phase, ProducerPair, SinkTxnCore, SinkTxnState,
    TxnCommand, TxnFailure, TxnInput, TxnNames,
};
use crate::wire::TxnWire;

/// A producer initialised for a transactional id, in a transaction (local
/// to librdkafka until the first record), and the session the coordinator
/// showed for the id right after.
struct Opened {
    producer: SinkProducer,
    pair: ProducerPair,
}

/// One exactly-once subtask's transactions.
pub(crate) struct TxnShell {
    core: SinkTxnCore,
    names: TxnNames,
    wire: TxnWire,
    options: SinkOptions,
    producers: BTreeMap<String, SinkProducer>,
    closer: Closer,
    /// The producer of the name after the current one, made ahead.
    preparer: Preparer<Opened>,
    /// The state the last barrier produced.
    snapshot: Option<SinkTxnState>,
    metrics: Arc<ConnectorMetrics>,
    clock: Arc<dyn Clock>,
    subtask: u32,
    /// When each transaction not yet committed (open or pending) began,
    /// in ms since the Unix epoch: the oldest is what
    /// `transaction.timeout.ms` threatens.
    began: BTreeMap<String, i64>,
    /// Where the transactions are reported for the job's page.
    ctx: OperatorContext,
}

impl TxnShell {
    pub(crate) fn new(options: &SinkOptions, names: TxnNames, ctx: &OperatorContext) -> TxnShell {
        let subtask = ctx.subtask();
        let brokers = options
            .bootstrap
            .split(',')
            .map(|b| b.trim().to_owned())
            .filter(|b| !b.is_empty())
            .collect();
        let closer = Closer::start();
        let discard = closer.clone();
        TxnShell {
            core: SinkTxnCore::new(names.clone(), subtask),
            names,
            wire: TxnWire::new(brokers, options.request_timeout),
            options: options.clone(),
            producers: BTreeMap::new(),
            closer,
            preparer: Preparer::new(move |opened: Opened| discard.close(opened.producer)),
            snapshot: None,
            metrics: Arc::clone(ctx.connector_metrics()),
            clock: Arc::clone(ctx.clock()),
            subtask,
            began: BTreeMap::new(),
            ctx: ctx.clone(),
        }
    }

    /// The producer of the transaction written into now.
    pub(crate) fn current(&self) -> Result<&SinkProducer, TaskFailure> {
        self.core
            .current_name()
            .and_then(|name| self.producers.get(name))
            .ok_or_else(|| {
                TaskFailure::new(format!(
                    "the Kafka sink to topic {} on {} has no open transaction",
                    self.options.topic, self.options.bootstrap
                ))
            })
    }

    /// The state the last barrier produced.
    pub(crate) fn take_snapshot(&mut self) -> Option<SinkTxnState> {
        self.snapshot.take()
    }

    /// Feeds `input` to the core and carries out what follows.
    pub(crate) fn drive(&mut self, input: TxnInput) -> Result<(), TaskFailure> {
        let mut queue: VecDeque<TxnCommand> = self.core.handle(input).into();
        while let Some(command) = queue.pop_front() {
            let outcome = match command {
                TxnCommand::Commit(entry) => {
                    let restoring = *self.core.phase() == Phase::Restoring;
                    let outcome = if restoring && self.already_committed(&entry) {
                        tracing::info!(
                            transaction = %entry.name,
                            checkpoint = entry.checkpoint.0,
                            "Kafka sink: the transaction of checkpoint {} was committed already \
                             (its writer was told before it stopped); nothing to recover",
                            entry.checkpoint
                        );
                        CommitOutcome::Committed
                    } else {
                        let outcome = self.wire.commit(&entry, self.options.commit_within);
                        if outcome == CommitOutcome::Committed {
                            // A restore commits what a dead writer was
                            // never told to.
                            let how = if restoring { "recovered" } else { "committed" };
                            self.count_transaction(how, 1);
                        }
                        outcome
                    };
                    tracing::info!(
                        transaction = %entry.name,
                        checkpoint = entry.checkpoint.0,
                        ?outcome,
                        "Kafka sink: committing the transaction of checkpoint {}",
                        entry.checkpoint
                    );
                    Some(TxnInput::Committed {
                        name: entry.name,
                        outcome,
                    })
                }
                TxnCommand::Sweep { from } => Some(TxnInput::Swept {
                    outcome: self.sweep(&from),
                }),
                TxnCommand::Begin { name, reserve } => {
                    let outcome = self.begin(&name, &reserve);
                    if outcome.is_ok() {
                        self.began.insert(name.clone(), self.clock.now());
                        self.prepare_after(&name);
                    }
                    Some(TxnInput::Begun { name, outcome })
                }
                TxnCommand::Flush { name } => Some(TxnInput::Flushed {
                    outcome: self.flush(&name),
                }),
                TxnCommand::Close { name } => {
                    self.began.remove(&name);
                    if let Some(producer) = self.producers.remove(&name) {
                        self.closer.close(producer);
                    }
                    None
                }
                TxnCommand::Snapshot(state) => {
                    self.snapshot = Some(state);
                    None
                }
                TxnCommand::Fail(failure) => {
                    tracing::error!(
                        %failure,
                        topic = %self.options.topic,
                        bootstrap = %self.options.bootstrap,
                        "Kafka sink: {failure}"
                    );
                    let message = format!(
                        "the Kafka sink to topic {} on {} failed",
                        self.options.topic, self.options.bootstrap
                    );
                    // A lost transaction or another sink's state stays so
                    // through any restart: the job fails instead of
                    // looping through restores that fail the same way.
                    return Err(match failure {
                        TxnFailure::Lost { .. } | TxnFailure::ForeignState { .. } => {
                            TaskFailure::unrecoverable(message, failure)
                        }
                        _ => TaskFailure::with_source(message, failure),
                    });
                }
            };
            if let Some(outcome) = outcome {
                queue.extend(self.core.handle(outcome));
            }
        }
        self.report();
        Ok(())
    }

    /// The transactions not committed yet, to the oldest-open gauge and
    /// the job's page.
    fn report(&self) {
        match self.began.values().min() {
            Some(oldest) => self.metrics.set(
                SINK_OPEN_SINCE,
                self.subtask_label(),
                oldest.div_euclid(1000),
            ),
            None => self.metrics.remove(SINK_OPEN_SINCE, &self.subtask_label()),
        }
        let current = self.core.current_name();
        let mut transactions: Vec<TransactionStatus> = self
            .began
            .iter()
            .map(|(name, started_ms)| TransactionStatus {
                id: name.clone(),
                started_ms: *started_ms,
                state: if current == Some(name.as_str()) {
                    TransactionState::Open
                } else {
                    TransactionState::AwaitingCommit
                },
            })
            .collect();
        transactions.sort_by_key(|t| t.started_ms);
        self.ctx.report_connector(Vec::new(), transactions);
    }

    /// Whether the coordinator shows `entry` committed already (by its
    /// session): a writer told before it stopped. Unknown answers say no,
    /// and the commit that follows decides.
    fn already_committed(&self, entry: &crate::txn::PendingTxn) -> bool {
        matches!(
            self.wire.describe(&entry.name),
            Ok(Some(description))
                if description.pair == entry.pair
                    && description.state == DescribedState::Other("CompleteCommit".into())
        )
    }

    fn sweep(&self, from: &[(u32, u64)]) -> Result<(), String> {
        for (subtask, k) in from {
            let fenced = self
                .wire
                .sweep(&self.names, *subtask, *k, self.options.commit_within)
                .map_err(|error| error.to_string())?;
            let aborted: Vec<&str> = fenced
                .iter()
                .filter(|f| f.aborted)
                .map(|f| f.name.as_str())
                .collect();
            self.count_transaction("aborted", aborted.len() as u64);
            if !fenced.is_empty() {
                tracing::info!(
                    fenced = fenced.len(),
                    ?aborted,
                    "Kafka sink: fenced {} id(s) from {} up that earlier attempts used; {} held an \
                     open transaction, now aborted (their checkpoints never completed, so their \
                     records were never promised)",
                    fenced.len(),
                    self.names.name(*subtask, *k),
                    aborted.len()
                );
            }
        }
        Ok(())
    }

    fn subtask_label(&self) -> Vec<(&'static str, String)> {
        vec![("subtask", self.subtask.to_string())]
    }

    fn count_transaction(&self, outcome: &str, n: u64) {
        if n > 0 {
            let mut labels = self.subtask_label();
            labels.push(("outcome", outcome.to_owned()));
            self.metrics.add(SINK_TRANSACTIONS, labels, n);
        }
    }

    /// Begins `name`: with the producer prepared for it when the barrier
    /// brought the name expected (nothing to reserve), else on the task
    /// thread as without a preparer. Counts which, and the time the task
    /// thread spent.
    fn begin(&mut self, name: &str, reserve: &[String]) -> Result<ProducerPair, String> {
        let started = Instant::now();
        let prepared = if reserve.is_empty() {
            // The preparation has its own deadlines (init within the
            // request timeout); this bound only keeps a stuck one from
            // holding the barrier for ever.
            self.preparer
                .take(name, 2 * self.options.request_timeout + INIT_SLICE)
        } else {
            // Ids were skipped: what was prepared is one of them, which
            // the reserve below creates anyway.
            self.preparer.discard();
            Taken::Nothing
        };
        let how = match prepared {
            Taken::Ready(_) => "prepared",
            Taken::Failed(_) | Taken::Nothing => "created",
        };
        let opened = match prepared {
            Taken::Ready(opened) => Ok(opened),
            Taken::Failed(cause) => {
                tracing::debug!(
                    transaction = %name,
                    %cause,
                    "Kafka sink: preparing the producer of {name} failed; creating it now"
                );
                self.create(name, reserve)
            }
            Taken::Nothing => self.create(name, reserve),
        };
        let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.metrics
            .add(SINK_BEGIN_MICROS, self.subtask_label(), micros);
        let Opened { producer, pair } = opened?;
        let mut labels = self.subtask_label();
        labels.push(("producer", how.to_owned()));
        self.metrics.add(SINK_BEGINS, labels, 1);
        tracing::debug!(
            transaction = %name,
            producer = how,
            micros,
            "Kafka sink: began {name} ({how} producer) in {micros} µs of the task thread"
        );
        self.producers.insert(name.to_owned(), producer);
        Ok(pair)
    }

    /// Reserves `reserve`, then opens `name` on the task thread.
    fn create(&self, name: &str, reserve: &[String]) -> Result<Opened, String> {
        self.wire
            .reserve(reserve, self.options.commit_within)
            .map_err(|error| format!("reserving {}: {error}", reserve.join(", ")))?;
        let timeout = self.options.request_timeout;
        open(&self.properties(name), &self.wire, name, |producer| {
            producer.begin(timeout).map_err(|error| error.to_string())
        })
    }

    /// After `name` began: prepares the name the next barrier brings when
    /// no checkpoint id is skipped, `k + 1` of the `k` just begun — unless
    /// the core holds that name pending: initialising it would fence a
    /// transaction a checkpoint promised ([`Preparer`] says when).
    fn prepare_after(&mut self, name: &str) {
        // The core's state names the `k` of the transaction open now.
        let k = self.core.state().open_from;
        if self.names.name(self.subtask, k) != name {
            return;
        }
        let next = self.names.name(self.subtask, k + 1);
        if self
            .core
            .pending()
            .iter()
            .any(|pending| pending.name == next)
        {
            return;
        }
        let (properties, wire) = (self.properties(&next), self.wire.clone());
        let timeout = self.options.request_timeout;
        let id = next.clone();
        self.preparer.start(next, move |unwanted| {
            open(&properties, &wire, &id, |producer| {
                producer.begin_unless(timeout, INIT_SLICE, unwanted)
            })
        });
    }

    /// The properties of the producer of transactional id `name`.
    fn properties(&self, name: &str) -> BTreeMap<String, String> {
        let mut properties = super::writer::base_properties(&self.options);
        properties.insert("transactional.id".into(), name.to_owned());
        properties.insert(
            "transaction.timeout.ms".into(),
            self.options.transaction_timeout.as_millis().to_string(),
        );
        properties
    }

    fn flush(&self, name: &str) -> Result<FlushReport, String> {
        let producer = self
            .producers
            .get(name)
            .ok_or_else(|| format!("no producer for {name}"))?;
        let written = producer.flush(self.options.request_timeout)?;
        let described = if written.is_empty() {
            None
        } else {
            self.wire
                .describe(name)
                .map_err(|error| error.to_string())?
        };
        Ok(FlushReport { written, described })
    }
}

/// A producer for `name`, initialised and in a transaction by `begin`,
/// with the session the coordinator shows for `name` afterwards.
fn open(
    properties: &BTreeMap<String, String>,
    wire: &TxnWire,
    name: &str,
    begin: impl FnOnce(&SinkProducer) -> Result<(), String>,
) -> Result<Opened, String> {
    let producer = SinkProducer::create(properties).map_err(|error| error.to_string())?;
    begin(&producer)?;
    let described = wire
        .describe(name)
        .map_err(|error| error.to_string())?
        .ok_or_else(|| format!("the coordinator does not know {name} right after its init"))?;
    Ok(Opened {
        producer,
        pair: described.pair,
    })
}

impl Drop for TxnShell {
    fn drop(&mut self) {
        // A preparation still working ends on its own thread; a ready one
        // goes to the closer.
        self.preparer.discard();
        self.ctx.clear_connector();
        self.metrics.remove(SINK_OPEN_SINCE, &self.subtask_label());
        for (_, producer) in std::mem::take(&mut self.producers) {
            self.closer.close(producer);
        }
    }
}

//! [`Stream`]: a stream of records of one type, and its transformations.

use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use crate::api::{Builder, KeyedStream, add_node, make_sink};
use crate::context::OperatorContext;
use crate::data::{Data, Key, Timestamp};
use crate::keys::key_hash;
use crate::ops::stateless::{FilterOp, FlatMapOp, MapOp, TryMapOp};
use crate::ops::timestamps::{AssignTimestamps, TimestampFn};
use crate::plan::kit::{EdgeOf, Kit, boxed, unbox};
use crate::plan::{AnyBox, EdgeKit, MakeOperator, Node, NodeOp, Ship};
use crate::sink::{Print, Sink};

/// A stream of `T` records: the output of one operator, with how it will be
/// shipped to the next and, if assigned, its records' event time.
pub struct Stream<T> {
    pub(crate) flow: Rc<RefCell<Builder>>,
    pub(crate) node: usize,
    pub(crate) ship: Option<Ship>,
    pub(crate) timestamps: Option<TimestampFn<T>>,
}

impl<T> Clone for Stream<T> {
    fn clone(&self) -> Self {
        Stream {
            flow: Rc::clone(&self.flow),
            node: self.node,
            ship: self.ship,
            timestamps: self.timestamps.clone(),
        }
    }
}

impl<T: Data> Stream<T> {
    pub(crate) fn new(flow: Rc<RefCell<Builder>>, node: usize) -> Stream<T> {
        Stream {
            flow,
            node,
            ship: None,
            timestamps: None,
        }
    }

    /// The edge from this stream to a new consumer.
    pub(crate) fn edge(&self) -> (usize, Option<Ship>, Arc<dyn EdgeKit>) {
        (self.node, self.ship, EdgeOf::<T>::plain())
    }

    /// Adds an operator consuming this stream and producing `U`.
    pub(crate) fn then<U: Data>(&self, name: &str, make: MakeOperator) -> Stream<U> {
        let node = add_node(
            &self.flow,
            Node::new(
                name,
                NodeOp::Operator(make),
                Some(Kit::<T>::shared()),
                Some(Kit::<U>::shared()),
            ),
            vec![self.edge()],
        );
        Stream::new(Rc::clone(&self.flow), node)
    }

    /// Sets the parallelism of the operator that produces this stream.
    pub fn set_parallelism(self, parallelism: u32) -> Stream<T> {
        self.flow.borrow_mut().plan.nodes[self.node].parallelism = Some(parallelism);
        self
    }

    /// Gives the operator that produces this stream a stable id (Flink's
    /// `uid`): its state is filed under it in checkpoints and savepoints, so
    /// a later version of the job finds it however the operator is renamed
    /// or the job reshaped around it. Without one the id is the operator's
    /// name (a warning at submission says so). Unique in the job; not empty.
    pub fn uid(self, uid: &str) -> Stream<T> {
        self.flow.borrow_mut().plan.nodes[self.node].uid = Some(uid.to_owned());
        self
    }

    /// `f` applied to every record.
    pub fn map<U: Data>(
        &self,
        name: &str,
        f: impl FnMut(T) -> U + Clone + Send + Sync + 'static,
    ) -> Stream<U> {
        let make: MakeOperator = Arc::new(move |ctx: &OperatorContext, out: AnyBox| {
            let next = unbox::<U>(out, ctx.operator())?;
            Ok(boxed::<T>(Box::new(MapOp::new(f.clone(), next))))
        });
        self.then(name, make)
    }

    /// The records for which `f` holds (keeps event time).
    pub fn filter(
        &self,
        name: &str,
        f: impl FnMut(&T) -> bool + Clone + Send + Sync + 'static,
    ) -> Stream<T> {
        let make: MakeOperator = Arc::new(move |ctx: &OperatorContext, out: AnyBox| {
            let next = unbox::<T>(out, ctx.operator())?;
            Ok(boxed::<T>(Box::new(FilterOp::new(f.clone(), next))))
        });
        let mut stream = self.then::<T>(name, make);
        stream.timestamps = self.timestamps.clone();
        stream
    }

    /// Every record `f` returns for every record.
    pub fn flat_map<U: Data, I: IntoIterator<Item = U> + 'static>(
        &self,
        name: &str,
        f: impl FnMut(T) -> I + Clone + Send + Sync + 'static,
    ) -> Stream<U> {
        let make: MakeOperator = Arc::new(move |ctx: &OperatorContext, out: AnyBox| {
            let next = unbox::<U>(out, ctx.operator())?;
            Ok(boxed::<T>(Box::new(FlatMapOp::new(f.clone(), next))))
        });
        self.then(name, make)
    }

    /// `f` applied to every record; a record for which `f` fails is counted
    /// as malformed (metric `holdfast_dataflow_records_total{kind="malformed"}`),
    /// logged at most every 10 s with the error, and skipped — it does not
    /// fail the job.
    pub fn try_map<U: Data, E: fmt::Display + 'static>(
        &self,
        name: &str,
        f: impl FnMut(T) -> Result<U, E> + Clone + Send + Sync + 'static,
    ) -> Stream<U> {
        let make: MakeOperator = Arc::new(move |ctx: &OperatorContext, out: AnyBox| {
            let next = unbox::<U>(out, ctx.operator())?;
            Ok(boxed::<T>(Box::new(TryMapOp::new(
                f.clone(),
                ctx.clone(),
                next,
            ))))
        });
        self.then(name, make)
    }

    /// The same records with event time `timestamp(record)`, and watermarks
    /// trailing the largest timestamp seen by `max_out_of_orderness`
    /// (Flink's bounded-out-of-orderness strategy): records at most that
    /// much out of order are still on time for event-time windows.
    pub fn assign_timestamps(
        &self,
        name: &str,
        timestamp: impl Fn(&T) -> Timestamp + Send + Sync + 'static,
        max_out_of_orderness: Duration,
    ) -> Stream<T> {
        let timestamp: TimestampFn<T> = Arc::new(timestamp);
        let delay = max_out_of_orderness.as_millis().min(i64::MAX as u128) as i64;
        let interval = self.flow.borrow().plan.watermark_interval_ms;
        let ts = Arc::clone(&timestamp);
        let make: MakeOperator = Arc::new(move |ctx: &OperatorContext, out: AnyBox| {
            let next = unbox::<T>(out, ctx.operator())?;
            Ok(boxed::<T>(Box::new(AssignTimestamps::new(
                Arc::clone(&ts),
                delay,
                interval,
                Arc::clone(ctx.clock()),
                next,
            ))))
        });
        let mut stream = self.then::<T>(name, make);
        stream.timestamps = Some(timestamp);
        stream
    }

    /// Says how to read the event time of this stream's records, without
    /// a new operator and without new watermarks: for a stream whose
    /// records changed type after [`assign_timestamps`](Self::assign_timestamps)
    /// (the watermarks made there still flow through every operator).
    pub fn with_timestamps(
        &self,
        timestamp: impl Fn(&T) -> Timestamp + Send + Sync + 'static,
    ) -> Stream<T> {
        Stream {
            timestamps: Some(Arc::new(timestamp)),
            ..self.clone()
        }
    }

    /// Partitions by `key(record)`: every record of a key reaches the same
    /// subtask of the next operator, which may keep state per key.
    pub fn key_by<K: Key>(
        &self,
        key: impl Fn(&T) -> K + Send + Sync + 'static,
    ) -> KeyedStream<T, K> {
        KeyedStream::new(self.clone(), Arc::new(key))
    }

    /// Ships round-robin to every subtask of the next operator.
    pub fn rebalance(&self) -> Stream<T> {
        self.shipped(Ship::Rebalance)
    }

    /// Ships every record to every subtask of the next operator.
    pub fn broadcast(&self) -> Stream<T> {
        self.shipped(Ship::Broadcast)
    }

    /// Ships subtask `i`'s records to subtask `i` of the next operator (the
    /// default when both have the same parallelism; then they chain).
    pub fn forward(&self) -> Stream<T> {
        self.shipped(Ship::Forward)
    }

    fn shipped(&self, ship: Ship) -> Stream<T> {
        Stream {
            ship: Some(ship),
            ..self.clone()
        }
    }

    /// The records of this stream and of `others`, in operator `name` (event
    /// time is kept if every input has the same kind of timestamps; assign
    /// timestamps again after a union otherwise).
    pub fn union(&self, name: &str, others: &[&Stream<T>]) -> Stream<T> {
        let mut edges = vec![self.edge()];
        let mut same_flow = true;
        for other in others {
            same_flow &= Rc::ptr_eq(&self.flow, &other.flow);
            edges.push(other.edge());
        }
        if !same_flow {
            self.flow.borrow_mut().error(format!(
                "union {name:?} joins streams of different dataflows"
            ));
            edges.truncate(1);
        }
        let make: MakeOperator = Arc::new(|_: &OperatorContext, out: AnyBox| Ok(out));
        let node = add_node(
            &self.flow,
            Node::new(
                name,
                NodeOp::Operator(make),
                Some(Kit::<T>::shared()),
                Some(Kit::<T>::shared()),
            ),
            edges,
        );
        let mut stream = Stream::new(Rc::clone(&self.flow), node);
        if others.iter().all(|o| o.timestamps.is_some()) {
            stream.timestamps = self.timestamps.clone();
        }
        stream
    }

    /// Writes the records to `sink`, in operator `name`.
    pub fn sink(&self, name: &str, sink: impl Sink<T>) -> SinkHandle {
        let (make, check) = make_sink(sink);
        self.flow
            .borrow_mut()
            .plan
            .sink_checks
            .push((name.to_owned(), check));
        let node = add_node(
            &self.flow,
            Node::new(name, NodeOp::Sink(make), Some(Kit::<T>::shared()), None),
            vec![self.edge()],
        );
        SinkHandle {
            flow: Rc::clone(&self.flow),
            node,
        }
    }

    /// Prints every record on standard output, in operator `name`.
    pub fn print(&self, name: &str) -> SinkHandle
    where
        T: fmt::Display,
    {
        self.sink(name, Print::new())
    }
}

/// A sink in the plan, to set its parallelism.
pub struct SinkHandle {
    flow: Rc<RefCell<Builder>>,
    node: usize,
}

impl SinkHandle {
    /// Sets the sink's parallelism.
    pub fn set_parallelism(self, parallelism: u32) -> SinkHandle {
        self.flow.borrow_mut().plan.nodes[self.node].parallelism = Some(parallelism);
        self
    }

    /// Gives the sink a stable id (see [`Stream::uid`]).
    pub fn uid(self, uid: &str) -> SinkHandle {
        self.flow.borrow_mut().plan.nodes[self.node].uid = Some(uid.to_owned());
        self
    }
}

/// The key hash for hash partitioning by `key`.
pub(crate) fn key_edge<T: Data, K: Key>(
    key: Arc<dyn Fn(&T) -> K + Send + Sync>,
) -> Arc<dyn EdgeKit> {
    EdgeOf::<T>::keyed(Arc::new(move |record: &T| key_hash(&key(record))))
}

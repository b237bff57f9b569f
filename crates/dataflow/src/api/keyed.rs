//! [`KeyedStream`]: a stream partitioned by key, and its keyed operators.

use std::rc::Rc;
use std::sync::Arc;

use crate::api::stream::key_edge;
use crate::api::{Stream, WindowedStream, add_node};
use crate::context::OperatorContext;
use crate::data::{Data, Key};
use crate::ops::keyed::{Emit, KeyFn, KeyedAggregate, Reduce};
use crate::plan::kit::{Kit, boxed, unbox};
use crate::plan::{AnyBox, MakeOperator, Node, NodeOp, Ship};
use crate::process::{KeyedProcessFunction, KeyedProcessOp};
use crate::window::{Aggregate, Count, Sum, SumValue, WindowSpec};

/// A stream whose records are partitioned by key: each key's records reach
/// one subtask of the next operator, which keeps that key's state.
pub struct KeyedStream<T, K> {
    pub(crate) stream: Stream<T>,
    pub(crate) key: KeyFn<T, K>,
}

impl<T: Data, K: Key> KeyedStream<T, K> {
    pub(crate) fn new(stream: Stream<T>, key: KeyFn<T, K>) -> KeyedStream<T, K> {
        KeyedStream { stream, key }
    }

    /// Adds a keyed operator fed by a hash-partitioned edge.
    pub(crate) fn then<U: Data>(&self, name: &str, make: MakeOperator) -> Stream<U> {
        let flow = &self.stream.flow;
        let mut keyed = Node::new(
            name,
            NodeOp::Operator(make),
            Some(Kit::<T>::shared()),
            Some(Kit::<U>::shared()),
        );
        keyed.keeps_state = true;
        let node = add_node(
            flow,
            keyed,
            vec![(
                self.stream.node,
                Some(Ship::Hash),
                key_edge::<T, K>(Arc::clone(&self.key)),
            )],
        );
        Stream::new(Rc::clone(flow), node)
    }

    /// The running reduction of each key's records: for every record, the
    /// reduction of its key's records so far (Flink's rolling `reduce`).
    pub fn reduce(
        &self,
        name: &str,
        f: impl FnMut(&T, &T) -> T + Clone + Send + Sync + 'static,
    ) -> Stream<T> {
        let key = Arc::clone(&self.key);
        let make: MakeOperator = Arc::new(move |ctx: &OperatorContext, out: AnyBox| {
            let next = unbox::<T>(out, ctx.operator())?;
            Ok(boxed::<T>(Box::new(Reduce::new(
                ctx,
                Arc::clone(&key),
                f.clone(),
                next,
            )?)))
        });
        self.then(name, make)
    }

    /// The running aggregate of each key's records: for every record,
    /// `(key, aggregate of its key's records so far)`.
    pub fn aggregate<A>(&self, name: &str, aggregate: A) -> Stream<(K, A::Out)>
    where
        A: Aggregate<T> + Clone + Sync,
        A::Out: Data,
    {
        self.keyed_aggregate(name, aggregate, Emit::EveryRecord)
    }

    /// Each key's aggregate over all its records, emitted once per key when
    /// the input ends (a bounded job's final result, as in Flink's batch
    /// execution); nothing is emitted before.
    pub fn aggregate_at_end<A>(&self, name: &str, aggregate: A) -> Stream<(K, A::Out)>
    where
        A: Aggregate<T> + Clone + Sync,
        A::Out: Data,
    {
        self.keyed_aggregate(name, aggregate, Emit::AtEnd)
    }

    fn keyed_aggregate<A>(&self, name: &str, aggregate: A, emit: Emit) -> Stream<(K, A::Out)>
    where
        A: Aggregate<T> + Clone + Sync,
        A::Out: Data,
    {
        let key = Arc::clone(&self.key);
        let make: MakeOperator = Arc::new(move |ctx: &OperatorContext, out: AnyBox| {
            let next = unbox::<(K, A::Out)>(out, ctx.operator())?;
            Ok(boxed::<T>(Box::new(KeyedAggregate::new(
                ctx,
                Arc::clone(&key),
                aggregate.clone(),
                emit,
                next,
            )?)))
        });
        self.then(name, make)
    }

    /// Each record through `function`, a stateful operator of your own
    /// (Flink's `KeyedProcessFunction`): keyed value, map and list state
    /// and event- and processing-time timers, all checkpointed (see
    /// [`process`](crate::process)). Each subtask runs a clone of
    /// `function`.
    pub fn process<O, F>(&self, name: &str, function: F) -> Stream<O>
    where
        O: Data,
        F: KeyedProcessFunction<K, T, O> + Clone + Sync,
    {
        let key = Arc::clone(&self.key);
        let make: MakeOperator = Arc::new(move |ctx: &OperatorContext, out: AnyBox| {
            let next = unbox::<O>(out, ctx.operator())?;
            Ok(boxed::<T>(Box::new(KeyedProcessOp::new(
                ctx,
                Arc::clone(&key),
                function.clone(),
                next,
            )?)))
        });
        self.then(name, make)
    }

    /// The running count of each key's records.
    pub fn count(&self, name: &str) -> Stream<(K, u64)> {
        self.aggregate(name, Count)
    }

    /// The running sum of `value(record)` over each key's records.
    pub fn sum<N: SumValue + Data>(
        &self,
        name: &str,
        value: impl Fn(&T) -> N + Clone + Send + Sync + 'static,
    ) -> Stream<(K, N)> {
        self.aggregate(name, Sum::new(value))
    }

    /// Windows over each key's records (event time by default; see
    /// [`WindowedStream`]).
    pub fn window(&self, spec: WindowSpec) -> WindowedStream<T, K> {
        WindowedStream::new(self.clone(), spec)
    }
}

impl<T, K> Clone for KeyedStream<T, K> {
    fn clone(&self) -> Self {
        KeyedStream {
            stream: self.stream.clone(),
            key: Arc::clone(&self.key),
        }
    }
}

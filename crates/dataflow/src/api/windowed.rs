//! [`WindowedStream`]: windows over a keyed stream.

use std::sync::Arc;
use std::time::Duration;

use crate::api::{KeyedStream, Stream};
use crate::context::OperatorContext;
use crate::data::{Data, Key};
use crate::ops::windowed::WindowOp;
use crate::plan::kit::{boxed, unbox};
use crate::plan::{AnyBox, MakeOperator};
use crate::window::{
    Aggregate, Count, Reduce, Sum, SumValue, TimeDomain, WindowCore, WindowResult, WindowSpec,
};

/// Tumbling or sliding windows over each key's records, in event time
/// (the default: windows fire when the watermark passes their end, records
/// up to `allowed_lateness` late update them again, later ones are dropped
/// and counted) or processing time (windows fire by the task's clock).
pub struct WindowedStream<T, K> {
    keyed: KeyedStream<T, K>,
    spec: WindowSpec,
    domain: TimeDomain,
}

impl<T: Data, K: Key> WindowedStream<T, K> {
    pub(crate) fn new(keyed: KeyedStream<T, K>, spec: WindowSpec) -> WindowedStream<T, K> {
        WindowedStream {
            keyed,
            spec,
            domain: TimeDomain::event_time(),
        }
    }

    /// Keeps each window's state `lateness` after it fired, so records that
    /// late still update it (each update emits a `Late` result). Event time
    /// only.
    pub fn allowed_lateness(mut self, lateness: Duration) -> WindowedStream<T, K> {
        self.domain = TimeDomain::EventTime {
            allowed_lateness: lateness.as_millis().min(i64::MAX as u128) as i64,
        };
        self
    }

    /// Windows by processing time (the task's clock when a record arrives)
    /// instead of event time.
    pub fn processing_time(mut self) -> WindowedStream<T, K> {
        self.domain = TimeDomain::ProcessingTime;
        self
    }

    /// Each window's aggregate per key.
    pub fn aggregate<A>(&self, name: &str, aggregate: A) -> Stream<WindowResult<K, A::Out>>
    where
        A: Aggregate<T> + Clone + Sync,
        A::Out: Data,
    {
        let (spec, domain) = (self.spec, self.domain);
        let timestamps = match domain {
            TimeDomain::ProcessingTime => None,
            TimeDomain::EventTime { .. } => match &self.keyed.stream.timestamps {
                Some(ts) => Some(Arc::clone(ts)),
                None => {
                    self.keyed.stream.flow.borrow_mut().error(format!(
                        "event-time window {name:?} is on a stream without timestamps: call \
                         assign_timestamps() before key_by(), or use processing_time()"
                    ));
                    None
                }
            },
        };
        if let Err(error) = WindowCore::<K, T, A>::new(spec, domain, aggregate.clone()) {
            self.keyed
                .stream
                .flow
                .borrow_mut()
                .error(format!("window {name:?}: {error}"));
        }
        let key = Arc::clone(&self.keyed.key);
        let make: MakeOperator = Arc::new(move |ctx: &OperatorContext, out: AnyBox| {
            let next = unbox::<WindowResult<K, A::Out>>(out, ctx.operator())?;
            let core = WindowCore::new(spec, domain, aggregate.clone()).map_err(|e| {
                holdfast_executor::TaskFailure::with_source(
                    format!("window {:?}", ctx.operator()),
                    e,
                )
            })?;
            Ok(boxed::<T>(Box::new(WindowOp::new(
                core,
                Arc::clone(&key),
                timestamps.clone(),
                ctx.clone(),
                next,
            )?)))
        });
        self.keyed.then(name, make)
    }

    /// Each window's record count per key.
    pub fn count(&self, name: &str) -> Stream<WindowResult<K, u64>> {
        self.aggregate(name, Count)
    }

    /// Each window's sum of `value(record)` per key.
    pub fn sum<N: SumValue + Data>(
        &self,
        name: &str,
        value: impl Fn(&T) -> N + Clone + Send + Sync + 'static,
    ) -> Stream<WindowResult<K, N>> {
        self.aggregate(name, Sum::new(value))
    }

    /// Each window's reduction per key (`None` never appears: a window
    /// fires only with records).
    pub fn reduce(
        &self,
        name: &str,
        f: impl Fn(&T, &T) -> T + Clone + Send + Sync + 'static,
    ) -> Stream<WindowResult<K, Option<T>>> {
        self.aggregate(name, Reduce(f))
    }
}

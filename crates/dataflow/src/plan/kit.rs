//! Typed pieces of the plan, made where a record type is known and used by
//! tasks through type-erased traits: [`StreamKit`] (fan-out, discard, input
//! decoding for a record type) and [`EdgeKit`] (the network writer of an
//! edge, with its partitioner).

use std::marker::PhantomData;
use std::sync::Arc;

use holdfast_exchange::PartitionWriter;
use holdfast_executor::TaskFailure;

use crate::data::Data;
use crate::plan::{AnyBox, Ship};
use crate::push::{BoxPush, Discard, Tee};
use crate::task::input::{InputPort, TypedInput};
use crate::task::output::{NetworkOutput, Partitioner};

/// Wraps a typed push for the type-erased plan.
pub(crate) fn boxed<T: 'static>(push: BoxPush<T>) -> AnyBox {
    Box::new(push)
}

/// Unwraps a typed push; a mismatch is a bug in plan construction, reported
/// as a task failure rather than a panic.
pub(crate) fn unbox<T: 'static>(value: AnyBox, at: &str) -> Result<BoxPush<T>, TaskFailure> {
    value.downcast::<BoxPush<T>>().map(|b| *b).map_err(|_| {
        TaskFailure::new(format!(
            "internal error: operator {at:?} was wired to a stream of another record type than {}",
            std::any::type_name::<T>()
        ))
    })
}

/// Type-erased operations on pushes of one record type.
pub(crate) trait StreamKit: Send + Sync {
    /// One push feeding every target (each a push of this type).
    fn tee(&self, targets: Vec<AnyBox>, at: &str) -> Result<AnyBox, TaskFailure>;
    /// A push that drops everything.
    fn discard(&self) -> AnyBox;
    /// An input port decoding batches of this type into `head`.
    fn input(&self, head: AnyBox, at: &str) -> Result<Box<dyn InputPort>, TaskFailure>;
}

/// The [`StreamKit`] of record type `T`.
pub(crate) struct Kit<T>(PhantomData<fn() -> T>);

impl<T: Data> Kit<T> {
    pub(crate) fn shared() -> Arc<dyn StreamKit> {
        Arc::new(Kit::<T>(PhantomData))
    }
}

impl<T: Data> StreamKit for Kit<T> {
    fn tee(&self, targets: Vec<AnyBox>, at: &str) -> Result<AnyBox, TaskFailure> {
        let mut pushes = targets
            .into_iter()
            .map(|t| unbox::<T>(t, at))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(match pushes.len() {
            0 => self.discard(),
            1 => boxed(pushes.pop().expect("one")),
            _ => boxed::<T>(Box::new(Tee::new(pushes))),
        })
    }

    fn discard(&self) -> AnyBox {
        boxed::<T>(Box::new(Discard))
    }

    fn input(&self, head: AnyBox, at: &str) -> Result<Box<dyn InputPort>, TaskFailure> {
        Ok(Box::new(TypedInput::new(unbox::<T>(head, at)?)))
    }
}

/// A record's key hash, for hash partitioning.
pub(crate) type KeyHashFn<T> = Arc<dyn Fn(&T) -> u64 + Send + Sync>;

/// Type-erased network writer of one edge.
pub(crate) trait EdgeKit: Send + Sync {
    /// A push writing this edge's records into `writer`'s subpartitions.
    fn writer(
        &self,
        ship: Ship,
        writer: PartitionWriter,
        batch_size: usize,
        max_parallelism: u32,
        meters: Arc<holdfast_executor::TaskMeters>,
    ) -> AnyBox;
}

/// The [`EdgeKit`] of an edge carrying `T`.
pub(crate) struct EdgeOf<T> {
    pub(crate) key_hash: Option<KeyHashFn<T>>,
}

impl<T: Data> EdgeOf<T> {
    pub(crate) fn plain() -> Arc<dyn EdgeKit> {
        Arc::new(EdgeOf::<T> { key_hash: None })
    }

    pub(crate) fn keyed(key_hash: KeyHashFn<T>) -> Arc<dyn EdgeKit> {
        Arc::new(EdgeOf::<T> {
            key_hash: Some(key_hash),
        })
    }
}

impl<T: Data> EdgeKit for EdgeOf<T> {
    fn writer(
        &self,
        ship: Ship,
        writer: PartitionWriter,
        batch_size: usize,
        max_parallelism: u32,
        meters: Arc<holdfast_executor::TaskMeters>,
    ) -> AnyBox {
        let partitioner = match (ship, &self.key_hash) {
            (Ship::Hash, Some(hash)) => Partitioner::Hash {
                hash: Arc::clone(hash),
                max_parallelism,
            },
            (Ship::Forward, _) => Partitioner::Forward,
            (Ship::Broadcast, _) => Partitioner::Broadcast,
            // A hash edge without a key cannot be built by the API.
            (Ship::Rebalance | Ship::Hash, _) => Partitioner::Rebalance { next: 0 },
        };
        boxed::<T>(Box::new(NetworkOutput::<T>::new(
            writer,
            partitioner,
            batch_size,
            meters,
        )))
    }
}

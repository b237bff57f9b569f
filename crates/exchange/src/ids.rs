//! Names of what the exchange moves data between: a producer attempt's
//! result partition ([`PartitionId`]), one consumer's view of one of its
//! subpartitions ([`ChannelSpec`]), and how errors name a channel
//! ([`ChannelRef`]).

use std::fmt;

use holdfast_runtime::ids::{ExecutionAttemptId, JobId};
use holdfast_runtime::wiring::DataLocation;

/// A producer attempt's result partition for one edge of the job graph.
///
/// Unique because attempt ids are unique within a job (a restart runs a new
/// attempt number) and an attempt has one partition per outgoing edge;
/// [`Exchange::create_partition`](crate::Exchange::create_partition)
/// refuses a second registration of a live id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PartitionId {
    /// The job.
    pub job: JobId,
    /// The producing attempt.
    pub producer: ExecutionAttemptId,
    /// The edge's index in the job graph.
    pub edge: u32,
}

impl fmt::Display for PartitionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/edge-{}", self.job, self.producer, self.edge)
    }
}

/// One input channel of a gate: which subpartition of which partition to
/// read, and where its producer runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelSpec {
    /// The producer's partition.
    pub partition: PartitionId,
    /// The subpartition meant for this consumer.
    pub subpartition: u32,
    /// Where the producer runs: our own TaskManager id means in memory,
    /// anything else TCP to `location.address`.
    pub location: DataLocation,
}

/// How an error names a channel: the subpartition and the peer at the
/// other end (`tm-id@host:port`, or just the TaskManager id for an
/// in-memory exchange).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelRef {
    /// The partition.
    pub partition: PartitionId,
    /// The subpartition.
    pub subpartition: u32,
    /// The other end.
    pub peer: String,
}

impl ChannelRef {
    /// The channel `spec` reads, its peer being the producer's location.
    pub fn of_spec(spec: &ChannelSpec) -> ChannelRef {
        ChannelRef {
            partition: spec.partition,
            subpartition: spec.subpartition,
            peer: describe(&spec.location),
        }
    }
}

impl fmt::Display for ChannelRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "partition {} subpartition {} (peer {})",
            self.partition, self.subpartition, self.peer
        )
    }
}

/// `tm-id@host:port` (just `tm-id` without an address): a location as
/// errors print it.
pub(crate) fn describe(location: &DataLocation) -> String {
    if location.address.is_empty() {
        return location.task_manager.clone();
    }
    format!("{}@{}", location.task_manager, location.address)
}

#[cfg(test)]
mod tests {
    use super::*;
    use holdfast_runtime::ids::TaskId;

    #[test]
    fn a_channel_prints_its_partition_and_peer() {
        let partition = PartitionId {
            job: JobId::from_u128(0xab),
            producer: ExecutionAttemptId::new(TaskId::new(1, 2), 3),
            edge: 4,
        };
        let spec = ChannelSpec {
            partition,
            subpartition: 5,
            location: DataLocation {
                task_manager: "tm-1".into(),
                address: "10.0.0.1:6121".into(),
            },
        };
        assert_eq!(
            ChannelRef::of_spec(&spec).to_string(),
            format!(
                "partition {:032x}/1.2#3/edge-4 subpartition 5 (peer tm-1@10.0.0.1:6121)",
                0xab
            )
        );
    }
}

//! The wiring of a deployed attempt on the wire ([`proto::Wiring`]) and in
//! the runtime ([`Wiring<DataLocation>`]), and the data address a
//! TaskManager registers with.
//!
//! ```text
//!  Wiring { inputs: [InputGate { edge, channels: [InputChannel { producer: Attempt,
//!                                                                location: DataLocation }] }],
//!           outputs: [ResultPartition { edge, consumers: [DataLocation] }] }
//!  DataLocation { task_manager_id, data_address }   (data_address "" = no data server)
//! ```
//!
//! Decoding checks what a peer could get wrong: producers of another job,
//! TaskManager ids that do not parse, addresses that are not `host:port`.
//! It never panics; the error names the field.

use holdfast_runtime::ids::{ExecutionAttemptId, JobId, TaskManagerId};
use holdfast_runtime::wiring::{Channel, DataLocation, InputWiring, OutputWiring, Wiring};

use super::{ConvertError, required};
use crate::proto;

/// The longest data address accepted (a host name is at most 253 bytes).
const MAX_ADDRESS_LEN: usize = 300;

impl From<&DataLocation> for proto::DataLocation {
    fn from(location: &DataLocation) -> Self {
        proto::DataLocation {
            task_manager_id: location.task_manager.clone(),
            data_address: location.address.clone(),
        }
    }
}

impl TryFrom<&proto::DataLocation> for DataLocation {
    type Error = ConvertError;

    fn try_from(wire: &proto::DataLocation) -> Result<Self, ConvertError> {
        const FIELD: &str = "DataLocation.task_manager_id";
        if wire.task_manager_id.is_empty() {
            return Err(ConvertError::Missing { field: FIELD });
        }
        wire.task_manager_id
            .parse::<TaskManagerId>()
            .map_err(|source| ConvertError::BadId {
                field: FIELD,
                source,
            })?;
        check_data_address(&wire.data_address, "DataLocation.data_address")?;
        Ok(DataLocation {
            task_manager: wire.task_manager_id.clone(),
            address: wire.data_address.clone(),
        })
    }
}

impl From<(JobId, &Wiring<DataLocation>)> for proto::Wiring {
    /// The wiring of an attempt of `job` (every producer is of `job`).
    fn from((job, wiring): (JobId, &Wiring<DataLocation>)) -> Self {
        proto::Wiring {
            inputs: wiring
                .inputs
                .iter()
                .map(|gate| proto::InputGate {
                    edge: gate.edge,
                    channels: gate
                        .channels
                        .iter()
                        .map(|channel| proto::InputChannel {
                            producer: Some((job, channel.producer).into()),
                            location: Some((&channel.location).into()),
                        })
                        .collect(),
                })
                .collect(),
            outputs: wiring
                .outputs
                .iter()
                .map(|partition| proto::ResultPartition {
                    edge: partition.edge,
                    consumers: partition.consumers.iter().map(Into::into).collect(),
                })
                .collect(),
        }
    }
}

/// The wiring of an attempt of `job` from the wire; `None` (an absent
/// field) is no inputs and no outputs. Every producer must be of `job`.
pub fn wiring(
    wire: Option<&proto::Wiring>,
    job: JobId,
) -> Result<Wiring<DataLocation>, ConvertError> {
    let Some(wire) = wire else {
        return Ok(Wiring::default());
    };
    let mut inputs = Vec::with_capacity(wire.inputs.len());
    for gate in &wire.inputs {
        let mut channels = Vec::with_capacity(gate.channels.len());
        for channel in &gate.channels {
            channels.push(Channel {
                producer: producer(channel, job)?,
                location: required(channel.location.as_ref(), "InputChannel.location")?
                    .try_into()?,
            });
        }
        inputs.push(InputWiring {
            edge: gate.edge,
            channels,
        });
    }
    let mut outputs = Vec::with_capacity(wire.outputs.len());
    for partition in &wire.outputs {
        outputs.push(OutputWiring {
            edge: partition.edge,
            consumers: partition
                .consumers
                .iter()
                .map(DataLocation::try_from)
                .collect::<Result<_, _>>()?,
        });
    }
    Ok(Wiring { inputs, outputs })
}

fn producer(channel: &proto::InputChannel, job: JobId) -> Result<ExecutionAttemptId, ConvertError> {
    const FIELD: &str = "InputChannel.producer.job_id";
    let wire = required(channel.producer.as_ref(), "InputChannel.producer")?;
    if wire.job_id.is_empty() {
        return Err(ConvertError::Missing { field: FIELD });
    }
    let (producer_job, attempt) =
        <(JobId, ExecutionAttemptId)>::try_from(wire).map_err(|error| match error {
            ConvertError::BadId { source, .. } => ConvertError::BadId {
                field: FIELD,
                source,
            },
            other => other,
        })?;
    if producer_job != job {
        return Err(ConvertError::OtherJob {
            field: FIELD,
            expected: job,
            got: producer_job,
        });
    }
    Ok(attempt)
}

/// Checks a data-exchange address: empty (no server) or `host:port` with a
/// host and a port from 1 to 65535 (`[v6]:port` for IPv6).
pub fn check_data_address(value: &str, field: &'static str) -> Result<(), ConvertError> {
    if value.is_empty() {
        return Ok(());
    }
    let bad = |reason: &str| ConvertError::BadAddress {
        field,
        value: value.chars().take(80).collect(),
        reason: reason.to_owned(),
    };
    if value.len() > MAX_ADDRESS_LEN {
        return Err(bad("too long"));
    }
    let Some((host, port)) = value.rsplit_once(':') else {
        return Err(bad("expected host:port"));
    };
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if host.is_empty() || host.contains(|c: char| c.is_whitespace() || c.is_control()) {
        return Err(bad("expected a host before the port"));
    }
    match port.parse::<u16>() {
        Ok(port) if port > 0 => Ok(()),
        _ => Err(bad("expected a port from 1 to 65535")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use holdfast_runtime::ids::TaskId;
    use proptest::prelude::*;

    fn location(tm: &str, address: &str) -> DataLocation {
        DataLocation {
            task_manager: tm.into(),
            address: address.into(),
        }
    }

    fn sample() -> Wiring<DataLocation> {
        Wiring {
            inputs: vec![InputWiring {
                edge: 0,
                channels: vec![
                    Channel {
                        producer: "0.0#3".parse().unwrap(),
                        location: location("tm-a", "10.0.0.1:7001"),
                    },
                    Channel {
                        producer: "0.1#3".parse().unwrap(),
                        location: location("tm-b", ""),
                    },
                ],
            }],
            outputs: vec![OutputWiring {
                edge: 2,
                consumers: vec![location("tm-b", ""), location("tm-a", "[::1]:7001")],
            }],
        }
    }

    #[test]
    fn a_wiring_round_trips_and_absent_is_empty() {
        let job = JobId::from_u128(9);
        let wire = proto::Wiring::from((job, &sample()));
        assert_eq!(wiring(Some(&wire), job), Ok(sample()));
        assert_eq!(wiring(None, job), Ok(Wiring::default()));
        let empty = proto::Wiring::default();
        assert_eq!(wiring(Some(&empty), job), Ok(Wiring::default()));
    }

    /// Breaks one field of a good message.
    type Corrupt = fn(&mut proto::Wiring);

    #[test]
    fn malformed_fields_are_named() {
        let job = JobId::from_u128(9);
        let good = proto::Wiring::from((job, &sample()));
        let cases: [(&str, Corrupt); 8] = [
            ("InputChannel.producer is missing", |w| {
                w.inputs[0].channels[0].producer = None
            }),
            ("InputChannel.location is missing", |w| {
                w.inputs[0].channels[1].location = None
            }),
            ("InputChannel.producer.job_id is missing", |w| {
                w.inputs[0].channels[0]
                    .producer
                    .as_mut()
                    .unwrap()
                    .job_id
                    .clear()
            }),
            ("InputChannel.producer.job_id is invalid", |w| {
                w.inputs[0].channels[0].producer.as_mut().unwrap().job_id = "zz".into()
            }),
            ("InputChannel.producer.job_id names job", |w| {
                w.inputs[0].channels[0].producer.as_mut().unwrap().job_id =
                    JobId::from_u128(8).to_string()
            }),
            ("DataLocation.task_manager_id is missing", |w| {
                w.outputs[0].consumers[0].task_manager_id.clear()
            }),
            ("DataLocation.task_manager_id is invalid", |w| {
                w.outputs[0].consumers[0].task_manager_id = "a b".into()
            }),
            ("DataLocation.data_address", |w| {
                w.inputs[0].channels[0]
                    .location
                    .as_mut()
                    .unwrap()
                    .data_address = "nohost".into()
            }),
        ];
        for (expected, corrupt) in cases {
            let mut wire = good.clone();
            corrupt(&mut wire);
            let error = wiring(Some(&wire), job).unwrap_err();
            assert!(
                error.to_string().starts_with(expected),
                "{expected}: {error}"
            );
        }
    }

    #[test]
    fn data_addresses_are_empty_or_host_and_port() {
        for ok in [
            "",
            "localhost:1",
            "10.0.0.1:65535",
            "[::1]:7000",
            "tm-3.example:80",
        ] {
            assert_eq!(check_data_address(ok, "f"), Ok(()), "{ok:?}");
        }
        let long = format!("{}:80", "h".repeat(400));
        for bad in [
            ":80",
            "host",
            "host:",
            "host:0",
            "host:70000",
            "[]:80",
            "a b:80",
            &long,
        ] {
            let error = check_data_address(bad, "RegisterTaskManagerRequest.data_address");
            let message = error.expect_err(bad).to_string();
            assert!(
                message.starts_with("RegisterTaskManagerRequest.data_address = "),
                "{message}"
            );
        }
    }

    proptest! {
        /// Whatever a peer sends, decoding answers (never panics), and what
        /// it accepts encodes back to the same message.
        #[test]
        fn garbage_never_panics(
            edges in prop::collection::vec(any::<u32>(), 0..3),
            job_ids in prop::collection::vec(
                prop_oneof![Just(format!("{:032x}", 0xab)), "[0-9a-f]{0,33}"],
                1..4,
            ),
            tms in prop::collection::vec("[a-z -]{0,6}", 1..4),
            addresses in prop::collection::vec("[a-z0-9:\\[\\]]{0,12}", 1..4),
            subtask in any::<u32>(),
        ) {
            let location = |i: usize| proto::DataLocation {
                task_manager_id: tms[i % tms.len()].clone(),
                data_address: addresses[i % addresses.len()].clone(),
            };
            let wire = proto::Wiring {
                inputs: edges.iter().enumerate().map(|(i, edge)| proto::InputGate {
                    edge: *edge,
                    channels: vec![proto::InputChannel {
                        producer: (i % 2 == 0).then(|| proto::Attempt {
                            job_id: job_ids[i % job_ids.len()].clone(),
                            vertex: 0,
                            subtask,
                            attempt: 1,
                        }),
                        location: Some(location(i)),
                    }],
                }).collect(),
                outputs: edges.iter().enumerate().map(|(i, edge)| proto::ResultPartition {
                    edge: *edge,
                    consumers: vec![location(i + 1)],
                }).collect(),
            };
            let job = JobId::from_u128(0xab);
            if let Ok(decoded) = wiring(Some(&wire), job) {
                prop_assert_eq!(proto::Wiring::from((job, &decoded)), wire);
                let tasks: Vec<TaskId> = decoded.inputs.iter()
                    .flat_map(|g| g.channels.iter().map(|c| c.producer.task)).collect();
                prop_assert!(tasks.iter().all(|t| t.subtask == subtask));
            }
        }
    }
}

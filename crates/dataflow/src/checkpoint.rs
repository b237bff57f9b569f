//! A dataflow task's side of a checkpoint: what its operators put into a
//! [`Snapshot`] when a barrier passes them, the one file a subtask writes
//! per checkpoint ([`StateFile`]), and the state an attempt is restored
//! from ([`Restored`]).
//!
//! ```text
//!  barrier n ─► op 1: snapshot.add(node, bytes now | a cheap copy to encode later)
//!            ─► op 2 … ─► network outputs: Event::Barrier(n) on every channel
//!  task: snapshot.encoder(…) ─► EncodeState (runs off the task thread) ─► TaskManager writes it
//! ```
//!
//! A part is the operator's own encoding (a source's position as JSON, a
//! keyed state's parts per key group, a sink's transactions); the file
//! wraps them with what it belongs to, so that a file of another job or
//! vertex, or garbage, is refused by name at restore.

use std::collections::BTreeMap;

use holdfast_executor::{EncodeState, TaskFailure};
use holdfast_runtime::failure::FailureKind;
use holdfast_types::CheckpointId;
use serde::{Deserialize, Serialize};

/// The first bytes of every state file.
const MAGIC: &[u8; 8] = b"HFSTATE1";
/// The state file's format version: 2 files each operator's part under
/// its id (`uid`, else its name); version 1 filed it under its position in
/// the plan, and is still read.
const FORMAT: u32 = 2;
/// The first format (parts by node position).
const FORMAT_1: u32 = 1;

/// Encodes a part off the task thread.
pub(crate) type Deferred = Box<dyn FnOnce() -> Result<Vec<u8>, String> + Send>;

/// One operator's part of a snapshot.
pub(crate) enum Part {
    /// Encoded already (small: a position, a list of files).
    Bytes(Vec<u8>),
    /// A cheap copy, encoded when the file is written.
    Deferred(Deferred),
}

/// What the operators of one task put in for one checkpoint.
#[derive(Default)]
pub(crate) struct Snapshot {
    parts: Vec<(String, Part)>,
    /// Time the task thread spent taking the parts (its pause; sending the
    /// barrier on behind the records before it is not).
    taking: std::time::Duration,
}

impl Snapshot {
    /// Adds node `node`'s part, made by `take` on the task thread (timed:
    /// this is the snapshot's synchronous part).
    pub(crate) fn take(
        &mut self,
        uid: &str,
        take: impl FnOnce() -> Result<Option<Part>, TaskFailure>,
    ) -> Result<(), TaskFailure> {
        let started = std::time::Instant::now();
        let part = take();
        self.taking += started.elapsed();
        if let Some(part) = part? {
            self.parts.push((uid.to_owned(), part));
        }
        Ok(())
    }

    /// How long the task thread spent taking the parts.
    pub(crate) fn taking(&self) -> std::time::Duration {
        self.taking
    }

    /// Whether no operator put anything in.
    pub(crate) fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// The closure that encodes the whole file, for the TaskManager to run
    /// off the task thread.
    pub(crate) fn encoder(self, header: FileHeader) -> EncodeState {
        let parts = self.parts;
        Box::new(move || {
            let mut operators = Vec::with_capacity(parts.len());
            for (uid, part) in parts {
                let bytes = match part {
                    Part::Bytes(bytes) => bytes,
                    Part::Deferred(encode) => {
                        encode().map_err(|e| format!("operator {uid:?}: {e}"))?
                    }
                };
                operators.push((uid, bytes));
            }
            let file = StateFile { header, operators };
            file.encode()
        })
    }
}

/// What a state file belongs to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FileHeader {
    /// The job's name.
    pub(crate) job: String,
    /// The plan's fingerprint (the same job built the same way).
    pub(crate) fingerprint: String,
    pub(crate) vertex: u32,
    pub(crate) subtask: u32,
    pub(crate) checkpoint: u64,
}

/// One subtask's state for one checkpoint: every operator's part.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct StateFile {
    header: FileHeader,
    operators: Vec<(String, Vec<u8>)>,
}

/// Format 1: parts by the operator's position in the plan.
#[derive(Debug, Deserialize)]
struct StateFileV1 {
    header: FileHeader,
    operators: Vec<(u32, Vec<u8>)>,
}

impl StateFile {
    fn encode(&self) -> Result<Vec<u8>, String> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&FORMAT.to_le_bytes());
        postcard::to_extend(self, out).map_err(|e| format!("cannot encode the state file: {e}"))
    }

    /// Decodes a file of either format; `uids` (the operators' ids in plan
    /// order) turn format 1's positions into ids.
    fn decode(bytes: &[u8], uids: &[String]) -> Result<StateFile, String> {
        let rest = bytes
            .strip_prefix(MAGIC.as_slice())
            .ok_or("it is not a holdfast state file (wrong magic bytes)")?;
        let (format, body) = rest
            .split_first_chunk::<4>()
            .ok_or("it is truncated (no format version)")?;
        let format = u32::from_le_bytes(*format);
        let undecodable = |e: postcard::Error| format!("it cannot be decoded: {e}");
        match format {
            FORMAT => postcard::from_bytes(body).map_err(undecodable),
            FORMAT_1 => {
                let old: StateFileV1 = postcard::from_bytes(body).map_err(undecodable)?;
                let operators = old
                    .operators
                    .into_iter()
                    .map(|(node, bytes)| match uids.get(node as usize) {
                        Some(uid) => Ok((uid.clone(), bytes)),
                        None => Err(format!(
                            "(format 1) holds operator {node}, which the job has not"
                        )),
                    })
                    .collect::<Result<_, String>>()?;
                Ok(StateFile {
                    header: old.header,
                    operators,
                })
            }
            other => Err(format!(
                "its format version is {other}; this build reads versions {FORMAT_1} and {FORMAT}"
            )),
        }
    }
}

/// The operator parts an attempt is restored from, by node.
#[derive(Debug, Default)]
pub(crate) struct Restored {
    checkpoint: Option<CheckpointId>,
    parts: BTreeMap<String, Vec<u8>>,
}

impl Restored {
    /// Nothing to restore: every operator starts empty.
    pub(crate) fn none() -> Restored {
        Restored::default()
    }

    /// Reads `bytes` (empty: the subtask had no state) written by
    /// checkpoint `checkpoint`, checking that it belongs to `expected`'s
    /// job, plan, vertex and subtask.
    pub(crate) fn read(
        checkpoint: CheckpointId,
        bytes: &[u8],
        expected: &FileHeader,
        uids: &[String],
    ) -> Result<Restored, TaskFailure> {
        let bad = |what: String| {
            TaskFailure::new(format!(
                "cannot restore vertex {} subtask {} from checkpoint {checkpoint}: its state file {what}",
                expected.vertex, expected.subtask
            ))
            .of_kind(FailureKind::Infrastructure)
        };
        if bytes.is_empty() {
            return Ok(Restored {
                checkpoint: Some(checkpoint),
                parts: BTreeMap::new(),
            });
        }
        let file = StateFile::decode(bytes, uids).map_err(bad)?;
        let h = &file.header;
        if h.job != expected.job || h.fingerprint != expected.fingerprint {
            return Err(bad(format!(
                "belongs to job {:?} (plan {}), not to {:?} (plan {})",
                h.job, h.fingerprint, expected.job, expected.fingerprint
            )));
        }
        if (h.vertex, h.subtask, h.checkpoint) != (expected.vertex, expected.subtask, checkpoint.0)
        {
            return Err(bad(format!(
                "is vertex {} subtask {} of checkpoint {}",
                h.vertex, h.subtask, h.checkpoint
            )));
        }
        Ok(Restored {
            checkpoint: Some(checkpoint),
            parts: file.operators.into_iter().collect(),
        })
    }

    /// The checkpoint restored from, if any.
    pub(crate) fn checkpoint(&self) -> Option<CheckpointId> {
        self.checkpoint
    }

    /// The part of the operator with id `uid`, taken (each operator takes
    /// its own once).
    pub(crate) fn take(&mut self, uid: &str) -> Option<Vec<u8>> {
        self.parts.remove(uid)
    }

    /// Ids of operators whose parts no operator took.
    pub(crate) fn unclaimed(&self) -> impl Iterator<Item = &str> + '_ {
        self.parts.keys().map(String::as_str)
    }
}

/// Decodes a part with postcard, or says which operator's state is bad.
pub(crate) fn decode_part<T: serde::de::DeserializeOwned>(
    operator: &str,
    bytes: &[u8],
) -> Result<T, TaskFailure> {
    postcard::from_bytes(bytes).map_err(|e| {
        TaskFailure::with_source(
            format!("operator {operator:?}: its restored state cannot be decoded"),
            e,
        )
        .of_kind(FailureKind::Infrastructure)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uids() -> Vec<String> {
        ["source", "count", "map", "sink"]
            .map(String::from)
            .to_vec()
    }

    fn header(vertex: u32) -> FileHeader {
        FileHeader {
            job: "j".into(),
            fingerprint: "f".into(),
            vertex,
            subtask: 0,
            checkpoint: 3,
        }
    }

    #[test]
    fn a_state_file_round_trips_and_is_checked() {
        let mut snapshot = Snapshot::default();
        let bytes = postcard::to_allocvec(&42u64).unwrap();
        snapshot
            .take("count", || Ok(Some(Part::Bytes(bytes))))
            .unwrap();
        snapshot
            .take("window", || {
                Ok(Some(Part::Deferred(Box::new(|| Ok(vec![9, 9])))))
            })
            .unwrap();
        snapshot.take("map", || Ok(None)).unwrap();
        let bytes = snapshot.encoder(header(2))().unwrap();
        let mut restored = Restored::read(CheckpointId(3), &bytes, &header(2), &uids()).unwrap();
        assert_eq!(restored.checkpoint(), Some(CheckpointId(3)));
        assert_eq!(
            decode_part::<u64>("op", &restored.take("count").unwrap()).unwrap(),
            42
        );
        assert_eq!(restored.take("count"), None, "taken once");
        assert_eq!(restored.unclaimed().collect::<Vec<_>>(), ["window"]);

        let wrong = Restored::read(CheckpointId(3), &bytes, &header(5), &uids()).unwrap_err();
        assert!(
            wrong.message().contains("is vertex 2 subtask 0"),
            "{}",
            wrong.message()
        );
        let other = FileHeader {
            job: "k".into(),
            ..header(2)
        };
        let wrong = Restored::read(CheckpointId(3), &bytes, &other, &uids()).unwrap_err();
        assert!(
            wrong.message().contains("belongs to job \"j\""),
            "{}",
            wrong.message()
        );
        let garbage =
            Restored::read(CheckpointId(3), b"not a state file", &header(2), &uids()).unwrap_err();
        assert!(garbage.message().contains("magic"), "{}", garbage.message());
        let mut truncated = bytes.clone();
        truncated.truncate(bytes.len() - 1);
        let cut = Restored::read(CheckpointId(3), &truncated, &header(2), &uids()).unwrap_err();
        assert!(
            cut.message().contains("cannot be decoded"),
            "{}",
            cut.message()
        );
    }

    #[test]
    fn a_failing_part_fails_the_encoding_naming_the_operator() {
        let mut snapshot = Snapshot::default();
        snapshot
            .take("sum", || {
                Ok(Some(Part::Deferred(Box::new(|| Err("disk full".into())))))
            })
            .unwrap();
        let error = snapshot.encoder(header(0))().unwrap_err();
        assert_eq!(error, "operator \"sum\": disk full");
    }

    #[test]
    fn a_format_1_file_is_read_with_its_parts_under_the_operators_ids() {
        #[derive(Serialize)]
        struct V1<'a> {
            header: &'a FileHeader,
            operators: Vec<(u32, Vec<u8>)>,
        }
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&FORMAT_1.to_le_bytes());
        let old = V1 {
            header: &header(2),
            operators: vec![(1, vec![7]), (3, vec![8])],
        };
        postcard::to_extend(&old, bytes.clone())
            .map(|b| bytes = b)
            .unwrap();
        let mut restored = Restored::read(CheckpointId(3), &bytes, &header(2), &uids()).unwrap();
        assert_eq!(restored.take("count"), Some(vec![7]));
        assert_eq!(restored.take("sink"), Some(vec![8]));
        // A position the job does not have is refused, naming it.
        let beyond = V1 {
            header: &header(2),
            operators: vec![(9, vec![1])],
        };
        let mut far = MAGIC.to_vec();
        far.extend_from_slice(&FORMAT_1.to_le_bytes());
        let far = postcard::to_extend(&beyond, far).unwrap();
        let error = Restored::read(CheckpointId(3), &far, &header(2), &uids()).unwrap_err();
        assert!(
            error.message().contains("holds operator 9"),
            "{}",
            error.message()
        );
        // A future format is refused, naming both.
        let mut next = MAGIC.to_vec();
        next.extend_from_slice(&3u32.to_le_bytes());
        let error = Restored::read(CheckpointId(3), &next, &header(2), &uids()).unwrap_err();
        assert!(
            error
                .message()
                .contains("format version is 3; this build reads versions 1 and 2"),
            "{}",
            error.message()
        );
    }
}

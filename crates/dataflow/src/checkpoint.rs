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

use holdfast_executor::{EncodeError, EncodeState, EncodedState, TaskFailure};
use holdfast_runtime::failure::FailureKind;
use holdfast_types::{CheckpointId, SnapshotKind};
use serde::{Deserialize, Serialize};

/// The first bytes of every state file.
const MAGIC: &[u8; 8] = b"HFSTATE1";
/// The state file's format version: 6 as 5, with a process function's
/// timers a keyed table's part too (each timer a key of its key's group:
/// inline or chains, incremental); 5 as 4, a keyed table's part possibly
/// sections in run files of the snapshot's own, beside the state file (a
/// full snapshot of the disk-backed state; a build that reads 4 would not
/// know the part); 4 as 3, with a process function's
/// states each a keyed table's part too (inline or chains: incremental);
/// 3 as 2, with a keyed state's part either inline or chains of sections in
/// shared files (incremental checkpoints); 2 files each operator's part
/// under its id (`uid`, else its name); version 1 filed it under its
/// position in the plan. All are read.
const FORMAT: u32 = 6;
/// A process function's timers a list of their own (its states keyed
/// tables' parts, run files of a snapshot's own possible).
pub(crate) const FORMAT_5: u32 = 5;
/// A keyed table's part inline or chains, a process function's states too.
const FORMAT_4: u32 = 4;
/// A keyed state's part inline or chains; a process function's states
/// inline.
pub(crate) const FORMAT_3: u32 = 3;
/// Parts by operator id, a keyed state's part its groups inline.
const FORMAT_2: u32 = 2;
/// The first format (parts by node position).
const FORMAT_1: u32 = 1;

/// Encodes a part off the task thread (its bytes, and for an incremental
/// keyed state the shared files it wrote and reuses); its error is the
/// operator's own (a serializer's, a keyed state's), kept whole.
pub(crate) type Deferred = Box<dyn FnOnce() -> Result<EncodedState, EncodeError> + Send>;

/// Why a subtask's state file could not be encoded (off the task thread):
/// the checkpoint is declined with this message, the job runs on. Reaches
/// the TaskManager, and [`LocalCheckpointError::Encode`], as the
/// [`EncodeError`] of the attempt's [`EncodeState`].
///
/// [`LocalCheckpointError::Encode`]: crate::local::LocalCheckpointError::Encode
#[derive(Debug, thiserror::Error)]
pub enum StateEncodeError {
    /// One operator's part could not be encoded.
    #[error("operator {uid:?}: {source}")]
    Operator {
        /// The operator's id.
        uid: String,
        /// Its own error.
        #[source]
        source: EncodeError,
    },
    /// One named state of a process function's operator could not be
    /// encoded.
    #[error("state {name:?}: {source}")]
    State {
        /// The state's name.
        name: String,
        /// Its own error.
        #[source]
        source: EncodeError,
    },
    /// The file around the parts could not be serialized.
    #[error("cannot encode the state file: {0}")]
    File(#[source] postcard::Error),
}

/// One operator's part of a snapshot.
pub(crate) enum Part {
    /// Encoded already (small: a position, a list of files).
    Bytes(Vec<u8>),
    /// A cheap copy, encoded when the file is written.
    Deferred(Deferred),
}

/// What the operators of one task put in for one checkpoint.
pub(crate) struct Snapshot {
    kind: SnapshotKind,
    parts: Vec<(String, Part)>,
    /// Time the task thread spent taking the parts (its pause; sending the
    /// barrier on behind the records before it is not).
    taking: std::time::Duration,
}

impl Snapshot {
    /// An empty snapshot of the given kind.
    pub(crate) fn new(kind: SnapshotKind) -> Snapshot {
        Snapshot {
            kind,
            parts: Vec::new(),
            taking: std::time::Duration::ZERO,
        }
    }

    /// What it is to be: full, or incremental on a base (what the barrier
    /// carries on).
    pub(crate) fn kind(&self) -> SnapshotKind {
        self.kind
    }

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

    /// The parts taken, by operator id (tests of one operator).
    #[cfg(test)]
    pub(crate) fn into_parts(self) -> Vec<(String, Part)> {
        self.parts
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
            let (mut own, mut shared, mut reused) = (Vec::new(), Vec::new(), Vec::new());
            for (uid, part) in parts {
                let bytes = match part {
                    Part::Bytes(bytes) => bytes,
                    Part::Deferred(encode) => match encode() {
                        Ok(encoded) => {
                            own.extend(encoded.own);
                            shared.extend(encoded.shared);
                            reused.extend(encoded.reused);
                            encoded.bytes
                        }
                        Err(source) => {
                            own.iter()
                                .chain(&shared)
                                .for_each(holdfast_executor::SharedFile::discard);
                            return Err(StateEncodeError::Operator { uid, source }.into());
                        }
                    },
                };
                operators.push((uid, bytes));
            }
            let file = StateFile {
                header,
                operators,
                format: FORMAT,
            };
            reused.sort();
            reused.dedup();
            let bytes = match file.encode() {
                Ok(bytes) => bytes,
                Err(error) => {
                    own.iter()
                        .chain(&shared)
                        .for_each(holdfast_executor::SharedFile::discard);
                    return Err(error.into());
                }
            };
            Ok(EncodedState {
                bytes,
                own,
                shared,
                reused,
            })
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
    /// The format it was read in (not in the file).
    #[serde(skip, default = "current_format")]
    format: u32,
}

fn current_format() -> u32 {
    FORMAT
}

/// Format 1: parts by the operator's position in the plan.
#[derive(Debug, Deserialize)]
struct StateFileV1 {
    header: FileHeader,
    operators: Vec<(u32, Vec<u8>)>,
}

impl StateFile {
    fn encode(&self) -> Result<Vec<u8>, StateEncodeError> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&FORMAT.to_le_bytes());
        postcard::to_extend(self, out).map_err(StateEncodeError::File)
    }

    /// Decodes a file of either format; `uids` (the operators' ids in plan
    /// order) turn format 1's positions into ids.
    fn decode(bytes: &[u8], uids: &[String]) -> Result<StateFile, StateDecodeError> {
        let rest = bytes
            .strip_prefix(MAGIC.as_slice())
            .ok_or(StateDecodeError::WrongMagic)?;
        let (format, body) = rest
            .split_first_chunk::<4>()
            .ok_or(StateDecodeError::Truncated)?;
        let format = u32::from_le_bytes(*format);
        match format {
            FORMAT | FORMAT_5 | FORMAT_4 | FORMAT_3 | FORMAT_2 => {
                let mut file: StateFile =
                    postcard::from_bytes(body).map_err(StateDecodeError::Undecodable)?;
                file.format = format;
                Ok(file)
            }
            FORMAT_1 => {
                let old: StateFileV1 =
                    postcard::from_bytes(body).map_err(StateDecodeError::Undecodable)?;
                let operators = old
                    .operators
                    .into_iter()
                    .map(|(node, bytes)| match uids.get(node as usize) {
                        Some(uid) => Ok((uid.clone(), bytes)),
                        None => Err(StateDecodeError::UnknownOperator { node }),
                    })
                    .collect::<Result<_, _>>()?;
                Ok(StateFile {
                    header: old.header,
                    operators,
                    format: FORMAT_1,
                })
            }
            other => Err(StateDecodeError::UnknownFormat { format: other }),
        }
    }
}

/// Why a state file does not decode. Each message completes "the state
/// file of vertex v subtask s …" in the restore's [`TaskFailure`].
#[derive(Debug, thiserror::Error)]
pub(crate) enum StateDecodeError {
    /// It does not start with the state files' magic bytes.
    #[error("it is not a holdfast state file (wrong magic bytes)")]
    WrongMagic,
    /// It ends before its format version.
    #[error("it is truncated (no format version)")]
    Truncated,
    /// Its body does not deserialize.
    #[error("it cannot be decoded: {0}")]
    Undecodable(#[source] postcard::Error),
    /// A format 1 file names an operator position the job does not have.
    #[error("(format 1) holds operator {node}, which the job has not")]
    UnknownOperator {
        /// The position in the plan.
        node: u32,
    },
    /// A format version this build does not read.
    #[error("its format version is {format}; this build reads versions {FORMAT_1} to {FORMAT}")]
    UnknownFormat {
        /// The file's version.
        format: u32,
    },
}

/// One operator's part of one old subtask's state file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestoredPart {
    /// The subtask that wrote it.
    pub subtask: u32,
    /// The operator's parallelism then.
    pub parallelism: u32,
    /// The operator's own encoding.
    pub bytes: Vec<u8>,
    /// The state file's format (a keyed state's part changed in 3, a
    /// process function's states in 4, its timers in 6).
    pub format: u32,
    /// The state file it came from (an incremental keyed state reads its
    /// shared files beside it).
    pub source: holdfast_executor::StateSource,
}

impl RestoredPart {
    /// A part of this build's format, read from memory (for tests of
    /// operators that restore).
    pub fn new(subtask: u32, parallelism: u32, bytes: Vec<u8>) -> RestoredPart {
        RestoredPart {
            subtask,
            parallelism,
            bytes,
            format: FORMAT,
            source: holdfast_executor::StateSource::Empty,
        }
    }

    /// Whether subtask `subtask` of `parallelism` is the one new subtask
    /// that takes over what belongs to this part's old subtask as a whole
    /// (a sink's transactions and files, a count): the subtask of the
    /// same index, or for an old subtask beyond the new parallelism the one
    /// its index wraps to. Every old subtask is taken over by exactly one.
    pub fn owned_by(&self, subtask: u32, parallelism: u32) -> bool {
        let parallelism = parallelism.max(1);
        if self.subtask < parallelism {
            self.subtask == subtask
        } else {
            self.subtask % parallelism == subtask
        }
    }
}

/// The operator parts an attempt is restored from, by operator id.
#[derive(Debug, Default)]
pub(crate) struct Restored {
    checkpoint: Option<CheckpointId>,
    parts: BTreeMap<String, Vec<RestoredPart>>,
}

/// What an attempt restores: the checkpoint, and its vertex's operators.
pub(crate) struct Expected<'a> {
    /// The job's name.
    pub(crate) job: &'a str,
    /// The new vertex and subtask (for messages).
    pub(crate) vertex: u32,
    pub(crate) subtask: u32,
    /// The ids of the vertex's operators (only their parts are kept).
    pub(crate) operators: &'a [&'a str],
    /// Every operator's id in plan order (format 1 files name positions).
    pub(crate) uids: &'a [String],
}

impl Restored {
    /// Nothing to restore: every operator starts empty.
    pub(crate) fn none() -> Restored {
        Restored::default()
    }

    /// Reads the state `files` of checkpoint `checkpoint` (`read` gives
    /// each file's bytes), checking that each is the job's and the old
    /// subtask's it claims to be, and keeps the parts of `expected`'s
    /// operators.
    pub(crate) fn read<'f>(
        checkpoint: CheckpointId,
        files: impl IntoIterator<Item = (&'f holdfast_executor::RestoredFile, &'f [u8])>,
        expected: &Expected<'_>,
    ) -> Result<Restored, TaskFailure> {
        let mut parts: BTreeMap<String, Vec<RestoredPart>> = BTreeMap::new();
        for (file, bytes) in files {
            let bad = |what: String| {
                TaskFailure::new(format!(
                    "cannot restore vertex {} subtask {} from checkpoint {checkpoint}: the state file of \
                     vertex {} subtask {} {what}",
                    expected.vertex, expected.subtask, file.vertex, file.subtask
                ))
                .of_kind(FailureKind::Infrastructure)
            };
            if bytes.is_empty() {
                continue;
            }
            let state = StateFile::decode(bytes, expected.uids).map_err(|e| bad(e.to_string()))?;
            let h = &state.header;
            if h.job != expected.job {
                return Err(bad(format!(
                    "belongs to job {:?} (plan {}), not to {:?}",
                    h.job, h.fingerprint, expected.job
                )));
            }
            if (h.vertex, h.subtask, h.checkpoint) != (file.vertex, file.subtask, checkpoint.0) {
                return Err(bad(format!(
                    "is vertex {} subtask {} of checkpoint {}",
                    h.vertex, h.subtask, h.checkpoint
                )));
            }
            for (uid, bytes) in state.operators {
                if expected.operators.contains(&uid.as_str()) {
                    parts.entry(uid).or_default().push(RestoredPart {
                        subtask: file.subtask,
                        parallelism: file.parallelism,
                        bytes,
                        format: state.format,
                        source: file.source.clone(),
                    });
                }
            }
        }
        Ok(Restored {
            checkpoint: Some(checkpoint),
            parts,
        })
    }

    /// The checkpoint restored from, if any.
    pub(crate) fn checkpoint(&self) -> Option<CheckpointId> {
        self.checkpoint
    }

    /// The parts of the operator with id `uid`, taken (each operator takes
    /// its own once).
    pub(crate) fn take(&mut self, uid: &str) -> Vec<RestoredPart> {
        self.parts.remove(uid).unwrap_or_default()
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
    use holdfast_executor::{RestoredFile, StateSource};

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

    /// Reads `bytes` as the file of `vertex` subtask 0 for a vertex running
    /// `operators`, of job `job`.
    fn read_as(
        bytes: &[u8],
        vertex: u32,
        job: &str,
        operators: &[&str],
    ) -> Result<Restored, TaskFailure> {
        let file = RestoredFile {
            source: StateSource::Empty,
            vertex,
            subtask: 0,
            parallelism: 2,
        };
        let uids = uids();
        let expected = Expected {
            job,
            vertex: 9,
            subtask: 1,
            operators,
            uids: &uids,
        };
        Restored::read(CheckpointId(3), [(&file, bytes)], &expected)
    }

    fn read(bytes: &[u8], vertex: u32) -> Result<Restored, TaskFailure> {
        read_as(
            bytes,
            vertex,
            "j",
            &["source", "count", "map", "sink", "window"],
        )
    }

    #[test]
    fn a_state_file_round_trips_and_is_checked() {
        let mut snapshot = Snapshot::new(SnapshotKind::Full);
        let bytes = postcard::to_allocvec(&42u64).unwrap();
        snapshot
            .take("count", || Ok(Some(Part::Bytes(bytes))))
            .unwrap();
        snapshot
            .take("window", || {
                Ok(Some(Part::Deferred(Box::new(|| Ok(vec![9, 9].into())))))
            })
            .unwrap();
        snapshot.take("map", || Ok(None)).unwrap();
        let bytes = snapshot.encoder(header(2))().unwrap().bytes;
        let mut restored = read(&bytes, 2).unwrap();
        assert_eq!(restored.checkpoint(), Some(CheckpointId(3)));
        let parts = restored.take("count");
        assert_eq!(parts.len(), 1);
        assert_eq!((parts[0].subtask, parts[0].parallelism), (0, 2));
        assert_eq!(decode_part::<u64>("op", &parts[0].bytes).unwrap(), 42);
        assert_eq!(restored.take("count"), [], "taken once");
        assert_eq!(restored.take("window")[0].bytes, [9, 9]);

        // Only the vertex's own operators' parts are kept (the others
        // belong to other vertices after the chains changed).
        let mut other = read_as(&bytes, 2, "j", &["map"]).unwrap();
        assert_eq!(other.take("count"), []);

        let wrong = read(&bytes, 5).unwrap_err();
        assert!(
            wrong.message().contains("is vertex 2 subtask 0"),
            "{}",
            wrong.message()
        );
        let wrong = read_as(&bytes, 2, "k", &["count"]).unwrap_err();
        assert!(
            wrong.message().contains("belongs to job \"j\""),
            "{}",
            wrong.message()
        );
        let garbage = read(b"not a state file", 2).unwrap_err();
        assert!(garbage.message().contains("magic"), "{}", garbage.message());
        let mut truncated = bytes.clone();
        truncated.truncate(bytes.len() - 1);
        let cut = read(&truncated, 2).unwrap_err();
        assert!(
            cut.message().contains("cannot be decoded"),
            "{}",
            cut.message()
        );
    }

    #[test]
    fn a_failing_part_fails_the_encoding_naming_the_operator() {
        let mut snapshot = Snapshot::new(SnapshotKind::Full);
        snapshot
            .take("sum", || {
                Ok(Some(Part::Deferred(Box::new(|| Err("disk full".into())))))
            })
            .unwrap();
        let error = snapshot.encoder(header(0))().unwrap_err();
        assert_eq!(error.to_string(), "operator \"sum\": disk full");
    }

    #[test]
    fn an_encoding_error_keeps_the_operator_and_its_cause() {
        let mut snapshot = Snapshot::new(SnapshotKind::Full);
        snapshot
            .take("sum", || {
                Ok(Some(Part::Deferred(Box::new(|| {
                    Err(std::io::Error::other("disk full").into())
                }))))
            })
            .unwrap();
        let error = snapshot.encoder(header(0))().unwrap_err();
        let Some(StateEncodeError::Operator { uid, source }) = error.downcast_ref() else {
            panic!("not an operator's error: {error:?}");
        };
        assert_eq!(uid, "sum");
        assert!(
            source.downcast_ref::<std::io::Error>().is_some(),
            "{source:?}"
        );
    }

    #[test]
    fn a_bad_state_file_says_which_rule_it_breaks() {
        let uids = uids();
        let decode = |bytes: &[u8]| StateFile::decode(bytes, &uids).unwrap_err();
        assert!(matches!(decode(b"garbage!"), StateDecodeError::WrongMagic));
        assert!(matches!(decode(MAGIC), StateDecodeError::Truncated));
        let mut next = MAGIC.to_vec();
        next.extend_from_slice(&(FORMAT + 1).to_le_bytes());
        assert!(matches!(
            decode(&next),
            StateDecodeError::UnknownFormat { format } if format == FORMAT + 1
        ));
        let mut cut = MAGIC.to_vec();
        cut.extend_from_slice(&FORMAT.to_le_bytes());
        assert!(matches!(decode(&cut), StateDecodeError::Undecodable(_)));
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
        let mut restored = read(&bytes, 2).unwrap();
        assert_eq!(restored.take("count")[0].bytes, [7]);
        assert_eq!(restored.take("sink")[0].bytes, [8]);
        // A position the job does not have is refused, naming it.
        let beyond = V1 {
            header: &header(2),
            operators: vec![(9, vec![1])],
        };
        let mut far = MAGIC.to_vec();
        far.extend_from_slice(&FORMAT_1.to_le_bytes());
        let far = postcard::to_extend(&beyond, far).unwrap();
        let error = read(&far, 2).unwrap_err();
        assert!(
            error.message().contains("holds operator 9"),
            "{}",
            error.message()
        );
        // A future format is refused, naming both.
        let mut next = MAGIC.to_vec();
        next.extend_from_slice(&7u32.to_le_bytes());
        let error = read(&next, 2).unwrap_err();
        assert!(
            error
                .message()
                .contains("format version is 7; this build reads versions 1 to 6"),
            "{}",
            error.message()
        );
    }
}

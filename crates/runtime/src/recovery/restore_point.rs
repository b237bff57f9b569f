//! Which completed checkpoint a job restores from: a pure function over
//! what was read of the HA store's pointers and of each checkpoint's
//! metadata and files, asked newest first.
//!
//! ```text
//!  pointers (oldest first)   chk-3  chk-4  chk-5
//!  checked, newest first                    ✗ files missing   → skipped, named
//!                                   ✓                          → Use(chk-4, skipped [5])
//!  nothing checked yet                      ?                  → Check(chk-5)
//!  no pointer at all                                           → Nothing (start from the beginning)
//!  every one checked and unusable                              → NoneUsable (hold; never start from the beginning)
//! ```
//!
//! Why newest first and one at a time: the newest usable checkpoint is
//! behind the least output; an older one is used only when every newer
//! one was checked and found unusable, and the skipped ones are named so
//! the operator knows output will be written again. Why "none usable" is
//! not "nothing": a job whose checkpoints all broke must not silently
//! start from its beginning and write everything again.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use holdfast_types::CheckpointId;

use super::metadata::Metadata;

/// A completed checkpoint's pointer, as read from the HA store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pointer {
    /// The checkpoint.
    pub id: CheckpointId,
    /// Where its `_metadata` is (relative to the checkpoint storage, or an
    /// absolute path for a savepoint).
    pub metadata: String,
}

/// A checkpoint found unusable, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// The checkpoint.
    pub id: CheckpointId,
    /// Why it cannot be restored from.
    pub reason: String,
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.id, self.reason)
    }
}

/// What was learned of one checkpoint: its metadata (every state file it
/// names is there with its size), or why it is unusable.
pub type Checked = Result<Arc<Metadata>, String>;

/// What to do next about a job's restore point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolution {
    /// Read and check this checkpoint (the newest not checked yet).
    Check(Pointer),
    /// Restore from this one; `skipped` newer ones were unusable.
    Use {
        /// The checkpoint's metadata.
        metadata: Arc<Metadata>,
        /// The newer checkpoints skipped, newest first.
        skipped: Vec<Skipped>,
    },
    /// The job has no completed checkpoint: it starts from its beginning.
    Nothing,
    /// Checkpoints exist and none is usable: the job must not start.
    NoneUsable {
        /// Every checkpoint, newest first, and why.
        skipped: Vec<Skipped>,
    },
}

/// The restore point of a job whose pointers are `pointers` (oldest
/// first), given what `checked` holds of them so far.
pub fn resolve(pointers: &[Pointer], checked: &BTreeMap<CheckpointId, Checked>) -> Resolution {
    let mut skipped = Vec::new();
    for pointer in pointers.iter().rev() {
        match checked.get(&pointer.id) {
            None => return Resolution::Check(pointer.clone()),
            Some(Ok(metadata)) => {
                return Resolution::Use {
                    metadata: Arc::clone(metadata),
                    skipped,
                };
            }
            Some(Err(reason)) => skipped.push(Skipped {
                id: pointer.id,
                reason: reason.clone(),
            }),
        }
    }
    if skipped.is_empty() {
        Resolution::Nothing
    } else {
        Resolution::NoneUsable { skipped }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::JobId;

    fn pointers(ids: &[u64]) -> Vec<Pointer> {
        ids.iter()
            .map(|id| Pointer {
                id: CheckpointId(*id),
                metadata: format!("j/chk-{id}/_metadata"),
            })
            .collect()
    }

    fn good(id: u64) -> Checked {
        Ok(Arc::new(Metadata::new(
            JobId::from_u128(1),
            CheckpointId(id),
            None,
            Vec::new(),
        )))
    }

    #[test]
    fn the_newest_is_checked_first_and_used_when_good() {
        let p = pointers(&[3, 4, 5]);
        let mut checked = BTreeMap::new();
        assert_eq!(resolve(&p, &checked), Resolution::Check(p[2].clone()));
        checked.insert(CheckpointId(5), good(5));
        match resolve(&p, &checked) {
            Resolution::Use { metadata, skipped } => {
                assert_eq!(metadata.checkpoint, 5);
                assert!(skipped.is_empty());
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_unusable_newest_is_skipped_by_name_for_an_older_one() {
        let p = pointers(&[3, 4, 5]);
        let mut checked = BTreeMap::new();
        checked.insert(CheckpointId(5), Err("state file gone".to_owned()));
        assert_eq!(resolve(&p, &checked), Resolution::Check(p[1].clone()));
        checked.insert(CheckpointId(4), good(4));
        let Resolution::Use { metadata, skipped } = resolve(&p, &checked) else {
            panic!("an older one is used");
        };
        assert_eq!(metadata.checkpoint, 4);
        assert_eq!(skipped[0].to_string(), "5: state file gone");
    }

    #[test]
    fn no_pointer_is_nothing_but_none_usable_is_not() {
        assert_eq!(resolve(&[], &BTreeMap::new()), Resolution::Nothing);
        let p = pointers(&[1]);
        let checked = [(CheckpointId(1), Err("unreadable".to_owned()))].into();
        assert_eq!(
            resolve(&p, &checked),
            Resolution::NoneUsable {
                skipped: vec![Skipped {
                    id: CheckpointId(1),
                    reason: "unreadable".into()
                }]
            }
        );
    }
}

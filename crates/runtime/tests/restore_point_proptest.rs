//! The restore point as a pure function (`recovery::resolve`), against a
//! brute-force statement of the rule over random pointers and checks: the
//! newest usable checkpoint, every newer one checked and unusable (named,
//! newest first); an unchecked one before any older is used; nothing only
//! when there is no pointer at all.

use std::collections::BTreeMap;
use std::sync::Arc;

use holdfast_runtime::ids::JobId;
use holdfast_runtime::recovery::{Checked, Metadata, Pointer, Resolution, resolve};
use holdfast_types::CheckpointId;
use proptest::prelude::*;

/// What is known of one pointer: not checked, usable, unusable.
#[derive(Clone, Copy, Debug)]
enum Known {
    Unchecked,
    Good,
    Bad,
}

fn known() -> impl Strategy<Value = Known> {
    prop_oneof![Just(Known::Unchecked), Just(Known::Good), Just(Known::Bad)]
}

proptest! {
    #[test]
    fn the_newest_usable_is_chosen_only_after_every_newer_one_failed(
        known in proptest::collection::vec(known(), 0..8),
    ) {
        let pointers: Vec<Pointer> = (0..known.len() as u64)
            .map(|i| Pointer { id: CheckpointId(i + 1), metadata: format!("m{i}") })
            .collect();
        let mut checked: BTreeMap<CheckpointId, Checked> = BTreeMap::new();
        for (pointer, k) in pointers.iter().zip(&known) {
            match k {
                Known::Unchecked => {}
                Known::Good => {
                    let m = Metadata::new(JobId::from_u128(1), pointer.id, None, Vec::new());
                    checked.insert(pointer.id, Ok(Arc::new(m)));
                }
                Known::Bad => {
                    checked.insert(pointer.id, Err(format!("bad {}", pointer.id)));
                }
            }
        }
        // The rule, stated directly: walk from the newest; bad ones are
        // skipped; the first other one decides.
        let decisive = known.iter().rposition(|k| !matches!(k, Known::Bad));
        let newer_bad: Vec<u64> = ((decisive.map_or(0, |d| d + 1))..known.len())
            .rev()
            .map(|i| i as u64 + 1)
            .collect();
        match resolve(&pointers, &checked) {
            Resolution::Check(p) => {
                let d = decisive.expect("a check names a pointer");
                prop_assert!(matches!(known[d], Known::Unchecked));
                prop_assert_eq!(p.id, CheckpointId(d as u64 + 1));
            }
            Resolution::Use { metadata, skipped } => {
                let d = decisive.expect("a use names a pointer");
                prop_assert!(matches!(known[d], Known::Good));
                prop_assert_eq!(metadata.checkpoint, d as u64 + 1);
                prop_assert_eq!(skipped.iter().map(|s| s.id.0).collect::<Vec<_>>(), newer_bad);
            }
            Resolution::Nothing => prop_assert!(known.is_empty()),
            Resolution::NoneUsable { skipped } => {
                prop_assert!(!known.is_empty() && decisive.is_none());
                prop_assert_eq!(skipped.len(), known.len());
                prop_assert_eq!(skipped.iter().map(|s| s.id.0).collect::<Vec<_>>(), newer_bad);
            }
        }
    }
}

//! Keyed state by key group: a table behaves as a map of its keys,
//! snapshots are isolated from later writes, and restoring at another
//! parallelism puts every key exactly once in the subtask the partitioner
//! sends it to.

use std::collections::BTreeMap;

use holdfast_dataflow::keys::{DEFAULT_MAX_PARALLELISM, key_hash, subtask_for};
use holdfast_dataflow::state::{KeyGroup, KeyGroupRange, KeyedTable, StateError};
use proptest::prelude::*;

type Table = KeyedTable<String, u64>;

/// `parallelism` tables of state `sums`, each key counted into its owner.
fn tables(parallelism: u32, keys: impl Iterator<Item = (String, u64)>) -> Vec<Table> {
    let max = DEFAULT_MAX_PARALLELISM;
    let mut tables: Vec<Table> = (0..parallelism)
        .map(|s| Table::new("sums", max, KeyGroupRange::of_subtask(max, parallelism, s)))
        .collect();
    for (key, value) in keys {
        let owner = subtask_for(key_hash(&key), max, parallelism) as usize;
        tables[owner].insert(key, value).expect("the owner owns it");
    }
    tables
}

fn contents(tables: &[Table]) -> BTreeMap<String, u64> {
    let mut all = BTreeMap::new();
    for table in tables {
        for (key, value) in table.iter() {
            assert!(all.insert(key.clone(), *value).is_none(), "{key} twice");
        }
    }
    all
}

/// Restores `parallelism` tables from every part of `from`'s snapshots.
fn rescaled(from: &mut [Table], parallelism: u32) -> Vec<Table> {
    let parts: Vec<(KeyGroup, Vec<u8>)> = from
        .iter_mut()
        .flat_map(|t| t.snapshot().encode().unwrap())
        .collect();
    let max = DEFAULT_MAX_PARALLELISM;
    (0..parallelism)
        .map(|s| {
            let range = KeyGroupRange::of_subtask(max, parallelism, s);
            Table::restore(
                "sums",
                max,
                range,
                parts.iter().map(|(g, b)| (*g, b.as_slice())),
            )
            .unwrap()
        })
        .collect()
}

#[test]
fn a_snapshot_is_unaffected_by_later_writes() {
    let max = DEFAULT_MAX_PARALLELISM;
    let mut table = Table::new("sums", max, KeyGroupRange::of_subtask(max, 1, 0));
    for i in 0..1_000 {
        table.insert(format!("k{i}"), i).unwrap();
    }
    let snapshot = table.snapshot();
    for i in 0..500 {
        table.insert(format!("k{i}"), 0).unwrap();
        table.remove(&format!("k{}", 999 - i));
    }
    assert_eq!(table.len(), 500);
    assert_eq!(snapshot.len(), 1_000);
    let restored = Table::restore(
        "sums",
        max,
        KeyGroupRange::of_subtask(max, 1, 0),
        snapshot
            .encode()
            .unwrap()
            .iter()
            .map(|(g, b)| (*g, b.as_slice())),
    )
    .unwrap();
    assert_eq!(restored.get(&"k7".to_owned()), Some(&7), "the old value");
    assert_eq!(restored.len(), 1_000);
}

#[test]
fn rescaling_moves_every_key_to_its_new_owner_exactly_once() {
    let keys = || (0..5_000u64).map(|i| (format!("user-{i}"), i * 3));
    let two = tables(2, keys());
    let expected: BTreeMap<String, u64> = keys().collect();
    assert_eq!(contents(&two), expected);
    for (from, to) in [(2, 3), (3, 1), (1, 4)] {
        let mut before = tables(from, keys());
        let after = rescaled(&mut before, to);
        assert_eq!(contents(&after), expected, "{from} → {to}");
        let max = DEFAULT_MAX_PARALLELISM;
        for (subtask, table) in after.iter().enumerate() {
            for (key, _) in table.iter() {
                assert_eq!(subtask_for(key_hash(key), max, to), subtask as u32, "{key}");
            }
        }
    }
}

#[test]
fn keys_of_other_key_groups_and_garbage_are_refused_by_name() {
    let max = DEFAULT_MAX_PARALLELISM;
    let mut first = Table::new("sums", max, KeyGroupRange::of_subtask(max, 2, 0));
    let foreign = (0..1_000)
        .map(|i| format!("x{i}"))
        .find(|k| subtask_for(key_hash(k), max, 2) == 1)
        .unwrap();
    assert!(
        first.insert(foreign.clone(), 1).is_err(),
        "not its key group"
    );
    assert_eq!(first.get(&foreign), None);

    let range = KeyGroupRange::of_subtask(max, 1, 0);
    let error =
        Table::restore("sums", max, range, [(KeyGroup(5), &b"\xff\xff\xff"[..])]).unwrap_err();
    assert!(matches!(error, StateError::Corrupt { .. }), "{error}");
    assert!(error.to_string().contains("sums, key group 5"), "{error}");

    // A part filed under the wrong key group.
    let mut one = Table::new("sums", max, range);
    one.insert("some key".to_owned(), 1).unwrap();
    let (group, bytes) = one.snapshot().encode().unwrap().remove(0);
    let wrong = KeyGroup((group.0 + 1) % max);
    let error = Table::restore("sums", max, range, [(wrong, bytes.as_slice())]).unwrap_err();
    assert!(matches!(error, StateError::WrongGroup { .. }), "{error}");
}

proptest! {
    /// Any sequence of writes: the table is the map a plain `BTreeMap`
    /// would be, and its snapshot restores to the map at snapshot time.
    #[test]
    fn a_table_is_a_map_and_its_snapshot_a_copy(
        ops in proptest::collection::vec((0u8..40, proptest::option::of(any::<u64>())), 0..200),
        cut in 0usize..200,
    ) {
        let max = DEFAULT_MAX_PARALLELISM;
        let range = KeyGroupRange::of_subtask(max, 1, 0);
        let mut table = Table::new("s", max, range);
        let mut model = BTreeMap::new();
        let mut snapshot = None;
        for (i, (key, value)) in ops.iter().enumerate() {
            if i == cut {
                snapshot = Some((table.snapshot(), model.clone()));
            }
            let key = format!("k{key}");
            match value {
                Some(v) => {
                    prop_assert_eq!(table.insert(key.clone(), *v).unwrap(), model.insert(key, *v));
                }
                None => prop_assert_eq!(table.remove(&key), model.remove(&key)),
            }
        }
        prop_assert_eq!(table.len(), model.len());
        for (key, value) in &model {
            prop_assert_eq!(table.get(key), Some(value));
        }
        if let Some((snapshot, then)) = snapshot {
            let parts = snapshot.encode().unwrap();
            let restored = Table::restore("s", max, range, parts.iter().map(|(g, b)| (*g, b.as_slice()))).unwrap();
            let got: BTreeMap<String, u64> = restored.iter().map(|(k, v)| (k.clone(), *v)).collect();
            prop_assert_eq!(got, then);
        }
    }
}

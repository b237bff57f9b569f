//! A table whose groups snapshots hold and let go of, in any order: it
//! stays the map a plain `BTreeMap` is, every snapshot stays the map at
//! its take, and writes to a held group go beside its map (`group.rs`)
//! until every snapshot has let it go.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;

/// Four key groups, one subtask.
const MAX: u32 = 4;

#[derive(Clone, Debug)]
enum Op {
    Insert(u8, u32),
    Remove(u8),
    Add(u8, u32),
    GetOrInsert(u8, u32),
    Snapshot,
    /// Lets the `n`th snapshot held (modulo) go of a group.
    Release(usize, usize),
    /// Drops the `n`th snapshot held (modulo).
    Drop(usize),
    /// Clones the `n`th snapshot held (modulo): the copy holds what the
    /// original holds, until it lets go itself.
    CloneSnapshot(usize),
    Drain,
    Clone,
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0u8..24;
    prop_oneof![
        6 => (key.clone(), any::<u32>()).prop_map(|(k, v)| Op::Insert(k, v)),
        3 => key.clone().prop_map(Op::Remove),
        6 => (key.clone(), 0u32..100).prop_map(|(k, v)| Op::Add(k, v)),
        4 => (key, any::<u32>()).prop_map(|(k, v)| Op::GetOrInsert(k, v)),
        2 => Just(Op::Snapshot),
        3 => (0usize..4, 0usize..MAX as usize).prop_map(|(s, g)| Op::Release(s, g)),
        1 => (0usize..4).prop_map(Op::Drop),
        1 => (0usize..4).prop_map(Op::CloneSnapshot),
        1 => Just(Op::Drain),
        1 => Just(Op::Clone),
    ]
}

type Model = BTreeMap<u8, u32>;

/// What the snapshot holds of the groups it has not let go of.
fn held_contents(snapshot: &TableSnapshot<u8, u32>, released: &[bool]) -> Model {
    snapshot
        .groups
        .iter()
        .zip(released)
        .filter(|(_, gone)| !**gone)
        .flat_map(|(map, _)| map.iter().map(|(k, v)| (*k, *v)))
        .collect()
}

/// The model's keys of the groups not let go of.
fn model_of_held(table: &KeyedTable<u8, u32>, model: &Model, released: &[bool]) -> Model {
    model
        .iter()
        .filter(|(k, _)| !released[(table.group_of(k).0) as usize])
        .map(|(k, v)| (*k, *v))
        .collect()
}

fn check(table: &KeyedTable<u8, u32>, model: &Model) -> Result<(), TestCaseError> {
    prop_assert_eq!(table.len(), model.len());
    for key in 0u8..24 {
        prop_assert_eq!(table.get(&key), model.get(&key), "key {}", key);
    }
    let listed: Model = table.iter().map(|(k, v)| (*k, *v)).collect();
    prop_assert_eq!(table.iter().count(), listed.len(), "a key listed twice");
    prop_assert_eq!(&listed, model);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn snapshots_held_and_let_go_in_any_order_see_the_map_at_their_take(
        ops in proptest::collection::vec(op(), 0..150),
    ) {
        let range = KeyGroupRange::of_subtask(MAX, 1, 0);
        let mut table: KeyedTable<u8, u32> = KeyedTable::new("t", MAX, range);
        let mut model = Model::new();
        // Each snapshot held, what it must hold, and the groups let go.
        let mut held: Vec<(TableSnapshot<u8, u32>, Model, Vec<bool>)> = Vec::new();
        for op in ops {
            match op {
                Op::Insert(k, v) => {
                    prop_assert_eq!(table.insert(k, v).unwrap(), model.insert(k, v));
                }
                Op::Remove(k) => prop_assert_eq!(table.remove(&k), model.remove(&k)),
                Op::Add(k, v) => {
                    let got = table.get_mut(&k).map(|value| {
                        *value = value.wrapping_add(v);
                        *value
                    });
                    let want = model.get_mut(&k).map(|value| {
                        *value = value.wrapping_add(v);
                        *value
                    });
                    prop_assert_eq!(got, want);
                }
                Op::GetOrInsert(k, v) => {
                    let got = *table.get_or_insert_with(k, || v).unwrap();
                    prop_assert_eq!(got, *model.entry(k).or_insert(v));
                }
                Op::Snapshot => {
                    held.push((table.snapshot(), model.clone(), vec![false; MAX as usize]));
                }
                Op::Release(n, slot) if !held.is_empty() => {
                    let n = n % held.len();
                    let (snapshot, _, released) = &mut held[n];
                    GroupSnapshot::release(snapshot, slot);
                    released[slot] = true;
                }
                Op::Drop(n) if !held.is_empty() => {
                    held.remove(n % held.len());
                }
                Op::CloneSnapshot(n) if !held.is_empty() => {
                    let (snapshot, then, released) = &held[n % held.len()];
                    held.push((snapshot.clone(), then.clone(), released.clone()));
                }
                Op::Drain => {
                    let all = table.drain();
                    prop_assert_eq!(all.len(), model.len(), "a key drained twice");
                    let drained: Model = all.into_iter().collect();
                    prop_assert_eq!(&drained, &model);
                    model.clear();
                }
                Op::Clone => {
                    // A copy no snapshot holds, and the same map.
                    let copy = table.clone();
                    check(&copy, &model)?;
                    table = copy;
                    held.clear();
                }
                Op::Release(..) | Op::Drop(_) | Op::CloneSnapshot(_) => {}
            }
            check(&table, &model)?;
            for (snapshot, then, released) in &held {
                prop_assert_eq!(
                    held_contents(snapshot, released),
                    model_of_held(&table, then, released)
                );
            }
            // A group counts as held exactly while a snapshot holds it.
            for slot in 0..MAX as usize {
                let holders = held.iter().filter(|(_, _, gone)| !gone[slot]).count();
                prop_assert_eq!(table.holds.is_held(slot), holders > 0, "group {}", slot);
            }
        }
        // Every snapshot let go: the next write to each group merges.
        held.clear();
        for key in 0u8..24 {
            table.insert(key, 1).unwrap();
        }
        for slot in 0..MAX as usize {
            prop_assert_eq!(table.unmerged(slot), 0, "group {}", slot);
        }
    }
}

/// Writes to a group a snapshot holds go beside its map, which they leave
/// alone; they are merged at the group's first write once every snapshot
/// has let it go, and a snapshot taken meanwhile sees them (sharing the
/// map with the snapshot that holds it, copying only the side map).
#[test]
fn writes_to_a_held_group_wait_beside_its_map_until_it_is_let_go() {
    let range = KeyGroupRange::of_subtask(MAX, 1, 0);
    let mut table: KeyedTable<u8, u32> = KeyedTable::new("t", MAX, range);
    for key in 0..24 {
        table.insert(key, 0).unwrap();
    }
    let group_of = |t: &KeyedTable<u8, u32>, k: u8| t.group_of(&k).0 as usize;
    let key = 5;
    let slot = group_of(&table, key);
    let copies = || crate::state::shared::COPIES.with(|c| c.get());
    let copied_before = copies();
    let mut first = table.snapshot();
    *table.get_mut(&key).unwrap() += 1;
    assert_eq!(table.unmerged(slot), 1, "written beside the held map");
    let mut second = table.snapshot();
    assert!(
        second.groups[slot].shares_map_with(&first.groups[slot]),
        "a snapshot of a held group shares its map, not a copy"
    );
    assert_eq!(
        second.groups[slot].written_len(),
        1,
        "and copies the side map"
    );
    assert_eq!(table.unmerged(slot), 1, "which the table keeps writing");
    assert_eq!(second.groups[slot].get(&key), Some(&1));
    assert_eq!(first.groups[slot].get(&key), Some(&0));
    *table.get_mut(&key).unwrap() += 1;
    GroupSnapshot::release(&mut first, slot);
    *table.get_mut(&key).unwrap() += 1;
    assert_eq!(table.unmerged(slot), 1, "still held by the second");
    GroupSnapshot::release(&mut second, slot);
    assert_eq!(table.unmerged(slot), 1, "merged at the next write");
    *table.get_mut(&key).unwrap() += 1;
    assert_eq!(table.unmerged(slot), 0);
    assert_eq!(table.get(&key), Some(&4));
    assert_eq!(
        copies(),
        copied_before,
        "a map let go is taken back, not copied"
    );
    let other = (0..24).find(|k| group_of(&table, *k) != slot).unwrap();
    table.insert(other, 9).unwrap();
    assert_eq!(
        table.unmerged(group_of(&table, other)),
        1,
        "the snapshots still hold the other groups"
    );
    drop(second);
    table.insert(other, 10).unwrap();
    assert_eq!(table.unmerged(group_of(&table, other)), 1, "the first does");
    drop(first);
    table.insert(other, 10).unwrap();
    assert_eq!(table.unmerged(group_of(&table, other)), 0);
    assert_eq!(table.get(&other), Some(&10));
}

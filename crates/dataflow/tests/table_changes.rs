//! Change tracking of keyed state (`KeyedTable::take_changes`), what
//! incremental checkpoints write: a base of the whole
//! table, then at each later take the deltas of the keys changed since the
//! one before, written as key-group runs, read back and merged newest wins,
//! give the table itself — through random inserts, in-place updates,
//! removals of present and absent keys, and drains.

use std::collections::BTreeMap;

use holdfast_dataflow::state::run::{Entry, Run, RunWriter, SectionKind, merge_chain};
use holdfast_dataflow::state::{KeyGroup, KeyGroupRange, KeyedTable};
use proptest::prelude::*;

const MAX: u32 = 16;

#[derive(Clone, Debug)]
enum Op {
    Insert(u8, u32),
    Update(u8, u32),
    Remove(u8),
    Drain,
    Take,
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            6 => (any::<u8>(), any::<u32>()).prop_map(|(k, v)| Op::Insert(k, v)),
            3 => (any::<u8>(), any::<u32>()).prop_map(|(k, v)| Op::Update(k, v)),
            3 => any::<u8>().prop_map(Op::Remove),
            1 => Just(Op::Drain),
            2 => Just(Op::Take),
        ],
        1..120,
    )
}

/// The table's run of one take: the whole table as bases (the first), or
/// the changed keys as deltas.
fn write_run(table: &mut KeyedTable<u8, u32>, base: bool) -> Vec<u8> {
    let changes = table.take_changes().expect("tracking is on");
    let mut writer = RunWriter::new();
    if base {
        for (group, entries) in full(table) {
            writer.section(group, SectionKind::Base, entries).unwrap();
        }
    } else {
        for (group, entries) in changes.encode_deltas().unwrap() {
            writer.section(group, SectionKind::Delta, entries).unwrap();
        }
    }
    writer.finish().unwrap().into_bytes().unwrap()
}

/// Every key group's entries, as a base section holds them.
fn full(table: &KeyedTable<u8, u32>) -> BTreeMap<KeyGroup, Vec<Entry>> {
    let mut groups: BTreeMap<KeyGroup, Vec<_>> = BTreeMap::new();
    for (key, value) in table.iter() {
        groups.entry(table.group_of(key)).or_default().push((
            postcard::to_allocvec(key).unwrap(),
            Some(postcard::to_allocvec(value).unwrap()),
        ));
    }
    groups
}

proptest! {
    #[test]
    fn a_base_and_the_deltas_of_each_take_rebuild_the_table(ops in ops()) {
        let mut table: KeyedTable<u8, u32> = KeyedTable::new("t", MAX, KeyGroupRange::of_subtask(MAX, 1, 0));
        table.track_changes();
        let mut runs = vec![write_run(&mut table, true)];
        for op in &ops {
            match *op {
                Op::Insert(k, v) => { table.insert(k, v).unwrap(); }
                Op::Update(k, v) => { if let Some(value) = table.get_mut(&k) { *value = v; } }
                Op::Remove(k) => { table.remove(&k); }
                Op::Drain => { table.drain(); }
                Op::Take => runs.push(write_run(&mut table, false)),
            }
        }
        runs.push(write_run(&mut table, false));
        let parsed: Vec<Run<'_>> = runs.iter().map(|r| Run::parse(r).unwrap()).collect();
        let mut rebuilt: BTreeMap<u8, u32> = BTreeMap::new();
        for group in KeyGroupRange::of_subtask(MAX, 1, 0).iter() {
            let chain = parsed.iter().filter_map(|run| run.section(group).unwrap());
            for (key, value) in merge_chain(chain) {
                rebuilt.insert(postcard::from_bytes(&key).unwrap(), postcard::from_bytes(&value).unwrap());
            }
        }
        let expected: BTreeMap<u8, u32> = table.iter().map(|(k, v)| (*k, *v)).collect();
        prop_assert_eq!(rebuilt, expected);
    }
}

#[test]
fn without_tracking_there_are_no_changes_and_a_take_starts_anew() {
    let mut table: KeyedTable<u8, u32> =
        KeyedTable::new("t", MAX, KeyGroupRange::of_subtask(MAX, 1, 0));
    table.insert(1, 1).unwrap();
    assert!(table.take_changes().is_none());
    table.track_changes();
    table.insert(2, 2).unwrap();
    table.remove(&1);
    table.remove(&9);
    let first = table.take_changes().unwrap().encode_deltas().unwrap();
    let keys: usize = first.iter().map(|(_, e)| e.len()).sum();
    assert_eq!(
        keys, 2,
        "2 written, 1 removed; removing an absent key is no change"
    );
    assert!(
        table
            .take_changes()
            .unwrap()
            .encode_deltas()
            .unwrap()
            .is_empty()
    );
}

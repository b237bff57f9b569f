//! The disk-backed table against the in-memory one: the same random
//! writes, removals, drains and flushes, and checkpoints of every kind
//! taken of both. Each completed checkpoint of either restores, into
//! either type (whole and split in two), to the table it was taken of.

use std::collections::BTreeMap;
use std::sync::Arc;

use holdfast_executor::{SharedContent, StateSource, StoredState};
use holdfast_types::sync::lock;
use holdfast_types::{CheckpointId, SnapshotKind};
use proptest::prelude::*;

use super::super::engine::{FjallStore, MemoryEngine, StateEngine};
use super::super::incremental::tests::{Files, MAX, encode, snapshot_kind};
use super::super::incremental::{TableChains, TablePart, restore_table};
use super::super::tracked::GroupSnapshot;
use super::*;
use crate::state::KeyedTable;

type Disk = DiskTable<String, u64>;
type Heap = KeyedTable<String, u64>;

/// A disk table on fjall in `dir`, whose buffer holds at most 64 entries
/// (the least), so that the random sequences flush often.
fn disk(dir: &std::path::Path, range: KeyGroupRange) -> Disk {
    let store = FjallStore::open(dir, 1 << 20).unwrap();
    let engine = store.engine("t").unwrap();
    DiskTable::new("sum", MAX, range, Box::new(engine), TableBudget::new(0)).unwrap()
}

fn in_memory(range: KeyGroupRange) -> Disk {
    let engine: Box<dyn StateEngine> = Box::new(MemoryEngine::new());
    DiskTable::new("sum", MAX, range, engine, TableBudget::new(0)).unwrap()
}

/// What a snapshot holds, decoded.
fn contents_of<S: GroupSnapshot<String>>(mut snapshot: S) -> BTreeMap<String, u64> {
    let mut all = BTreeMap::new();
    for (_, bytes) in snapshot.encode_inline().unwrap() {
        let entries: Vec<(String, u64)> = postcard::from_bytes(&bytes).unwrap();
        for (k, v) in entries {
            assert!(all.insert(k.clone(), v).is_none(), "{k} twice");
        }
    }
    all
}

fn disk_contents(table: &Disk) -> BTreeMap<String, u64> {
    contents_of(table.snapshot())
}

#[derive(Clone, Debug)]
enum Op {
    Put(u16, u64),
    Add(u16, u64),
    Remove(u16),
    Drain,
    Flush,
    Checkpoint { kind: u8, completes: bool },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u16..300, 0u64..1000).prop_map(|(k, v)| Op::Put(k, v)),
        4 => (0u16..300, 0u64..10).prop_map(|(k, v)| Op::Add(k, v)),
        2 => (0u16..300).prop_map(Op::Remove),
        1 => Just(Op::Drain),
        1 => Just(Op::Flush),
        3 => (0u8..6, proptest::bool::weighted(0.8))
            .prop_map(|(kind, completes)| Op::Checkpoint { kind, completes }),
    ]
}

/// Restores `part` of checkpoint `from` into an empty table of each type
/// for `range` (the disk-backed one twice: reading its sections into
/// memory, and as streams staged in `staging`, which is left empty);
/// returns the in-memory table's contents and the disk-backed one's (the
/// two restores of it checked equal).
fn restore_both(
    part: &[u8],
    files: &Arc<Files>,
    range: KeyGroupRange,
    from: CheckpointId,
    staging: &std::path::Path,
) -> (BTreeMap<String, u64>, BTreeMap<String, u64>) {
    let source = StateSource::Stored(Arc::clone(files) as Arc<dyn StoredState>);
    let parts = [(part.to_vec(), 3, &source)];
    let mut chains = TableChains::new("r", "sum");
    let heap = restore_table(
        Heap::new("sum", MAX, range),
        range,
        Some(from),
        &parts,
        &mut chains,
    )
    .unwrap();
    let mut chains = TableChains::new("r", "sum");
    let disk = restore_table(in_memory(range), range, Some(from), &parts, &mut chains).unwrap();
    let mut chains = TableChains::new("r", "sum");
    let streamed = in_memory(range).staging_in(staging.to_owned());
    let streamed = restore_table(streamed, range, Some(from), &parts, &mut chains).unwrap();
    assert_eq!(
        disk_contents(&streamed),
        disk_contents(&disk),
        "restored as streams"
    );
    assert_eq!(streamed.len(), disk.len(), "keys counted as streamed");
    assert!(
        std::fs::read_dir(staging).map_or(true, |mut d| d.next().is_none()),
        "a staged file is left"
    );
    let heap: BTreeMap<String, u64> = heap.iter().map(|(k, v)| (k.clone(), *v)).collect();
    (heap, disk_contents(&disk))
}

/// Whether every section of the run `bytes` holds its keys in ascending
/// order of their bytes (what a restore streams).
fn sections_ascend(bytes: &[u8]) -> bool {
    let run = super::super::run::Run::parse(bytes).unwrap();
    run.groups().into_iter().all(|(group, _)| {
        let (_, entries) = run.section(group).unwrap().unwrap();
        entries.windows(2).all(|w| w[0].0 < w[1].0)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_disk_table_does_what_the_in_memory_table_does(ops in proptest::collection::vec(op(), 1..150)) {
        let dir = tempfile::tempdir().unwrap();
        let range = KeyGroupRange::of_subtask(MAX, 1, 0);
        let mut heap = Heap::new("sum", MAX, range);
        let mut disk = disk(&dir.path().join("db"), range);
        let mut heap_chains = TableChains::<String>::new("h", "sum");
        // The disk table's runs spilled in parts of a few entries.
        let spill = dir.path().join("spill");
        let mut disk_chains = TableChains::<String>::new("d", "sum")
            .spilling_to(&spill, 256);
        let files = Arc::new(Files::default());
        let mut completed: Option<CheckpointId> = None;
        // (id, heap's part, disk's part, the table then)
        let mut taken = Vec::new();
        let mut id = 0;
        for op in ops {
            match op {
                Op::Put(k, v) | Op::Add(k, v) => {
                    let key = format!("k{k}");
                    let add = matches!(op, Op::Add(..));
                    let apply = |current: &mut u64, new: bool| {
                        if add && !new { *current += v } else { *current = v }
                        *current
                    };
                    let mut heap_table = super::super::backend::Table::Heap(heap);
                    let expected = heap_table.with_value(&key, || v, apply).unwrap();
                    let super::super::backend::Table::Heap(h) = heap_table else { unreachable!() };
                    heap = h;
                    prop_assert_eq!(disk.with_value(&key, || v, apply).unwrap(), expected);
                }
                Op::Remove(k) => {
                    let key = format!("k{k}");
                    prop_assert_eq!(disk.remove(&key).unwrap(), heap.remove(&key));
                }
                Op::Drain => {
                    let mut drained = BTreeMap::new();
                    disk.drain_each(|k, v| { drained.insert(k, v); Ok::<(), ()>(()) }).unwrap();
                    let expected: BTreeMap<String, u64> = heap.drain().into_iter().collect();
                    prop_assert_eq!(drained, expected);
                }
                Op::Flush => disk.flush().unwrap(),
                Op::Checkpoint { kind, completes } => {
                    id += 1;
                    let n = CheckpointId(id);
                    let kind = snapshot_kind(kind, completed);
                    let heap_part = encode(heap_chains.part(&mut heap, n, kind));
                    let disk_part = encode(disk_chains.part(&mut disk, n, kind));
                    let disk_files = || disk_part.own.iter().chain(&disk_part.shared);
                    let spilled = disk_files().all(|f| matches!(f.content, SharedContent::Spilled { .. }));
                    prop_assert!(spilled, "a disk table's run is not spilled");
                    for file in disk_files() {
                        prop_assert!(sections_ascend(&file.read().unwrap()),
                            "a section of the disk table's {} is not in key order", file.name);
                    }
                    // A full snapshot of the disk table is never inline
                    // (whole in memory): its groups are in files of its own.
                    let whole: TablePart = postcard::from_bytes(&disk_part.bytes).unwrap();
                    match kind {
                        SnapshotKind::Full => {
                            prop_assert!(matches!(whole, TablePart::Own(_)), "a full snapshot is {:?}", whole);
                            prop_assert!(disk_part.shared.is_empty() && disk_part.reused.is_empty());
                            prop_assert_eq!(disk_part.own.is_empty(), disk.is_empty());
                        }
                        SnapshotKind::Incremental { .. } => prop_assert!(disk_part.own.is_empty()),
                    }
                    prop_assert!(heap_part.own.is_empty(), "the in-memory table wrote its own files");
                    for file in heap_part.shared.into_iter().chain(disk_part.own).chain(disk_part.shared) {
                        prop_assert!(lock(&files.files).insert(file.name.clone(), file.read().unwrap()).is_none(),
                            "{} written twice", file.name);
                        file.discard();
                    }
                    if completes {
                        completed = Some(n);
                        let now: BTreeMap<String, u64> = heap.iter().map(|(k, v)| (k.clone(), *v)).collect();
                        taken.push((n, heap_part.bytes, disk_part.bytes, now));
                    }
                }
            }
            let now: BTreeMap<String, u64> = heap.iter().map(|(k, v)| (k.clone(), *v)).collect();
            prop_assert_eq!(disk.len(), now.len());
            prop_assert!(disk.buffered() <= 64, "the buffer holds {} entries", disk.buffered());
        }
        let now: BTreeMap<String, u64> = heap.iter().map(|(k, v)| (k.clone(), *v)).collect();
        prop_assert_eq!(disk_contents(&disk), now);
        prop_assert!(std::fs::read_dir(&spill).map_or(true, |mut d| d.next().is_none()),
            "a discarded spilled file is left");
        for (n, heap_part, disk_part, expected) in &taken {
            for part in [heap_part, disk_part] {
                let (h, d) = restore_both(part, &files, range, *n, &dir.path().join("staging"));
                prop_assert_eq!(&h, expected, "checkpoint {} into memory", n);
                prop_assert_eq!(&d, expected, "checkpoint {} onto disk", n);
                let mut halves = (BTreeMap::new(), BTreeMap::new());
                for subtask in 0..2 {
                    let half = KeyGroupRange::of_subtask(MAX, 2, subtask);
                    let (h, d) = restore_both(part, &files, half, *n, &dir.path().join("staging"));
                    halves.0.extend(h);
                    halves.1.extend(d);
                }
                prop_assert_eq!(&halves.0, expected, "checkpoint {} split in two, into memory", n);
                prop_assert_eq!(&halves.1, expected, "checkpoint {} split in two, onto disk", n);
            }
        }
    }
}

#[test]
fn the_buffer_is_bounded_and_a_snapshot_is_unchanged_by_later_writes() {
    let dir = tempfile::tempdir().unwrap();
    let range = KeyGroupRange::of_subtask(MAX, 1, 0);
    let mut table = disk(&dir.path().join("db"), range);
    for k in 0..1000u64 {
        table.with_value(&format!("k{k}"), || k, |_, _| ()).unwrap();
        assert!(table.buffered() <= 64);
    }
    let snapshot = table.snapshot();
    for k in 0..1000u64 {
        table
            .with_value(&format!("k{k}"), || 0, |v, _| *v += 1)
            .unwrap();
    }
    table.remove(&"k3".to_owned()).unwrap();
    let then = contents_of(snapshot);
    assert_eq!(then.len(), 1000);
    assert!(
        then.iter()
            .all(|(k, v)| k[1..].parse::<u64>().unwrap() == *v)
    );
    let now = disk_contents(&table);
    assert_eq!(now.len(), 999);
    assert!(
        now.iter()
            .all(|(k, v)| k[1..].parse::<u64>().unwrap() + 1 == *v)
    );
}

#[test]
fn a_foreign_key_is_refused_and_a_damaged_value_is_named() {
    let range = KeyGroupRange::of_subtask(MAX, 2, 0);
    let mut engine = MemoryEngine::new();
    // A value that is not a u64's encoding, under a key of the range.
    let key = (0..)
        .map(|k| format!("k{k}"))
        .find(|k| range.contains(KeyGroup::of_hash(crate::keys::key_hash(k), MAX)))
        .unwrap();
    let group = KeyGroup::of_hash(crate::keys::key_hash(&key), MAX);
    engine
        .write(vec![(
            engine_key(group, &key).unwrap(),
            Some(vec![0xff; 12]),
        )])
        .unwrap();
    let mut table: Disk =
        DiskTable::new("sum", MAX, range, Box::new(engine), TableBudget::new(0)).unwrap();
    let foreign = (0..)
        .map(|k| format!("k{k}"))
        .find(|k| !range.contains(KeyGroup::of_hash(crate::keys::key_hash(k), MAX)))
        .unwrap();
    assert_eq!(table.with_value(&foreign, || 1, |v, _| *v).unwrap(), None);
    let damaged = table.get(&key).unwrap_err().to_string();
    assert!(
        damaged.contains("state sum") && damaged.contains(&group.to_string()),
        "{damaged}"
    );
}

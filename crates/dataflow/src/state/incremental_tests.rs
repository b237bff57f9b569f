//! Incremental snapshots of a keyed table against the table itself: random
//! writes, removals and drains between random checkpoints (full, or
//! incremental on a completed one, or on none); every completed
//! checkpoint, restored from its chains (at its parallelism and split in
//! two), is the table as it was at that checkpoint.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use holdfast_executor::{EncodedState, StateSource, StoredState};
use holdfast_types::{CheckpointId, SnapshotKind};
use proptest::prelude::*;

use super::*;
use crate::state::KeyedTable;

pub(crate) const MAX: u32 = 16;

/// Shared files in memory, read the way a TaskManager reads them.
#[derive(Default)]
pub(crate) struct Files {
    pub(crate) files: Mutex<HashMap<String, Vec<u8>>>,
    reads: Mutex<usize>,
}

impl StoredState for Files {
    fn location(&self) -> String {
        "memory".to_owned()
    }

    fn read(&self) -> Result<Arc<[u8]>, String> {
        Err("no state file here".to_owned())
    }

    fn read_range(
        &self,
        file: PartFile<'_>,
        range: std::ops::Range<u64>,
    ) -> Result<Vec<u8>, String> {
        *lock(&self.reads) += 1;
        let name = file.name();
        let files = lock(&self.files);
        let file = files
            .get(name)
            .ok_or_else(|| format!("{name}: no such file"))?;
        file.get(range.start as usize..range.end as usize)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| format!("{name}: {range:?} is past its end"))
    }
}

type Table = KeyedTable<String, u64>;

/// A checkpoint taken: its id, its part, the table then, whether it
/// completed.
type Taken = (CheckpointId, Vec<u8>, BTreeMap<String, u64>, bool);

pub(crate) fn encode(part: Part) -> EncodedState {
    match part {
        Part::Deferred(encode) => encode().unwrap(),
        Part::Bytes(bytes) => bytes.into(),
    }
}

/// A random checkpoint's kind (`kind` drawn from 0..6): full, incremental
/// on none, or (most often) incremental on the newest `completed` one.
pub(crate) fn snapshot_kind(kind: u8, completed: Option<CheckpointId>) -> SnapshotKind {
    match kind {
        0 => SnapshotKind::Full,
        1 => SnapshotKind::Incremental { base: None },
        _ => SnapshotKind::Incremental { base: completed },
    }
}

fn contents(table: &Table) -> BTreeMap<String, u64> {
    table.iter().map(|(k, v)| (k.clone(), *v)).collect()
}

fn restore(
    part: &[u8],
    files: &Arc<Files>,
    range: KeyGroupRange,
    from: CheckpointId,
) -> (Table, TableChains<String>) {
    let source = StateSource::Stored(Arc::clone(files) as Arc<dyn StoredState>);
    let mut chains = TableChains::new("restored", "sum");
    let table = restore_table(
        Table::new("sum", MAX, range),
        range,
        Some(from),
        &[(part.to_vec(), 3, &source)],
        &mut chains,
    )
    .unwrap();
    (table, chains)
}

#[derive(Clone, Debug)]
enum Op {
    Put(u8, u64),
    Remove(u8),
    Drain,
    /// A checkpoint: full, incremental on the newest completed one, or
    /// incremental on none; completed or not.
    Checkpoint {
        kind: u8,
        completes: bool,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0u8..40, 0u64..1000).prop_map(|(k, v)| Op::Put(k, v)),
        2 => (0u8..40).prop_map(Op::Remove),
        1 => Just(Op::Drain),
        3 => (0u8..6, proptest::bool::weighted(0.8))
            .prop_map(|(kind, completes)| Op::Checkpoint { kind, completes }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn every_completed_checkpoint_restores_to_the_table_it_was_taken_of(ops in proptest::collection::vec(op(), 1..120)) {
        let range = KeyGroupRange::of_subtask(MAX, 1, 0);
        let mut table = Table::new("sum", MAX, range);
        let mut chains = TableChains::<String>::new("0-0-0", "sum");
        let files = Arc::new(Files::default());
        let mut completed: Option<CheckpointId> = None;
        let mut taken: Vec<Taken> = Vec::new();
        let mut id = 0;
        for op in ops {
            match op {
                Op::Put(k, v) => { let _ = table.insert(format!("k{k}"), v); }
                Op::Remove(k) => { table.remove(&format!("k{k}")); }
                Op::Drain => { table.drain(); }
                Op::Checkpoint { kind, completes } => {
                    id += 1;
                    let n = CheckpointId(id);
                    let kind = snapshot_kind(kind, completed);
                    let encoded = encode(chains.part(&mut table, n, kind));
                    // Reused files are the base's own: never one of a
                    // checkpoint that did not complete.
                    if let SnapshotKind::Incremental { base: Some(b) } = kind {
                        let base_files: BTreeSet<String> = taken.iter()
                            .filter(|t| t.0 == b)
                            .flat_map(|t| chain_files(&t.1))
                            .collect();
                        for reused in &encoded.reused {
                            prop_assert!(base_files.contains(&reused.name),
                                "{n} reused {} which its base {b} does not use", reused.name);
                        }
                    } else {
                        prop_assert!(encoded.reused.is_empty(), "{kind:?} reused {:?}", encoded.reused);
                    }
                    for file in encoded.shared {
                        prop_assert!(lock(&files.files).insert(file.name.clone(), file.read().unwrap()).is_none(),
                            "{} written twice", file.name);
                    }
                    if completes {
                        completed = Some(n);
                    }
                    taken.push((n, encoded.bytes, contents(&table), completes));
                }
            }
        }
        for (n, part, expected, completes) in &taken {
            if !completes {
                continue;
            }
            let (restored, _) = restore(part, &files, range, *n);
            prop_assert_eq!(&contents(&restored), expected, "checkpoint {}", n);
            // At parallelism 2 each half takes its own key groups.
            let mut halves = BTreeMap::new();
            for subtask in 0..2 {
                let half = KeyGroupRange::of_subtask(MAX, 2, subtask);
                let (restored, _) = restore(part, &files, half, *n);
                halves.extend(contents(&restored));
            }
            prop_assert_eq!(&halves, expected, "checkpoint {} split in two", n);
            if let Ok(TablePart::Chains(chains)) = postcard::from_bytes::<TablePart>(part) {
                for (group, chain) in chains {
                    prop_assert!(chain.len() <= MAX_CHAIN, "group {} has {} sections", group, chain.len());
                    prop_assert!(chain.first().is_some_and(|s| s.at.kind == super::super::run::SectionKind::Base),
                        "group {}'s chain does not start with a base", group);
                }
            }
        }
    }
}

/// The shared files a part's chains name.
fn chain_files(part: &[u8]) -> Vec<String> {
    match postcard::from_bytes::<TablePart>(part) {
        Ok(TablePart::Chains(chains)) => chains
            .into_iter()
            .flat_map(|(_, c)| c.into_iter().map(|s| s.file))
            .collect(),
        _ => Vec::new(),
    }
}

#[test]
fn a_checkpoint_on_a_base_writes_only_the_changed_groups_and_reuses_the_rest() {
    let range = KeyGroupRange::of_subtask(MAX, 1, 0);
    let mut table = Table::new("sum", MAX, range);
    let mut chains = TableChains::<String>::new("0-0-0", "sum");
    for k in 0..1000 {
        table.insert(format!("k{k}"), k).unwrap();
    }
    let first = encode(chains.part(
        &mut table,
        CheckpointId(1),
        SnapshotKind::Incremental { base: None },
    ));
    assert_eq!(first.shared.len(), 1);
    assert!(first.reused.is_empty());
    let full = first.shared[0].len();
    // One key changed: a delta of one group; the other groups' sections
    // are reused from checkpoint 1's file.
    *table.get_mut(&"k7".to_owned()).unwrap() = 70;
    let second = encode(chains.part(
        &mut table,
        CheckpointId(2),
        SnapshotKind::Incremental {
            base: Some(CheckpointId(1)),
        },
    ));
    assert_eq!(second.shared.len(), 1);
    let delta = second.shared[0].len();
    assert!(
        delta * 20 < full,
        "a one-key change wrote {delta} bytes against {full} for everything"
    );
    assert_eq!(
        second
            .reused
            .iter()
            .map(|r| r.name.as_str())
            .collect::<Vec<_>>(),
        ["shared/0-0-0/1-sum-".to_owned() + &format!("{:08x}.run", crc32fast::hash(b"sum"))]
    );
    // Nothing changed: nothing written, everything reused.
    let third = encode(chains.part(
        &mut table,
        CheckpointId(3),
        SnapshotKind::Incremental {
            base: Some(CheckpointId(2)),
        },
    ));
    assert!(third.shared.is_empty());
    assert_eq!(third.reused.len(), 2);
    // A base whose chains this attempt does not know: written whole.
    let fourth = encode(chains.part(
        &mut table,
        CheckpointId(4),
        SnapshotKind::Incremental {
            base: Some(CheckpointId(99)),
        },
    ));
    assert_eq!(fourth.shared.len(), 1);
    assert!(fourth.reused.is_empty());
}

#[test]
fn a_damaged_or_missing_shared_file_is_refused_by_name() {
    let range = KeyGroupRange::of_subtask(MAX, 1, 0);
    let mut table = Table::new("sum", MAX, range);
    let mut chains = TableChains::<String>::new("0-0-0", "sum");
    for k in 0..100 {
        table.insert(format!("k{k}"), k).unwrap();
    }
    let encoded = encode(chains.part(
        &mut table,
        CheckpointId(1),
        SnapshotKind::Incremental { base: None },
    ));
    let files = Arc::new(Files::default());
    let source = StateSource::Stored(Arc::clone(&files) as Arc<dyn StoredState>);
    let restore_with = |files_source: &StateSource| {
        let mut out = TableChains::<String>::new("r", "sum");
        restore_table::<String, u64, _>(
            Table::new("sum", MAX, range),
            range,
            Some(CheckpointId(1)),
            &[(encoded.bytes.clone(), 3, files_source)],
            &mut out,
        )
        .map(|_| ())
        .unwrap_err()
        .to_string()
    };
    let missing = restore_with(&source);
    assert!(missing.contains("no such file"), "{missing}");
    let name = encoded.shared[0].name.clone();
    let mut damaged = encoded.shared[0].read().unwrap();
    let middle = damaged.len() / 2;
    damaged[middle] ^= 0xff;
    lock(&files.files).insert(name.clone(), damaged);
    let error = restore_with(&source);
    assert!(
        error.contains(&name) && error.contains("damaged"),
        "{error}"
    );
    let in_memory = restore_with(&StateSource::Empty);
    assert!(
        in_memory.contains("names files beside its state file"),
        "{in_memory}"
    );
}

#[test]
fn rebases_roll_so_no_checkpoint_after_the_first_rewrites_everything() {
    let range = KeyGroupRange::of_subtask(MAX, 1, 0);
    let mut table = Table::new("sum", MAX, range);
    let mut chains = TableChains::<String>::new("0-0-0", "sum");
    // Keys in every group.
    let mut keys: BTreeMap<KeyGroup, String> = BTreeMap::new();
    for k in 0..10_000 {
        let key = format!("k{k}");
        table.insert(key.clone(), k).unwrap();
        keys.entry(table.group_of(&key)).or_insert(key);
    }
    assert_eq!(keys.len(), MAX as usize);
    let mut base = None;
    let mut bases_written = Vec::new();
    for n in 1..=40 {
        // One key of every group changes between two checkpoints.
        for key in keys.values() {
            *table.get_mut(key).unwrap() += 1;
        }
        let encoded = encode(chains.part(
            &mut table,
            CheckpointId(n),
            SnapshotKind::Incremental { base },
        ));
        base = Some(CheckpointId(n));
        let run = &encoded.shared[0].read().unwrap();
        let sections = super::super::run::Run::parse(run).unwrap().groups();
        bases_written.push(
            sections
                .iter()
                .filter(|(_, k)| *k == super::super::run::SectionKind::Base)
                .count(),
        );
        let part: TablePart = postcard::from_bytes(&encoded.bytes).unwrap();
        let TablePart::Chains(part) = part else {
            panic!("not chains")
        };
        assert!(part.iter().all(|(_, c)| c.len() <= MAX_CHAIN));
    }
    assert_eq!(
        bases_written[0], MAX as usize,
        "the first writes every group"
    );
    let budget = (MAX as usize).div_ceil(MAX_CHAIN);
    for (n, bases) in bases_written.iter().enumerate().skip(1) {
        assert!(
            *bases <= 2 * budget,
            "checkpoint {} rewrote {bases} of {MAX} groups: {bases_written:?}",
            n + 1
        );
    }
    // Over a long run every group is rebased about once per MAX_CHAIN
    // checkpoints.
    let late: usize = bases_written[20..].iter().sum();
    assert!(
        late <= 20 * budget && late >= 20 * budget / 2,
        "{bases_written:?}"
    );
}

#[test]
fn full_checkpoints_only_keep_memory_bounded_and_stop_the_tracking() {
    let range = KeyGroupRange::of_subtask(MAX, 1, 0);
    let mut table = Table::new("sum", MAX, range);
    let mut chains = TableChains::<String>::new("0-0-0", "sum");
    table.insert("a".to_owned(), 1).unwrap();
    encode(chains.part(
        &mut table,
        CheckpointId(1),
        SnapshotKind::Incremental { base: None },
    ));
    assert!(table.is_tracking_changes());
    // Incremental checkpoints turned off: every one is full from now on.
    for n in 2..40 {
        *table.get_mut(&"a".to_owned()).unwrap() += 1;
        encode(chains.part(&mut table, CheckpointId(n), SnapshotKind::Full));
        assert!(chains.changes.len() <= MAX_CHANGE_LISTS);
    }
    assert!(
        !table.is_tracking_changes(),
        "no chain is left to be a base"
    );
    assert!(chains.changes.is_empty());
    // A base given up is written whole.
    let encoded = encode(chains.part(
        &mut table,
        CheckpointId(40),
        SnapshotKind::Incremental {
            base: Some(CheckpointId(1)),
        },
    ));
    assert!(encoded.reused.is_empty());
}

/// An encoding that fails after finishing parts deletes their spilled
/// files (they are nobody's); one that succeeds hands them on.
#[test]
fn finished_parts_of_a_failed_encoding_are_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let entry = |k: u8| (vec![k], Some(vec![k]));
    let write = |parts: &mut RunParts<'_>, chains: &mut Chains, group: u32| {
        chains.insert(group, Vec::new());
        parts
            .writer()
            .unwrap()
            .section(KeyGroup(group), SectionKind::Base, [entry(1), entry(2)])
            .unwrap();
        parts.finish(chains).unwrap();
    };
    let files = || std::fs::read_dir(dir.path()).unwrap().count();
    let mut chains = Chains::new();
    let mut failed = RunParts {
        name: "t-1-sum.run".to_owned(),
        spill: Some(dir.path()),
        writer: None,
        files: Vec::new(),
    };
    write(&mut failed, &mut chains, 0);
    write(&mut failed, &mut chains, 1);
    assert_eq!(files(), 2, "two parts spilled");
    drop(failed);
    assert_eq!(files(), 0, "a failed encoding's parts are deleted");
    let mut done = RunParts {
        name: "t-2-sum.run".to_owned(),
        spill: Some(dir.path()),
        writer: None,
        files: Vec::new(),
    };
    write(&mut done, &mut chains, 0);
    let kept = std::mem::take(&mut done.files);
    drop(done);
    assert_eq!(kept.len(), 1);
    assert_eq!(files(), 1, "parts handed on are kept");
}

/// A full snapshot of an empty disk-backed table names no file: it
/// restores from a state file with nothing beside it (a local run's).
#[test]
fn an_empty_full_snapshot_restores_without_any_file() {
    let range = KeyGroupRange::of_subtask(MAX, 1, 0);
    let part = postcard::to_allocvec(&TablePart::Own(Vec::new())).unwrap();
    let source = StateSource::Bytes(Arc::from([]));
    let parts = [(part, 3, &source)];
    let mut chains = TableChains::new("r", "sum");
    let table = restore_table(
        Table::new("sum", MAX, range),
        range,
        Some(CheckpointId(1)),
        &parts,
        &mut chains,
    )
    .unwrap();
    assert_eq!(table.iter().count(), 0);
}

/// What an encoder did with a snapshot's groups, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Did {
    Base(usize),
    Delta(usize),
    Inline(usize),
    Release(usize),
}

/// A table whose snapshots log what the encoder does with them.
struct Watched {
    table: Table,
    log: Arc<Mutex<Vec<Did>>>,
}

/// A snapshot that logs each group written and let go, and fails a read
/// of a group after it was let go.
struct WatchedSnapshot {
    inner: crate::state::TableSnapshot<String, u64>,
    log: Arc<Mutex<Vec<Did>>>,
}

impl WatchedSnapshot {
    fn did(&self, did: Did, slot: usize) {
        let mut log = lock(&self.log);
        assert!(
            !log.contains(&Did::Release(slot)),
            "group {slot} read ({did:?}) after it was let go: {log:?}"
        );
        log.push(did);
    }
}

impl GroupSnapshot<String> for WatchedSnapshot {
    fn range(&self) -> KeyGroupRange {
        GroupSnapshot::range(&self.inner)
    }
    fn group_len(&self, slot: usize) -> usize {
        GroupSnapshot::group_len(&self.inner, slot)
    }
    fn write_base(&self, slot: usize, run: &mut RunWriter) -> Result<(), StateError> {
        self.did(Did::Base(slot), slot);
        GroupSnapshot::write_base(&self.inner, slot, run)
    }
    fn write_delta(
        &self,
        slot: usize,
        keys: &[&String],
        run: &mut RunWriter,
    ) -> Result<(), StateError> {
        self.did(Did::Delta(slot), slot);
        GroupSnapshot::write_delta(&self.inner, slot, keys, run)
    }
    fn encode_group_inline(&self, slot: usize) -> Result<Vec<u8>, StateError> {
        self.did(Did::Inline(slot), slot);
        self.inner.encode_group_inline(slot)
    }
    fn release(&mut self, slot: usize) {
        self.did(Did::Release(slot), slot);
        self.inner.release(slot);
        assert_eq!(self.inner.group_len(slot), 0, "group {slot} still held");
    }
}

impl TrackedTable<String> for Watched {
    type Snapshot = WatchedSnapshot;
    fn snapshot_now(&mut self) -> WatchedSnapshot {
        WatchedSnapshot {
            inner: self.table.snapshot_now(),
            log: Arc::clone(&self.log),
        }
    }
    fn is_tracking_changes(&self) -> bool {
        self.table.is_tracking_changes()
    }
    fn track_changes(&mut self) {
        self.table.track_changes();
    }
    fn untrack_changes(&mut self) {
        self.table.untrack_changes();
    }
    fn take_changed(&mut self) -> Option<(WatchedSnapshot, Vec<Vec<String>>)> {
        let (inner, changed) = self.table.take_changed()?;
        let log = Arc::clone(&self.log);
        Some((WatchedSnapshot { inner, log }, changed))
    }
}

/// Every encoding lets go of each group of its snapshot once, and only
/// after writing it (groups with nothing to write at once), so that the
/// task's writes copy a group for as short a time as the encoding allows
/// (an in-memory table's group is copy-on-write only while a snapshot
/// holds it); the sections stay in group order.
#[test]
fn encodings_let_go_of_each_group_once_written() {
    let range = KeyGroupRange::of_subtask(MAX, 1, 0);
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut watched = Watched {
        table: Table::new("sum", MAX, range),
        log: Arc::clone(&log),
    };
    // Keys in every group, so that each has a base to write.
    let mut one_per_group: BTreeMap<KeyGroup, String> = BTreeMap::new();
    for k in 0..2_000 {
        let key = format!("k{k}");
        watched.table.insert(key.clone(), k).unwrap();
        one_per_group
            .entry(watched.table.group_of(&key))
            .or_insert(key);
    }
    let groups = range.len();
    let take = |log: &Mutex<Vec<Did>>| std::mem::take(&mut *lock(log));
    let released_once = |did: &[Did]| {
        for slot in 0..groups {
            let n = did.iter().filter(|d| **d == Did::Release(slot)).count();
            assert_eq!(n, 1, "group {slot} let go {n} times: {did:?}");
        }
    };

    // The first incremental checkpoint: every group a base.
    let mut chains = TableChains::<String>::new("0-0-0", "sum");
    encode(chains.part(
        &mut watched,
        CheckpointId(1),
        SnapshotKind::Incremental { base: None },
    ));
    let did = take(&log);
    released_once(&did);
    assert_eq!(
        did.iter().filter(|d| matches!(d, Did::Base(_))).count(),
        groups
    );

    // Then a key of every other group changes: the unchanged groups go
    // before anything is written.
    for key in one_per_group.values().step_by(2) {
        *watched.table.get_mut(key).unwrap() += 1;
    }
    for n in 2..6 {
        encode(chains.part(
            &mut watched,
            CheckpointId(n),
            SnapshotKind::Incremental {
                base: Some(CheckpointId(n - 1)),
            },
        ));
        let did = take(&log);
        released_once(&did);
        let first_write = did
            .iter()
            .position(|d| !matches!(d, Did::Release(_)))
            .unwrap_or(did.len());
        let written = |slot: usize| {
            did.iter()
                .any(|d| matches!(d, Did::Base(s) | Did::Delta(s) if *s == slot))
        };
        for slot in (0..groups).filter(|s| !written(*s)) {
            let at = did.iter().position(|d| *d == Did::Release(slot)).unwrap();
            assert!(
                at < first_write,
                "unchanged group {slot} let go late: {did:?}"
            );
        }
        // In group order (a restore of a range of groups reads one span).
        let written: Vec<usize> = did
            .iter()
            .filter_map(|d| match d {
                Did::Base(s) | Did::Delta(s) => Some(*s),
                _ => None,
            })
            .collect();
        assert!(written.is_sorted(), "not in group order: {did:?}");
        assert!(
            did.iter().any(|d| matches!(d, Did::Delta(_))),
            "no delta written: {did:?}"
        );
        for key in one_per_group.values().step_by(2) {
            *watched.table.get_mut(key).unwrap() += 1;
        }
    }

    // A full snapshot, inline and as files of its own.
    encode(chains.part(&mut watched, CheckpointId(9), SnapshotKind::Full));
    let did = take(&log);
    released_once(&did);
    assert_eq!(
        did.iter().filter(|d| matches!(d, Did::Inline(_))).count(),
        groups
    );
    let dir = tempfile::tempdir().unwrap();
    let mut spilling = TableChains::<String>::new("0-0-0", "sum").spilling_to(dir.path(), 1 << 10);
    let own = encode(spilling.part(&mut watched, CheckpointId(10), SnapshotKind::Full));
    let did = take(&log);
    released_once(&did);
    assert_eq!(
        did.iter().filter(|d| matches!(d, Did::Base(_))).count(),
        groups
    );
    own.own
        .iter()
        .for_each(holdfast_executor::SharedFile::discard);

    // Empty groups are let go too, with nothing to write.
    watched.table.drain();
    let empty = encode(spilling.part(&mut watched, CheckpointId(11), SnapshotKind::Full));
    released_once(&take(&log));
    assert!(empty.own.is_empty());
}

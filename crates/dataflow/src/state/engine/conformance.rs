//! The conformance suite every [`StateEngine`] passes: the same checks on
//! the reference [`MemoryEngine`] and on [`FjallEngine`] (on a temporary
//! directory).

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;

/// The engines under test, each new and empty (the directory is kept
/// alive with the engine).
fn engines() -> Vec<(Box<dyn StateEngine>, Option<tempfile::TempDir>)> {
    let dir = tempfile::tempdir().unwrap();
    let store = FjallStore::open(&dir.path().join("db"), 16 << 20).unwrap();
    vec![
        (Box::new(MemoryEngine::new()), None),
        (Box::new(store.engine("t").unwrap()), Some(dir)),
    ]
}

fn scan(snapshot: &dyn EngineSnapshot, prefix: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    snapshot
        .scan_prefix(prefix, &mut |k, v| {
            out.push((k.to_vec(), v.to_vec()));
            Ok(())
        })
        .unwrap();
    out
}

fn put(k: &[u8], v: &[u8]) -> BatchEntry {
    (k.to_vec(), Some(v.to_vec()))
}

#[test]
fn writes_overwrites_and_removals_are_read_back() {
    for (mut engine, _dir) in engines() {
        let name = engine.describe();
        assert_eq!(engine.get(b"a").unwrap(), None, "{name}");
        engine
            .write(vec![put(b"a", b"1"), put(b"b", b"2")])
            .unwrap();
        engine
            .write(vec![put(b"a", b"3"), (b"b".to_vec(), None)])
            .unwrap();
        assert_eq!(engine.get(b"a").unwrap(), Some(b"3".to_vec()), "{name}");
        assert_eq!(engine.get(b"b").unwrap(), None, "{name}");
        // Removing what is absent is no error; an empty batch neither.
        engine.write(vec![(b"zz".to_vec(), None)]).unwrap();
        engine.write(Vec::new()).unwrap();
        assert_eq!(engine.get(b"zz").unwrap(), None, "{name}");
    }
}

#[test]
fn a_scan_sees_exactly_its_prefix_in_key_order() {
    for (mut engine, _dir) in engines() {
        let name = engine.describe();
        engine
            .write(vec![
                put(&[0, 2], b"x"),
                put(&[0, 1, 0xff, 0xff], b"c"),
                put(&[0, 1], b"a"),
                put(&[0, 1, 0], b"b"),
                put(&[0, 0, 0xff], b"y"),
                put(&[1, 1], b"z"),
            ])
            .unwrap();
        let seen = scan(&*engine.snapshot(), &[0, 1]);
        assert_eq!(
            seen,
            vec![
                (vec![0, 1], b"a".to_vec()),
                (vec![0, 1, 0], b"b".to_vec()),
                (vec![0, 1, 0xff, 0xff], b"c".to_vec()),
            ],
            "{name}"
        );
        assert!(scan(&*engine.snapshot(), &[2]).is_empty(), "{name}");
        // A scan stops at its callback's first error, and returns it.
        let mut calls = 0;
        let stopped = engine.snapshot().scan_prefix(&[0], &mut |_, _| {
            calls += 1;
            Err(EngineError {
                engine: "test".into(),
                reason: "stop".into(),
            })
        });
        assert_eq!(
            (calls, stopped.unwrap_err().reason.as_str()),
            (1, "stop"),
            "{name}"
        );
    }
}

/// Every key with `prefix` from `from` on, as the engine is now, at most
/// `most` of them.
fn scan_live(
    engine: &dyn StateEngine,
    prefix: &[u8],
    from: &[u8],
    most: usize,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    engine
        .scan_from(prefix, from, &mut |k, v| {
            out.push((k.to_vec(), v.to_vec()));
            Ok(out.len() < most)
        })
        .unwrap();
    out
}

#[test]
fn a_live_scan_starts_where_it_is_told_sees_the_latest_writes_and_stops_when_told() {
    for (mut engine, _dir) in engines() {
        let name = engine.describe();
        engine
            .write(vec![
                put(&[0, 1, 5], b"a"),
                put(&[0, 1, 7], b"b"),
                put(&[0, 1, 9], b"c"),
                put(&[0, 2], b"x"),
                put(&[0, 0, 9], b"y"),
            ])
            .unwrap();
        engine
            .write(vec![(vec![0, 1, 7], None), put(&[0, 1, 8], b"d")])
            .unwrap();
        let keys = |seen: Vec<(Vec<u8>, Vec<u8>)>| -> Vec<Vec<u8>> {
            seen.into_iter().map(|(k, _)| k).collect()
        };
        // From below the prefix: the whole prefix, without what was removed.
        assert_eq!(
            keys(scan_live(&*engine, &[0, 1], &[0], usize::MAX)),
            vec![vec![0, 1, 5], vec![0, 1, 8], vec![0, 1, 9]],
            "{name}"
        );
        // From a key between two: the keys not below it.
        assert_eq!(
            keys(scan_live(&*engine, &[0, 1], &[0, 1, 6], usize::MAX)),
            vec![vec![0, 1, 8], vec![0, 1, 9]],
            "{name}"
        );
        // From a key of its own: it included.
        assert_eq!(
            scan_live(&*engine, &[0, 1], &[0, 1, 8], usize::MAX),
            vec![
                (vec![0, 1, 8], b"d".to_vec()),
                (vec![0, 1, 9], b"c".to_vec())
            ],
            "{name}"
        );
        // Told to stop after one: one.
        assert_eq!(
            keys(scan_live(&*engine, &[0, 1], &[0, 1], 1)),
            vec![vec![0, 1, 5]],
            "{name}"
        );
        // Past the prefix's last key: nothing.
        assert!(
            scan_live(&*engine, &[0, 1], &[0, 1, 10], usize::MAX).is_empty(),
            "{name}"
        );
        assert!(
            scan_live(&*engine, &[0, 1], &[0, 2], usize::MAX).is_empty(),
            "{name}"
        );
    }
}

#[test]
fn a_snapshot_is_not_changed_by_later_writes_and_is_read_on_another_thread() {
    for (mut engine, _dir) in engines() {
        let name = engine.describe();
        engine
            .write(vec![put(b"k1", b"old"), put(b"k2", b"gone")])
            .unwrap();
        let snapshot = engine.snapshot();
        engine
            .write(vec![
                put(b"k1", b"new"),
                (b"k2".to_vec(), None),
                put(b"k3", b"added"),
            ])
            .unwrap();
        let (got, scanned) =
            std::thread::spawn(move || (snapshot.get(b"k1").unwrap(), scan(&*snapshot, b"k")))
                .join()
                .unwrap();
        assert_eq!(got, Some(b"old".to_vec()), "{name}");
        assert_eq!(
            scanned,
            vec![
                (b"k1".to_vec(), b"old".to_vec()),
                (b"k2".to_vec(), b"gone".to_vec())
            ],
            "{name}"
        );
        assert_eq!(engine.get(b"k1").unwrap(), Some(b"new".to_vec()), "{name}");
    }
}

#[test]
fn a_sorted_write_is_read_back_and_overrides_older_writes() {
    for (mut engine, _dir) in engines() {
        let name = engine.describe();
        engine
            .write(vec![
                put(b"a", b"old"),
                put(b"c", b"kept"),
                put(b"d", b"gone"),
            ])
            .unwrap();
        let before = engine.snapshot();
        engine
            .write_sorted(&mut |sink| {
                sink(b"a", Some(b"new"))?;
                sink(b"b", Some(b"added"))?;
                sink(b"d", None)
            })
            .unwrap();
        // A write through the memtable after the sorted one wins.
        engine.write(vec![put(b"b", b"later")]).unwrap();
        assert_eq!(
            scan(&*engine.snapshot(), b""),
            vec![
                (b"a".to_vec(), b"new".to_vec()),
                (b"b".to_vec(), b"later".to_vec()),
                (b"c".to_vec(), b"kept".to_vec()),
            ],
            "{name}"
        );
        assert_eq!(before.get(b"a").unwrap(), Some(b"old".to_vec()), "{name}");
        assert_eq!(before.get(b"d").unwrap(), Some(b"gone".to_vec()), "{name}");
        // Nothing to write is no error.
        engine.write_sorted(&mut |_| Ok(())).unwrap();
    }
}

#[test]
fn a_sorted_write_out_of_order_fails_named_and_writes_nothing() {
    for (mut engine, _dir) in engines() {
        let name = engine.describe();
        for repeated in [&b"b"[..], b"a"] {
            let failed = engine
                .write_sorted(&mut |sink| {
                    sink(b"a", Some(b"1"))?;
                    sink(b"b", Some(b"2"))?;
                    sink(repeated, Some(b"3"))
                })
                .unwrap_err();
            assert!(failed.reason.contains("must ascend"), "{name}: {failed}");
            assert_eq!(failed.engine, name);
        }
        // A fill that fails writes nothing either.
        let stopped = EngineError {
            engine: "caller".into(),
            reason: "stopped".into(),
        };
        let failed = engine
            .write_sorted(&mut |sink| {
                sink(b"c", Some(b"1"))?;
                Err(EngineError {
                    engine: stopped.engine.clone(),
                    reason: stopped.reason.clone(),
                })
            })
            .unwrap_err();
        assert_eq!(failed.reason, "stopped", "{name}");
        // A fill that swallows the sink's refusal writes nothing either.
        let failed = engine
            .write_sorted(&mut |sink| {
                sink(b"d", Some(b"1"))?;
                let _ = sink(b"d", Some(b"2"));
                Ok(())
            })
            .unwrap_err();
        assert!(failed.reason.contains("must ascend"), "{name}: {failed}");
        assert_eq!(scan(&*engine.snapshot(), b""), Vec::new(), "{name}");
    }
}

/// An operation of the random sequences: a batch, a sorted write (its
/// keys sorted and each once), or a snapshot to check at the end.
#[derive(Debug, Clone)]
enum Op {
    Batch(Vec<(u8, Option<u8>)>),
    Sorted(Vec<(u8, Option<u8>)>),
    Snapshot,
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let writes = || proptest::collection::vec((0u8..24, proptest::option::of(any::<u8>())), 0..12);
    proptest::collection::vec(
        prop_oneof![
            2 => writes().prop_map(Op::Batch),
            2 => writes().prop_map(Op::Sorted),
            1 => Just(Op::Snapshot)
        ],
        0..30,
    )
}

fn value(v: u8) -> Vec<u8> {
    vec![v; usize::from(v % 5)]
}

/// The key of `k`: in one of three prefixes, of varying lengths.
fn key(k: u8) -> Vec<u8> {
    let mut key = vec![k % 3];
    key.extend(std::iter::repeat_n(k, usize::from(k % 4)));
    key
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn every_engine_agrees_with_an_ordered_map(ops in ops()) {
        for (mut engine, _dir) in engines() {
            let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
            let mut snapshots = Vec::new();
            for op in &ops {
                match op {
                    Op::Batch(writes) => {
                        let batch: Vec<BatchEntry> = writes
                            .iter()
                            .map(|(k, v)| (key(*k), v.map(value)))
                            .collect();
                        for (k, v) in &batch {
                            match v {
                                Some(v) => model.insert(k.clone(), v.clone()),
                                None => model.remove(k),
                            };
                        }
                        engine.write(batch).unwrap();
                    }
                    Op::Sorted(writes) => {
                        // The last write of each key, in key order.
                        let sorted: BTreeMap<Vec<u8>, Option<Vec<u8>>> = writes
                            .iter()
                            .map(|(k, v)| (key(*k), v.map(value)))
                            .collect();
                        for (k, v) in &sorted {
                            match v {
                                Some(v) => model.insert(k.clone(), v.clone()),
                                None => model.remove(k),
                            };
                        }
                        engine
                            .write_sorted(&mut |sink| {
                                for (k, v) in &sorted {
                                    sink(k, v.as_deref())?;
                                }
                                Ok(())
                            })
                            .unwrap();
                    }
                    Op::Snapshot => snapshots.push((engine.snapshot(), model.clone())),
                }
            }
            snapshots.push((engine.snapshot(), model.clone()));
            for (snapshot, model) in &snapshots {
                for prefix in 0u8..3 {
                    let expected: Vec<(Vec<u8>, Vec<u8>)> = model
                        .iter()
                        .filter(|(k, _)| k[0] == prefix)
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    prop_assert_eq!(scan(&**snapshot, &[prefix]), expected, "{}", engine.describe());
                }
                for k in 0u8..24 {
                    prop_assert_eq!(snapshot.get(&key(k)).unwrap(), model.get(&key(k)).cloned());
                }
            }
            for k in 0u8..24 {
                prop_assert_eq!(engine.get(&key(k)).unwrap(), model.get(&key(k)).cloned());
                // A live scan of its prefix from the key on.
                let from = key(k);
                let expected: Vec<(Vec<u8>, Vec<u8>)> = model
                    .range(from.clone()..)
                    .take_while(|(key, _)| key[0] == from[0])
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                prop_assert_eq!(scan_live(&*engine, &from[..1], &from, usize::MAX), expected);
            }
        }
    }
}

use super::*;

const SESSION: u64 = 0x1000;

fn create(store: &mut Store, path: &str, mode: CreateMode) -> Result<(String, Stat), CoordError> {
    let op = Op::Create {
        path: path.into(),
        data: path.as_bytes().to_vec(),
        mode,
    };
    match store.apply(op, SESSION)? {
        (OpResult::Created { path, stat }, _) => Ok((path, stat)),
        (other, _) => panic!("create answered {other:?}"),
    }
}

fn delete(store: &mut Store, path: &str) -> Result<Vec<Change>, CoordError> {
    store
        .apply(
            Op::Delete {
                path: path.into(),
                version: None,
            },
            SESSION,
        )
        .map(|(_, changes)| changes)
}

fn deleted(path: &str) -> Change {
    Change {
        path: path.into(),
        event: NodeEvent::Deleted,
    }
}

#[test]
fn invalid_paths_are_errors_never_panics() {
    let mut store = Store::new();
    for bad in ["", "relative", "/trailing/", "/a//b", "/a/../b"] {
        let Err(CoordError::Other(message)) = store.get(bad) else {
            panic!("{bad:?} accepted")
        };
        assert!(message.contains("invalid path"), "{message}");
        assert!(matches!(
            create(&mut store, bad, CreateMode::Persistent),
            Err(CoordError::Other(_))
        ));
        assert!(matches!(store.children(bad), Err(CoordError::Other(_))));
    }
    assert!(matches!(delete(&mut store, "/"), Err(CoordError::Other(m)) if m.contains("root")));
    assert_eq!(
        create(&mut store, "/", CreateMode::Persistent),
        Err(CoordError::NodeExists("/".into()))
    );
    assert_eq!(store.last_zxid(), 0, "failed writes take no zxid");
}

#[test]
fn writes_take_zxids_and_count_versions() {
    let mut store = Store::new();
    let (path, stat) = create(&mut store, "/a", CreateMode::Persistent).unwrap();
    assert_eq!(
        (path.as_str(), stat.czxid, stat.mzxid, stat.version),
        ("/a", 1, 1, 0)
    );
    let set = |store: &mut Store, version| {
        store.apply(
            Op::SetData {
                path: "/a".into(),
                data: b"x".to_vec(),
                version,
            },
            SESSION,
        )
    };
    let (OpResult::Set { stat }, changes) = set(&mut store, Some(0)).unwrap() else {
        panic!()
    };
    assert_eq!((stat.czxid, stat.mzxid, stat.version), (1, 2, 1));
    assert_eq!(
        changes,
        vec![Change {
            path: "/a".into(),
            event: NodeEvent::DataChanged
        }]
    );
    assert_eq!(
        set(&mut store, Some(0)).unwrap_err(),
        CoordError::BadVersion("/a".into())
    );
    assert_eq!(store.get("/a").unwrap(), Some((b"x".to_vec(), stat)));
    assert_eq!(
        create(&mut store, "/a", CreateMode::Persistent).unwrap_err(),
        CoordError::NodeExists("/a".into())
    );
    assert_eq!(
        create(&mut store, "/x/y", CreateMode::Persistent).unwrap_err(),
        CoordError::NoNode("/x".into())
    );
    create(&mut store, "/a/b", CreateMode::Persistent).unwrap();
    assert_eq!(
        delete(&mut store, "/a").unwrap_err(),
        CoordError::NotEmpty("/a".into())
    );
    assert_eq!(delete(&mut store, "/a/b").unwrap(), vec![deleted("/a/b")]);
    assert_eq!(store.get("/a/b").unwrap(), None);
    assert_eq!(store.last_zxid(), 4);
}

#[test]
fn sequence_numbers_count_child_creations_of_the_parent() {
    let mut store = Store::new();
    create(&mut store, "/latch", CreateMode::Persistent).unwrap();
    let seq = |store: &mut Store, prefix: &str| {
        create(
            store,
            &format!("/latch/{prefix}"),
            CreateMode::EphemeralSequential,
        )
        .unwrap()
        .0
    };
    assert_eq!(seq(&mut store, "a-latch-"), "/latch/a-latch-0000000000");
    create(&mut store, "/latch/plain", CreateMode::Persistent).unwrap();
    assert_eq!(seq(&mut store, "b-latch-"), "/latch/b-latch-0000000002");
    delete(&mut store, "/latch/a-latch-0000000000").unwrap();
    // Deletions do not bump the counter (ZooKeeper's cversion).
    assert_eq!(seq(&mut store, "c-latch-"), "/latch/c-latch-0000000003");
    assert_eq!(seq(&mut store, ""), "/latch/0000000004");
    assert_eq!(
        store.children("/latch").unwrap(),
        vec![
            "0000000004",
            "b-latch-0000000002",
            "c-latch-0000000003",
            "plain"
        ]
    );
}

#[test]
fn ephemerals_have_owners_no_children_and_go_with_their_session() {
    let mut store = Store::new();
    create(&mut store, "/p", CreateMode::Persistent).unwrap();
    let (_, stat) = create(&mut store, "/p/e1", CreateMode::Ephemeral).unwrap();
    assert_eq!(stat.ephemeral_owner, SESSION);
    create(&mut store, "/p/e2", CreateMode::Ephemeral).unwrap();
    assert_eq!(store.get("/p").unwrap().unwrap().1.ephemeral_owner, 0);
    let Err(CoordError::Other(message)) = create(&mut store, "/p/e1/child", CreateMode::Persistent)
    else {
        panic!("an ephemeral got a child")
    };
    assert!(message.contains("cannot have children"));
    assert_eq!(
        store.end_session(0x2000),
        vec![],
        "another session owns nothing"
    );
    let before = store.last_zxid();
    assert_eq!(
        store.end_session(SESSION),
        vec![deleted("/p/e1"), deleted("/p/e2")]
    );
    assert_eq!(store.last_zxid(), before + 1, "one transaction for all");
    assert_eq!(store.children("/p").unwrap(), Vec::<String>::new());
}

#[test]
fn containers_are_reaped_once_their_last_child_goes() {
    let mut store = Store::new();
    for invalid in ["/x/./y", "/x//y", "/x/y/"] {
        assert_eq!(
            store.create_parents(invalid, CreateMode::Persistent),
            vec![],
            "{invalid}"
        );
    }
    assert_eq!(
        store
            .create_parents("/s/", CreateMode::EphemeralSequential)
            .len(),
        1
    );
    delete(&mut store, "/s").unwrap();
    assert_eq!(
        store
            .create_parents("/c1/c2/leaf", CreateMode::Ephemeral)
            .len(),
        2
    );
    assert_eq!(
        store.create_parents("/c1/c2/leaf", CreateMode::Ephemeral),
        vec![],
        "nothing missing"
    );
    let zxid = store.last_zxid();
    assert_eq!(zxid, 4, "one transaction per parent");
    // Never had a child: not reaped.
    create(&mut store, "/empty", CreateMode::Container).unwrap();
    create(&mut store, "/c1/c2/leaf", CreateMode::Ephemeral).unwrap();
    create(&mut store, "/c1/c2/other", CreateMode::Persistent).unwrap();
    delete(&mut store, "/c1/c2/other").unwrap();
    assert!(store.get("/c1/c2").unwrap().is_some(), "still has a child");
    let changes = store.end_session(SESSION);
    assert_eq!(
        changes,
        vec![deleted("/c1/c2/leaf"), deleted("/c1/c2"), deleted("/c1")]
    );
    assert_eq!(
        store.last_zxid(),
        zxid + 4 + 3,
        "each reaping is a transaction"
    );
    assert_eq!(store.children("/").unwrap(), vec!["empty"]);
}

#[test]
fn multi_is_all_or_nothing_and_sees_its_own_ops() {
    let mut store = Store::new();
    create(&mut store, "/m", CreateMode::Persistent).unwrap();
    let ops = vec![
        Op::Create {
            path: "/m/a".into(),
            data: vec![1],
            mode: CreateMode::Persistent,
        },
        Op::SetData {
            path: "/m/a".into(),
            data: vec![2],
            version: Some(0),
        },
        Op::Check {
            path: "/m/a".into(),
            version: Some(1),
        },
        Op::Create {
            path: "/m/a/b".into(),
            data: vec![],
            mode: CreateMode::Persistent,
        },
        Op::Delete {
            path: "/m/a/b".into(),
            version: None,
        },
    ];
    let (results, changes) = store.multi(&ops, SESSION).unwrap();
    assert_eq!(store.last_zxid(), 2, "one zxid for the whole multi");
    let OpResult::Created { stat, .. } = &results[0] else {
        panic!()
    };
    assert_eq!(stat.czxid, 2);
    assert_eq!(results[2], OpResult::Checked);
    assert_eq!(changes.len(), 4, "a check changes nothing");

    let failing = vec![
        Op::SetData {
            path: "/m/a".into(),
            data: vec![3],
            version: None,
        },
        Op::Delete {
            path: "/m".into(),
            version: None,
        },
        Op::Create {
            path: "/m/z".into(),
            data: vec![],
            mode: CreateMode::Persistent,
        },
        Op::Check {
            path: "/m/a".into(),
            version: Some(7),
        },
    ];
    let error = store.multi(&failing, SESSION).unwrap_err();
    assert_eq!(
        error,
        CoordError::MultiFailed {
            index: 1,
            source: Box::new(CoordError::NotEmpty("/m".into()))
        }
    );
    let error = store.multi(&failing[2..], SESSION).unwrap_err();
    assert_eq!(error.root(), &CoordError::BadVersion("/m/a".into()));
    assert_eq!(store.last_zxid(), 2);
    assert_eq!(
        store.get("/m/a").unwrap().unwrap().0,
        vec![2],
        "nothing applied"
    );
    assert_eq!(store.children("/m").unwrap(), vec!["a"]);
    // The failed create was rolled back, counter included.
    let (path, _) = create(&mut store, "/m/s-", CreateMode::EphemeralSequential).unwrap();
    assert_eq!(path, "/m/s-0000000001");
}

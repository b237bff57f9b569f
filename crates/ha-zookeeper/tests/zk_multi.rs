//! Tier 3: multi-ops and opaque node data against a real standalone
//! ZooKeeper.

mod support;

use std::time::Duration;

use anyhow::{Result, ensure};
use holdfast_ha::backend::{CoordError, CreateMode, Op, OpResult, Session};
use support::{observer, open_session, standalone};
use zookeeper_client::{Acls, CreateMode as ZkMode};

const T: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_applies_every_op_or_none_and_names_the_failing_one() -> Result<()> {
    let zk = standalone().await?;
    let session = open_session(&zk, T).await?;
    session
        .create("/m/latch", b"", CreateMode::Persistent, true)
        .await?;

    let failed = session
        .multi(vec![
            Op::Check {
                path: "/m/latch".into(),
                version: None,
            },
            Op::Create {
                path: "/m/info".into(),
                data: b"x".to_vec(),
                mode: CreateMode::Ephemeral,
            },
            Op::Check {
                path: "/m/gone".into(),
                version: None,
            },
        ])
        .await
        .unwrap_err();
    match &failed {
        CoordError::MultiFailed { index: 2, source }
            if **source == CoordError::NoNode("/m/gone".into()) => {}
        other => anyhow::bail!("expected op 2 to fail with NoNode, got {other:?}"),
    }
    ensure!(
        session.get("/m/info", false).await?.0.is_none(),
        "a failed multi left /m/info behind"
    );
    let wrong_version = vec![Op::Check {
        path: "/m/latch".into(),
        version: Some(3),
    }];
    match session.multi(wrong_version).await.unwrap_err() {
        CoordError::MultiFailed { index: 0, source }
            if matches!(*source, CoordError::BadVersion(_)) => {}
        other => anyhow::bail!("expected op 0 to fail with BadVersion, got {other:?}"),
    }

    let results = session
        .multi(vec![
            Op::Check {
                path: "/m/latch".into(),
                version: Some(0),
            },
            Op::Create {
                path: "/m/info".into(),
                data: b"x".to_vec(),
                mode: CreateMode::Ephemeral,
            },
            Op::SetData {
                path: "/m/latch".into(),
                data: b"y".to_vec(),
                version: None,
            },
            Op::Create {
                path: "/m/tmp".into(),
                data: Vec::new(),
                mode: CreateMode::Persistent,
            },
            Op::Delete {
                path: "/m/tmp".into(),
                version: Some(0),
            },
        ])
        .await?;
    let [
        OpResult::Checked,
        OpResult::Created {
            path,
            stat: created,
        },
        OpResult::Set { stat: set },
        OpResult::Created { .. },
        OpResult::Deleted,
    ] = results.as_slice()
    else {
        anyhow::bail!("unexpected results {results:?}");
    };
    ensure!(path == "/m/info");
    ensure!(created.ephemeral_owner == session.id().0, "{created:?}");
    // One transaction: the create and the set share its zxid, and a later
    // read sees the same czxid (the epoch rule of HA contract §4, docs/HA-CONTRACT.md).
    ensure!(
        created.czxid > 0 && set.mzxid == created.czxid,
        "{created:?} {set:?}"
    );
    let (read, _) = session.get("/m/info", false).await?;
    ensure!(read.map(|(_, stat)| stat.czxid) == Some(created.czxid));
    // A check without a version passes at any version (/m/latch is at 1 now).
    let any_version = vec![Op::Check {
        path: "/m/latch".into(),
        version: None,
    }];
    ensure!(session.multi(any_version).await? == [OpResult::Checked]);
    ensure!(session.multi(Vec::new()).await?.is_empty());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_data_is_opaque_bytes() -> Result<()> {
    let zk = standalone().await?;
    let session = open_session(&zk, T).await?;
    let observer = observer(&zk).await?;
    let garbage: Vec<u8> = (0..=255u8).chain([0xff, 0xfe, 0x00, 0xc3, 0x28]).collect();
    let big = vec![0xa5; 512 * 1024];
    observer
        .create(
            "/garbage",
            &garbage,
            &ZkMode::Persistent.with_acls(Acls::anyone_all()),
        )
        .await?;
    observer
        .create(
            "/big",
            &big,
            &ZkMode::Persistent.with_acls(Acls::anyone_all()),
        )
        .await?;
    observer
        .create(
            "/empty",
            b"",
            &ZkMode::Persistent.with_acls(Acls::anyone_all()),
        )
        .await?;
    ensure!(session.get("/garbage", true).await?.0.map(|(data, _)| data) == Some(garbage));
    ensure!(session.get("/big", false).await?.0.map(|(data, _)| data) == Some(big));
    ensure!(session.get("/empty", false).await?.0.map(|(data, _)| data) == Some(Vec::new()));
    ensure!(
        session.take_events().is_some() && session.take_events().is_none(),
        "events are taken once"
    );
    Ok(())
}

//! Tier 3: creator ACLs with digest credentials against a real ZooKeeper.

mod support;

use anyhow::{Result, bail, ensure};
use holdfast_ha::backend::{CoordError, CreateMode, Op, Session};
use holdfast_ha::config::{ACL, DIGEST_FILE, HaConfig, QUORUM};
use holdfast_ha_zookeeper::{AclMode, ZkBackend, ZkOptions};
use support::{creator_options, observer, session, standalone};
use zookeeper_client::{Error as ZkError, Permission};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_creators_credentials_may_change_its_nodes_and_anyone_may_read() -> Result<()> {
    let zk = standalone().await?;
    let alice = session(creator_options(&zk, "alice:secret")?).await?;
    alice
        .create("/secure/jobs/graph", b"plan", CreateMode::Persistent, true)
        .await?;

    // Another holdfast process with other credentials reads, but changes nothing.
    let mallory = session(creator_options(&zk, "mallory:guess")?).await?;
    let (found, _) = mallory.get("/secure/jobs/graph", false).await?;
    ensure!(found.map(|(data, _)| data) == Some(b"plan".to_vec()));
    ensure!(mallory.children("/secure/jobs").await? == ["graph"]);
    let error = mallory
        .delete("/secure/jobs/graph", None)
        .await
        .unwrap_err();
    ensure!(
        error == CoordError::NoAuth("/secure/jobs/graph".into()),
        "{error:?}"
    );
    let overwrite = vec![Op::SetData {
        path: "/secure/jobs/graph".into(),
        data: b"evil".to_vec(),
        version: None,
    }];
    match mallory.multi(overwrite).await.unwrap_err() {
        CoordError::MultiFailed { index: 0, source }
            if *source == CoordError::NoAuth("/secure/jobs/graph".into()) => {}
        other => bail!("expected NoAuth on op 0, got {other:?}"),
    }
    let error = mallory
        .create("/secure/jobs/other", b"", CreateMode::Persistent, true)
        .await
        .unwrap_err();
    ensure!(
        error == CoordError::NoAuth("/secure/jobs/other".into()),
        "{error:?}"
    );

    // A client without credentials reads, but changes nothing either.
    let anonymous = observer(&zk).await?;
    let (data, _) = anonymous.get_data("/secure/jobs/graph").await?;
    ensure!(data == b"plan");
    ensure!(
        anonymous
            .set_data("/secure/jobs/graph", b"evil", None)
            .await
            == Err(ZkError::NoAuth)
    );
    ensure!(anonymous.delete("/secure/jobs/graph", None).await == Err(ZkError::NoAuth));

    // Node and container parents carry the creator's digest identity and
    // world-readable rights.
    for path in ["/secure", "/secure/jobs", "/secure/jobs/graph"] {
        let (acl, _) = anonymous.get_acl(path).await?;
        let creator = acl.iter().any(|entry| {
            entry.scheme() == "digest"
                && entry.id().starts_with("alice:")
                && entry.permission() == Permission::ALL
        });
        let readers = acl
            .iter()
            .any(|entry| entry.scheme() == "world" && entry.permission() == Permission::READ);
        ensure!(creator && readers && acl.len() == 2, "{path}: {acl:?}");
    }

    // The same credentials in another session (another JobManager) may.
    let alice_again = session(creator_options(&zk, "alice:secret")?).await?;
    alice_again.delete("/secure/jobs/graph", Some(0)).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creator_acls_without_credentials_are_refused_with_the_keys_to_fix() -> Result<()> {
    let zk = standalone().await?;
    let options = ZkOptions {
        acl: AclMode::Creator,
        ..ZkOptions::open(zk.connect_string())
    };
    let error = ZkBackend::new(options).unwrap_err().to_string();
    ensure!(
        error.contains(DIGEST_FILE) && error.contains(ACL) && error.contains("open"),
        "{error}"
    );

    let quorum = zk.connect_string();
    let config = HaConfig::from_pairs([
        ("high-availability.type", "zookeeper"),
        (QUORUM, quorum.as_str()),
    ])?;
    let error = ZkBackend::from_config(&config).unwrap_err().to_string();
    ensure!(error.contains(DIGEST_FILE), "{error}");

    // Open ACLs need nothing, and work.
    let config = HaConfig::from_pairs([
        ("high-availability.type", "zookeeper"),
        (QUORUM, quorum.as_str()),
        (ACL, "open"),
        ("high-availability.zookeeper.client.session-timeout", "10 s"),
    ])?;
    let backend = ZkBackend::from_config(&config)?;
    let open = session(backend.options().clone()).await?;
    open.create("/open", b"", CreateMode::Persistent, false)
        .await?;
    observer(&zk).await?.delete("/open", None).await?;
    Ok(())
}

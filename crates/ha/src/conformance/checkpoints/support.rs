//! What the checkpoint checks share: where the leader keeps the counter
//! and the pointers, making leaders and readers, and reading with patience.

use std::future::Future;
use std::time::Duration;

use super::super::Fixture;
use super::super::checks::{BASE, Verdict, connect, contend, ensure, wait_for};
use crate::backend::Backend;
use crate::connection::Connection;
use crate::election::LeaderElection;
use crate::policy::ErrorPolicy;
use crate::stores::{
    BadPointer, CheckpointIdCounter, CheckpointPointer, CompletedCheckpointStore, LeaderStore,
    StoreError,
};
use crate::types::{CheckpointId, LeaderToken};

/// The job the checks' checkpoints belong to.
pub(super) const JOB: &str = "job-1";

/// Job `job`'s counter, where the leader keeps it.
pub(super) fn counter<B: Backend>(connection: &Connection<B>, job: &str) -> CheckpointIdCounter<B> {
    let store = LeaderStore::new(connection.clone(), &format!("{BASE}/checkpoint-counter"));
    CheckpointIdCounter::new(store, job)
}

/// Job `job`'s pointers, where the leader keeps them.
pub(super) fn pointers<B: Backend>(
    connection: &Connection<B>,
    job: &str,
) -> Result<CompletedCheckpointStore<B>, String> {
    CompletedCheckpointStore::new(connection.clone(), BASE, job)
        .map_err(|error| format!("the pointer store of {job}: {error}"))
}

pub(super) fn pointer(job: &str, id: u64) -> CheckpointPointer {
    CheckpointPointer {
        job: job.to_owned(),
        id: CheckpointId(id),
        metadata: format!("{job}/chk-{id}/_metadata"),
    }
}

/// A connection of a new process `name` that leads nothing, once it has a
/// session.
pub(super) async fn reader<F: Fixture>(
    fixture: &F,
    name: &str,
) -> Result<Connection<F::Backend>, String> {
    let connection = connect(fixture, name, ErrorPolicy::Lease);
    wait_for(fixture, &format!("{name}'s session"), || {
        connection.session().is_some()
    })
    .await?;
    Ok(connection)
}

/// A leader: its connection, its election and its grant's token.
pub(super) type Leader<B> = (Connection<B>, LeaderElection<B>, LeaderToken);

/// A contender `name` on a connection of its own, once it leads.
pub(super) async fn leader<F: Fixture>(
    fixture: &F,
    name: &str,
    policy: ErrorPolicy,
) -> Result<Leader<F::Backend>, String> {
    let connection = connect(fixture, name, policy);
    let election = contend(&connection, name);
    wait_for(fixture, &format!("{name} to lead"), || election.is_leader()).await?;
    let token = election
        .token()
        .ok_or_else(|| format!("{name} leads but has no token"))?;
    Ok((connection, election, token))
}

pub(super) async fn next_id<B: Backend>(
    counter: &CheckpointIdCounter<B>,
    token: &LeaderToken,
) -> Result<u64, String> {
    counter
        .next(token)
        .await
        .map(|id| id.0)
        .map_err(|error| format!("next id: {error}"))
}

pub(super) async fn current_id<B: Backend>(
    counter: &CheckpointIdCounter<B>,
) -> Result<u64, String> {
    counter
        .current()
        .await
        .map(|id| id.0)
        .map_err(|error| format!("reading the counter: {error}"))
}

/// The ids of `job`'s good pointers, oldest first.
pub(super) async fn completed<B: Backend>(
    store: &CompletedCheckpointStore<B>,
) -> Result<Vec<u64>, String> {
    Ok(store
        .completed()
        .await
        .map_err(|error| format!("listing pointers: {error}"))?
        .iter()
        .map(|pointer| pointer.id.0)
        .collect())
}

pub(super) fn refused<T: std::fmt::Debug>(what: &str, result: Result<T, StoreError>) -> Verdict {
    ensure!(
        matches!(result, Err(StoreError::NotLeader { .. })),
        "{what} returned {result:?}, not StoreError::NotLeader"
    );
    Ok(())
}

/// Every leader-guarded write of the checkpoint stores, with `token`: each
/// must be refused with [`StoreError::NotLeader`].
pub(super) async fn every_write_is_refused<B: Backend>(
    connection: &Connection<B>,
    token: &LeaderToken,
    who: &str,
) -> Verdict {
    let counter = counter(connection, JOB);
    let store = pointers(connection, JOB)?;
    refused(&format!("{who}'s next id"), counter.next(token).await)?;
    refused(
        &format!("{who}'s advance_past"),
        counter.advance_past(token, CheckpointId(50)).await,
    )?;
    refused(
        &format!("{who}'s add of a pointer"),
        store.add(token, &pointer(JOB, 2)).await,
    )?;
    refused(
        &format!("{who}'s remove of a pointer"),
        store.remove(token, CheckpointId(1)).await,
    )
}

/// Checks, through `reader`, that the counter is at 1 and the pointers are
/// exactly checkpoint 1's: what the leader wrote before it was deposed.
pub(super) async fn nothing_was_written<B: Backend>(reader: &Connection<B>) -> Verdict {
    let current = current_id(&counter(reader, JOB)).await?;
    ensure!(current == 1, "the counter moved to {current}");
    let listed = list(reader, JOB).await?;
    ensure!(
        listed == [Ok(pointer(JOB, 1))],
        "the pointers changed: {listed:?}"
    );
    Ok(())
}

/// Every node under `job`'s pointers, read through `connection`.
pub(super) async fn list<B: Backend>(
    connection: &Connection<B>,
    job: &str,
) -> Result<Vec<Result<CheckpointPointer, BadPointer>>, String> {
    pointers(connection, job)?
        .list()
        .await
        .map_err(|error| format!("listing {job}'s pointers: {error}"))
}

/// Reads with `read` until it gives `expected`, on the fixture's clock,
/// within its patience. For reads of another session's writes with no
/// causal link to the reader: a ZooKeeper member may answer from a state
/// a little behind (a leader's own session, or a new leader that saw its
/// predecessor go, reads at once).
pub(super) async fn eventually<F, T, R>(
    fixture: &F,
    what: &str,
    expected: &T,
    mut read: impl FnMut() -> R,
) -> Verdict
where
    F: Fixture,
    T: PartialEq + std::fmt::Debug,
    R: Future<Output = Result<T, String>>,
{
    let runtime = fixture.runtime();
    let limit = runtime.now().plus(fixture.patience());
    loop {
        let got = read().await?;
        if got == *expected {
            return Ok(());
        }
        ensure!(
            runtime.now() < limit,
            "{what}: {got:?}, expected {expected:?} (waited {:?})",
            fixture.patience()
        );
        runtime
            .sleep_until(runtime.now().plus(Duration::from_millis(10)))
            .await;
    }
}

/// What `store` lists: `good <id>` or `bad <node> of <job>` per node.
pub(super) async fn shape<B: Backend>(
    store: &CompletedCheckpointStore<B>,
) -> Result<Vec<String>, String> {
    let listed = store
        .list()
        .await
        .map_err(|error| format!("a listing with bad pointers failed: {error}"))?;
    Ok(listed
        .iter()
        .map(|entry| match entry {
            Ok(pointer) => format!("good {}", pointer.id),
            Err(bad) => format!("bad {} of {}", bad.key, bad.job),
        })
        .collect())
}

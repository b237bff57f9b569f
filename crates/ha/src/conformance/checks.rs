//! The checks of the conformance suite. Each returns `Err` with what went
//! wrong; none panics.

use std::time::Duration;

use super::{Fixture, Recorder};
use crate::connection::{Connection, ConnectionOptions, ConnectionState};
use crate::election::{ElectionOptions, LeaderElection, LeadershipEvent};
use crate::policy::ErrorPolicy;
use crate::retrieval::{LeaderRetrieval, RetrievalEvent};

/// A check's verdict.
pub type Verdict = Result<(), String>;

pub(super) const BASE: &str = "/holdfast-conformance";

fn info_path() -> String {
    format!("{BASE}/leader/connection_info")
}

macro_rules! ensure {
    ($cond:expr, $($message:tt)+) => {
        if !$cond {
            return Err(format!($($message)+));
        }
    };
}
pub(super) use ensure;

pub(super) fn connect<F: Fixture>(
    fixture: &F,
    name: &str,
    policy: ErrorPolicy,
) -> Connection<F::Backend> {
    let options = ConnectionOptions {
        policy,
        lease: fixture.lease(),
        retry_wait: Duration::from_millis(200),
        ..ConnectionOptions::default()
    };
    Connection::start(fixture.process(name), fixture.runtime(), options)
}

pub(super) fn contend<B: crate::backend::Backend>(
    connection: &Connection<B>,
    name: &str,
) -> LeaderElection<B> {
    let mut options = ElectionOptions::under(BASE, name, format!("{name}:1"));
    options.retry = Duration::from_millis(50);
    LeaderElection::start(connection.clone(), options)
}

/// Polls `condition` on the fixture's clock until it holds or patience runs out.
pub(super) async fn wait_for<F: Fixture>(
    fixture: &F,
    what: &str,
    mut condition: impl FnMut() -> bool,
) -> Verdict {
    let runtime = fixture.runtime();
    let limit = runtime.now().plus(fixture.patience());
    while !condition() {
        ensure!(
            runtime.now() < limit,
            "gave up waiting for {what} after {:?}",
            fixture.patience()
        );
        runtime
            .sleep_until(runtime.now().plus(Duration::from_millis(10)))
            .await;
    }
    Ok(())
}

/// Waits for the next transition of `connection` into a state `accept`s.
pub(super) async fn wait_state<F: Fixture>(
    fixture: &F,
    events: &mut tokio::sync::mpsc::UnboundedReceiver<crate::connection::ConnectionEvent>,
    what: &str,
    accept: impl Fn(ConnectionState) -> bool,
) -> Verdict {
    let runtime = fixture.runtime();
    let deadline = runtime.now().plus(fixture.patience());
    loop {
        tokio::select! {
            event = events.recv() => match event {
                Some(event) if accept(event.state) => return Ok(()),
                Some(_) => {}
                None => return Err(format!("connection events ended before {what}")),
            },
            _ = runtime.sleep_until(deadline) => return Err(format!("no {what} within {:?}", fixture.patience())),
        }
    }
}

/// One contender is granted with a positive epoch and published: an
/// observer sees its address at that epoch.
pub async fn a_lone_contender_is_granted_and_published<F: Fixture>(fixture: &F) -> Verdict {
    let a = connect(fixture, "a", ErrorPolicy::Lease);
    let election = contend(&a, "a");
    wait_for(fixture, "a to lead", || election.is_leader()).await?;
    let epoch = election.leader_epoch().ok_or("a stopped leading")?;
    ensure!(epoch.0 > 0, "epoch {epoch} is not positive");
    let observer = connect(fixture, "observer", ErrorPolicy::Lease);
    let retrieval = LeaderRetrieval::start(observer, &info_path());
    wait_for(fixture, "the observer to see a", || {
        retrieval.known().leader.is_some()
    })
    .await?;
    let leader = retrieval.known().leader.ok_or("no leader")?;
    ensure!(
        leader.address == "a:1" && leader.epoch == epoch,
        "observer saw {leader:?}, expected a:1 at {epoch}"
    );
    Ok(())
}

/// Closing the leader hands over at once (no session expiry needed), to a
/// standby with a higher epoch; the observer follows.
pub async fn a_graceful_close_hands_over_with_a_higher_epoch<F: Fixture>(fixture: &F) -> Verdict {
    let recorder = Recorder::default();
    let a = contend(&connect(fixture, "a", ErrorPolicy::Lease), "a");
    wait_for(fixture, "a to lead", || a.is_leader()).await?;
    let first = a.leader_epoch().ok_or("a stopped leading")?;
    let b = contend(&connect(fixture, "b", ErrorPolicy::Lease), "b");
    recorder.election("b", &b);
    let retrieval = LeaderRetrieval::start(
        connect(fixture, "observer", ErrorPolicy::Lease),
        &info_path(),
    );
    recorder.retrieval("observer", &retrieval, fixture.runtime());
    wait_for(fixture, "the observer to see a", || {
        retrieval.known().leader.is_some()
    })
    .await?;
    let runtime = fixture.runtime();
    let closed_at = runtime.now();
    a.close().await;
    wait_for(fixture, "b to lead", || b.is_leader()).await?;
    let handover = runtime.now().since(closed_at);
    ensure!(
        handover < fixture.session_timeout() / 2,
        "hand-over took {handover:?}: it waited for expiry"
    );
    let second = b.leader_epoch().ok_or("b stopped leading")?;
    ensure!(
        second > first,
        "b's epoch {second} is not above a's {first}"
    );
    wait_for(fixture, "the observer to see b", || {
        retrieval
            .known()
            .leader
            .is_some_and(|leader| leader.epoch == second)
    })
    .await?;
    let mut last = None;
    for event in recorder.retrievals("observer") {
        if let RetrievalEvent::Leader(leader) = event {
            ensure!(
                last.is_none_or(|last| leader.epoch > last),
                "observer went back to epoch {}",
                leader.epoch
            );
            last = Some(leader.epoch);
        }
    }
    Ok(())
}

/// Under `lease`, a suspension healed as soon as it is noticed revokes
/// nothing, grants nobody else, and changes nothing for an observer.
pub async fn under_lease_a_suspension_shorter_than_the_lease_changes_nothing<F: Fixture>(
    fixture: &F,
) -> Verdict {
    suspend_and_heal(fixture, ErrorPolicy::Lease).await
}

/// Under `standard`, the same suspension revokes (and re-grants with a new
/// epoch after reconnection) and makes the observer forget the leader: the
/// incident.
pub async fn under_standard_a_suspension_revokes_and_clears_the_leader<F: Fixture>(
    fixture: &F,
) -> Verdict {
    suspend_and_heal(fixture, ErrorPolicy::Standard).await
}

async fn suspend_and_heal<F: Fixture>(fixture: &F, policy: ErrorPolicy) -> Verdict {
    let recorder = Recorder::default();
    let a_connection = connect(fixture, "a", policy);
    let a = contend(&a_connection, "a");
    recorder.election("a", &a);
    wait_for(fixture, "a to lead", || a.is_leader()).await?;
    let epoch = a.leader_epoch().ok_or("a stopped leading")?;
    let first_token = a.token().ok_or("a leads but has no token")?;
    let b = contend(&connect(fixture, "b", policy), "b");
    recorder.election("b", &b);
    let observer = connect(fixture, "observer", policy);
    let retrieval = LeaderRetrieval::start(observer.clone(), &info_path());
    recorder.retrieval("observer", &retrieval, fixture.runtime());
    wait_for(fixture, "the observer to see a", || {
        retrieval.known().leader.is_some()
    })
    .await?;

    for (name, connection) in [("a", &a_connection), ("observer", &observer)] {
        let (_, mut events) = connection.subscribe();
        fixture.stall(name);
        wait_state(fixture, &mut events, "a suspension", |state| {
            state == ConnectionState::Suspended
        })
        .await?;
        fixture.heal(name);
        wait_state(fixture, &mut events, "a reconnection", |state| {
            state == ConnectionState::Reconnected
        })
        .await?;
    }
    wait_for(fixture, "a to lead again", || a.is_leader()).await?;
    wait_for(fixture, "the observer to know a leader", || {
        retrieval.known().confirmed
    })
    .await?;
    ensure!(
        recorder.grants("b").is_empty(),
        "b was granted: {:?}",
        recorder.grants("b")
    );
    let revocations = recorder.revocations("a");
    let observed = recorder.retrievals("observer");
    match policy {
        ErrorPolicy::Standard => {
            ensure!(
                revocations.len() == 1,
                "expected one revocation of a, saw {revocations:?}"
            );
            let regranted = a.leader_epoch().ok_or("a stopped leading")?;
            ensure!(
                regranted > epoch,
                "re-grant kept epoch {epoch}: fencing needs a new one"
            );
            ensure!(
                observed.contains(&RetrievalEvent::NoLeader),
                "the observer kept the leader: {observed:?}"
            );
            // The re-grant is on the same latch node, but the first grant's
            // token must no longer write.
            let store =
                crate::stores::LeaderStore::new(a_connection.clone(), &format!("{BASE}/stores"));
            let stale = store.put(&first_token, "k", b"stale").await;
            ensure!(
                matches!(stale, Err(crate::stores::StoreError::NotLeader { .. })),
                "a token of the revoked grant wrote: {stale:?}"
            );
            let token = a.token().ok_or("a leads again but has no token")?;
            store
                .put(&token, "k", b"fresh")
                .await
                .map_err(|error| format!("the new grant's write failed: {error}"))?;
        }
        _ => {
            ensure!(revocations.is_empty(), "a was revoked: {revocations:?}");
            ensure!(
                a.leader_epoch() == Some(epoch),
                "a's epoch changed from {epoch}"
            );
            ensure!(
                observed.len() == 1,
                "the observer saw changes: {observed:?}"
            );
        }
    }
    Ok(())
}

/// A leader cut off for good is revoked (its lease runs out) before the
/// server expires its session and a standby is granted.
pub async fn a_cut_off_leader_is_revoked_before_a_standby_is_granted<F: Fixture>(
    fixture: &F,
) -> Verdict {
    let recorder = Recorder::default();
    let a = contend(&connect(fixture, "a", ErrorPolicy::Lease), "a");
    recorder.election("a", &a);
    wait_for(fixture, "a to lead", || a.is_leader()).await?;
    let b = contend(&connect(fixture, "b", ErrorPolicy::Lease), "b");
    recorder.election("b", &b);
    let runtime = fixture.runtime();
    let cut_at = runtime.now();
    fixture.stall("a");
    wait_for(fixture, "b to lead", || b.is_leader()).await?;
    let granted_at = runtime.now();
    let revoked = recorder.revocations("a");
    let Some(LeadershipEvent::Revoked { at: revoked_at, .. }) = revoked.first().copied() else {
        return Err("b leads but a was never revoked".into());
    };
    ensure!(
        revoked_at < granted_at,
        "a was revoked at {revoked_at}, after b was granted at {granted_at}"
    );
    ensure!(!a.is_leader(), "a still believes it leads");
    let failover = granted_at.since(cut_at);
    ensure!(
        failover >= fixture.session_timeout() / 2,
        "b was granted after only {failover:?}: too early"
    );
    fixture.heal("a");
    Ok(())
}

/// Garbage written into `connection_info` by another client is reported
/// and survives; a later leader's publication replaces it.
pub async fn garbage_in_connection_info_is_reported_not_fatal<F: Fixture>(fixture: &F) -> Verdict {
    let recorder = Recorder::default();
    fixture
        .write_raw(&info_path(), b"\x00\xffnot a leader")
        .await;
    let retrieval = LeaderRetrieval::start(
        connect(fixture, "observer", ErrorPolicy::Lease),
        &info_path(),
    );
    recorder.retrieval("observer", &retrieval, fixture.runtime());
    wait_for(fixture, "the garbage to be reported", || {
        recorder
            .retrievals("observer")
            .iter()
            .any(|event| matches!(event, RetrievalEvent::Malformed(_)))
    })
    .await?;
    let a = contend(&connect(fixture, "a", ErrorPolicy::Lease), "a");
    wait_for(fixture, "a to lead", || a.is_leader()).await?;
    wait_for(fixture, "the observer to see a", || {
        retrieval.known().leader.is_some()
    })
    .await?;
    Ok(())
}

/// An observer whose own session is lost (and replaced) reports no change
/// when the leader stayed the same.
pub async fn retrieval_survives_its_own_session_loss_without_a_spurious_change<F: Fixture>(
    fixture: &F,
) -> Verdict {
    let recorder = Recorder::default();
    let a = contend(&connect(fixture, "a", ErrorPolicy::Lease), "a");
    wait_for(fixture, "a to lead", || a.is_leader()).await?;
    let observer = connect(fixture, "observer", ErrorPolicy::Lease);
    let retrieval = LeaderRetrieval::start(observer.clone(), &info_path());
    recorder.retrieval("observer", &retrieval, fixture.runtime());
    wait_for(fixture, "the observer to see a", || {
        retrieval.known().leader.is_some()
    })
    .await?;
    let (_, mut events) = observer.subscribe();
    fixture.stall("observer");
    wait_state(
        fixture,
        &mut events,
        "the observer's session loss",
        |state| matches!(state, ConnectionState::Lost(_)),
    )
    .await?;
    fixture.heal("observer");
    wait_state(fixture, &mut events, "a new session", |state| {
        state == ConnectionState::Connected
    })
    .await?;
    wait_for(fixture, "the observer to confirm the leader", || {
        retrieval.known().confirmed
    })
    .await?;
    let observed = recorder.retrievals("observer");
    ensure!(
        observed.len() == 1,
        "expected only the first leader report, saw {observed:?}"
    );
    ensure!(a.is_leader(), "a lost leadership");
    Ok(())
}

/// Leader-guarded stores take writes from the current leader only: a
/// deposed leader's token fails, even over a live session; checkpoint ids
/// keep increasing across the hand-over; garbage in a counter is reported.
pub async fn stores_take_writes_from_the_current_leader_only<F: Fixture>(fixture: &F) -> Verdict {
    use crate::stores::{CheckpointIdCounter, LeaderStore, StoreError};
    use crate::types::CheckpointId;

    let a_connection = connect(fixture, "a", ErrorPolicy::Lease);
    let a = contend(&a_connection, "a");
    wait_for(fixture, "a to lead", || a.is_leader()).await?;
    let b_connection = connect(fixture, "b", ErrorPolicy::Lease);
    let b = contend(&b_connection, "b");
    let root = format!("{BASE}/stores");
    let a_store = LeaderStore::new(a_connection.clone(), &root);
    let a_token = a.token().ok_or("a leads but has no token")?;
    a_store
        .put(&a_token, "job", b"v1")
        .await
        .map_err(|error| format!("a's put failed: {error}"))?;
    let a_counter = CheckpointIdCounter::new(
        LeaderStore::new(a_connection.clone(), &root),
        "checkpoint-id",
    );
    for expected in 1..=2 {
        let id = a_counter
            .next(&a_token)
            .await
            .map_err(|error| error.to_string())?;
        ensure!(
            id == CheckpointId(expected),
            "a got checkpoint id {id}, expected {expected}"
        );
    }
    ensure!(
        matches!(
            a_store.put(&a_token, "bad/key", b"x").await,
            Err(StoreError::BadKey { .. })
        ),
        "a key with '/' was accepted"
    );

    a.close().await;
    wait_for(fixture, "b to lead", || b.is_leader()).await?;
    let stale = a_store.put(&a_token, "job", b"stale").await;
    ensure!(
        matches!(stale, Err(StoreError::NotLeader { .. })),
        "a deposed leader's put returned {stale:?}"
    );
    let stale = a_counter.next(&a_token).await;
    ensure!(
        matches!(stale, Err(StoreError::NotLeader { .. })),
        "a deposed leader's counter returned {stale:?}"
    );

    let b_token = b.token().ok_or("b leads but has no token")?;
    let b_store = LeaderStore::new(b_connection.clone(), &root);
    let job = b_store
        .get("job")
        .await
        .map_err(|error| error.to_string())?
        .ok_or("job vanished")?;
    ensure!(
        job.value == b"v1",
        "the stale write landed: {:?}",
        job.value
    );
    b_store
        .put(&b_token, "job", b"v2")
        .await
        .map_err(|error| error.to_string())?;
    let b_counter = CheckpointIdCounter::new(
        LeaderStore::new(b_connection.clone(), &root),
        "checkpoint-id",
    );
    let id = b_counter
        .next(&b_token)
        .await
        .map_err(|error| error.to_string())?;
    ensure!(
        id == CheckpointId(3),
        "after the hand-over the counter gave {id}, expected 3"
    );
    ensure!(
        b_store.keys().await.map_err(|error| error.to_string())? == ["checkpoint-id", "job"],
        "unexpected keys"
    );

    fixture
        .write_raw(&format!("{root}/checkpoint-id"), b"\xffgarbage")
        .await;
    let corrupt = b_counter.current().await;
    ensure!(
        matches!(corrupt, Err(StoreError::Corrupt { .. })),
        "garbage in the counter gave {corrupt:?}"
    );
    Ok(())
}

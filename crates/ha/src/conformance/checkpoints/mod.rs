//! The conformance checks of the HA store behind checkpoints: the
//! leader-guarded [`CheckpointIdCounter`] and the completed-checkpoint
//! pointers ([`CompletedCheckpointStore`]), laid out as the leader lays them
//! out (`<base>/checkpoint-counter/<job>`,
//! `<base>/checkpoints/<job>/chk-<id>`). Each returns `Err` with what went
//! wrong; none panics. [`conformance_suite!`](crate::conformance_suite)
//! runs them beside the election checks, so every backend passes both.
//!
//! [`CheckpointIdCounter`]: crate::stores::CheckpointIdCounter
//! [`CompletedCheckpointStore`]: crate::stores::CompletedCheckpointStore
//! [`BadPointer`]: crate::stores::BadPointer
//!
//! | what the leader relies on | check |
//! |---|---|
//! | ids strictly increase, also under concurrent calls, per job, and a new leader continues past the last id handed out | [`checkpoint_ids_strictly_increase_across_calls_and_leaders`] |
//! | `advance_past` moves the counter past an id, never back | [`advance_past_moves_the_counter_forward_never_back`] |
//! | a deposed leader (live session, or none) cannot count, advance, add or remove; nothing is written | [`a_deposed_leader_can_neither_count_nor_add_nor_remove`] |
//! | nor can a token of an earlier grant after a re-grant on the same latch node | [`a_token_of_an_earlier_grant_can_neither_count_nor_add_nor_remove`] |
//! | pointers list oldest first, per job; a retried add succeeds, a different one with the same id conflicts; removing a missing one is fine | [`pointers_list_oldest_first_and_removing_a_missing_one_is_fine`] |
//! | a node that is no good pointer is a [`BadPointer`] beside the good ones, not a failed listing | [`a_bad_pointer_is_reported_beside_the_good_ones`] |
//! | pointers and the counter outlive the writer's session | [`pointers_and_ids_outlive_the_writers_session`] |

mod support;

use support::{
    JOB, completed, counter, current_id, eventually, every_write_is_refused, leader, list, next_id,
    nothing_was_written, pointer, pointers, reader, shape,
};

use super::Fixture;
use super::checks::{BASE, Verdict, connect, contend, ensure, wait_for, wait_state};
use crate::connection::ConnectionState;
use crate::policy::ErrorPolicy;
use crate::stores::{CheckpointPointer, StoreError};
use crate::types::CheckpointId;

/// Ids strictly increase: one call after the other, under concurrent calls
/// (each a compare-and-set: no id twice), per job (another job's counter
/// is its own), and across a new leader, which continues past the last id
/// handed out.
pub async fn checkpoint_ids_strictly_increase_across_calls_and_leaders<F: Fixture>(
    fixture: &F,
) -> Verdict {
    let (a_connection, a, a_token) = leader(fixture, "a", ErrorPolicy::Lease).await?;
    let b_connection = connect(fixture, "b", ErrorPolicy::Lease);
    let b = contend(&b_connection, "b");
    let a_counter = counter(&a_connection, JOB);
    ensure!(
        current_id(&a_counter).await? == 0,
        "a counter never used is not at 0"
    );
    for expected in 1..=3 {
        let id = next_id(&a_counter, &a_token).await?;
        ensure!(id == expected, "a got id {id}, expected {expected}");
    }

    let mut racing = tokio::task::JoinSet::new();
    for _ in 0..6 {
        let (counter, token) = (counter(&a_connection, JOB), a_token.clone());
        racing.spawn(async move { next_id(&counter, &token).await });
    }
    let mut ids = Vec::new();
    while let Some(joined) = racing.join_next().await {
        ids.push(joined.map_err(|error| format!("a racing call panicked: {error}"))??);
    }
    ids.sort_unstable();
    ensure!(
        ids == [4, 5, 6, 7, 8, 9],
        "six concurrent calls got ids {ids:?}, expected 4 to 9 once each"
    );
    let other = next_id(&counter(&a_connection, "job-2"), &a_token).await?;
    ensure!(other == 1, "another job's first id is {other}, not 1");
    ensure!(
        current_id(&a_counter).await? == 9,
        "another job's counter moved this one's"
    );

    a.close().await;
    wait_for(fixture, "b to lead", || b.is_leader()).await?;
    let b_token = b.token().ok_or("b leads but has no token")?;
    let b_counter = counter(&b_connection, JOB);
    let current = current_id(&b_counter).await?;
    ensure!(current == 9, "the new leader reads {current}, expected 9");
    let id = next_id(&b_counter, &b_token).await?;
    ensure!(id == 10, "the new leader's first id is {id}, expected 10");
    Ok(())
}

/// `advance_past` makes the next id come after the given one (a job
/// resumed from a savepoint), creating the counter if needed, and never
/// moves it back.
pub async fn advance_past_moves_the_counter_forward_never_back<F: Fixture>(fixture: &F) -> Verdict {
    let (connection, _a, token) = leader(fixture, "a", ErrorPolicy::Lease).await?;
    let counter = counter(&connection, JOB);
    for (advance, expected) in [(10, 11), (5, 12), (12, 13), (20, 21), (0, 22)] {
        counter
            .advance_past(&token, CheckpointId(advance))
            .await
            .map_err(|error| format!("advance_past({advance}): {error}"))?;
        let id = next_id(&counter, &token).await?;
        ensure!(
            id == expected,
            "after advance_past({advance}) the next id is {id}, expected {expected}"
        );
    }
    Ok(())
}

/// A deposed leader — its latch node gone while its session lives on, and
/// then with its session closed — can neither hand out an id, advance the
/// counter, add a pointer nor remove one: each is refused with
/// [`StoreError::NotLeader`], and nothing is written; the new leader's
/// writes go through.
pub async fn a_deposed_leader_can_neither_count_nor_add_nor_remove<F: Fixture>(
    fixture: &F,
) -> Verdict {
    let (a_connection, a, a_token) = leader(fixture, "a", ErrorPolicy::Lease).await?;
    next_id(&counter(&a_connection, JOB), &a_token).await?;
    pointers(&a_connection, JOB)?
        .add(&a_token, &pointer(JOB, 1))
        .await
        .map_err(|error| format!("a's add: {error}"))?;
    let b_connection = connect(fixture, "b", ErrorPolicy::Lease);
    let b = contend(&b_connection, "b");
    a.close().await;
    wait_for(fixture, "b to lead", || b.is_leader()).await?;

    every_write_is_refused(&a_connection, &a_token, "the deposed leader").await?;
    nothing_was_written(&b_connection).await?;
    a_connection.close().await;
    every_write_is_refused(&a_connection, &a_token, "a leader without a session").await?;
    nothing_was_written(&b_connection).await?;

    let b_token = b.token().ok_or("b leads but has no token")?;
    let id = next_id(&counter(&b_connection, JOB), &b_token).await?;
    ensure!(id == 2, "the new leader's id is {id}, expected 2");
    let store = pointers(&b_connection, JOB)?;
    store
        .add(&b_token, &pointer(JOB, 2))
        .await
        .map_err(|error| format!("b's add: {error}"))?;
    store
        .remove(&b_token, CheckpointId(1))
        .await
        .map_err(|error| format!("b's remove: {error}"))?;
    let ids = completed(&store).await?;
    ensure!(ids == [2], "after b's writes the pointers are {ids:?}");
    Ok(())
}

/// Under `standard`, a suspension revokes and the same contender is
/// granted again (a later epoch, on the same latch node and session): the
/// earlier grant's token can neither count, advance, add nor remove, and
/// nothing is written; the new grant's token can.
pub async fn a_token_of_an_earlier_grant_can_neither_count_nor_add_nor_remove<F: Fixture>(
    fixture: &F,
) -> Verdict {
    let (connection, a, first) = leader(fixture, "a", ErrorPolicy::Standard).await?;
    next_id(&counter(&connection, JOB), &first).await?;
    pointers(&connection, JOB)?
        .add(&first, &pointer(JOB, 1))
        .await
        .map_err(|error| format!("a's add: {error}"))?;

    let (_, mut events) = connection.subscribe();
    fixture.stall("a");
    wait_state(fixture, &mut events, "a suspension", |state| {
        state == ConnectionState::Suspended
    })
    .await?;
    fixture.heal("a");
    wait_state(fixture, &mut events, "a reconnection", |state| {
        state == ConnectionState::Reconnected
    })
    .await?;
    wait_for(fixture, "a to be granted again", || {
        a.token().is_some_and(|token| token.epoch > first.epoch)
    })
    .await?;
    let second = a.token().ok_or("a leads again but has no token")?;
    ensure!(
        second.session == first.session,
        "the session changed: the check needs the re-grant on a live session"
    );

    every_write_is_refused(&connection, &first, "the earlier grant").await?;
    nothing_was_written(&connection).await?;
    let id = next_id(&counter(&connection, JOB), &second).await?;
    ensure!(id == 2, "the new grant's id is {id}, expected 2");
    pointers(&connection, JOB)?
        .add(&second, &pointer(JOB, 2))
        .await
        .map_err(|error| format!("the new grant's add: {error}"))
}

/// Pointers list oldest first by id (not by text: 2 before 10), per job;
/// a job without any lists none; adding the same pointer again succeeds (a
/// retried write whose first try landed), a different pointer with the
/// same id is a [`StoreError::Conflict`], a pointer of another job is
/// refused; removing a pointer that is not there succeeds; anyone reads.
pub async fn pointers_list_oldest_first_and_removing_a_missing_one_is_fine<F: Fixture>(
    fixture: &F,
) -> Verdict {
    let (connection, _a, token) = leader(fixture, "a", ErrorPolicy::Lease).await?;
    let store = pointers(&connection, JOB)?;
    let ids = completed(&store).await?;
    ensure!(ids.is_empty(), "a job never checkpointed lists {ids:?}");
    for id in [3, 1, 12, 2, 10] {
        store
            .add(&token, &pointer(JOB, id))
            .await
            .map_err(|error| format!("adding {id}: {error}"))?;
    }
    let listed = store
        .list()
        .await
        .map_err(|error| format!("listing pointers: {error}"))?;
    let expected: Vec<_> = [1, 2, 3, 10, 12]
        .into_iter()
        .map(|id| Ok(pointer(JOB, id)))
        .collect();
    ensure!(listed == expected, "the pointers list as {listed:?}");

    store
        .add(&token, &pointer(JOB, 3))
        .await
        .map_err(|error| format!("adding pointer 3 again: {error}"))?;
    let other_metadata = CheckpointPointer {
        metadata: "elsewhere/_metadata".into(),
        ..pointer(JOB, 3)
    };
    let conflict = store.add(&token, &other_metadata).await;
    ensure!(
        matches!(conflict, Err(StoreError::Conflict { .. })),
        "another pointer with id 3 returned {conflict:?}, not StoreError::Conflict"
    );
    let foreign = store.add(&token, &pointer("job-2", 4)).await;
    ensure!(
        foreign.is_err(),
        "a pointer of job-2 went into job-1's store"
    );
    let other_job = pointers(&connection, "job-2")?;
    other_job
        .add(&token, &pointer("job-2", 1))
        .await
        .map_err(|error| format!("adding job-2's pointer: {error}"))?;

    for id in [2, 2, 99] {
        store
            .remove(&token, CheckpointId(id))
            .await
            .map_err(|error| format!("removing {id}: {error}"))?;
    }
    let expected: Vec<_> = [1, 3, 10, 12]
        .into_iter()
        .map(|id| Ok(pointer(JOB, id)))
        .collect();
    let listed = list(&connection, JOB).await?;
    ensure!(listed == expected, "the leader lists {listed:?}");
    let ids = completed(&pointers(&connection, "job-2")?).await?;
    ensure!(ids == [1], "the leader lists job-2's pointers as {ids:?}");
    let observer = &reader(fixture, "observer").await?;
    eventually(fixture, "an observer's listing", &expected, || {
        list(observer, JOB)
    })
    .await?;
    eventually(
        fixture,
        "an observer's listing of job-2",
        &vec![1],
        || async { completed(&pointers(observer, "job-2")?).await },
    )
    .await
}

/// A node under a job's pointers that is no good pointer of the job —
/// garbage, another job's record, a record whose id disagrees with its
/// node, an unknown format, a name that is no pointer's — is listed as a
/// [`BadPointer`](crate::stores::BadPointer) naming its node, in its place
/// among the good ones, and does not fail the listing; a bad pointer can be
/// removed by its id.
pub async fn a_bad_pointer_is_reported_beside_the_good_ones<F: Fixture>(fixture: &F) -> Verdict {
    let (connection, _a, token) = leader(fixture, "a", ErrorPolicy::Lease).await?;
    let store = pointers(&connection, JOB)?;
    for id in [4, 6] {
        store
            .add(&token, &pointer(JOB, id))
            .await
            .map_err(|error| format!("adding {id}: {error}"))?;
    }
    let record = |job: &str, id: u64, format: u32| {
        format!(r#"{{"format":{format},"job":"{job}","checkpoint":{id},"metadata":"m"}}"#)
    };
    let dir = format!("{BASE}/checkpoints/{JOB}");
    let garbage = [
        (format!("chk-{:020}", 5), b"\x00\xffnot a record".to_vec()),
        (format!("chk-{:020}", 7), record("job-2", 7, 1).into_bytes()),
        (format!("chk-{:020}", 8), record(JOB, 9, 1).into_bytes()),
        (format!("chk-{:020}", 9), record(JOB, 9, 2).into_bytes()),
        ("junk".to_owned(), record(JOB, 11, 1).into_bytes()),
    ];
    for (name, bytes) in &garbage {
        fixture.write_raw(&format!("{dir}/{name}"), bytes).await;
    }
    let mut expected: Vec<_> = garbage
        .iter()
        .map(|(name, _)| format!("bad {name} of {JOB}"))
        .collect();
    expected.insert(0, "good 4".into());
    expected.insert(2, "good 6".into());
    eventually(fixture, "the listing with bad pointers", &expected, || {
        shape(&store)
    })
    .await?;
    let ids = completed(&store).await?;
    ensure!(ids == [4, 6], "the good pointers are {ids:?}");

    store
        .remove(&token, CheckpointId(5))
        .await
        .map_err(|error| format!("removing the garbage at 5: {error}"))?;
    expected.remove(1);
    let listed = shape(&store).await?;
    ensure!(
        listed == expected,
        "after removing 5 the listing is {listed:?}, expected {expected:?}"
    );
    Ok(())
}

/// Pointers and the counter are the job's, not the session's: after the
/// writer's session is closed, a new process reads them all, and a leader
/// that started afterwards continues the counter.
pub async fn pointers_and_ids_outlive_the_writers_session<F: Fixture>(fixture: &F) -> Verdict {
    let (connection, a, token) = leader(fixture, "a", ErrorPolicy::Lease).await?;
    let store = pointers(&connection, JOB)?;
    for id in 1..=2 {
        let handed = next_id(&counter(&connection, JOB), &token).await?;
        ensure!(handed == id, "a got id {handed}, expected {id}");
        store
            .add(&token, &pointer(JOB, id))
            .await
            .map_err(|error| format!("adding {id}: {error}"))?;
    }
    a.close().await;
    connection.close().await;

    let observer = &reader(fixture, "observer").await?;
    let expected = vec![Ok(pointer(JOB, 1)), Ok(pointer(JOB, 2))];
    eventually(
        fixture,
        "the pointers, after the writer's session ended",
        &expected,
        || list(observer, JOB),
    )
    .await?;
    eventually(
        fixture,
        "the counter, after the writer's session ended",
        &2,
        || async { current_id(&counter(observer, JOB)).await },
    )
    .await?;

    let (b_connection, _b, b_token) = leader(fixture, "b", ErrorPolicy::Lease).await?;
    let id = next_id(&counter(&b_connection, JOB), &b_token).await?;
    ensure!(id == 3, "the next leader's first id is {id}, expected 3");
    Ok(())
}

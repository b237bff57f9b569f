//! Unit tests of the retrieval core.

use super::*;
use crate::connection::{ConnectionState, LostReason};
use crate::time::MonoTime;
use crate::types::ContenderId;

const S1: SessionId = SessionId(1);
const S2: SessionId = SessionId(2);
const RETRY: Duration = Duration::from_millis(100);

fn event(state: ConnectionState, session: SessionId) -> RetrievalInput {
    RetrievalInput::Connection(ConnectionEvent {
        state,
        session,
        session_timeout: Duration::from_secs(10),
        lease_deadline: None,
        at: MonoTime::ZERO,
    })
}

fn published(address: &str, epoch: u64) -> Option<(Vec<u8>, Stat)> {
    let record = LeaderRecord {
        address: address.into(),
        session: SessionId(77),
        contender: ContenderId("jm".into()),
    };
    Some((
        record.encode(),
        Stat {
            czxid: epoch,
            mzxid: epoch,
            version: 0,
            ephemeral_owner: 77,
        },
    ))
}

fn leader_event(out: &[RetrievalCommand]) -> Option<(String, u64)> {
    out.iter().find_map(|command| match command {
        RetrievalCommand::Notify(RetrievalEvent::Leader(info)) => {
            Some((info.address.clone(), info.epoch.0))
        }
        _ => None,
    })
}

fn retrieving(policy: ErrorPolicy) -> RetrievalCore {
    let mut core = RetrievalCore::new(policy, RETRY);
    assert_eq!(
        core.handle(event(ConnectionState::Connected, S1)),
        [RetrievalCommand::Read {
            op: OpId(1),
            session: S1
        }]
    );
    let out = core.handle(RetrievalInput::Read(OpId(1), published("a:1", 10)));
    assert_eq!(leader_event(&out), Some(("a:1".into(), 10)));
    core
}

#[test]
fn reports_each_new_leader_once_and_never_an_older_epoch() {
    let mut core = retrieving(ErrorPolicy::Lease);
    assert_eq!(
        core.handle(RetrievalInput::Changed(OpId(1))),
        [RetrievalCommand::Read {
            op: OpId(2),
            session: S1
        }]
    );
    let out = core.handle(RetrievalInput::Read(OpId(2), published("b:1", 20)));
    assert_eq!(leader_event(&out), Some(("b:1".into(), 20)));
    core.handle(RetrievalInput::Changed(OpId(2)));
    assert_eq!(
        core.handle(RetrievalInput::Read(OpId(3), published("a:1", 10))),
        []
    );
    assert_eq!(core.highest_epoch(), Some(Epoch(20)));
    assert_eq!(
        core.leader().0.map(|info| info.address.as_str()),
        Some("b:1")
    );
}

#[test]
fn a_deleted_node_means_no_leader_but_keeps_the_high_water_mark() {
    let mut core = retrieving(ErrorPolicy::Lease);
    core.handle(RetrievalInput::Changed(OpId(1)));
    let out = core.handle(RetrievalInput::Read(OpId(2), None));
    assert_eq!(out, [RetrievalCommand::Notify(RetrievalEvent::NoLeader)]);
    core.handle(RetrievalInput::Changed(OpId(2)));
    assert_eq!(
        core.handle(RetrievalInput::Read(OpId(3), published("old:1", 5))),
        []
    );
}

#[test]
fn under_lease_a_suspension_keeps_the_leader_unconfirmed_and_reconnection_rereads() {
    let mut core = retrieving(ErrorPolicy::Lease);
    assert_eq!(core.handle(event(ConnectionState::Suspended, S1)), []);
    assert_eq!(core.leader(), (core.leader().0, false));
    assert!(core.leader().0.is_some());
    let out = core.handle(event(ConnectionState::Reconnected, S1));
    assert_eq!(
        out,
        [RetrievalCommand::Read {
            op: OpId(2),
            session: S1
        }]
    );
    // Unchanged: nothing to report, but confirmed again.
    assert_eq!(
        core.handle(RetrievalInput::Read(OpId(2), published("a:1", 10))),
        []
    );
    assert!(core.leader().1);
    // A change missed while suspended is reported after the re-read.
    core.handle(event(ConnectionState::Suspended, S1));
    core.handle(event(ConnectionState::Reconnected, S1));
    let out = core.handle(RetrievalInput::Read(OpId(3), published("c:1", 30)));
    assert_eq!(leader_event(&out), Some(("c:1".into(), 30)));
}

#[test]
fn under_standard_a_suspension_clears_the_leader() {
    let mut core = retrieving(ErrorPolicy::Standard);
    assert_eq!(
        core.handle(event(ConnectionState::Suspended, S1)),
        [RetrievalCommand::Notify(RetrievalEvent::NoLeader)]
    );
}

#[test]
fn losing_our_own_session_with_an_unchanged_leader_reports_nothing() {
    let mut core = retrieving(ErrorPolicy::Lease);
    assert_eq!(
        core.handle(event(ConnectionState::Lost(LostReason::SessionExpired), S1)),
        []
    );
    // A late answer on the old session is ignored.
    assert_eq!(core.handle(RetrievalInput::Changed(OpId(1))), []);
    assert_eq!(
        core.handle(event(ConnectionState::Connected, S2)),
        [RetrievalCommand::Read {
            op: OpId(2),
            session: S2
        }]
    );
    assert_eq!(
        core.handle(RetrievalInput::Read(OpId(2), published("a:1", 10))),
        []
    );
}

#[test]
fn garbage_is_reported_and_the_leader_kept() {
    let mut core = retrieving(ErrorPolicy::Lease);
    core.handle(RetrievalInput::Changed(OpId(1)));
    let garbage = Some((
        b"\x00not json".to_vec(),
        Stat {
            czxid: 99,
            ..Stat::default()
        },
    ));
    let out = core.handle(RetrievalInput::Read(OpId(2), garbage));
    assert!(
        matches!(&out[..], [RetrievalCommand::Notify(RetrievalEvent::Malformed(message))] if message.contains("not a holdfast leader record"))
    );
    assert_eq!(core.leader().0.map(|info| info.epoch), Some(Epoch(10)));
}

#[test]
fn failures_retry_unless_the_session_ended() {
    let mut core = RetrievalCore::new(ErrorPolicy::Lease, RETRY);
    core.handle(event(ConnectionState::Connected, S1));
    let out = core.handle(RetrievalInput::Failed(OpId(1), CoordError::ConnectionLoss));
    assert_eq!(
        out,
        [RetrievalCommand::RetryAfter {
            op: OpId(2),
            after: RETRY
        }]
    );
    assert_eq!(
        core.handle(RetrievalInput::Retry(OpId(2))),
        [RetrievalCommand::Read {
            op: OpId(3),
            session: S1
        }]
    );
    assert_eq!(
        core.handle(RetrievalInput::Failed(OpId(3), CoordError::SessionExpired)),
        []
    );
}

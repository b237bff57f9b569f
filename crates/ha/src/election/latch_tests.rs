//! Unit tests of the latch core: exact commands for each input.

use super::*;
use crate::time::MonoTime;

const S1: SessionId = SessionId(1);
const S2: SessionId = SessionId(2);
const RETRY: Duration = Duration::from_millis(100);

fn event(state: ConnectionState, session: SessionId) -> LatchInput {
    LatchInput::Connection(ConnectionEvent {
        state,
        session,
        session_timeout: Duration::from_secs(10),
        lease_deadline: Some(MonoTime::from_duration(Duration::from_secs(9))),
        at: MonoTime::ZERO,
    })
}

fn node(seq: u64) -> String {
    format!("_c_other-latch-{seq:010}")
}

fn ours(seq: u64) -> String {
    format!("_c_me-latch-{seq:010}")
}

/// Drives a fresh latch to leadership with node `ours(5)`; returns it.
fn leader(policy: ErrorPolicy) -> LatchCore {
    let mut latch = LatchCore::new(policy, "me", RETRY);
    let out = latch.handle(event(ConnectionState::Connected, S1));
    assert_eq!(
        out,
        [LatchCommand::Create {
            op: OpId(1),
            session: S1,
            prefix: "_c_me-latch-".into()
        }]
    );
    let out = latch.handle(LatchInput::Created(OpId(1), ours(5)));
    assert_eq!(
        out,
        [LatchCommand::List {
            op: OpId(2),
            session: S1
        }]
    );
    let out = latch.handle(LatchInput::Children(OpId(2), vec![ours(5), "junk".into()]));
    assert_eq!(
        out,
        [LatchCommand::ReadOwner {
            op: OpId(3),
            session: S1,
            node: ours(5)
        }]
    );
    let out = latch.handle(LatchInput::Owner(OpId(3), Some(S1)));
    assert_eq!(
        out,
        [LatchCommand::Publish {
            op: OpId(4),
            session: S1,
            node: ours(5)
        }]
    );
    let out = latch.handle(LatchInput::Published(OpId(4), Epoch(100)));
    assert_eq!(
        out,
        [LatchCommand::Granted {
            epoch: Epoch(100),
            session: S1
        }]
    );
    assert_eq!(latch.phase(), &Phase::Leading);
    latch
}

#[test]
fn a_follower_watches_only_its_predecessor_and_leads_when_it_goes() {
    let mut latch = LatchCore::new(ErrorPolicy::Lease, "me", RETRY);
    latch.handle(event(ConnectionState::Connected, S1));
    latch.handle(LatchInput::Created(OpId(1), ours(7)));
    let out = latch.handle(LatchInput::Children(
        OpId(2),
        vec![node(9), ours(7), node(3), node(5)],
    ));
    assert_eq!(
        out,
        [LatchCommand::Watch {
            op: OpId(3),
            session: S1,
            node: node(5)
        }]
    );
    assert_eq!(latch.phase(), &Phase::Watching(node(5)));
    let out = latch.handle(LatchInput::PredecessorGone(OpId(3)));
    assert_eq!(
        out,
        [LatchCommand::List {
            op: OpId(4),
            session: S1
        }]
    );
    let out = latch.handle(LatchInput::Children(OpId(4), vec![ours(7), node(9)]));
    assert_eq!(
        out,
        [LatchCommand::ReadOwner {
            op: OpId(5),
            session: S1,
            node: ours(7)
        }]
    );
}

#[test]
fn a_node_owned_by_another_session_is_never_granted() {
    let mut latch = LatchCore::new(ErrorPolicy::Lease, "me", RETRY);
    latch.handle(event(ConnectionState::Connected, S1));
    latch.handle(LatchInput::Created(OpId(1), ours(1)));
    latch.handle(LatchInput::Children(OpId(2), vec![ours(1)]));
    let out = latch.handle(LatchInput::Owner(OpId(3), Some(S2)));
    assert_eq!(
        out,
        [LatchCommand::Create {
            op: OpId(4),
            session: S1,
            prefix: "_c_me-latch-".into()
        }]
    );
    assert_eq!(latch.epoch(), None);
}

#[test]
fn under_lease_a_suspension_and_reconnection_keep_the_same_grant() {
    let mut latch = leader(ErrorPolicy::Lease);
    assert_eq!(latch.handle(event(ConnectionState::Suspended, S1)), []);
    assert_eq!(latch.epoch(), Some(Epoch(100)));
    let out = latch.handle(event(ConnectionState::Reconnected, S1));
    assert_eq!(
        out,
        [LatchCommand::List {
            op: OpId(5),
            session: S1
        }]
    );
    assert_eq!(
        latch.phase(),
        &Phase::Leading,
        "still leading while re-checking"
    );
    let out = latch.handle(LatchInput::Children(OpId(5), vec![ours(5), node(8)]));
    assert_eq!(out, [], "no revoke, no new epoch");
    assert_eq!(latch.epoch(), Some(Epoch(100)));
}

#[test]
fn under_standard_a_suspension_revokes_and_reconnection_regrants_with_a_new_epoch() {
    let mut latch = leader(ErrorPolicy::Standard);
    let out = latch.handle(event(ConnectionState::Suspended, S1));
    assert_eq!(
        out,
        [LatchCommand::Revoked {
            epoch: Epoch(100),
            reason: RevokeReason::Suspended
        }]
    );
    let out = latch.handle(event(ConnectionState::Reconnected, S1));
    assert_eq!(
        out,
        [LatchCommand::List {
            op: OpId(5),
            session: S1
        }]
    );
    latch.handle(LatchInput::Children(OpId(5), vec![ours(5)]));
    latch.handle(LatchInput::Owner(OpId(6), Some(S1)));
    let out = latch.handle(LatchInput::Published(OpId(7), Epoch(140)));
    assert_eq!(
        out,
        [LatchCommand::Granted {
            epoch: Epoch(140),
            session: S1
        }]
    );
}

#[test]
fn under_session_a_suspension_changes_nothing() {
    let mut latch = leader(ErrorPolicy::Session);
    assert_eq!(latch.handle(event(ConnectionState::Suspended, S1)), []);
    assert_eq!(latch.epoch(), Some(Epoch(100)));
}

#[test]
fn a_lost_session_revokes_then_rejoins_with_the_new_one() {
    let mut latch = leader(ErrorPolicy::Lease);
    let out = latch.handle(event(ConnectionState::Lost(LostReason::LeaseExpired), S1));
    assert_eq!(
        out,
        [LatchCommand::Revoked {
            epoch: Epoch(100),
            reason: RevokeReason::SessionLost(LostReason::LeaseExpired)
        }]
    );
    assert_eq!(latch.phase(), &Phase::WaitingForSession);
    // A late answer from the old session is ignored.
    assert_eq!(latch.handle(LatchInput::Published(OpId(4), Epoch(1))), []);
    let out = latch.handle(event(ConnectionState::Connected, S2));
    assert_eq!(
        out,
        [LatchCommand::Create {
            op: OpId(5),
            session: S2,
            prefix: "_c_me-latch-".into()
        }]
    );
}

#[test]
fn our_node_deleted_behind_our_back_revokes_and_recreates() {
    let mut latch = leader(ErrorPolicy::Lease);
    latch.handle(event(ConnectionState::Reconnected, S1));
    let out = latch.handle(LatchInput::Children(OpId(5), vec![node(9)]));
    assert_eq!(
        out,
        [
            LatchCommand::Revoked {
                epoch: Epoch(100),
                reason: RevokeReason::NodeDeleted
            },
            LatchCommand::Create {
                op: OpId(6),
                session: S1,
                prefix: "_c_me-latch-".into()
            },
        ]
    );
}

#[test]
fn a_create_cut_off_by_the_connection_is_found_by_its_prefix() {
    let mut latch = LatchCore::new(ErrorPolicy::Lease, "me", RETRY);
    latch.handle(event(ConnectionState::Connected, S1));
    let out = latch.handle(LatchInput::Failed(OpId(1), CoordError::ConnectionLoss));
    assert_eq!(
        out,
        [LatchCommand::RetryAfter {
            op: OpId(2),
            after: RETRY
        }]
    );
    let out = latch.handle(event(ConnectionState::Reconnected, S1));
    assert_eq!(
        out,
        [LatchCommand::Find {
            op: OpId(3),
            session: S1,
            prefix: "_c_me-latch-".into()
        }]
    );
    // The retry timer of the superseded request fires late: ignored.
    assert_eq!(latch.handle(LatchInput::Retry(OpId(2))), []);
    let out = latch.handle(LatchInput::Found(OpId(3), Some(ours(4))));
    assert_eq!(
        out,
        [LatchCommand::List {
            op: OpId(4),
            session: S1
        }]
    );
    assert_eq!(latch.node(), Some(ours(4).as_str()));
}

#[test]
fn a_publish_that_finds_our_node_gone_creates_a_new_one() {
    let mut latch = LatchCore::new(ErrorPolicy::Lease, "me", RETRY);
    latch.handle(event(ConnectionState::Connected, S1));
    latch.handle(LatchInput::Created(OpId(1), ours(1)));
    latch.handle(LatchInput::Children(OpId(2), vec![ours(1)]));
    latch.handle(LatchInput::Owner(OpId(3), Some(S1)));
    let gone = CoordError::MultiFailed {
        index: 0,
        source: Box::new(CoordError::NoNode("x".into())),
    };
    let out = latch.handle(LatchInput::Failed(OpId(4), gone));
    assert_eq!(
        out,
        [LatchCommand::Create {
            op: OpId(5),
            session: S1,
            prefix: "_c_me-latch-".into()
        }]
    );
}

#[test]
fn closing_while_our_create_is_in_flight_still_asks_to_delete_by_prefix() {
    let mut latch = LatchCore::new(ErrorPolicy::Lease, "me", RETRY);
    latch.handle(event(ConnectionState::Connected, S1));
    let out = latch.handle(LatchInput::Close);
    assert_eq!(
        out,
        [LatchCommand::Delete {
            session: S1,
            node: None,
            prefix: "_c_me-latch-".into()
        }]
    );
    assert_eq!(
        latch.handle(LatchInput::Created(OpId(1), ours(3))),
        [],
        "a late answer changes nothing"
    );
}

#[test]
fn closing_revokes_and_deletes_our_node_then_ignores_everything() {
    let mut latch = leader(ErrorPolicy::Lease);
    let out = latch.handle(LatchInput::Close);
    assert_eq!(
        out,
        [
            LatchCommand::Revoked {
                epoch: Epoch(100),
                reason: RevokeReason::Closed
            },
            LatchCommand::Delete {
                session: S1,
                node: Some(ours(5)),
                prefix: "_c_me-latch-".into()
            },
        ]
    );
    assert_eq!(latch.handle(event(ConnectionState::Connected, S2)), []);
    assert_eq!(latch.phase(), &Phase::Closed);
}

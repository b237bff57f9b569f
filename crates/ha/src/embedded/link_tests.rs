use super::*;

const T: Duration = Duration::from_secs(9);
const READ: Duration = Duration::from_secs(6);

fn at(seconds: u64) -> MonoTime {
    MonoTime::from_duration(Duration::from_secs(seconds))
}

fn emit(event: RawEvent) -> Effect {
    Effect::Emit(event)
}

#[test]
fn a_short_cut_is_invisible() {
    let mut link = Link::new(T, READ);
    link.cut(at(10));
    assert_eq!(link.next_deadline(), Some(at(16)));
    assert_eq!(link.advance(at(15)), vec![]);
    assert!(!link.view().link_up);
    assert_eq!(link.heal(), vec![Effect::Flush]);
    assert_eq!(
        link.view(),
        View {
            phase: Phase::Connected,
            link_up: true,
            connection: 0,
            latency: Duration::ZERO
        }
    );
    assert_eq!(link.next_deadline(), None);
}

#[test]
fn a_cut_past_the_read_timeout_suspends_then_reconnects() {
    let mut link = Link::new(T, READ);
    link.cut(at(10));
    link.cut(at(12)); // already cut: the first cut counts
    assert_eq!(link.advance(at(16)), vec![emit(RawEvent::Disconnected)]);
    assert_eq!(link.view().check(0), Err(CoordError::ConnectionLoss));
    assert_eq!(link.view().check(1), Err(CoordError::ConnectionLoss));
    assert_eq!(link.next_deadline(), Some(at(19)));
    assert_eq!(
        link.heal(),
        vec![emit(RawEvent::Reconnected), Effect::Flush]
    );
    assert_eq!(link.view().check(1), Ok(()));
    assert!(link.server_alive());
}

#[test]
fn a_cut_past_the_timeout_expires_and_the_client_learns_on_heal() {
    let mut link = Link::new(T, READ);
    link.cut(at(10));
    // Catching up late still processes both deadlines, in order.
    assert_eq!(
        link.advance(at(30)),
        vec![emit(RawEvent::Disconnected), Effect::EndAtServer]
    );
    assert!(!link.server_alive() && !link.is_gone());
    assert_eq!(link.next_deadline(), None);
    assert_eq!(link.heal(), vec![emit(RawEvent::Expired), Effect::Finish]);
    assert!(link.is_gone());
    assert_eq!(link.view().check(1), Err(CoordError::SessionExpired));
    assert_eq!(link.heal(), vec![]);
    assert_eq!(link.close(), vec![]);
}

#[test]
fn a_read_timeout_longer_than_the_session_timeout_notices_after_expiry() {
    let mut link = Link::new(T, T + T);
    link.cut(at(0));
    assert_eq!(link.advance(at(9)), vec![Effect::EndAtServer]);
    assert_eq!(link.next_deadline(), Some(at(18)));
    assert_eq!(
        link.heal(),
        vec![
            emit(RawEvent::Disconnected),
            emit(RawEvent::Expired),
            Effect::Finish
        ]
    );
}

#[test]
fn forced_expiry_over_a_live_link_is_learned_at_once() {
    let mut link = Link::new(T, READ);
    let effects = link.expire();
    assert_eq!(
        effects,
        vec![
            Effect::EndAtServer,
            emit(RawEvent::Disconnected),
            emit(RawEvent::Expired),
            Effect::Finish
        ]
    );
    assert!(link.is_gone());
    assert_eq!(link.expire(), vec![]);

    let mut cut = Link::new(T, READ);
    cut.cut(at(0));
    assert_eq!(cut.expire(), vec![Effect::EndAtServer]);
    assert_eq!(cut.advance(at(6)), vec![emit(RawEvent::Disconnected)]);
    assert_eq!(cut.heal(), vec![emit(RawEvent::Expired), Effect::Finish]);
}

#[test]
fn close_over_a_silent_link_leaves_the_session_to_expire() {
    let mut live = Link::new(T, READ);
    assert_eq!(
        live.close(),
        vec![Effect::EndAtServer, emit(RawEvent::Closed), Effect::Finish]
    );
    assert!(live.is_gone());
    assert_eq!(live.view().check(0), Err(CoordError::Closed));

    let mut silent = Link::new(T, READ);
    silent.cut(at(0));
    assert_eq!(silent.close(), vec![emit(RawEvent::Closed), Effect::Finish]);
    assert_eq!(silent.heal(), vec![], "a closed client does not talk");
    assert_eq!(silent.next_deadline(), Some(at(9)));
    assert_eq!(silent.advance(at(9)), vec![Effect::EndAtServer]);
    assert!(silent.is_gone());
}

#[test]
fn an_abandoned_client_goes_silent() {
    let mut link = Link::new(T, READ);
    assert_eq!(link.abandon(at(5)), vec![Effect::Finish]);
    assert_eq!(link.next_deadline(), Some(at(14)));
    assert_eq!(link.advance(at(14)), vec![Effect::EndAtServer]);
    assert!(link.is_gone());
}

//! Tier 2: the connection shell on the embedded backend and a virtual
//! clock — which grants may still be acted on.

use std::sync::Arc;
use std::time::Duration;

use holdfast_ha::connection::{Connection, ConnectionOptions, ConnectionState};
use holdfast_ha::embedded::{EmbeddedCluster, EmbeddedOptions};
use holdfast_ha::{ErrorPolicy, Runtime, TokioRuntime};

const T: Duration = Duration::from_secs(10);

fn start(
    policy: ErrorPolicy,
) -> (
    EmbeddedCluster,
    Connection<holdfast_ha::embedded::EmbeddedBackend>,
) {
    let runtime: Arc<dyn Runtime> = Arc::new(TokioRuntime::seeded(3));
    let cluster = EmbeddedCluster::new(runtime.clone());
    let options = EmbeddedOptions {
        session_timeout: T,
        ..EmbeddedOptions::default()
    };
    let connection_options = ConnectionOptions {
        policy,
        retry_wait: Duration::from_millis(100),
        ..ConnectionOptions::default()
    };
    let connection = Connection::start(
        cluster.backend_on("p", options),
        runtime,
        connection_options,
    );
    (cluster, connection)
}

async fn next_state(
    events: &mut tokio::sync::mpsc::UnboundedReceiver<holdfast_ha::connection::ConnectionEvent>,
) -> (ConnectionState, holdfast_ha::SessionId) {
    let event = tokio::time::timeout(T * 10, events.recv())
        .await
        .expect("an event in time")
        .expect("events");
    (event.state, event.session)
}

#[tokio::test(start_paused = true)]
async fn a_grant_holds_only_in_its_own_live_session_and_within_the_lease() {
    let (cluster, connection) = start(ErrorPolicy::Lease);
    let (_, mut events) = connection.subscribe();
    let (state, first) = next_state(&mut events).await;
    assert_eq!(state, ConnectionState::Connected);
    assert!(connection.session_holds(first));

    cluster.cut_link("p");
    assert_eq!(next_state(&mut events).await.0, ConnectionState::Suspended);
    assert!(
        connection.session_holds(first),
        "a suspension within the lease keeps the grant"
    );
    let (state, _) = next_state(&mut events).await;
    assert!(matches!(state, ConnectionState::Lost(_)), "{state:?}");
    assert!(
        !connection.session_holds(first),
        "a lost session's grant must not hold"
    );

    cluster.heal_link("p");
    let (state, second) = next_state(&mut events).await;
    assert_eq!(state, ConnectionState::Connected);
    assert_ne!(second, first);
    assert!(
        !connection.session_holds(first),
        "an old session's grant must not hold in a new session"
    );
    assert!(connection.session_holds(second));
}

#[tokio::test(start_paused = true)]
async fn the_session_policy_ignores_the_lease_until_the_server_expires_the_session() {
    let (cluster, connection) = start(ErrorPolicy::Session);
    let (_, mut events) = connection.subscribe();
    let (_, first) = next_state(&mut events).await;
    cluster.cut_link("p");
    assert_eq!(next_state(&mut events).await.0, ConnectionState::Suspended);
    let runtime = connection.runtime().clone();
    runtime.sleep_until(runtime.now().plus(T)).await;
    assert!(!connection.lease_valid(), "the lease is long gone");
    assert!(
        connection.session_holds(first),
        "the session policy (Curator's) still believes it leads"
    );
    cluster.heal_link("p");
    let (state, _) = next_state(&mut events).await;
    assert!(matches!(state, ConnectionState::Lost(_)), "{state:?}");
    assert!(!connection.session_holds(first));
}

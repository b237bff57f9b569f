//! The coordination runtime keeps a session alive, on real time, while the
//! application's own runtime is blocked far past the session timeout and
//! every core is busy.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use holdfast_ha::connection::{Connection, ConnectionOptions, ConnectionState};
use holdfast_ha::embedded::{EmbeddedCluster, EmbeddedOptions};
use holdfast_ha::isolation::CoordinationRuntime;
use holdfast_ha::{ErrorPolicy, TokioRuntime};

const T: Duration = Duration::from_secs(1);

#[tokio::test(flavor = "current_thread")]
async fn a_blocked_application_runtime_and_busy_cores_do_not_touch_the_session() {
    let coordination =
        CoordinationRuntime::start("holdfast-ha-test").expect("a coordination thread");
    let connection = coordination.run(|| {
        let runtime = Arc::new(TokioRuntime::new());
        let cluster = EmbeddedCluster::new(runtime.clone());
        let options = EmbeddedOptions {
            session_timeout: T,
            ..EmbeddedOptions::default()
        };
        let connection_options = ConnectionOptions {
            policy: ErrorPolicy::Lease,
            ..ConnectionOptions::default()
        };
        Connection::start(cluster.backend(options), runtime, connection_options)
    });
    // The connection may have connected before this subscription: then the
    // latest event is the first one.
    let (latest, mut events) = connection.subscribe();
    let first = match latest {
        Some(event) => Some(event),
        None => tokio::time::timeout(Duration::from_secs(10), events.recv())
            .await
            .expect("a first event"),
    };
    assert_eq!(
        first.map(|event| event.state),
        Some(ConnectionState::Connected)
    );

    // Saturate every core and block this runtime's only thread for 3 T.
    let stop = Arc::new(AtomicBool::new(false));
    let burners: Vec<_> = (0..std::thread::available_parallelism().map_or(2, |n| n.get()) * 2)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                }
                x
            })
        })
        .collect();
    std::thread::sleep(T * 3);
    stop.store(true, Ordering::Relaxed);
    for burner in burners {
        let _ = burner.join();
    }

    // Had the driver run on this (blocked) runtime, its probes would have
    // stopped and the lease (0.89 T) would have run out: Lost.
    assert_eq!(connection.state(), Some(ConnectionState::Connected));
    assert!(
        connection.lease_valid(),
        "the lease ran out while the application was blocked"
    );
    assert!(
        events.try_recv().is_err(),
        "the connection changed state: {:?}",
        events.try_recv()
    );
}

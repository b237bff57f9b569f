//! Tier 3: holdfast's conformance suite (the same checks the embedded
//! backend passes) against a real standalone ZooKeeper, in real time. Every
//! "process" reaches the server through its own proxy route (the
//! [`RoutedFixture`] of one member), so stalling one process's link leaves
//! the others alone.

mod support;

use std::time::Duration;

use support::routed::RoutedFixture;

/// The session timeout `T`: short, so that expiry-bound checks stay quick,
/// long enough that a loaded 2-core machine keeps its sessions.
const T: Duration = Duration::from_secs(4);

async fn fixture() -> RoutedFixture {
    RoutedFixture::start(1, T)
        .await
        .unwrap_or_else(|error| panic!("{error:#}"))
}

holdfast_ha::conformance_suite!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)],
    fixture().await
);

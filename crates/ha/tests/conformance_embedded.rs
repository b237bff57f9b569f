//! Tier 2: the conformance suite against the embedded backend, on tokio's
//! paused clock (virtual time: a 10 s session timeout costs nothing).

use std::sync::Arc;
use std::time::Duration;

use holdfast_ha::backend::{Backend, CoordError, CreateMode, Op, Session};
use holdfast_ha::conformance::Fixture;
use holdfast_ha::embedded::{EmbeddedBackend, EmbeddedCluster, EmbeddedOptions};
use holdfast_ha::{Runtime, TokioRuntime};

/// One way, per packet, on every process's link (virtual time).
const LATENCY: Duration = Duration::from_millis(1);

struct EmbeddedFixture {
    cluster: EmbeddedCluster,
    runtime: Arc<dyn Runtime>,
    options: EmbeddedOptions,
}

fn fixture() -> EmbeddedFixture {
    let runtime: Arc<dyn Runtime> = Arc::new(TokioRuntime::seeded(7));
    let options = EmbeddedOptions {
        session_timeout: Duration::from_secs(10),
        ..EmbeddedOptions::default()
    };
    EmbeddedFixture {
        cluster: EmbeddedCluster::new(runtime.clone()),
        runtime,
        options,
    }
}

impl Fixture for EmbeddedFixture {
    type Backend = EmbeddedBackend;

    /// Every process's link delays each packet by [`LATENCY`], as a network
    /// does: requests of one process that are in flight together interleave
    /// at the server (as they do on ZooKeeper) instead of running one after
    /// the other.
    fn process(&self, name: &str) -> EmbeddedBackend {
        self.cluster.set_link_latency(name, LATENCY);
        self.cluster.backend_on(name, self.options.clone())
    }

    fn stall(&self, name: &str) {
        self.cluster.cut_link(name);
    }

    fn heal(&self, name: &str) {
        self.cluster.heal_link(name);
    }

    async fn write_raw(&self, path: &str, data: &[u8]) {
        let session = self
            .cluster
            .backend(self.options.clone())
            .connect()
            .await
            .expect("a session");
        match session
            .create(path, data, CreateMode::Persistent, true)
            .await
        {
            Ok(_) => {}
            Err(CoordError::NodeExists(_)) => {
                let set = Op::SetData {
                    path: path.to_owned(),
                    data: data.to_vec(),
                    version: None,
                };
                session.multi(vec![set]).await.expect("overwriting a node");
            }
            Err(error) => panic!("writing {path}: {error}"),
        }
        session.close().await;
    }

    fn runtime(&self) -> Arc<dyn Runtime> {
        self.runtime.clone()
    }

    fn session_timeout(&self) -> Duration {
        self.options.session_timeout
    }
}

holdfast_ha::conformance_suite!(#[tokio::test(start_paused = true)], fixture());

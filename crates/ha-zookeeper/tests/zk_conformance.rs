//! Tier 3: holdfast's conformance suite (the same checks the embedded
//! backend passes) against a real standalone ZooKeeper, in real time. Every
//! "process" reaches the server through its own proxy route, so stalling one
//! process's link leaves the others alone.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use holdfast_ha::conformance::Fixture;
use holdfast_ha::{Runtime, TokioRuntime};
use holdfast_ha_zookeeper::{ZkBackend, ZkOptions};
use holdfast_testkit::{Mode, Route, RouteOptions, ZkCluster, ZkClusterConfig};
use zookeeper_client::{Acls, Client, CreateMode, Error};

/// The session timeout `T`: short, so that expiry-bound checks stay quick,
/// long enough that a loaded 2-core machine keeps its sessions.
const T: Duration = Duration::from_secs(4);

struct ZkFixture {
    zk: ZkCluster,
    routes: Mutex<HashMap<String, Route>>,
    runtime: Arc<dyn Runtime>,
}

async fn fixture() -> ZkFixture {
    let zk = ZkCluster::start(ZkClusterConfig::standalone())
        .await
        .unwrap_or_else(|error| panic!("starting a standalone ZooKeeper: {error}"));
    ZkFixture {
        zk,
        routes: Mutex::default(),
        runtime: Arc::new(TokioRuntime::seeded(7)),
    }
}

impl ZkFixture {
    /// Process `name`'s own link to the server, made on first use.
    fn route(&self, name: &str) -> Route {
        let mut routes = self
            .routes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let route = routes.entry(name.to_owned()).or_insert_with(|| {
            let upstream = self.zk.direct_member_address(1).expect("member 1");
            self.zk
                .proxy()
                .route_with(upstream, RouteOptions::named(name))
                .unwrap_or_else(|error| panic!("a proxy route for {name}: {error}"))
        });
        route.clone()
    }
}

impl Fixture for ZkFixture {
    type Backend = ZkBackend;

    fn process(&self, name: &str) -> ZkBackend {
        let connect_string = self.route(name).listen_addr().to_string();
        let options = ZkOptions::open(connect_string)
            .with_session_timeout(T)
            .with_connection_timeout(T);
        ZkBackend::new(options).expect("valid options")
    }

    fn stall(&self, name: &str) {
        self.route(name).set_mode(Mode::Stall);
    }

    fn heal(&self, name: &str) {
        self.route(name).set_mode(Mode::Pass);
    }

    async fn write_raw(&self, path: &str, data: &[u8]) {
        let client = Client::connector()
            .with_session_timeout(Duration::from_secs(10))
            .connect(&self.zk.direct_connect_string())
            .await
            .expect("a direct client");
        let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
        if let Some((parent, _)) = path
            .rsplit_once('/')
            .filter(|(parent, _)| !parent.is_empty())
        {
            client
                .mkdir(parent, &open)
                .await
                .expect("creating the parents");
        }
        match client.create(path, data, &open).await {
            Ok(_) => {}
            Err(Error::NodeExists) => {
                client
                    .set_data(path, data, None)
                    .await
                    .expect("overwriting the node");
            }
            Err(error) => panic!("writing {path}: {error}"),
        }
    }

    fn runtime(&self) -> Arc<dyn Runtime> {
        self.runtime.clone()
    }

    fn session_timeout(&self) -> Duration {
        T
    }
}

holdfast_ha::conformance_suite!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)],
    fixture().await
);

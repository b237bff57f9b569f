//! A conformance [`Fixture`] over a real ZooKeeper (standalone or an
//! ensemble) in which every "process" reaches every member through proxy
//! routes of its own:
//!
//! ```text
//!   process a ──► route a->zk1 ──► zk1     connect string of a:
//!             ──► route a->zk2 ──► zk2       a->zk1,a->zk2,a->zk3
//!             ──► route a->zk3 ──► zk3     stall("a") stalls all three
//! ```
//!
//! So one process's link can be cut (all its routes) or pinned to one member
//! (the others refuse) without touching anyone else's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use holdfast_ha::conformance::Fixture;
use holdfast_ha::connection::LeaseConfig;
use holdfast_ha::{Runtime, SessionId, TokioRuntime};
use holdfast_ha_zookeeper::{ZkBackend, ZkOptions};
use holdfast_testkit::{Mode, Route, RouteOptions, ZkCluster, ZkClusterConfig};
use holdfast_types::sync::lock;
use zookeeper_client::{Acls, Client, CreateMode, Error};

/// See the module docs.
pub struct RoutedFixture {
    zk: ZkCluster,
    session_timeout: Duration,
    /// Per process, one route per member, in member order.
    routes: Mutex<HashMap<String, Vec<Route>>>,
    runtime: Arc<dyn Runtime>,
}

impl RoutedFixture {
    /// Starts a cluster with `members` members; processes ask for sessions
    /// of `session_timeout`.
    pub async fn start(members: u32, session_timeout: Duration) -> Result<RoutedFixture> {
        let zk = ZkCluster::start(ZkClusterConfig::ensemble(members))
            .await
            .with_context(|| format!("starting a ZooKeeper of {members} member(s)"))?;
        Ok(RoutedFixture {
            zk,
            session_timeout,
            routes: Mutex::default(),
            runtime: Arc::new(TokioRuntime::seeded(7)),
        })
    }

    /// The cluster.
    pub fn cluster(&self) -> &ZkCluster {
        &self.zk
    }

    /// Process `name`'s routes, one per member in member order, made on
    /// first use.
    pub fn routes(&self, name: &str) -> Vec<Route> {
        let mut routes = lock(&self.routes);
        routes
            .entry(name.to_owned())
            .or_insert_with(|| {
                self.zk
                    .members()
                    .map(|id| {
                        let upstream = self.zk.direct_member_address(id).expect("a member");
                        self.zk
                            .proxy()
                            .route_with(upstream, RouteOptions::named(format!("{name}->zk{id}")))
                            .unwrap_or_else(|error| panic!("a proxy route for {name}: {error}"))
                    })
                    .collect()
            })
            .clone()
    }

    /// Process `name`'s route to member `id`.
    pub fn route(&self, name: &str, id: u32) -> Route {
        let index = usize::try_from(id - 1).expect("member ids are small");
        self.routes(name).swap_remove(index)
    }

    /// Process `name`'s connect string: its own route to every member.
    pub fn connect_string(&self, name: &str) -> String {
        self.routes(name)
            .iter()
            .map(|route| route.listen_addr().to_string())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Lets process `name` connect to member `id` only: its routes to the
    /// other members refuse new connections (open ones keep flowing).
    /// [`unpin`](Self::unpin) undoes it.
    pub fn pin(&self, name: &str, id: u32) {
        for (index, route) in self.routes(name).into_iter().enumerate() {
            route.set_mode(if index + 1 == id as usize {
                Mode::Pass
            } else {
                Mode::Refuse
            });
        }
    }

    /// Lets process `name` reach every member again.
    pub fn unpin(&self, name: &str) {
        self.set_mode(name, Mode::Pass);
    }

    fn set_mode(&self, name: &str, mode: Mode) {
        for route in self.routes(name) {
            route.set_mode(mode);
        }
    }

    /// The members (by `cons`) that hold a client connection of `session`.
    pub async fn members_serving(&self, session: SessionId) -> Result<Vec<u32>> {
        let needle = format!("sid={session}");
        let mut serving = Vec::new();
        for id in self.zk.members() {
            if self.zk.pid(id)?.is_none() {
                continue; // killed
            }
            // A member that does not answer (partitioned, electing) serves nobody.
            if let Ok(cons) = self.zk.four_letter_word(id, "cons").await
                && cons.contains(&needle)
            {
                serving.push(id);
            }
        }
        Ok(serving)
    }
}

impl Fixture for RoutedFixture {
    type Backend = ZkBackend;

    fn process(&self, name: &str) -> ZkBackend {
        let options = ZkOptions::open(self.connect_string(name))
            .with_session_timeout(self.session_timeout)
            .with_connection_timeout(self.session_timeout);
        ZkBackend::new(options).expect("valid options")
    }

    fn stall(&self, name: &str) {
        self.set_mode(name, Mode::Stall);
    }

    fn heal(&self, name: &str) {
        self.set_mode(name, Mode::Pass);
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
        self.session_timeout
    }

    /// An ensemble's followers may answer for `(syncLimit + 1) · tickTime`
    /// after losing their leader: the lease must not count on those answers.
    /// Probes every `T/10` leave room for a suspension to be noticed and
    /// healed within the shorter lease.
    fn lease(&self) -> LeaseConfig {
        let config = self.zk.config();
        let staleness = if config.members > 1 {
            config.tick_time * (config.sync_limit + 1)
        } else {
            Duration::ZERO
        };
        LeaseConfig {
            server_staleness: staleness,
            probe_fraction: 0.1,
            ..LeaseConfig::default()
        }
    }
}

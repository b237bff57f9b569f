//! [`ZkCluster`]: start, observe and hurt a real ZooKeeper.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::config::{MemberPorts, ZkClusterConfig, render_zoo_cfg};
use super::four_letter::{self, ZkMode};
use super::handshake::ElectionAddressRewrite;
use super::member::Member;
use super::process::{ServerProcess, reap_orphans};
use crate::error::{KitError, Result};
use crate::ports::free_port;
use crate::proxy::{FaultProxy, Mode, Route, RouteOptions};

/// How many times a start is retried when another process took a port.
const PORT_RACE_RETRIES: usize = 3;
const POLL: Duration = Duration::from_millis(50);

/// A running ZooKeeper: one standalone server or an ensemble, every member's
/// client port behind its own [`Route`] of a [`FaultProxy`], and (for an
/// ensemble) every peer link behind a route too.
///
/// Members are numbered from 1. Clients should use
/// [`connect_string`](Self::connect_string) (through the proxy);
/// [`direct_connect_string`](Self::direct_connect_string) bypasses it, for an
/// observer that must not be affected by injected faults.
///
/// Dropping the cluster kills every server it started and deletes their
/// directories.
///
/// ```no_run
/// # async fn demo() -> holdfast_testkit::Result<()> {
/// use holdfast_testkit::{ZkCluster, ZkClusterConfig};
/// let ensemble = ZkCluster::start(ZkClusterConfig::ensemble(3)).await?;
/// let leader = ensemble.leader().await?;
/// ensemble.kill(leader)?;                      // kill -9
/// let next = ensemble.leader().await?;         // a new quorum forms
/// assert_ne!(leader, next);
/// ensemble.restart(leader).await?;             // it rejoins as a follower
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ZkCluster {
    config: ZkClusterConfig,
    // Field order matters for drop: servers die before the proxy and the
    // directory go.
    members: Vec<Member>,
    /// `(from, to) -> [quorum route, election route]`.
    peer_routes: BTreeMap<(u32, u32), [Route; 2]>,
    proxy: FaultProxy,
    dir: tempfile::TempDir,
}

impl ZkCluster {
    /// Starts the servers and waits until every member serves (an ensemble:
    /// until a quorum with a leader has formed).
    pub async fn start(config: ZkClusterConfig) -> Result<ZkCluster> {
        if config.members == 0 {
            return Err(KitError::Invalid(
                "a ZooKeeper cluster needs at least one member".into(),
            ));
        }
        reap_orphans();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let cluster = Self::prepare(config.clone())?;
            match cluster.launch().await {
                Ok(()) => return Ok(cluster),
                Err(error) if attempt < PORT_RACE_RETRIES && cluster.lost_a_port_race() => {
                    tracing::warn!(%error, attempt, "a ZooKeeper port was taken meanwhile; retrying with new ports");
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// Picks ports, builds routes and writes every member's configuration.
    fn prepare(config: ZkClusterConfig) -> Result<ZkCluster> {
        let dir = tempfile::Builder::new()
            .prefix("holdfast-zk-")
            .tempdir()
            .map_err(KitError::io("creating a directory for ZooKeeper"))?;
        let proxy = FaultProxy::start()?;
        let ids: Vec<u32> = (1..=config.members).collect();
        let mut members = Vec::new();
        for &id in &ids {
            let ports = MemberPorts {
                client: free_port()?,
                quorum: free_port()?,
                election: free_port()?,
            };
            let member_dir = dir.path().join(format!("zk{id}"));
            std::fs::create_dir_all(member_dir.join("data"))
                .map_err(KitError::io(format!("creating {}", member_dir.display())))?;
            let client_route = proxy.route_with(
                loopback(ports.client),
                RouteOptions {
                    name: format!("client->zk{id}"),
                    ..RouteOptions::default()
                },
            )?;
            members.push(Member::new(id, ports, member_dir, client_route));
        }
        let ensemble = config.members > 1;
        let peer_routes = if ensemble && config.peer_proxies {
            build_peer_routes(&proxy, &members)?
        } else {
            BTreeMap::new()
        };
        for member in &members {
            let peers: Vec<(u16, u16)> = members
                .iter()
                .map(|peer| match peer_routes.get(&(member.id, peer.id)) {
                    Some([quorum, election]) => {
                        (quorum.listen_addr().port(), election.listen_addr().port())
                    }
                    None => (peer.ports.quorum, peer.ports.election),
                })
                .collect();
            let cfg = render_zoo_cfg(
                &config,
                &member.dir.join("data"),
                member.ports.client,
                &peers,
            );
            write(&member.zoo_cfg(), &cfg)?;
            if ensemble {
                write(
                    &member.dir.join("data").join("myid"),
                    &member.id.to_string(),
                )?;
            }
        }
        Ok(ZkCluster {
            config,
            members,
            peer_routes,
            proxy,
            dir,
        })
    }

    async fn launch(&self) -> Result<()> {
        for member in &self.members {
            self.spawn(member)?;
        }
        for member in &self.members {
            self.wait_serving(member.id).await?;
        }
        Ok(())
    }

    fn spawn(&self, member: &Member) -> Result<()> {
        let process =
            ServerProcess::spawn(&self.config, member.id, &member.zoo_cfg(), &member.log())?;
        *member.process() = Some(process);
        Ok(())
    }

    fn lost_a_port_race(&self) -> bool {
        self.members.iter().any(|member| {
            self.log_tail(member.id, 200)
                .contains("Address already in use")
        })
    }

    /// The member ids, `1..=members`.
    pub fn members(&self) -> impl Iterator<Item = u32> + '_ {
        self.members.iter().map(|member| member.id)
    }

    /// The connect string clients should use: every member through its proxy
    /// route, e.g. `127.0.0.1:40001,127.0.0.1:40002,127.0.0.1:40003`.
    pub fn connect_string(&self) -> String {
        join(
            self.members
                .iter()
                .map(|member| member.client_route.listen_addr()),
        )
    }

    /// The connect string that bypasses the proxy.
    pub fn direct_connect_string(&self) -> String {
        join(
            self.members
                .iter()
                .map(|member| loopback(member.ports.client)),
        )
    }

    /// Member `id`'s address through its proxy route.
    pub fn member_address(&self, id: u32) -> Result<SocketAddr> {
        Ok(self.member(id)?.client_route.listen_addr())
    }

    /// Member `id`'s real client address (no proxy).
    pub fn direct_member_address(&self, id: u32) -> Result<SocketAddr> {
        Ok(loopback(self.member(id)?.ports.client))
    }

    /// The proxy route in front of member `id`'s client port.
    pub fn client_route(&self, id: u32) -> Result<Route> {
        Ok(self.member(id)?.client_route.clone())
    }

    /// Sets every client route (all members) to `mode`.
    pub fn set_client_mode(&self, mode: Mode) {
        for member in &self.members {
            member.client_route.set_mode(mode);
        }
    }

    /// Every peer-link route that starts or ends at member `id`.
    pub fn peer_routes(&self, id: u32) -> Vec<Route> {
        self.peer_routes
            .iter()
            .filter(|((from, to), _)| *from == id || *to == id)
            .flat_map(|(_, routes)| routes.iter().cloned())
            .collect()
    }

    /// Cuts member `id` off from its peers (its peer links stall, silently,
    /// like a network partition); its client route stays as it is, so clients
    /// connected to it see a server that stops serving. Needs
    /// [`ZkClusterConfig::peer_proxies`].
    pub fn partition(&self, id: u32) -> Result<()> {
        self.set_peer_mode(id, Mode::Stall)
    }

    /// Undoes [`partition`](Self::partition).
    pub fn heal(&self, id: u32) -> Result<()> {
        self.set_peer_mode(id, Mode::Pass)
    }

    fn set_peer_mode(&self, id: u32, mode: Mode) -> Result<()> {
        self.member(id)?;
        let routes = self.peer_routes(id);
        if routes.is_empty() {
            return Err(KitError::Invalid(
                "partitioning needs an ensemble started with peer proxies".into(),
            ));
        }
        for route in routes {
            route.set_mode(mode);
        }
        Ok(())
    }

    /// What member `id` says it is (`NotServing` when it does not answer).
    pub async fn mode(&self, id: u32) -> Result<ZkMode> {
        let addr = self.direct_member_address(id)?;
        Ok(
            match four_letter::ask(addr, "srvr", Duration::from_secs(2)).await {
                Ok(answer) => four_letter::parse_srvr(&answer),
                Err(_) => ZkMode::NotServing,
            },
        )
    }

    /// Sends a four-letter word (`srvr`, `stat`, `mntr`, `cons`, …) to member
    /// `id`'s real client port and returns the answer.
    pub async fn four_letter_word(&self, id: u32, word: &str) -> Result<String> {
        let addr = self.direct_member_address(id)?;
        four_letter::ask(addr, word, Duration::from_secs(5))
            .await
            .map_err(KitError::io(format!("asking member {id} `{word}`")))
    }

    /// Waits until member `id` serves clients (standalone, leader or
    /// follower). Fails early, with its log, if its process exits.
    pub async fn wait_serving(&self, id: u32) -> Result<ZkMode> {
        self.wait_for_mode(id, ZkMode::serves_writes, "serving")
            .await
    }

    /// Waits until member `id` reports a mode for which `accept` is true.
    pub async fn wait_for_mode(
        &self,
        id: u32,
        accept: impl Fn(ZkMode) -> bool,
        what: &str,
    ) -> Result<ZkMode> {
        let member = self.member(id)?;
        let started = Instant::now();
        loop {
            let mode = self.mode(id).await?;
            if accept(mode) {
                return Ok(mode);
            }
            if let Some(status) = member.process().as_mut().and_then(ServerProcess::exited) {
                return Err(KitError::ServerExited {
                    member: id,
                    status,
                    log_tail: self.log_tail(id, 40),
                });
            }
            if started.elapsed() > self.config.start_timeout {
                return Err(match what {
                    "serving" => KitError::ServerNotReady {
                        member: id,
                        addr: loopback(member.ports.client),
                        waited: started.elapsed(),
                        log_tail: self.log_tail(id, 40),
                    },
                    _ => KitError::Timeout {
                        what: format!("member {id} to be {what} (last mode: {mode:?})"),
                        waited: started.elapsed(),
                    },
                });
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// The id of the member that leads (a standalone server leads itself).
    /// Waits until exactly one running member says it leads.
    pub async fn leader(&self) -> Result<u32> {
        let started = Instant::now();
        loop {
            let mut leaders = Vec::new();
            for member in &self.members {
                if member.process().is_some()
                    && matches!(
                        self.mode(member.id).await?,
                        ZkMode::Leader | ZkMode::Standalone
                    )
                {
                    leaders.push(member.id);
                }
            }
            if let [leader] = leaders[..] {
                return Ok(leader);
            }
            if started.elapsed() > self.config.start_timeout {
                return Err(KitError::Timeout {
                    what: format!("exactly one ZooKeeper leader (saw {leaders:?})"),
                    waited: started.elapsed(),
                });
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Stops member `id` gracefully (SIGTERM) and waits for it to exit.
    pub fn stop(&self, id: u32) -> Result<()> {
        self.terminate(id, Signal::SIGTERM)
    }

    /// Kills member `id` (SIGKILL, like `kill -9`) and waits for it to exit.
    pub fn kill(&self, id: u32) -> Result<()> {
        self.terminate(id, Signal::SIGKILL)
    }

    fn terminate(&self, id: u32, signal: Signal) -> Result<()> {
        let process = self.member(id)?.process().take();
        match process {
            Some(process) => process.terminate(signal),
            None => Err(KitError::Invalid(format!(
                "ZooKeeper member {id} is not running"
            ))),
        }
    }

    /// Freezes member `id` (SIGSTOP), like a long GC pause: its sockets stay
    /// open but it answers nothing.
    pub fn pause(&self, id: u32) -> Result<()> {
        self.signal(id, Signal::SIGSTOP)
    }

    /// Thaws a member frozen by [`pause`](Self::pause) (SIGCONT).
    pub fn resume(&self, id: u32) -> Result<()> {
        self.signal(id, Signal::SIGCONT)
    }

    fn signal(&self, id: u32, signal: Signal) -> Result<()> {
        match self.member(id)?.process().as_ref() {
            Some(process) => process.signal(signal),
            None => Err(KitError::Invalid(format!(
                "ZooKeeper member {id} is not running"
            ))),
        }
    }

    /// Starts member `id` again with its data and ports (stopping it first
    /// if it runs) and waits until it serves. In an ensemble it serves only
    /// once it has rejoined a quorum.
    pub async fn restart(&self, id: u32) -> Result<ZkMode> {
        let member = self.member(id)?;
        let running = member.process().take();
        if let Some(process) = running {
            process.terminate(Signal::SIGTERM)?;
        }
        self.spawn(member)?;
        self.wait_serving(id).await
    }

    /// The process id of member `id`'s JVM, if it runs.
    pub fn pid(&self, id: u32) -> Result<Option<u32>> {
        Ok(self.member(id)?.process().as_ref().map(ServerProcess::pid))
    }

    /// The last `lines` lines of member `id`'s server log.
    pub fn log_tail(&self, id: u32, lines: usize) -> String {
        match self.member(id) {
            Ok(member) => super::process::log_tail(&member.log(), lines),
            Err(_) => String::new(),
        }
    }

    /// The directory holding every member's configuration, data and log.
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// The proxy that carries this cluster's routes, to add routes of one's
    /// own on the same thread.
    pub fn proxy(&self) -> &FaultProxy {
        &self.proxy
    }

    /// The configuration the cluster was started with.
    pub fn config(&self) -> &ZkClusterConfig {
        &self.config
    }

    fn member(&self, id: u32) -> Result<&Member> {
        self.members
            .iter()
            .find(|member| member.id == id)
            .ok_or_else(|| {
                KitError::Invalid(format!(
                    "no ZooKeeper member {id} (members are 1..={})",
                    self.members.len()
                ))
            })
    }
}

/// Two routes per ordered pair of members: `from` reaches `to`'s quorum and
/// election ports through them. Election routes rewrite the announcement of
/// the connecting member so that the answer comes back through the proxy too.
fn build_peer_routes(
    proxy: &FaultProxy,
    members: &[Member],
) -> Result<BTreeMap<(u32, u32), [Route; 2]>> {
    let mut announce: BTreeMap<(u32, u32), Arc<OnceLock<SocketAddr>>> = BTreeMap::new();
    let mut routes = BTreeMap::new();
    for from in members {
        for to in members.iter().filter(|to| to.id != from.id) {
            let options = |kind: &str| RouteOptions {
                name: format!("zk{}->zk{} {kind}", from.id, to.id),
                connect_retry: Duration::from_secs(5),
                ..RouteOptions::default()
            };
            let quorum = proxy.route_with(loopback(to.ports.quorum), options("quorum"))?;
            // `to` answers `from` through the route `to -> from`, whose
            // address is known only once that route exists.
            let back = announce.entry((to.id, from.id)).or_default().clone();
            let election = proxy.route_with(
                loopback(to.ports.election),
                RouteOptions {
                    first_message_rewrite: Some(Arc::new(ElectionAddressRewrite {
                        announce: back,
                    })),
                    ..options("election")
                },
            )?;
            announce
                .entry((from.id, to.id))
                .or_default()
                .set(election.listen_addr())
                .ok();
            routes.insert((from.id, to.id), [quorum, election]);
        }
    }
    Ok(routes)
}

fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, port))
}

fn join(addrs: impl Iterator<Item = SocketAddr>) -> String {
    addrs
        .map(|addr| addr.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

fn write(path: &std::path::Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(KitError::io(format!("writing {}", path.display())))
}

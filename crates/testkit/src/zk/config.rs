//! How a test wants its ZooKeeper: size, timing, and where the jars are.

use std::path::PathBuf;
use std::time::Duration;

/// Settings of a [`ZkCluster`](super::ZkCluster).
///
/// The defaults are the test timing of `docs/TESTING.md`: a 200 ms
/// tick, sessions between 400 ms and 60 s. Use
/// [`with_tick_time`](Self::with_tick_time) with 2 s for production-like
/// timing, where the server caps sessions at 40 s.
#[derive(Clone, Debug)]
pub struct ZkClusterConfig {
    /// Number of members: 1 runs a standalone server, 3 or more an ensemble.
    pub members: u32,
    /// ZooKeeper's `tickTime`. Default 200 ms.
    pub tick_time: Duration,
    /// `minSessionTimeout`. Default 400 ms.
    pub min_session_timeout: Duration,
    /// `maxSessionTimeout`. Default 60 s.
    pub max_session_timeout: Duration,
    /// `initLimit`, in ticks. Default 10.
    pub init_limit: u32,
    /// `syncLimit`, in ticks. Default 5.
    pub sync_limit: u32,
    /// Route the ensemble's peer links through the fault proxy, so that
    /// [`partition`](super::ZkCluster::partition) works. Default true;
    /// meaningless for a standalone server.
    pub peer_proxies: bool,
    /// How long a start or restart may take before it fails. Default 60 s
    /// (a JVM on a loaded 2-core machine can be slow).
    pub start_timeout: Duration,
    /// Maximum JVM heap per server, in MiB. Default 64.
    pub heap_mib: u32,
    /// The `java` executable. Default: `$HOLDFAST_JAVA`, else `java` on `PATH`.
    pub java: PathBuf,
    /// Classpath holding ZooKeeper and an SLF4J binding. Default:
    /// `$HOLDFAST_ZK_CLASSPATH`, else Debian's
    /// `/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar`.
    pub classpath: String,
    /// Log level of the servers' own logs (`server.log` in each member's
    /// directory). Default `warn`.
    pub log_level: String,
    /// `maxClientCnxns`: concurrent connections one client IP may hold per
    /// member. Default 0, unlimited: ZooKeeper's own default of 60 would
    /// refuse the 61st session from this host (every test client and
    /// benchmark session comes from 127.0.0.1).
    pub max_client_connections: u32,
}

impl ZkClusterConfig {
    /// A standalone server with test timing.
    pub fn standalone() -> Self {
        Self::ensemble(1)
    }

    /// An ensemble of `members` servers with test timing.
    pub fn ensemble(members: u32) -> Self {
        ZkClusterConfig {
            members,
            tick_time: Duration::from_millis(200),
            min_session_timeout: Duration::from_millis(400),
            max_session_timeout: Duration::from_secs(60),
            init_limit: 10,
            sync_limit: 5,
            peer_proxies: true,
            start_timeout: Duration::from_secs(60),
            heap_mib: 64,
            java: std::env::var_os("HOLDFAST_JAVA")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("java")),
            classpath: std::env::var("HOLDFAST_ZK_CLASSPATH").unwrap_or_else(|_| {
                "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar".to_owned()
            }),
            log_level: "warn".to_owned(),
            max_client_connections: 0,
        }
    }

    /// Sets `tickTime`.
    pub fn with_tick_time(mut self, tick: Duration) -> Self {
        self.tick_time = tick;
        self
    }

    /// Sets `minSessionTimeout` and `maxSessionTimeout`.
    pub fn with_session_timeouts(mut self, min: Duration, max: Duration) -> Self {
        self.min_session_timeout = min;
        self.max_session_timeout = max;
        self
    }

    /// Sets whether peer links go through the fault proxy.
    pub fn with_peer_proxies(mut self, on: bool) -> Self {
        self.peer_proxies = on;
        self
    }
}

/// The ports one member listens on and, per peer, where it reaches that peer.
#[derive(Clone, Debug)]
pub(crate) struct MemberPorts {
    pub(crate) client: u16,
    pub(crate) quorum: u16,
    pub(crate) election: u16,
}

/// Renders `zoo.cfg` for member `me`. `peers[j]` is where `me` reaches member
/// `j + 1`: its own real ports for itself, proxy ports for the others.
pub(crate) fn render_zoo_cfg(
    config: &ZkClusterConfig,
    data_dir: &std::path::Path,
    client_port: u16,
    peers: &[(u16, u16)],
) -> String {
    let ms = |d: Duration| d.as_millis();
    let mut cfg = format!(
        "tickTime={}\ninitLimit={}\nsyncLimit={}\ndataDir={}\n\
         clientPortAddress=127.0.0.1\nclientPort={client_port}\n\
         admin.enableServer=false\n4lw.commands.whitelist=*\n\
         minSessionTimeout={}\nmaxSessionTimeout={}\nmaxClientCnxns={}\n",
        ms(config.tick_time),
        config.init_limit,
        config.sync_limit,
        data_dir.display(),
        ms(config.min_session_timeout),
        ms(config.max_session_timeout),
        config.max_client_connections,
    );
    if peers.len() > 1 {
        for (index, (quorum, election)) in peers.iter().enumerate() {
            cfg.push_str(&format!(
                "server.{}=127.0.0.1:{quorum}:{election}\n",
                index + 1
            ));
        }
    }
    cfg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standalone_config_has_no_server_lines_and_test_timing() {
        let cfg = render_zoo_cfg(
            &ZkClusterConfig::standalone(),
            std::path::Path::new("/d"),
            2181,
            &[(1, 2)],
        );
        assert!(cfg.contains("tickTime=200\n"));
        assert!(cfg.contains("clientPort=2181\n"));
        assert!(cfg.contains("minSessionTimeout=400\n"));
        assert!(cfg.contains("maxSessionTimeout=60000\n"));
        assert!(cfg.contains("admin.enableServer=false\n"));
        assert!(cfg.contains("maxClientCnxns=0\n"));
        assert!(!cfg.contains("server.1"));
    }

    #[test]
    fn ensemble_config_lists_every_member_with_the_given_ports() {
        let cfg = render_zoo_cfg(
            &ZkClusterConfig::ensemble(3).with_tick_time(Duration::from_secs(2)),
            std::path::Path::new("/d"),
            2181,
            &[(10, 11), (20, 21), (30, 31)],
        );
        assert!(cfg.contains("tickTime=2000\n"));
        assert!(cfg.contains("server.1=127.0.0.1:10:11\n"));
        assert!(cfg.contains("server.2=127.0.0.1:20:21\n"));
        assert!(cfg.contains("server.3=127.0.0.1:30:31\n"));
    }
}

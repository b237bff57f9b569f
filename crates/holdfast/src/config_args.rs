//! Configuration for the command line: a Flink-style YAML file
//! (`--config`), `-D key=value` overrides, and flags for the common keys.
//! Later sources win: file, then `-D`, then flags.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use holdfast_config::{ClusterConfig, ConfigSource, Origin};
use holdfast_ha::config::{self, HaConfig};

/// Where the HA configuration comes from.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// A Flink-style YAML configuration file (flat `key: value` or nested).
    #[arg(long, env = "HOLDFAST_CONFIG")]
    config: Option<PathBuf>,
    /// Overrides one key, e.g. `-D high-availability.zookeeper.client.session-timeout=10s`.
    #[arg(short = 'D', value_name = "KEY=VALUE")]
    define: Vec<String>,
    /// `high-availability.zookeeper.quorum` (implies `high-availability.type: zookeeper`).
    #[arg(long)]
    quorum: Option<String>,
    /// `high-availability.zookeeper.path.root`.
    #[arg(long)]
    path_root: Option<String>,
    /// `high-availability.cluster-id`.
    #[arg(long)]
    cluster_id: Option<String>,
    /// `high-availability.zookeeper.client.session-timeout` (e.g. `10s`).
    #[arg(long)]
    session_timeout: Option<String>,
    /// `high-availability.zookeeper.client.error-policy`: standard, session or lease.
    #[arg(long)]
    policy: Option<String>,
    /// `high-availability.zookeeper.client.acl`: creator or open.
    #[arg(long)]
    acl: Option<String>,
    /// `high-availability.zookeeper.client.digest-credentials-file`.
    #[arg(long)]
    digest_file: Option<PathBuf>,
}

impl ConfigArgs {
    /// Every setting from all sources, each with where it came from.
    pub fn source(&self) -> Result<ConfigSource> {
        let mut source = ConfigSource::load(self.config.as_deref(), &self.define)?;
        let flags = [
            (config::QUORUM, "--quorum", self.quorum.clone()),
            (config::PATH_ROOT, "--path-root", self.path_root.clone()),
            (config::CLUSTER_ID, "--cluster-id", self.cluster_id.clone()),
            (
                config::SESSION_TIMEOUT,
                "--session-timeout",
                self.session_timeout.clone(),
            ),
            (config::ERROR_POLICY, "--policy", self.policy.clone()),
            (config::ACL, "--acl", self.acl.clone()),
            (
                config::DIGEST_FILE,
                "--digest-file",
                self.digest_file
                    .as_ref()
                    .map(|path| path.display().to_string()),
            ),
        ];
        for (key, flag, value) in flags {
            if let Some(value) = value {
                source.set(key, value, Origin::Program(flag.to_owned()));
            }
        }
        if self.quorum.is_some() {
            source.set(
                config::HA_TYPE,
                "zookeeper",
                Origin::Program("--quorum".to_owned()),
            );
        }
        Ok(source)
    }

    /// The HA configuration, read as part of the whole cluster
    /// configuration: bad values fail naming key, value and origin; keys
    /// nobody reads are warned about (with a suggestion when one is close).
    pub fn ha_config(&self) -> Result<HaConfig> {
        Ok(self.cluster_config()?.0.ha)
    }

    /// The whole cluster configuration (see [`ha_config`](Self::ha_config)
    /// for how errors and unknown keys are reported), with its sources.
    pub fn cluster_config(&self) -> Result<(ClusterConfig, ConfigSource)> {
        let source = self.source()?;
        let (cluster, warnings) = ClusterConfig::from_source(&source)?;
        for warning in warnings {
            tracing::warn!("{warning}");
        }
        Ok((cluster, source))
    }
}

//! Configuration for the command line: a Flink-style YAML file
//! (`--config`), `-D key=value` overrides, and flags for the common keys.
//! Later sources win: file, then `-D`, then flags.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use holdfast_config::ConfigSource;
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
    /// Every key/value pair, from all sources.
    pub fn pairs(&self) -> Result<BTreeMap<String, String>> {
        let mut pairs = ConfigSource::load(self.config.as_deref(), &self.define)?.pairs();
        let flags = [
            (config::QUORUM, self.quorum.clone()),
            (config::PATH_ROOT, self.path_root.clone()),
            (config::CLUSTER_ID, self.cluster_id.clone()),
            (config::SESSION_TIMEOUT, self.session_timeout.clone()),
            (config::ERROR_POLICY, self.policy.clone()),
            (config::ACL, self.acl.clone()),
            (
                config::DIGEST_FILE,
                self.digest_file
                    .as_ref()
                    .map(|path| path.display().to_string()),
            ),
        ];
        for (key, value) in flags {
            if let Some(value) = value {
                pairs.insert(key.to_owned(), value);
            }
        }
        if self.quorum.is_some() {
            pairs.insert(config::HA_TYPE.to_owned(), "zookeeper".to_owned());
        }
        Ok(pairs)
    }

    /// The HA configuration; warns about `high-availability.*` keys nobody reads.
    pub fn ha_config(&self) -> Result<HaConfig> {
        let pairs = self.pairs()?;
        for key in pairs.keys() {
            if key.starts_with("high-availability") && !config::ALL_KEYS.contains(&key.as_str()) {
                tracing::warn!(
                    key,
                    "unknown configuration key; it is ignored (check its spelling)"
                );
            }
        }
        Ok(HaConfig::from_pairs(
            pairs
                .iter()
                .map(|(key, value)| (key.as_str(), value.as_str())),
        )?)
    }
}

//! [`HaConfig`]: plain values with defaults, read from key/value pairs and
//! validated rule by rule.

use std::path::PathBuf;
use std::time::Duration;

use super::keys::*;
use super::lease::{LeaseConfig, LeaseConfigError};
use super::policy::{ErrorPolicy, UnknownPolicy};
use crate::duration::parse_duration;

/// Which backend holds the HA state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BackendKind {
    /// In-process (one machine).
    #[default]
    Embedded,
    /// A ZooKeeper ensemble.
    ZooKeeper,
}

/// Who may change holdfast's ZooKeeper nodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AclMode {
    /// Only the credentials that created a node (ZooKeeper's `CREATOR_ALL_ACL`
    /// with the digest scheme); others may read.
    #[default]
    Creator,
    /// Anyone may do anything (`OPEN_ACL_UNSAFE`): only for trusted networks.
    Open,
}

/// A broken configuration rule, naming the key and the bad value.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// A value that cannot be parsed.
    #[error("{key}: {value:?} is not valid: {reason}")]
    InvalidValue {
        /// The key.
        key: &'static str,
        /// The value as given.
        value: String,
        /// What is wrong.
        reason: String,
    },
    /// A key that must be set is missing.
    #[error("{key} must be set: {why}")]
    Missing {
        /// The key.
        key: &'static str,
        /// Why it is needed.
        why: &'static str,
    },
    /// The lease settings break a rule.
    #[error("high-availability.lease.*: {0}")]
    Lease(#[from] LeaseConfigError),
    /// Durations that contradict each other.
    #[error("{key}: {reason}")]
    Inconsistent {
        /// The key to change.
        key: &'static str,
        /// What is wrong.
        reason: String,
    },
}

/// ZooKeeper's sample configuration: `tickTime` 2 s, `syncLimit` 5, so a
/// partitioned follower may answer for `(5 + 1) · 2 s` after losing its
/// leader. Zero where there are no followers.
fn default_staleness(config: &HaConfig) -> Duration {
    let servers = config.quorum.as_deref().map_or(0, |quorum| {
        quorum.split(',').filter(|s| !s.trim().is_empty()).count()
    });
    if config.backend == BackendKind::ZooKeeper && servers > 1 {
        Duration::from_secs(12)
    } else {
        Duration::ZERO
    }
}

/// The HA layer's configuration. See the [module docs](super) for keys and
/// defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct HaConfig {
    /// Which backend.
    pub backend: BackendKind,
    /// ZooKeeper connect string (required for [`BackendKind::ZooKeeper`]).
    pub quorum: Option<String>,
    /// Root path, e.g. `/holdfast`.
    pub path_root: String,
    /// Cluster id, e.g. `default`.
    pub cluster_id: String,
    /// Requested session timeout.
    pub session_timeout: Duration,
    /// One connection attempt's timeout.
    pub connection_timeout: Duration,
    /// Wait between session attempts.
    pub retry_wait: Duration,
    /// The error policy.
    pub policy: ErrorPolicy,
    /// Node ACLs.
    pub acl: AclMode,
    /// File with digest credentials.
    pub digest_credentials_file: Option<PathBuf>,
    /// Lease parameters.
    pub lease: LeaseConfig,
}

impl Default for HaConfig {
    fn default() -> Self {
        HaConfig {
            backend: BackendKind::Embedded,
            quorum: None,
            path_root: "/holdfast".into(),
            cluster_id: "default".into(),
            session_timeout: Duration::from_secs(60),
            connection_timeout: Duration::from_secs(15),
            retry_wait: Duration::from_secs(5),
            policy: ErrorPolicy::Lease,
            acl: AclMode::Creator,
            digest_credentials_file: None,
            lease: LeaseConfig::default(),
        }
    }
}

impl HaConfig {
    /// Reads the keys of [`ALL_KEYS`] from `pairs` (others are ignored: the
    /// caller reports keys nobody knows), then validates.
    pub fn from_pairs<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<HaConfig, ConfigError> {
        let mut config = HaConfig::default();
        let mut tolerate = None;
        let mut staleness = None;
        let mut explicit_policy = None;
        for (key, value) in pairs {
            let invalid = |key: &'static str, reason: String| ConfigError::InvalidValue {
                key,
                value: value.to_owned(),
                reason,
            };
            let duration = |key| parse_duration(value).map_err(|reason| invalid(key, reason));
            let fraction = |key| {
                value
                    .trim()
                    .parse::<f64>()
                    .map_err(|error| invalid(key, error.to_string()))
            };
            match key {
                HA_TYPE | HA_TYPE_ALIAS => {
                    config.backend = match value.trim().to_ascii_lowercase().as_str() {
                        "embedded" | "none" | "" => BackendKind::Embedded,
                        "zookeeper" => BackendKind::ZooKeeper,
                        _ => return Err(invalid(HA_TYPE, "expected embedded or zookeeper".into())),
                    }
                }
                QUORUM => {
                    config.quorum =
                        Some(value.trim().to_owned()).filter(|quorum| !quorum.is_empty())
                }
                PATH_ROOT => config.path_root = value.trim().to_owned(),
                CLUSTER_ID => config.cluster_id = value.trim().trim_matches('/').to_owned(),
                SESSION_TIMEOUT => config.session_timeout = duration(SESSION_TIMEOUT)?,
                CONNECTION_TIMEOUT => config.connection_timeout = duration(CONNECTION_TIMEOUT)?,
                RETRY_WAIT => config.retry_wait = duration(RETRY_WAIT)?,
                TOLERATE_SUSPENDED => {
                    tolerate = Some(match value.trim().to_ascii_lowercase().as_str() {
                        "true" => true,
                        "false" => false,
                        _ => {
                            return Err(invalid(
                                TOLERATE_SUSPENDED,
                                "expected true or false".into(),
                            ));
                        }
                    })
                }
                ERROR_POLICY => {
                    explicit_policy =
                        Some(value.parse().map_err(|error: UnknownPolicy| {
                            invalid(ERROR_POLICY, error.to_string())
                        })?)
                }
                ACL => {
                    config.acl = match value.trim().to_ascii_lowercase().as_str() {
                        "creator" => AclMode::Creator,
                        "open" => AclMode::Open,
                        _ => return Err(invalid(ACL, "expected creator or open".into())),
                    }
                }
                DIGEST_FILE => config.digest_credentials_file = Some(PathBuf::from(value.trim())),
                LEASE_CLOCK_DRIFT => config.lease.clock_drift = fraction(LEASE_CLOCK_DRIFT)?,
                LEASE_SAFETY_MARGIN => config.lease.safety_margin = fraction(LEASE_SAFETY_MARGIN)?,
                LEASE_SERVER_STALENESS => staleness = Some(duration(LEASE_SERVER_STALENESS)?),
                LEASE_PROBE_FRACTION => {
                    config.lease.probe_fraction = fraction(LEASE_PROBE_FRACTION)?
                }
                _ => {}
            }
        }
        config.lease.server_staleness = staleness.unwrap_or_else(|| default_staleness(&config));
        config.policy = explicit_policy
            .or(tolerate.map(ErrorPolicy::from_tolerate_suspended))
            .unwrap_or(ErrorPolicy::Lease);
        config.validate()?;
        Ok(config)
    }

    /// Checks every rule; returns the first broken one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.backend == BackendKind::ZooKeeper && self.quorum.is_none() {
            return Err(ConfigError::Missing {
                key: QUORUM,
                why: "high-availability.type is zookeeper",
            });
        }
        if !self.path_root.starts_with('/')
            || self.path_root.ends_with('/') && self.path_root.len() > 1
        {
            return Err(ConfigError::InvalidValue {
                key: PATH_ROOT,
                value: self.path_root.clone(),
                reason: "must start with '/' and not end with one".into(),
            });
        }
        if self.cluster_id.is_empty() || self.cluster_id.contains("//") {
            return Err(ConfigError::InvalidValue {
                key: CLUSTER_ID,
                value: self.cluster_id.clone(),
                reason: "must be a non-empty path segment".into(),
            });
        }
        if self.session_timeout < Duration::from_millis(100) {
            return Err(ConfigError::Inconsistent {
                key: SESSION_TIMEOUT,
                reason: format!("{:?} is too short to keep a session", self.session_timeout),
            });
        }
        if self.connection_timeout.is_zero() {
            return Err(ConfigError::Inconsistent {
                key: CONNECTION_TIMEOUT,
                reason: "must be more than 0".into(),
            });
        }
        self.lease.validate()?;
        if self.policy.enforces_lease() {
            self.lease.validate_for(self.session_timeout)?;
        }
        Ok(())
    }

    /// Where this cluster's nodes live: `<path.root>/<cluster-id>`.
    pub fn base_path(&self) -> String {
        let root = self.path_root.trim_end_matches('/');
        format!("{root}/{}", self.cluster_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flink_defaults_and_keys() {
        let config = HaConfig::from_pairs([]).unwrap();
        assert_eq!(config, HaConfig::default());
        assert_eq!(config.base_path(), "/holdfast/default");
        let config = HaConfig::from_pairs([
            ("high-availability", "zookeeper"),
            (QUORUM, "zk1:2181,zk2:2181"),
            (PATH_ROOT, "/flink"),
            (CLUSTER_ID, "/prod"),
            (SESSION_TIMEOUT, "40 s"),
            (TOLERATE_SUSPENDED, "false"),
            ("unrelated.key", "x"),
        ])
        .unwrap();
        assert_eq!(config.backend, BackendKind::ZooKeeper);
        assert_eq!(config.base_path(), "/flink/prod");
        assert_eq!(config.session_timeout, Duration::from_secs(40));
        assert_eq!(config.policy, ErrorPolicy::Standard);
    }

    #[test]
    fn an_ensemble_gets_a_server_staleness_and_a_lease_it_leaves_room_for() {
        let ensemble = [(HA_TYPE, "zookeeper"), (QUORUM, "a:2181,b:2181,c:2181")];
        let config = HaConfig::from_pairs(ensemble).unwrap();
        assert_eq!(config.lease.server_staleness, Duration::from_secs(12));
        let single = HaConfig::from_pairs([(HA_TYPE, "zookeeper"), (QUORUM, "a:2181")]).unwrap();
        assert_eq!(single.lease.server_staleness, Duration::ZERO);
        let tuned = HaConfig::from_pairs(
            ensemble
                .into_iter()
                .chain([(LEASE_SERVER_STALENESS, "1200ms")]),
        )
        .unwrap();
        assert_eq!(tuned.lease.server_staleness, Duration::from_millis(1200));
        let error = HaConfig::from_pairs(ensemble.into_iter().chain([(SESSION_TIMEOUT, "10 s")]))
            .unwrap_err();
        assert!(error.to_string().contains("server staleness"), "{error}");
    }

    #[test]
    fn the_explicit_policy_overrides_flinks_flag() {
        let config =
            HaConfig::from_pairs([(TOLERATE_SUSPENDED, "false"), (ERROR_POLICY, "session")])
                .unwrap();
        assert_eq!(config.policy, ErrorPolicy::Session);
        let config = HaConfig::from_pairs([(TOLERATE_SUSPENDED, "true")]).unwrap();
        assert_eq!(config.policy, ErrorPolicy::Lease);
    }

    #[test]
    fn every_error_names_the_key_and_the_value() {
        let error = |pairs: &[(&str, &str)]| {
            HaConfig::from_pairs(pairs.iter().copied())
                .unwrap_err()
                .to_string()
        };
        assert!(error(&[(SESSION_TIMEOUT, "soon")]).contains(SESSION_TIMEOUT));
        assert!(error(&[(SESSION_TIMEOUT, "soon")]).contains("\"soon\""));
        assert!(error(&[(TOLERATE_SUSPENDED, "maybe")]).contains("expected true or false"));
        assert!(error(&[(ERROR_POLICY, "yolo")]).contains("yolo"));
        assert!(error(&[(HA_TYPE, "zookeeper")]).contains(QUORUM));
        assert!(error(&[(PATH_ROOT, "holdfast")]).contains(PATH_ROOT));
        assert!(error(&[(LEASE_SAFETY_MARGIN, "0.9")]).contains("safety margin"));
        assert!(error(&[(ACL, "world")]).contains("creator or open"));
    }
}

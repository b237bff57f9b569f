//! [`ZkOptions`]: what a ZooKeeper backend needs, taken from an
//! [`HaConfig`] or given directly.

use std::time::Duration;

use holdfast_ha::config::{AclMode, HaConfig};
use zookeeper_client::{Acl, Acls, Permission};

use crate::credentials::DigestCredentials;
use crate::error::ZkConfigError;

/// Settings of a [`ZkBackend`](crate::ZkBackend).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZkOptions {
    /// The ZooKeeper connect string, `host:port,host:port,…`, optionally
    /// followed by a chroot path.
    pub connect_string: String,
    /// The requested session timeout `T` (the server may lower it; sessions
    /// report the negotiated one).
    pub session_timeout: Duration,
    /// How long establishing a session may take. `zookeeper-client` also
    /// uses it as the idle time after which a silent connection counts as
    /// lost, when it is at most 3/5 of the session timeout (otherwise it uses
    /// 2/5 of the session timeout).
    pub connection_timeout: Duration,
    /// Who may change the nodes holdfast creates.
    pub acl: AclMode,
    /// Digest credentials every session authenticates with. Required by
    /// [`AclMode::Creator`].
    pub digest: Option<DigestCredentials>,
}

impl ZkOptions {
    /// Options for `connect_string` with Flink's default timeouts (60 s
    /// session, 15 s connection) and open ACLs, without credentials.
    pub fn open(connect_string: impl Into<String>) -> Self {
        let defaults = HaConfig::default();
        ZkOptions {
            connect_string: connect_string.into(),
            session_timeout: defaults.session_timeout,
            connection_timeout: defaults.connection_timeout,
            acl: AclMode::Open,
            digest: None,
        }
    }

    /// Sets the session timeout.
    pub fn with_session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// Sets the connection timeout.
    pub fn with_connection_timeout(mut self, timeout: Duration) -> Self {
        self.connection_timeout = timeout;
        self
    }

    /// Creator ACLs, authenticating as `credentials`.
    pub fn with_creator_acl(mut self, credentials: DigestCredentials) -> Self {
        self.acl = AclMode::Creator;
        self.digest = Some(credentials);
        self
    }

    /// Reads the ZooKeeper settings of `config` (quorum, timeouts, ACL mode),
    /// and the digest credentials file if one is configured.
    pub fn from_config(config: &HaConfig) -> Result<Self, ZkConfigError> {
        let connect_string = config.quorum.clone().ok_or(ZkConfigError::MissingQuorum)?;
        let digest = config
            .digest_credentials_file
            .as_deref()
            .map(DigestCredentials::from_file)
            .transpose()?;
        let options = ZkOptions {
            connect_string,
            session_timeout: config.session_timeout,
            connection_timeout: config.connection_timeout,
            acl: config.acl,
            digest,
        };
        options.validate()?;
        Ok(options)
    }

    /// Checks every rule; returns the first broken one.
    pub fn validate(&self) -> Result<(), ZkConfigError> {
        if self.connect_string.trim().is_empty() {
            return Err(ZkConfigError::MissingQuorum);
        }
        if self.session_timeout.is_zero() {
            return Err(ZkConfigError::zero_session_timeout());
        }
        if self.connection_timeout.is_zero() {
            return Err(ZkConfigError::zero_connection_timeout());
        }
        if self.acl == AclMode::Creator && self.digest.is_none() {
            return Err(ZkConfigError::CreatorWithoutCredentials);
        }
        Ok(())
    }
}

/// Full rights for the creator's identity, read for everyone.
static CREATOR_ALL_ANYONE_READ: [Acl; 2] = [
    Acl::new_const(Permission::ALL, "auth", ""),
    Acl::new_const(Permission::READ, "world", "anyone"),
];

/// The ACL of every node holdfast creates under `mode`.
///
/// [`AclMode::Creator`]: ZooKeeper's `CREATOR_ALL_ACL` (all rights for the
/// identities of the creating session, i.e. its digest credentials) plus
/// read for anyone, as [`AclMode`] documents ("others may read").
/// [`AclMode::Open`]: `OPEN_ACL_UNSAFE`.
pub(crate) fn acls(mode: AclMode) -> Acls<'static> {
    match mode {
        AclMode::Creator => Acls::new(&CREATOR_ALL_ANYONE_READ),
        AclMode::Open => Acls::anyone_all(),
    }
}

#[cfg(test)]
mod tests {
    use holdfast_ha::config::{ACL, DIGEST_FILE, QUORUM};

    use super::*;

    #[test]
    fn creator_acls_need_credentials_and_the_error_names_both_keys() {
        let options = ZkOptions {
            acl: AclMode::Creator,
            ..ZkOptions::open("127.0.0.1:2181")
        };
        let error = options.validate().unwrap_err().to_string();
        assert!(
            error.contains(DIGEST_FILE) && error.contains(ACL),
            "{error}"
        );
        let credentials = DigestCredentials::parse("flink:secret").unwrap();
        assert!(
            ZkOptions::open("127.0.0.1:2181")
                .with_creator_acl(credentials)
                .validate()
                .is_ok()
        );
    }

    #[test]
    fn from_config_reads_the_keys_and_the_credentials_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("digest");
        std::fs::write(&file, "flink:secret\n").unwrap();
        let file_name = file.display().to_string();
        let config = HaConfig::from_pairs([
            ("high-availability.type", "zookeeper"),
            (QUORUM, "zk1:2181,zk2:2181/holdfast"),
            ("high-availability.zookeeper.client.session-timeout", "40 s"),
            (DIGEST_FILE, file_name.as_str()),
        ])
        .unwrap();
        let options = ZkOptions::from_config(&config).unwrap();
        assert_eq!(options.connect_string, "zk1:2181,zk2:2181/holdfast");
        assert_eq!(options.session_timeout, Duration::from_secs(40));
        assert_eq!(options.acl, AclMode::Creator);
        assert_eq!(
            options.digest.as_ref().map(DigestCredentials::user),
            Some("flink")
        );
        assert!(!format!("{options:?}").contains("secret"));

        let no_quorum = ZkOptions::from_config(&HaConfig::default())
            .unwrap_err()
            .to_string();
        assert!(no_quorum.contains(QUORUM), "{no_quorum}");
        let missing = HaConfig {
            digest_credentials_file: Some(dir.path().join("nope")),
            ..config
        };
        let error = ZkOptions::from_config(&missing).unwrap_err().to_string();
        assert!(
            error.contains("nope") && error.contains(DIGEST_FILE),
            "{error}"
        );
    }

    #[test]
    fn creator_mode_lets_everyone_read_and_only_the_creator_change() {
        let creator = acls(AclMode::Creator);
        assert_eq!(creator.len(), 2);
        assert!(
            creator
                .iter()
                .any(|acl| acl.scheme() == "auth" && acl.permission() == Permission::ALL)
        );
        assert!(
            creator
                .iter()
                .any(|acl| acl.scheme() == "world" && acl.permission() == Permission::READ)
        );
        assert_eq!(
            &acls(AclMode::Open) as &[Acl],
            &Acls::anyone_all() as &[Acl]
        );
    }
}

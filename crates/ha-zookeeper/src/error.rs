//! [`ZkConfigError`]: why a ZooKeeper backend cannot be built from its
//! settings. Every variant names the configuration key to fix.

use std::path::PathBuf;

use holdfast_ha::config::{ACL, CONNECTION_TIMEOUT, DIGEST_FILE, QUORUM, SESSION_TIMEOUT};

use crate::credentials::CredentialsError;

/// A ZooKeeper backend setting that cannot work.
#[derive(Debug, thiserror::Error)]
pub enum ZkConfigError {
    /// No connect string.
    #[error("{QUORUM} must be set to the ZooKeeper connect string (host:port,host:port,...)")]
    MissingQuorum,
    /// The digest credentials file cannot be read.
    #[error("{DIGEST_FILE}: cannot read {}: {source}", file.display())]
    CredentialsUnreadable {
        /// The file.
        file: PathBuf,
        /// Why it cannot be read.
        #[source]
        source: std::io::Error,
    },
    /// The digest credentials file does not hold `user:password`.
    #[error("{DIGEST_FILE}: {} does not hold digest credentials: {reason}", file.display())]
    CredentialsMalformed {
        /// The file.
        file: PathBuf,
        /// What is wrong (never quotes the file's content).
        #[source]
        reason: CredentialsError,
    },
    /// `creator` ACLs need an identity to be the creator.
    #[error(
        "{ACL} is creator (the default), which needs digest credentials to identify the creator: \
         configure {DIGEST_FILE} (a file holding user:password), or set {ACL}: open \
         on a trusted network"
    )]
    CreatorWithoutCredentials,
    /// A timeout of zero.
    #[error("{key} must be more than 0")]
    ZeroTimeout {
        /// [`SESSION_TIMEOUT`] or [`CONNECTION_TIMEOUT`].
        key: &'static str,
    },
}

impl ZkConfigError {
    /// The zero-timeout error for the session timeout.
    pub(crate) fn zero_session_timeout() -> Self {
        ZkConfigError::ZeroTimeout {
            key: SESSION_TIMEOUT,
        }
    }

    /// The zero-timeout error for the connection timeout.
    pub(crate) fn zero_connection_timeout() -> Self {
        ZkConfigError::ZeroTimeout {
            key: CONNECTION_TIMEOUT,
        }
    }
}

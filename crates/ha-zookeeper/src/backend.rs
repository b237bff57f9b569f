//! [`ZkBackend`]: makes ZooKeeper sessions.

use holdfast_ha::backend::{Backend, CoordError, Session as _};
use holdfast_ha::config::HaConfig;
use tokio::sync::mpsc;
use zookeeper_client::Client;

use crate::error::ZkConfigError;
use crate::events;
use crate::options::{ZkOptions, acls};
use crate::session::ZkSession;

/// The ZooKeeper backend: every [`connect`](Backend::connect) builds a new
/// `zookeeper-client` [`Client`] (after expiry a client is finished, so
/// nothing is reused) and a new session.
#[derive(Clone, Debug)]
pub struct ZkBackend {
    options: ZkOptions,
}

impl ZkBackend {
    /// A backend with `options`, once they pass
    /// [`ZkOptions::validate`]: in particular, creator ACLs need digest
    /// credentials.
    pub fn new(options: ZkOptions) -> Result<ZkBackend, ZkConfigError> {
        options.validate()?;
        Ok(ZkBackend { options })
    }

    /// A backend configured by `config`'s ZooKeeper keys
    /// ([`ZkOptions::from_config`]).
    pub fn from_config(config: &HaConfig) -> Result<ZkBackend, ZkConfigError> {
        ZkBackend::new(ZkOptions::from_config(config)?)
    }

    /// The options.
    pub fn options(&self) -> &ZkOptions {
        &self.options
    }

    async fn open(&self) -> Result<ZkSession, zookeeper_client::Error> {
        let options = &self.options;
        let mut connector = Client::connector()
            .with_session_timeout(options.session_timeout)
            .with_connection_timeout(options.connection_timeout);
        if let Some(digest) = &options.digest {
            connector = connector.with_auth("digest", &digest.auth_bytes());
        }
        let client = connector.connect(&options.connect_string).await?;
        let watcher = events::subscribe(&client).await?;
        let (sender, receiver) = mpsc::unbounded_channel();
        events::spawn_forwarder(watcher, sender);
        Ok(ZkSession::new(client, receiver, acls(options.acl)))
    }
}

impl Backend for ZkBackend {
    type Session = ZkSession;

    async fn connect(&self) -> Result<ZkSession, CoordError> {
        let (quorum, limit) = (
            &self.options.connect_string,
            self.options.connection_timeout,
        );
        match tokio::time::timeout(limit, self.open()).await {
            Ok(Ok(session)) => {
                tracing::debug!(%quorum, session = %session.id(), "ZooKeeper session established");
                Ok(session)
            }
            Ok(Err(error)) => Err(CoordError::ConnectFailed(format!(
                "ZooKeeper at {quorum}: {error}"
            ))),
            Err(_) => Err(CoordError::ConnectFailed(format!(
                "no ZooKeeper session with {quorum} within {limit:?}"
            ))),
        }
    }

    fn describe(&self) -> String {
        self.options.connect_string.clone()
    }
}

//! [`LeaderStore`]: a key/value store whose writes only the leader can make.

use super::{StoreError, check_key};
use crate::backend::{Backend, CoordError, CreateMode, Op};
use crate::connection::{Connection, SessionHandle};
use crate::types::LeaderToken;

/// A value with the version it was read at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Versioned {
    /// The bytes.
    pub value: Vec<u8>,
    /// The version to pass to a compare-and-set.
    pub version: i32,
}

/// A key/value store under `root`; keys are node names below it.
///
/// ```no_run
/// # async fn demo(connection: holdfast_ha::Connection<holdfast_ha::embedded::EmbeddedBackend>,
/// #               election: holdfast_ha::election::LeaderElection<holdfast_ha::embedded::EmbeddedBackend>)
/// # -> Result<(), holdfast_ha::stores::StoreError> {
/// use holdfast_ha::stores::LeaderStore;
/// let jobs = LeaderStore::new(connection, "/holdfast/default/jobgraphs");
/// if let Some(token) = election.token() {
///     jobs.put(&token, "job-1", b"graph bytes").await?; // fails once we are deposed
/// }
/// let graph = jobs.get("job-1").await?;
/// # Ok(()) }
/// ```
pub struct LeaderStore<B: Backend> {
    connection: Connection<B>,
    root: String,
}

impl<B: Backend> LeaderStore<B> {
    /// A store under `root` (created as needed).
    pub fn new(connection: Connection<B>, root: &str) -> LeaderStore<B> {
        LeaderStore {
            connection,
            root: root.trim_end_matches('/').to_owned(),
        }
    }

    fn path(&self, key: &str) -> Result<String, StoreError> {
        check_key(key)?;
        Ok(format!("{}/{key}", self.root))
    }

    fn session(&self) -> Result<SessionHandle<B>, StoreError> {
        self.connection
            .session()
            .ok_or(StoreError::Backend(CoordError::ConnectionLoss))
    }

    /// The token's session, if it is still the connection's
    /// ([`StoreError::NotLeader`] otherwise: a lost session never returns).
    pub(super) fn leader_session(
        &self,
        token: &LeaderToken,
    ) -> Result<SessionHandle<B>, StoreError> {
        self.connection
            .session()
            .filter(|session| session.id() == token.session)
            .ok_or_else(|| StoreError::NotLeader {
                latch_node: token.latch_node.clone(),
            })
    }

    /// Reads `key`.
    pub async fn get(&self, key: &str) -> Result<Option<Versioned>, StoreError> {
        let (found, _) = self.session()?.get(&self.path(key)?, false).await?;
        Ok(found.map(|(value, stat)| Versioned {
            value,
            version: stat.version,
        }))
    }

    /// The keys, sorted.
    pub async fn keys(&self) -> Result<Vec<String>, StoreError> {
        match self.session()?.children(&self.root).await {
            Ok(mut keys) => {
                keys.sort();
                Ok(keys)
            }
            Err(CoordError::NoNode(_)) => Ok(Vec::new()),
            Err(error) => Err(error.into()),
        }
    }

    /// Writes `key` if `token`'s grant still holds.
    pub async fn put(
        &self,
        token: &LeaderToken,
        key: &str,
        value: &[u8],
    ) -> Result<(), StoreError> {
        self.write(token, key, value, None).await
    }

    /// Creates `key` only if it does not exist yet ([`StoreError::Conflict`]
    /// otherwise), and only if `token`'s grant still holds.
    pub async fn create(
        &self,
        token: &LeaderToken,
        key: &str,
        value: &[u8],
    ) -> Result<(), StoreError> {
        let path = self.path(key)?;
        let session = self.leader_session(token)?;
        ensure_root(&session, &self.root).await?;
        let create = Op::Create {
            path,
            data: value.to_vec(),
            mode: CreateMode::Persistent,
        };
        match guarded(&session, token, create, key).await {
            Err(StoreError::Backend(CoordError::NodeExists(_))) => Err(StoreError::Conflict {
                key: key.to_owned(),
            }),
            other => other,
        }
    }

    /// Writes `key` only if it is still at `version` (compare-and-set), and
    /// only if `token`'s grant still holds.
    pub async fn replace(
        &self,
        token: &LeaderToken,
        key: &str,
        value: &[u8],
        version: i32,
    ) -> Result<(), StoreError> {
        self.write(token, key, value, Some(version)).await
    }

    async fn write(
        &self,
        token: &LeaderToken,
        key: &str,
        value: &[u8],
        version: Option<i32>,
    ) -> Result<(), StoreError> {
        let path = self.path(key)?;
        let session = self.leader_session(token)?;
        loop {
            let (existing, _) = session.get(&path, false).await?;
            let set = match (&existing, version) {
                (Some(_), _) => Op::SetData {
                    path: path.clone(),
                    data: value.to_vec(),
                    version,
                },
                (None, None) => {
                    ensure_root(&session, &self.root).await?;
                    Op::Create {
                        path: path.clone(),
                        data: value.to_vec(),
                        mode: CreateMode::Persistent,
                    }
                }
                (None, Some(_)) => {
                    return Err(StoreError::Conflict {
                        key: key.to_owned(),
                    });
                }
            };
            match guarded(&session, token, set, key).await {
                // Created or deleted meanwhile by a previous leader's late write: read again.
                Err(StoreError::Backend(CoordError::NodeExists(_) | CoordError::NoNode(_)))
                    if version.is_none() => {}
                other => return other,
            }
        }
    }

    /// Deletes `key` if `token`'s grant still holds (no error if absent).
    pub async fn delete(&self, token: &LeaderToken, key: &str) -> Result<(), StoreError> {
        let path = self.path(key)?;
        let session = self.leader_session(token)?;
        match guarded(
            &session,
            token,
            Op::Delete {
                path,
                version: None,
            },
            key,
        )
        .await
        {
            Err(StoreError::Backend(CoordError::NoNode(_))) => Ok(()),
            other => other,
        }
    }
}

/// Creates `root` and its parents as persistent nodes (stores must outlive
/// every leader, so no containers).
async fn ensure_root<B: Backend>(session: &SessionHandle<B>, root: &str) -> Result<(), StoreError> {
    let mut path = String::new();
    for segment in root.split('/').filter(|segment| !segment.is_empty()) {
        path.push('/');
        path.push_str(segment);
        match session
            .create(&path, b"", CreateMode::Persistent, false)
            .await
        {
            Ok(_) | Err(CoordError::NodeExists(_)) => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(())
}

/// Runs `op` in a multi-op with checks that the token's latch node exists
/// and that no grant came after the token's (the grant node's version).
pub(super) async fn guarded<B: Backend>(
    session: &SessionHandle<B>,
    token: &LeaderToken,
    op: Op,
    key: &str,
) -> Result<(), StoreError> {
    let latch = Op::Check {
        path: token.latch_node.clone(),
        version: None,
    };
    let grant = Op::Check {
        path: token.grant_node.clone(),
        version: Some(token.grant_version),
    };
    match session.multi(vec![latch, grant, op]).await {
        Ok(_) => Ok(()),
        Err(CoordError::MultiFailed { index: 0 | 1, .. }) => Err(StoreError::NotLeader {
            latch_node: token.latch_node.clone(),
        }),
        Err(CoordError::MultiFailed { source, .. }) => match *source {
            CoordError::BadVersion(_) => Err(StoreError::Conflict {
                key: key.to_owned(),
            }),
            other => Err(other.into()),
        },
        Err(error) => Err(error.into()),
    }
}

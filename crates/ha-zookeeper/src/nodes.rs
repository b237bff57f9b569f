//! Single-node primitives: create (with container parents) and get (with a
//! watch that also fires on creation).

use holdfast_ha::backend::{CoordError, CreateMode, Stat, Watch};
use zookeeper_client::{Client, CreateOptions, Error};

use crate::session::{ZkSession, stat};
use crate::watch::spawn_watch;

/// How often a create is retried after creating its parents: a container
/// parent can be reaped by the server between our two requests.
const PARENT_ATTEMPTS: usize = 3;

/// `zookeeper-client`'s mode for holdfast's `mode`.
pub(crate) fn zk_mode(mode: CreateMode) -> zookeeper_client::CreateMode {
    match mode {
        CreateMode::Persistent => zookeeper_client::CreateMode::Persistent,
        CreateMode::Ephemeral => zookeeper_client::CreateMode::Ephemeral,
        CreateMode::EphemeralSequential => zookeeper_client::CreateMode::EphemeralSequential,
        CreateMode::Container => zookeeper_client::CreateMode::Container,
    }
}

pub(crate) async fn create(
    session: &ZkSession,
    path: &str,
    data: &[u8],
    mode: CreateMode,
    make_parents: bool,
) -> Result<(String, Stat), CoordError> {
    let client = session.client()?;
    let options = zk_mode(mode).with_acls(session.acls);
    let mut attempts = 0;
    let (returned, sequence) = loop {
        match client.create(path, data, &options).await {
            Err(Error::NoNode) if make_parents && attempts < PARENT_ATTEMPTS => {
                attempts += 1;
                create_parents(session, &client, path).await?;
            }
            result => break result.map_err(|error| ZkSession::error(&client, error, path))?,
        }
    };
    // The server names a sequential node prefix + sequence, zero-padded to
    // ten digits; `CreateSequence` prints exactly that.
    let created = if mode == CreateMode::EphemeralSequential {
        format!("{path}{sequence}")
    } else {
        path.to_owned()
    };
    let stat = created_stat(&client, &created, mode, &returned).await?;
    Ok((created, stat))
}

/// Creates every ancestor of `path` that is missing, top down, as a
/// container node with the session's ACL.
async fn create_parents(
    session: &ZkSession,
    client: &Client,
    path: &str,
) -> Result<(), CoordError> {
    let options: CreateOptions<'_> =
        zookeeper_client::CreateMode::Container.with_acls(session.acls);
    for (end, _) in path.match_indices('/').skip(1) {
        let parent = &path[..end];
        match client.create(parent, &[], &options).await {
            Ok(_) | Err(Error::NodeExists) => {}
            Err(error) => return Err(ZkSession::error(client, error, parent)),
        }
    }
    Ok(())
}

/// The stat of a node this session has just created at `path` in `mode`:
/// `created`, the one the server returned, if it is valid.
///
/// Servers before 3.5 answer a create without a stat, and before 3.7.2 /
/// 3.8.2 (ZOOKEEPER-4026: Debian 12's 3.8.0 included) every create inside a
/// multi-op; then the node's stat is read now. That read may see another
/// node that replaced ours in between (a new leader's `connection_info`),
/// whose `czxid` must never pass for ours: an ephemeral node is accepted
/// only if our session owns it. A persistent node cannot be told apart
/// this way. A node that is gone or not ours gets a zeroed stat (`czxid` 0:
/// unknown).
pub(crate) async fn created_stat(
    client: &Client,
    path: &str,
    mode: CreateMode,
    created: &zookeeper_client::Stat,
) -> Result<Stat, CoordError> {
    if !created.is_invalid() && created.czxid > 0 {
        return Ok(stat(created));
    }
    let ours = client.session_id().0 as u64;
    match client.check_stat(path).await {
        Ok(Some(read)) if !mode.is_ephemeral() || read.ephemeral_owner as u64 == ours => {
            Ok(stat(&read))
        }
        Ok(_) => {
            tracing::warn!(%path, "the created node was replaced or deleted before its stat could be read");
            Ok(Stat::default())
        }
        Err(error) => Err(ZkSession::error(client, error, path)),
    }
}

pub(crate) async fn get(
    session: &ZkSession,
    path: &str,
    watch: bool,
) -> Result<(Option<(Vec<u8>, Stat)>, Option<Watch>), CoordError> {
    let client = session.client()?;
    let fail = |error| ZkSession::error(&client, error, path);
    if !watch {
        return match client.get_data(path).await {
            Ok((data, found)) => Ok((Some((data, stat(&found))), None)),
            Err(Error::NoNode) => Ok((None, None)),
            Err(error) => Err(fail(error)),
        };
    }
    match client.get_and_watch_data(path).await {
        Ok((data, found, watcher)) => {
            return Ok((Some((data, stat(&found))), Some(spawn_watch(watcher))));
        }
        Err(Error::NoNode) => {}
        Err(error) => return Err(fail(error)),
    }
    // Absent: an existence watch fires when it is created.
    let (exists, watcher) = client.check_and_watch_stat(path).await.map_err(fail)?;
    let watch = spawn_watch(watcher);
    if exists.is_none() {
        return Ok((None, Some(watch)));
    }
    // Created between our two requests. The watch, set before this read,
    // covers every later change (and fires at once if one came in between).
    match client.get_data(path).await {
        Ok((data, found)) => Ok((Some((data, stat(&found))), Some(watch))),
        Err(Error::NoNode) => Ok((None, Some(watch))),
        Err(error) => Err(fail(error)),
    }
}

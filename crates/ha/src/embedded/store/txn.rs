//! A transaction in progress: applied to the tree op by op (so later ops
//! see earlier ones), with an undo log to take it all back.

use std::collections::BTreeSet;

use super::{Change, Kind, Node, Store};
use crate::backend::{CoordError, CreateMode, NodeEvent, Op, OpResult, Stat};
use crate::embedded::path;

/// How to take back one step of an uncommitted transaction.
enum Undo {
    Created {
        path: String,
        parent: String,
        name: String,
    },
    Deleted {
        path: String,
        node: Node,
        parent: String,
        name: String,
    },
    DataSet {
        path: String,
        data: Vec<u8>,
        stat: Stat,
    },
}

/// A transaction in progress: applied to the tree as it goes (so later ops
/// see earlier ones), with an undo log for rollback.
pub(super) struct Txn<'s> {
    store: &'s mut Store,
    zxid: u64,
    undo: Vec<Undo>,
    changes: Vec<Change>,
    /// Parents that lost a child (container reaping candidates).
    emptied: BTreeSet<String>,
}

impl<'s> Txn<'s> {
    pub(super) fn begin(store: &'s mut Store) -> Txn<'s> {
        let zxid = store.zxid + 1;
        Txn {
            store,
            zxid,
            undo: Vec::new(),
            changes: Vec::new(),
            emptied: BTreeSet::new(),
        }
    }

    pub(super) fn op(&mut self, op: &Op, owner: u64) -> Result<OpResult, CoordError> {
        match op {
            Op::Check { path, version } => {
                path::validate(path)?;
                let node = self
                    .store
                    .nodes
                    .get(path)
                    .ok_or_else(|| CoordError::NoNode(path.clone()))?;
                check_version(node, *version, path).map(|()| OpResult::Checked)
            }
            Op::Create { path, data, mode } => {
                let (path, stat) = self.create(path, data, *mode, owner)?;
                Ok(OpResult::Created { path, stat })
            }
            Op::SetData {
                path,
                data,
                version,
            } => self
                .set_data(path, data, *version)
                .map(|stat| OpResult::Set { stat }),
            Op::Delete { path, version } => self.delete(path, *version).map(|()| OpResult::Deleted),
        }
    }

    fn create(
        &mut self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        owner: u64,
    ) -> Result<(String, Stat), CoordError> {
        let sequential = mode == CreateMode::EphemeralSequential;
        path::validate_create(path, mode)?;
        let (parent, prefix) =
            path::split(path).ok_or_else(|| CoordError::NodeExists(path.to_owned()))?;
        let parent_node = self
            .store
            .nodes
            .get(parent)
            .ok_or_else(|| CoordError::NoNode(parent.to_owned()))?;
        if parent_node.kind == Kind::Ephemeral {
            return Err(CoordError::Other(format!(
                "ephemeral node {parent} cannot have children"
            )));
        }
        let name = if sequential {
            format!("{prefix}{}", path::sequence_suffix(parent_node.cversion))
        } else {
            prefix.to_owned()
        };
        let full = path::join(parent, &name);
        if self.store.nodes.contains_key(&full) {
            return Err(CoordError::NodeExists(full));
        }
        let kind = match mode {
            CreateMode::Persistent => Kind::Persistent,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential => Kind::Ephemeral,
            CreateMode::Container => Kind::Container,
        };
        let ephemeral_owner = if kind == Kind::Ephemeral { owner } else { 0 };
        let stat = Stat {
            czxid: self.zxid,
            mzxid: self.zxid,
            version: 0,
            ephemeral_owner,
        };
        let parent = parent.to_owned();
        if let Some(parent_node) = self.store.nodes.get_mut(&parent) {
            parent_node.children.insert(name.clone());
            parent_node.cversion += 1;
        }
        self.store
            .nodes
            .insert(full.clone(), Node::new(data.to_vec(), stat, kind));
        self.undo.push(Undo::Created {
            path: full.clone(),
            parent,
            name,
        });
        self.changes.push(Change {
            path: full.clone(),
            event: NodeEvent::Created,
        });
        Ok((full, stat))
    }

    fn set_data(
        &mut self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
    ) -> Result<Stat, CoordError> {
        path::validate(path)?;
        let zxid = self.zxid;
        let node = self
            .store
            .nodes
            .get_mut(path)
            .ok_or_else(|| CoordError::NoNode(path.to_owned()))?;
        check_version(node, version, path)?;
        let old = Undo::DataSet {
            path: path.to_owned(),
            data: std::mem::replace(&mut node.data, data.to_vec()),
            stat: node.stat,
        };
        node.stat.version = node.stat.version.wrapping_add(1);
        node.stat.mzxid = zxid;
        let stat = node.stat;
        self.undo.push(old);
        self.changes.push(Change {
            path: path.to_owned(),
            event: NodeEvent::DataChanged,
        });
        Ok(stat)
    }

    pub(super) fn delete(&mut self, path: &str, version: Option<i32>) -> Result<(), CoordError> {
        path::validate(path)?;
        let (parent, name) = path::split(path)
            .ok_or_else(|| CoordError::Other("the root node cannot be deleted".into()))?;
        let node = self
            .store
            .nodes
            .get(path)
            .ok_or_else(|| CoordError::NoNode(path.to_owned()))?;
        check_version(node, version, path)?;
        if !node.children.is_empty() {
            return Err(CoordError::NotEmpty(path.to_owned()));
        }
        let Some(node) = self.store.nodes.remove(path) else {
            return Err(CoordError::NoNode(path.to_owned()));
        };
        if let Some(parent_node) = self.store.nodes.get_mut(parent) {
            parent_node.children.remove(name);
        }
        self.emptied.insert(parent.to_owned());
        self.undo.push(Undo::Deleted {
            path: path.to_owned(),
            node,
            parent: parent.to_owned(),
            name: name.to_owned(),
        });
        self.changes.push(Change {
            path: path.to_owned(),
            event: NodeEvent::Deleted,
        });
        Ok(())
    }

    pub(super) fn commit(self) -> (Vec<Change>, BTreeSet<String>) {
        self.store.zxid = self.zxid;
        (self.changes, self.emptied)
    }

    pub(super) fn rollback(self) {
        let nodes = &mut self.store.nodes;
        for step in self.undo.into_iter().rev() {
            match step {
                Undo::Created { path, parent, name } => {
                    nodes.remove(&path);
                    if let Some(parent) = nodes.get_mut(&parent) {
                        parent.children.remove(&name);
                        parent.cversion -= 1;
                    }
                }
                Undo::Deleted {
                    path,
                    node,
                    parent,
                    name,
                } => {
                    nodes.insert(path, node);
                    if let Some(parent) = nodes.get_mut(&parent) {
                        parent.children.insert(name);
                    }
                }
                Undo::DataSet { path, data, stat } => {
                    if let Some(node) = nodes.get_mut(&path) {
                        node.data = data;
                        node.stat = stat;
                    }
                }
            }
        }
    }
}

fn check_version(node: &Node, version: Option<i32>, path: &str) -> Result<(), CoordError> {
    match version {
        Some(expected) if expected != node.stat.version => {
            Err(CoordError::BadVersion(path.to_owned()))
        }
        _ => Ok(()),
    }
}

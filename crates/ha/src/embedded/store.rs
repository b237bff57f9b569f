//! The server's data tree: nodes, all-or-nothing transactions and their
//! zxids. Pure: no clock, no channels; sessions appear only as owner ids.
//!
//! Every committed write transaction takes the next zxid (a multi takes one
//! for all its ops); a failed one takes none and changes nothing. Container
//! nodes are reaped right after the transaction that removed their last
//! child, each reaping in a transaction of its own, as ZooKeeper's container
//! manager does (only sooner).

mod txn;

use std::collections::{BTreeMap, BTreeSet};

use self::txn::Txn;
use super::path::{self, ROOT};
use crate::backend::{CoordError, CreateMode, NodeEvent, Op, OpResult, Stat};

/// What a committed transaction did to one node (watches fire on these).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Change {
    /// The node.
    pub(crate) path: String,
    /// What happened to it.
    pub(crate) event: NodeEvent,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Persistent,
    Ephemeral,
    Container,
}

#[derive(Clone, Debug)]
struct Node {
    data: Vec<u8>,
    stat: Stat,
    kind: Kind,
    /// Child creations so far (ZooKeeper's `cversion`; deletions do not
    /// count): the next sequential child's number.
    cversion: i32,
    children: BTreeSet<String>,
}

impl Node {
    fn new(data: Vec<u8>, stat: Stat, kind: Kind) -> Node {
        Node {
            data,
            stat,
            kind,
            cversion: 0,
            children: BTreeSet::new(),
        }
    }
}

/// The data tree with its transaction counter.
#[derive(Debug)]
pub(crate) struct Store {
    nodes: BTreeMap<String, Node>,
    zxid: u64,
}

impl Store {
    /// A tree holding only `/`, at zxid 0.
    pub(crate) fn new() -> Store {
        let root = Node::new(Vec::new(), Stat::default(), Kind::Persistent);
        Store {
            nodes: BTreeMap::from([(ROOT.to_owned(), root)]),
            zxid: 0,
        }
    }

    /// The zxid of the last committed transaction.
    pub(crate) fn last_zxid(&self) -> u64 {
        self.zxid
    }

    /// A node's data and stat, `None` if it does not exist.
    pub(crate) fn get(&self, path: &str) -> Result<Option<(Vec<u8>, Stat)>, CoordError> {
        path::validate(path)?;
        Ok(self
            .nodes
            .get(path)
            .map(|node| (node.data.clone(), node.stat)))
    }

    /// A node's children, sorted by name.
    pub(crate) fn children(&self, path: &str) -> Result<Vec<String>, CoordError> {
        path::validate(path)?;
        let node = self
            .nodes
            .get(path)
            .ok_or_else(|| CoordError::NoNode(path.to_owned()))?;
        Ok(node.children.iter().cloned().collect())
    }

    /// Applies `ops` as one transaction on behalf of session `owner`, or
    /// nothing: the error names the first failing op.
    pub(crate) fn multi(
        &mut self,
        ops: &[Op],
        owner: u64,
    ) -> Result<(Vec<OpResult>, Vec<Change>), CoordError> {
        self.transact(ops, owner)
            .map_err(|(index, source)| CoordError::MultiFailed {
                index,
                source: Box::new(source),
            })
    }

    /// Applies one op as a transaction; its error is the op's own.
    pub(crate) fn apply(
        &mut self,
        op: Op,
        owner: u64,
    ) -> Result<(OpResult, Vec<Change>), CoordError> {
        let (mut results, changes) = self.transact(&[op], owner).map_err(|(_, source)| source)?;
        let result = results
            .pop()
            .ok_or_else(|| CoordError::Other("empty transaction".into()))?;
        Ok((result, changes))
    }

    /// Creates the missing proper ancestors of `path` as containers, each in
    /// its own transaction (as a client creating parents one by one would).
    /// Creates nothing if `path` is not valid for a node of `mode`.
    pub(crate) fn create_parents(&mut self, path: &str, mode: CreateMode) -> Vec<Change> {
        let mut changes = Vec::new();
        if path::validate_create(path, mode).is_err() {
            return changes;
        }
        for ancestor in path::ancestors(path) {
            if self.nodes.contains_key(&ancestor) {
                continue;
            }
            let create = Op::Create {
                path: ancestor,
                data: Vec::new(),
                mode: CreateMode::Container,
            };
            match self.apply(create, 0) {
                Ok((_, created)) => changes.extend(created),
                Err(_) => break, // the final create reports why
            }
        }
        changes
    }

    /// Deletes every ephemeral node of session `owner` in one transaction
    /// (none, and no zxid, if it has none), then reaps emptied containers.
    pub(crate) fn end_session(&mut self, owner: u64) -> Vec<Change> {
        let ephemerals: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, node)| node.kind == Kind::Ephemeral && node.stat.ephemeral_owner == owner)
            .map(|(path, _)| path.clone())
            .collect();
        if ephemerals.is_empty() {
            return Vec::new();
        }
        let ops: Vec<Op> = ephemerals
            .into_iter()
            .map(|path| Op::Delete {
                path,
                version: None,
            })
            .collect();
        // Ephemerals have no children, so deleting them cannot fail.
        self.transact(&ops, owner)
            .map(|(_, changes)| changes)
            .unwrap_or_default()
    }

    fn transact(
        &mut self,
        ops: &[Op],
        owner: u64,
    ) -> Result<(Vec<OpResult>, Vec<Change>), (usize, CoordError)> {
        if ops.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let mut txn = Txn::begin(self);
        let mut results = Vec::with_capacity(ops.len());
        for (index, op) in ops.iter().enumerate() {
            match txn.op(op, owner) {
                Ok(result) => results.push(result),
                Err(error) => {
                    txn.rollback();
                    return Err((index, error));
                }
            }
        }
        let (mut changes, emptied) = txn.commit();
        changes.extend(self.reap(emptied));
        Ok((results, changes))
    }

    /// Deletes containers that had children and have none left, deepest
    /// first, each in its own transaction; cascades to their parents.
    fn reap(&mut self, mut candidates: BTreeSet<String>) -> Vec<Change> {
        let mut changes = Vec::new();
        while let Some(path) = candidates.pop_last() {
            let reapable = self.nodes.get(&path).is_some_and(|node| {
                node.kind == Kind::Container && node.cversion > 0 && node.children.is_empty()
            });
            if !reapable {
                continue;
            }
            let mut txn = Txn::begin(self);
            if txn.delete(&path, None).is_ok() {
                let (reaped, emptied) = txn.commit();
                changes.extend(reaped);
                candidates.extend(emptied);
            } else {
                txn.rollback();
            }
        }
        changes
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;

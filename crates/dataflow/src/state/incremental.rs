//! Incremental checkpoints of a [`KeyedTable`]: what a keyed operator
//! writes when a barrier asks for an incremental snapshot, and how it
//! restores from one.
//!
//! A checkpoint's part of a table is, per key group, a *chain* of sections
//! in shared run files ([`super::run`]): a base and the deltas after it. At
//! a barrier naming base `b`, a group nobody wrote since `b` keeps `b`'s
//! chain (its files reused by name, nothing written); a changed group gets
//! a delta section with its keys changed since `b` (their values at the
//! snapshot, or removals); a group whose deltas reach its base's size, or
//! whose chain reaches [`MAX_CHAIN`] sections, is written whole again (a
//! new base), so a restore never reads more than about twice a group.
//!
//! ```text
//!  barrier n (base b) ─► task thread: take the changes (O(groups)), pick b's chains ─► part
//!  off the task thread: the changed keys since b, per group: delta | new base | unchanged ─► one run
//!     ─► EncodedState { part: chains, shared: [shared/<attempt>/<n>-<op>.run], reused: b's files }
//! ```
//!
//! Only chains this attempt wrote (or restored from) are reused, and only
//! when the keys changed since are all known: otherwise the group is
//! written whole. The leader keeps `b`'s files while `n` is pending
//! (`holdfast_runtime::checkpoint::SharedFiles`); no task deletes one.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::Hash;
use std::path::Path;
use std::sync::{Arc, Mutex};

use holdfast_executor::{
    EncodeError, EncodedState, LocalSpan, PartFile, SharedContent, SharedFile, SharedRef,
    StateSource,
};
use holdfast_types::sync::lock;
use holdfast_types::{CheckpointId, SnapshotKind};
use rustc_hash::FxHashSet;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::run::{
    GroupMerge, RunError, RunOutput, RunWriter, SectionAt, SectionKind, SectionStream, merge_chain,
};
use super::tracked::{GroupSnapshot, RestoreTarget, TrackedTable};
use super::{KeyGroup, KeyGroupRange, StateError};
use crate::checkpoint::Part;

/// The most sections a group's chain holds before it is written whole
/// (its deltas reaching its base's size usually comes first only when much
/// of it changes; with 1 % of the keys changing per checkpoint, a group's
/// turn in the rolling rebase, every this many checkpoints, does: a
/// checkpoint then writes its changes and a 64th of the state, and a
/// restore reads a group and at most 63 deltas).
pub(crate) const MAX_CHAIN: usize = 64;

/// The most change lists kept (checkpoints taken since the oldest chain
/// that may still be a base): past it the oldest chains are given up, so
/// memory stays bounded whatever the leader does (a later checkpoint on
/// such a base writes everything).
const MAX_CHANGE_LISTS: usize = 32;

/// One section of a chain: which shared file, and where in it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SectionRef {
    /// The shared file, relative to the job's checkpoint directory.
    pub(crate) file: String,
    /// The whole file's size.
    pub(crate) file_bytes: u64,
    /// The section.
    pub(crate) at: SectionAt,
}

/// Per key group (by number), its chain, oldest section first.
pub(crate) type Chains = BTreeMap<u32, Vec<SectionRef>>;

/// A keyed table's part of a state file (format 3).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum TablePart {
    /// Every non-empty group whole, inline: a full snapshot.
    Inline(Vec<(u32, Vec<u8>)>),
    /// Per group, its chain in shared files.
    Chains(Vec<(u32, Vec<SectionRef>)>),
    /// Every non-empty group whole, as a section in files of the
    /// snapshot's own (beside its state file): a full snapshot of a state
    /// larger than memory, which is never whole in memory.
    Own(Vec<(u32, Vec<SectionRef>)>),
}

/// The keys changed between two snapshots, per group in range order (a
/// key may be listed more than once).
type Changed<K> = Arc<Vec<Vec<K>>>;

/// What a keyed operator keeps, beside its table, for incremental
/// checkpoints.
pub(crate) struct TableChains<K> {
    /// The attempt's tag.
    tag: String,
    /// The run files' prefix: `shared/<attempt tag>/`.
    dir: String,
    /// The operator's part of a run file's name (unique in the job).
    op: String,
    /// The keys changed up to each snapshot since the previous one, by the
    /// checkpoint that took it, oldest first: complete from the oldest
    /// chain in `chains` on.
    changes: Vec<(CheckpointId, Changed<K>)>,
    /// Each checkpoint's chains this attempt wrote (filled in by the
    /// encoders, off the task thread) or restored from.
    chains: Arc<Mutex<BTreeMap<CheckpointId, Arc<Chains>>>>,
    /// Where run files are spilled as they are written, in parts of about
    /// `part_bytes` (a state larger than memory); `None`: a run is one
    /// file in memory.
    spill: Option<Arc<Path>>,
    /// The size at which a spilled run file's part ends (after the
    /// section that reaches it).
    part_bytes: usize,
}

impl<K: Hash + Eq + Clone + Send + Sync + 'static> TableChains<K> {
    /// Nothing written yet, for the operator `uid` of the attempt tagged
    /// `tag`.
    pub(crate) fn new(tag: &str, uid: &str) -> TableChains<K> {
        TableChains {
            tag: tag.to_owned(),
            dir: format!("shared/{tag}/"),
            op: format!("{}-{:08x}", file_safe(uid), crc32fast::hash(uid.as_bytes())),
            changes: Vec::new(),
            chains: Arc::default(),
            spill: None,
            part_bytes: usize::MAX,
        }
    }

    /// The same, spilling run files into `dir` as they are written, in
    /// parts that end once they reach `part_bytes`, so that a checkpoint
    /// holds about one part in memory.
    pub(crate) fn spilling_to(mut self, dir: &Path, part_bytes: usize) -> TableChains<K> {
        self.spill = Some(Arc::from(dir));
        self.part_bytes = part_bytes;
        self
    }

    /// Restored from `chains` of checkpoint `from` (the groups of this
    /// subtask's range).
    fn restored(&mut self, from: CheckpointId, chains: Chains) {
        lock(&self.chains).insert(from, Arc::new(chains));
    }

    /// The part of `table` for checkpoint `id` of `kind` (on the task
    /// thread: a pointer copy per key group, after merging what was
    /// written beside a group an earlier snapshot held, and a swap of the
    /// change lists; the rest is encoded later).
    pub(crate) fn part<T: TrackedTable<K>>(
        &mut self,
        table: &mut T,
        id: CheckpointId,
        kind: SnapshotKind,
    ) -> Part
    where
        K: Serialize,
    {
        let base = match kind {
            SnapshotKind::Full => {
                if let Some((_, changed)) = table.take_changed() {
                    self.changes.push((id, Arc::new(changed)));
                    self.bound();
                    if lock(&self.chains).is_empty() {
                        // Nothing to be incremental on: stop paying for it.
                        self.changes.clear();
                        table.untrack_changes();
                    }
                }
                return self.full_part(table, id);
            }
            SnapshotKind::Incremental { base } => base,
        };
        let tracking = table.is_tracking_changes();
        table.track_changes();
        let Some((snapshot, changed)) = table.take_changed() else {
            return self.full_part(table, id);
        };
        self.changes.push((id, Arc::new(changed)));
        self.bound();
        let base_chains = match base {
            Some(b) => {
                // Bases only move forward: what is older is never needed.
                self.changes.retain(|(c, _)| *c > b);
                let mut chains = lock(&self.chains);
                chains.retain(|c, _| *c >= b);
                // Without tracking before this snapshot, the keys changed
                // since the base are unknown: everything is written anew.
                chains.get(&b).filter(|_| tracking).cloned()
            }
            None => {
                self.changes.clear();
                lock(&self.chains).clear();
                None
            }
        };
        let deltas: Vec<Changed<K>> = self.changes.iter().map(|(_, c)| Arc::clone(c)).collect();
        let file = format!("{}{}-{}.run", self.dir, id.0, self.op);
        let chains = Arc::clone(&self.chains);
        let spill = self.spill.clone().map(|dir| (dir, self.part_bytes));
        Part::Deferred(Box::new(move || {
            let (encoded, written) = encode(
                snapshot,
                base_chains.as_deref(),
                &deltas,
                file,
                spill.as_ref().map(|(dir, bytes)| (&**dir, *bytes)),
            )?;
            lock(&chains).insert(id, Arc::new(written));
            Ok(encoded)
        }))
    }
}

impl<K> TableChains<K> {
    /// A full snapshot's part of `table` for checkpoint `id`: spilled into
    /// files of its own when run files are spilled (a state larger than
    /// memory), else every group inline.
    fn full_part<T: TrackedTable<K>>(&self, table: &mut T, id: CheckpointId) -> Part
    where
        K: Serialize,
    {
        match &self.spill {
            Some(dir) => own_part(
                table.snapshot_now(),
                format!("{}-{}-{}.run", self.tag, id.0, self.op),
                Arc::clone(dir),
                self.part_bytes,
            ),
            None => inline_part(table.snapshot_now()),
        }
    }

    /// Keeps at most [`MAX_CHANGE_LISTS`] change lists; the chains that
    /// needed the dropped ones go with them.
    fn bound(&mut self) {
        if self.changes.len() > MAX_CHANGE_LISTS {
            let drop = self.changes.len() - MAX_CHANGE_LISTS;
            let newest_dropped = self.changes[drop - 1].0;
            self.changes.drain(..drop);
            // A chain of checkpoint c needs every list after c: those of
            // c at or before the newest dropped list's are gone.
            lock(&self.chains).retain(|c, _| *c >= newest_dropped);
        }
    }
}

/// A full snapshot's part, every group inline.
fn inline_part<K, S: GroupSnapshot<K>>(mut snapshot: S) -> Part {
    Part::Deferred(Box::new(move || {
        let parts = snapshot.encode_inline()?;
        let parts: Vec<(u32, Vec<u8>)> = parts.into_iter().map(|(g, b)| (g.0, b)).collect();
        Ok(postcard::to_allocvec(&TablePart::Inline(parts))?.into())
    }))
}

/// A full snapshot's part as files of its own, named `file` (then
/// `-<n>` before `.run`): every non-empty group's base, spilled into
/// `spill` a part of about `part_bytes` at a time, so that the snapshot
/// holds one part in memory however large the state.
fn own_part<K, S: GroupSnapshot<K>>(
    mut snapshot: S,
    file: String,
    spill: Arc<Path>,
    part_bytes: usize,
) -> Part {
    Part::Deferred(Box::new(move || {
        let mut chains = Chains::new();
        let mut parts = RunParts {
            name: file,
            spill: Some(&spill),
            writer: None,
            files: Vec::new(),
        };
        for (slot, group) in snapshot.range().iter().enumerate() {
            if snapshot.group_is_empty(slot) {
                snapshot.release(slot);
                continue;
            }
            chains.insert(group.0, Vec::new());
            snapshot.write_base(slot, parts.writer()?)?;
            snapshot.release(slot);
            if parts.writer.as_ref().is_some_and(|w| w.len() >= part_bytes) {
                parts.finish(&mut chains)?;
            }
        }
        parts.finish(&mut chains)?;
        let part = TablePart::Own(chains.into_iter().collect());
        let bytes = postcard::to_allocvec(&part)?;
        Ok(EncodedState {
            bytes,
            own: std::mem::take(&mut parts.files),
            ..EncodedState::default()
        })
    }))
}

/// Encodes one incremental part: the run of what changed since
/// `base_chains` (all of it without them), and the chains that result.
///
/// Rebases roll: a changed group is written whole once its deltas would
/// reach its base's size (estimated from how many of its keys changed) or
/// its chain [`MAX_CHAIN`] sections, and besides those, up to a
/// [`MAX_CHAIN`]th of the groups with the longest chains are written whole
/// each checkpoint — so no checkpoint rewrites everything (groups that all
/// started together would otherwise all reach the limit at once) and a
/// restore reads about one group's size plus its deltas. Sections are
/// encoded straight into the run (no allocation per entry).
fn encode<K, S>(
    mut snapshot: S,
    base_chains: Option<&Chains>,
    deltas: &[Changed<K>],
    file: String,
    spill: Option<(&Path, usize)>,
) -> Result<(EncodedState, Chains), EncodeError>
where
    K: Hash + Eq,
    S: GroupSnapshot<K>,
{
    let range = snapshot.range();
    let mut chains = Chains::new();
    // Groups without a chain to go on: written whole.
    let mut rebase: Vec<KeyGroup> = Vec::new();
    // Changed groups with a chain: (slot, group, keys, must rebase, chain length).
    let mut changed: Vec<(usize, KeyGroup, Vec<&K>, bool, usize)> = Vec::new();
    for (slot, group) in range.iter().enumerate() {
        let Some(chain) = base_chains.and_then(|c| c.get(&group.0)) else {
            if !snapshot.group_is_empty(slot) {
                rebase.push(group);
            }
            continue;
        };
        let keys: FxHashSet<&K> = deltas.iter().flat_map(|d| d[slot].iter()).collect();
        if keys.is_empty() {
            chains.insert(group.0, chain.clone());
            continue;
        }
        let base_bytes = chain.first().map_or(0, |s| s.at.length);
        let deltas_bytes: u64 = chain.iter().skip(1).map(|s| s.at.length).sum();
        // A delta of k of a group's n keys is about k/n of its base.
        let n = snapshot.group_len(slot).max(1) as u64;
        let estimate = base_bytes.saturating_mul(keys.len() as u64) / n;
        let must = chain.len() >= MAX_CHAIN || deltas_bytes + estimate >= base_bytes;
        changed.push((slot, group, keys.into_iter().collect(), must, chain.len()));
    }
    // The rolling rebases: those that must, then the longest chains.
    let budget = range.len().div_ceil(MAX_CHAIN);
    let mut order: Vec<usize> = (0..changed.len()).collect();
    order.sort_by_key(|i| (!changed[*i].3, std::cmp::Reverse(changed[*i].4)));
    let mut rebased = 0;
    let mut whole = vec![false; changed.len()];
    for i in order {
        let (_, _, _, must, length) = &changed[i];
        if *must || (rebased < budget && *length >= 2) {
            whole[i] = true;
            rebased += 1;
        }
    }
    // Per group written: `None` whole, or the keys of its delta.
    let mut sections: BTreeMap<u32, Option<Vec<&K>>> =
        rebase.into_iter().map(|g| (g.0, None)).collect();
    for ((slot, group, keys, _, _), whole) in changed.into_iter().zip(whole) {
        if whole {
            if !snapshot.group_is_empty(slot) {
                sections.insert(group.0, None);
            }
        } else {
            let chain = base_chains
                .and_then(|c| c.get(&group.0))
                .cloned()
                .unwrap_or_default();
            chains.insert(group.0, chain);
            sections.insert(group.0, Some(keys));
        }
    }
    let mut parts = RunParts {
        name: file,
        spill: spill.map(|(dir, _)| dir),
        writer: None,
        files: Vec::new(),
    };
    // Groups with nothing to write go at once, the others once written:
    // the task's writes copy a group only while it is held. Sections stay
    // in group order, so that a restore of a range of groups (at another
    // parallelism) reads one span of each run.
    for slot in 0..range.len() {
        if !sections.contains_key(&(range.start + slot as u32)) {
            snapshot.release(slot);
        }
    }
    for (group, keys) in sections {
        let group = KeyGroup(group);
        let slot = (group.0 - range.start) as usize;
        match keys {
            None => {
                snapshot.write_base(slot, parts.writer()?)?;
                chains.insert(group.0, Vec::new());
            }
            Some(keys) => snapshot.write_delta(slot, &keys, parts.writer()?)?,
        }
        snapshot.release(slot);
        if spill.is_some_and(|(_, bytes)| parts.writer.as_ref().is_some_and(|w| w.len() >= bytes)) {
            parts.finish(&mut chains)?;
        }
    }
    parts.finish(&mut chains)?;
    let new: BTreeSet<&str> = parts.files.iter().map(|f| f.name.as_str()).collect();
    let reused: BTreeSet<SharedRef> = chains
        .values()
        .flatten()
        .filter(|s| !new.contains(s.file.as_str()))
        .map(|s| SharedRef {
            name: s.file.clone(),
            bytes: s.file_bytes,
        })
        .collect();
    let part = TablePart::Chains(chains.iter().map(|(g, c)| (*g, c.clone())).collect());
    let bytes = postcard::to_allocvec(&part)?;
    Ok((
        EncodedState {
            bytes,
            shared: std::mem::take(&mut parts.files),
            reused: reused.into_iter().collect(),
            ..EncodedState::default()
        },
        chains,
    ))
}

/// The run files of one encoding (shared, or a full snapshot's own): the
/// part being written, and those finished. Dropped with finished parts
/// still in it (the encoding failed), it deletes their spilled files.
struct RunParts<'a> {
    /// The first part's name (`shared/<tag>/<id>-<op>.run`, or
    /// `<tag>-<id>-<op>.run` for own files); the next ones add `-<n>`
    /// before `.run`.
    name: String,
    /// Where parts are written as they are encoded (`None`: in memory).
    spill: Option<&'a Path>,
    writer: Option<RunWriter>,
    files: Vec<SharedFile>,
}

impl Drop for RunParts<'_> {
    fn drop(&mut self) {
        self.files.iter().for_each(SharedFile::discard);
    }
}

impl RunParts<'_> {
    /// The name of the part after those finished.
    fn part_name(&self) -> String {
        match self.files.len() {
            0 => self.name.clone(),
            n => match self.name.strip_suffix(".run") {
                Some(stem) => format!("{stem}-{n}.run"),
                None => format!("{}-{n}", self.name),
            },
        }
    }

    /// The part being written (begun if none is).
    fn writer(&mut self) -> Result<&mut RunWriter, EncodeError> {
        let writer = match (self.writer.take(), self.spill) {
            (Some(writer), _) => writer,
            (None, None) => RunWriter::new(),
            (None, Some(dir)) => {
                let name = self.part_name();
                RunWriter::create(&dir.join(name.rsplit('/').next().unwrap_or(&name)))?
            }
        };
        Ok(self.writer.insert(writer))
    }

    /// Ends the part being written (if it has a section): its sections
    /// join their groups' chains. A part with no section is dropped (its
    /// file removed).
    fn finish(&mut self, chains: &mut Chains) -> Result<(), EncodeError> {
        let Some(writer) = self.writer.take().filter(|w| !w.is_empty()) else {
            return Ok(());
        };
        let name = self.part_name();
        let (run, index) = writer.finish_indexed()?;
        let (content, file_bytes) = match run {
            RunOutput::Bytes(bytes) => {
                let length = bytes.len() as u64;
                (SharedContent::Bytes(bytes), length)
            }
            RunOutput::File { path, bytes } => (SharedContent::Spilled { path, bytes }, bytes),
        };
        for at in index {
            if let Some(chain) = chains.get_mut(&at.group.0) {
                chain.push(SectionRef {
                    file: name.clone(),
                    file_bytes,
                    at,
                });
            }
        }
        self.files.push(SharedFile { name, content });
        Ok(())
    }
}

/// Letters, digits, `-` and `_` of `name` (the rest as `_`): a file-name
/// part.
fn file_safe(name: &str) -> String {
    name.chars()
        .take(40)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Restores the groups of `range` from the parts of a table `name`: each
/// inline part's groups, and each chain read from the files beside its
/// state file, shared or its own (one read per file, of the span this
/// subtask needs). `chains_out` gets the chains in shared files restored,
/// to be reused by the next incremental checkpoint.
pub(crate) fn restore_table<K, V, T>(
    mut table: T,
    range: KeyGroupRange,
    from: Option<CheckpointId>,
    parts: &[(Vec<u8>, u32, &StateSource)],
    chains_out: &mut TableChains<K>,
) -> Result<T, RestoreError>
where
    K: Hash + Eq + Clone + Send + Sync + DeserializeOwned + 'static,
    V: DeserializeOwned,
    T: RestoreTarget<K, V>,
{
    let mut inline: Vec<(KeyGroup, Vec<u8>)> = Vec::new();
    let mut restored = Chains::new();
    // Chains in a full snapshot's own files: restored, never reused.
    let mut own = Chains::new();
    let mut reads = Reads::new();
    let mut any_chains = false;
    let staging = table.staging_dir();
    for (bytes, format, source) in parts {
        let part = if *format >= 3 {
            postcard::from_bytes(bytes).map_err(|e| RestoreError::Undecodable(e.to_string()))?
        } else {
            TablePart::Inline(
                postcard::from_bytes(bytes)
                    .map_err(|e| RestoreError::Undecodable(e.to_string()))?,
            )
        };
        let (whose, groups) = match part {
            TablePart::Inline(groups) => {
                inline.extend(groups.into_iter().map(|(g, b)| (KeyGroup(g), b)));
                continue;
            }
            TablePart::Chains(groups) => (Whose::Shared, groups),
            TablePart::Own(groups) => (Whose::Own, groups),
        };
        let mine: Vec<(u32, Vec<SectionRef>)> = groups
            .into_iter()
            .filter(|(g, _)| range.contains(KeyGroup(*g)))
            .collect();
        match &staging {
            // Nothing to read (every group empty): no file is needed.
            _ if mine.is_empty() => {}
            Some(dir) => {
                let spans = stage_sections(&mine, source, dir, whose)?;
                let fetched: Vec<&LocalSpan> = spans.values().filter(|s| s.is_staged()).collect();
                if !fetched.is_empty() {
                    let bytes: u64 = fetched.iter().map(|s| s.bytes()).sum();
                    tracing::info!(state = table.state_name(), files = fetched.len(),
                        bytes, in_place = spans.len() - fetched.len(), dir = %dir.display(),
                        "fetched the runs a restore needs into the task's directory; \
                         each key group is merged from them as streams, and they are deleted once restored");
                }
                for (group, chain) in &mine {
                    restore_streamed(&mut table, KeyGroup(*group), chain, &spans)?;
                }
            }
            None => reads.extend(read_sections(&mine, source, whose)?),
        }
        match whose {
            Whose::Shared => {
                any_chains = true;
                restored.extend(mine);
            }
            Whose::Own => own.extend(mine),
        }
    }
    for (group, bytes) in inline {
        if !range.contains(group) {
            continue;
        }
        table
            .restore_inline(group, &bytes)
            .map_err(RestoreError::State)?;
    }
    for (group, chain) in restored.iter().chain(&own).filter(|_| staging.is_none()) {
        for (key, value) in merged(chain, &reads)? {
            table
                .restore_encoded(KeyGroup(*group), &key, &value)
                .map_err(RestoreError::State)?;
        }
    }
    table.restored().map_err(RestoreError::State)?;
    if any_chains {
        table.track();
        if let Some(from) = from {
            chains_out.restored(from, restored);
        }
    }
    Ok(table)
}

/// Whose the files a part's sections are in: shared (an incremental
/// checkpoint's) or the snapshot's own (a full one's).
#[derive(Clone, Copy, Debug)]
enum Whose {
    Shared,
    Own,
}

impl Whose {
    fn file(self, name: &str) -> PartFile<'_> {
        match self {
            Whose::Shared => PartFile::Shared(name),
            Whose::Own => PartFile::Own(name),
        }
    }
}

/// The bytes of each section, by (file, offset).
type Reads = BTreeMap<(String, u64), Vec<u8>>;

fn read_sections(
    chains: &[(u32, Vec<SectionRef>)],
    source: &StateSource,
    whose: Whose,
) -> Result<Reads, RestoreError> {
    let StateSource::Stored(file) = source else {
        return Err(RestoreError::NoSharedFiles);
    };
    // One read per file: the span of every section needed from it.
    let mut reads = Reads::new();
    for (name, (start, end)) in spans(chains) {
        let bytes = file
            .read_range(whose.file(name), start..end)
            .map_err(RestoreError::Read)?;
        if bytes.len() as u64 != end - start {
            return Err(RestoreError::Read(format!(
                "{name}: {} bytes read of {start}..{end}",
                bytes.len()
            )));
        }
        for section in chains
            .iter()
            .flat_map(|(_, c)| from_base(c))
            .filter(|s| s.file == name)
        {
            let at = (section.at.offset - start) as usize;
            let bytes = bytes[at..at + section.at.length as usize].to_vec();
            reads.insert((name.to_owned(), section.at.offset), bytes);
        }
    }
    Ok(reads)
}

/// The byte span of each shared file that the sections `chains` are made
/// of lie in (from their first byte to their last), by file name.
fn spans(chains: &[(u32, Vec<SectionRef>)]) -> BTreeMap<&str, (u64, u64)> {
    let mut spans: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for section in chains.iter().flat_map(|(_, chain)| from_base(chain)) {
        let end = section.at.offset + section.at.length;
        let span = spans
            .entry(section.file.as_str())
            .or_insert((section.at.offset, end));
        span.0 = span.0.min(section.at.offset);
        span.1 = span.1.max(end);
    }
    spans
}

/// The part of a chain a group's state is made of: from its last base on
/// (a base holds the whole group).
fn from_base(chain: &[SectionRef]) -> &[SectionRef] {
    let base = chain
        .iter()
        .rposition(|s| s.at.kind == SectionKind::Base)
        .unwrap_or(0);
    &chain[base..]
}

/// The shared files of the sections `chains` are made of on local disk
/// (each file once: on this machine already, or the span of its sections
/// fetched into `staging`, as one read), by name.
fn stage_sections(
    chains: &[(u32, Vec<SectionRef>)],
    source: &StateSource,
    staging: &Path,
    whose: Whose,
) -> Result<BTreeMap<String, LocalSpan>, RestoreError> {
    let StateSource::Stored(file) = source else {
        return Err(RestoreError::NoSharedFiles);
    };
    spans(chains)
        .into_iter()
        .map(|(name, (start, end))| {
            file.local_span(whose.file(name), start..end, staging)
                .map(|span| (name.to_owned(), span))
                .map_err(RestoreError::Read)
        })
        .collect()
}

/// Restores `group` from its chain as streams over the sections in
/// `spans` ([`GroupMerge`]: a buffer per section, whatever the group's
/// size); a chain whose sections are not in key order (written by the
/// in-memory state) is merged in memory instead, that group alone.
fn restore_streamed<K, V, T: RestoreTarget<K, V>>(
    table: &mut T,
    group: KeyGroup,
    chain: &[SectionRef],
    spans: &BTreeMap<String, LocalSpan>,
) -> Result<(), RestoreError> {
    let chain = from_base(chain);
    let damaged = |section: &SectionRef, e: RunError| match e {
        RunError::Io(reason) => RestoreError::Read(format!("{}: {reason}", section.file)),
        e => RestoreError::Damaged {
            file: section.file.clone(),
            reason: e.to_string(),
        },
    };
    let span = |section: &SectionRef| {
        spans
            .get(&section.file)
            .ok_or_else(|| RestoreError::Read(format!("{}: not fetched", section.file)))
    };
    let mut streams = Vec::with_capacity(chain.len());
    for section in chain {
        let span = span(section)?;
        let stream = SectionStream::open(span.path(), span.starts_at(), section.at)
            .map_err(|e| damaged(section, e))?;
        streams.push(stream);
    }
    let mut unsorted = false;
    let streamed = match GroupMerge::new(streams) {
        Ok(mut merge) => {
            let state = table.state_name().to_owned();
            let written = table.restore_sorted(group, &mut || {
                merge.next_entry().map_err(|e| {
                    unsorted = matches!(e, RunError::Unsorted(_));
                    StateError::Run {
                        state: state.clone(),
                        source: e,
                    }
                })
            });
            written.map_err(|e| match (e, merge.failed_section()) {
                (StateError::Run { source, .. }, Some(at)) => damaged(&chain[at], source),
                (e, _) => RestoreError::State(e),
            })
        }
        Err((at, e)) => Err(damaged(&chain[at], e)),
    };
    match streamed {
        Ok(()) => return Ok(()),
        Err(_) if unsorted => {}
        Err(e) => return Err(e),
    }
    // Not in key order: this group's sections read whole and merged.
    let mut sections = Vec::with_capacity(chain.len());
    for section in chain {
        let span = span(section)?;
        let mut bytes = vec![0; section.at.length as usize];
        let read = std::fs::File::open(span.path()).and_then(|mut f| {
            use std::io::{Read, Seek, SeekFrom};
            f.seek(SeekFrom::Start(section.at.offset - span.starts_at()))?;
            f.read_exact(&mut bytes)
        });
        read.map_err(|e| RestoreError::Read(format!("{}: {e}", section.file)))?;
        let entries = section
            .at
            .entries(&bytes)
            .map_err(|e| damaged(section, e))?;
        sections.push((section.at.kind, entries));
    }
    for (key, value) in merge_chain(sections) {
        table
            .restore_encoded(group, &key, &value)
            .map_err(RestoreError::State)?;
    }
    Ok(())
}

/// A group's state from its chain's sections, read into `reads`.
fn merged(chain: &[SectionRef], reads: &Reads) -> Result<BTreeMap<Vec<u8>, Vec<u8>>, RestoreError> {
    let mut sections = Vec::with_capacity(chain.len());
    for section in from_base(chain) {
        let bytes = reads
            .get(&(section.file.clone(), section.at.offset))
            .ok_or_else(|| RestoreError::Read(format!("{}: not read", section.file)))?;
        let entries = section
            .at
            .entries(bytes)
            .map_err(|e| RestoreError::Damaged {
                file: section.file.clone(),
                reason: e.to_string(),
            })?;
        sections.push((section.at.kind, entries));
    }
    Ok(merge_chain(sections))
}

/// Why a table cannot be restored from its parts.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RestoreError {
    /// A part does not decode.
    #[error("its part cannot be decoded: {0}")]
    Undecodable(String),
    /// A part names files beside its state file, but it has none.
    #[error(
        "its part names files beside its state file, but its state was not read from checkpoint storage"
    )]
    NoSharedFiles,
    /// A file beside the state file could not be read.
    #[error("cannot read a file beside the state file: {0}")]
    Read(String),
    /// A section is damaged.
    #[error("the run file {file} is damaged: {reason}")]
    Damaged {
        /// The file.
        file: String,
        /// What is wrong.
        reason: String,
    },
    /// The entries do not make this table's state.
    #[error(transparent)]
    State(super::StateError),
}

#[cfg(test)]
#[path = "incremental_tests.rs"]
pub(crate) mod tests;

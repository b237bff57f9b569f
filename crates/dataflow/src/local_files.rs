//! The files beside a [`LocalRun`](crate::LocalRun)'s state files: its
//! incremental checkpoints' shared files, kept in a directory
//! ([`LocalRun::shared_dir`](crate::LocalRun::shared_dir)) so that a later
//! run restores from such a checkpoint as a TaskManager restores from
//! checkpoint storage, and a full snapshot's own files (in `chk-<id>/`
//! there, or in memory without a directory).

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use holdfast_executor::{LocalSpan, PartFile, SharedContent, SharedFile, StoredState};

/// Moves (or writes) `file` to its name under `dir`.
pub(crate) fn keep(dir: &Path, file: &SharedFile) -> Result<(), String> {
    let to = under(dir, &file.name)?;
    let failed = |e: std::io::Error| format!("cannot keep {} in {}: {e}", file.name, dir.display());
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(failed)?;
    }
    if to.exists() {
        return Err(format!(
            "{} was written twice in {}",
            file.name,
            dir.display()
        ));
    }
    match &file.content {
        SharedContent::Bytes(bytes) => std::fs::write(&to, bytes).map_err(failed),
        SharedContent::Spilled { path, .. } => std::fs::rename(path, &to)
            .or_else(|_| std::fs::copy(path, &to).map(|_| file.discard()))
            .map_err(failed),
    }
}

/// `name` (a shared file's, relative) under `dir`; a name that would leave
/// it is refused.
fn under(dir: &Path, name: &str) -> Result<PathBuf, String> {
    let relative = Path::new(name);
    if relative
        .components()
        .any(|c| !matches!(c, Component::Normal(_)))
    {
        return Err(format!(
            "the shared file name {name:?} leaves its directory"
        ));
    }
    Ok(dir.join(relative))
}

/// A subtask's state file of a kept checkpoint, with the files kept
/// beside it.
pub(crate) struct KeptState {
    pub(crate) state: Arc<[u8]>,
    /// Where shared files are kept ([`LocalRun::shared_dir`](crate::LocalRun::shared_dir)), if anywhere.
    pub(crate) shared: Option<Arc<Path>>,
    /// The checkpoint's own files (a full snapshot's runs).
    pub(crate) own: OwnFiles,
}

/// Where a local run's checkpoint keeps its own files.
#[derive(Clone, Debug)]
pub(crate) enum OwnFiles {
    /// In a directory of the checkpoint's own (`<shared dir>/chk-<id>/`).
    Dir(Arc<Path>),
    /// In memory, by name (a local run without a directory).
    Memory(Arc<BTreeMap<String, Vec<u8>>>),
}

impl OwnFiles {
    /// Whether it holds no file.
    pub(crate) fn is_empty(&self) -> bool {
        match self {
            OwnFiles::Dir(_) => false,
            OwnFiles::Memory(files) => files.is_empty(),
        }
    }
}

impl KeptState {
    /// Where `file` is on disk, if it is on disk.
    fn on_disk(&self, file: PartFile<'_>) -> Result<Option<PathBuf>, String> {
        match (file, &self.shared, &self.own) {
            (PartFile::Shared(name), Some(dir), _) => under(dir, name).map(Some),
            (PartFile::Shared(name), None, _) => Err(format!(
                "{}: a local run without a shared directory keeps no shared file",
                name
            )),
            (PartFile::Own(name), _, OwnFiles::Dir(dir)) => under(dir, name).map(Some),
            (PartFile::Own(_), _, OwnFiles::Memory(_)) => Ok(None),
        }
    }
}

impl StoredState for KeptState {
    fn location(&self) -> String {
        match (&self.shared, &self.own) {
            (_, OwnFiles::Dir(dir)) => {
                format!("a local run's checkpoint kept in {}", dir.display())
            }
            (Some(dir), _) => format!("a local run's checkpoint kept in {}", dir.display()),
            (None, OwnFiles::Memory(_)) => "a local run's checkpoint kept in memory".to_owned(),
        }
    }

    fn read(&self) -> Result<Arc<[u8]>, String> {
        Ok(Arc::clone(&self.state))
    }

    fn read_range(
        &self,
        file: PartFile<'_>,
        range: std::ops::Range<u64>,
    ) -> Result<Vec<u8>, String> {
        use std::io::{Read, Seek, SeekFrom};
        let Some(path) = self.on_disk(file)? else {
            let OwnFiles::Memory(files) = &self.own else {
                return Err(format!("{file}: not kept"));
            };
            let bytes = files
                .get(file.name())
                .ok_or_else(|| format!("{file}: not kept"))?;
            return bytes
                .get(range.start as usize..range.end as usize)
                .map(<[u8]>::to_vec)
                .ok_or_else(|| format!("{file}: {range:?} is past its end"));
        };
        let failed = |e: std::io::Error| format!("{}: {e}", path.display());
        let mut file = std::fs::File::open(&path).map_err(failed)?;
        file.seek(SeekFrom::Start(range.start)).map_err(failed)?;
        let mut bytes = vec![0; (range.end - range.start) as usize];
        file.read_exact(&mut bytes).map_err(failed)?;
        Ok(bytes)
    }

    fn local_span(
        &self,
        file: PartFile<'_>,
        range: std::ops::Range<u64>,
        staging: &Path,
    ) -> Result<LocalSpan, String> {
        if let Some(path) = self.on_disk(file)? {
            return Ok(LocalSpan::whole(path));
        }
        let bytes = self.read_range(file, range.clone())?;
        LocalSpan::stage_bytes(staging, range.start, &bytes, file)
    }
}

//! The shared files of a [`LocalRun`](crate::LocalRun)'s incremental
//! checkpoints, kept in a directory ([`LocalRun::shared_dir`](crate::LocalRun::shared_dir))
//! so that a later run restores from such a checkpoint as a TaskManager
//! restores from checkpoint storage.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use holdfast_executor::{LocalSpan, SharedContent, SharedFile, StoredState};

/// Moves (or writes) `file` to its name under `dir`.
pub(crate) fn keep(dir: &Path, file: &SharedFile) -> Result<(), String> {
    let to = under(dir, &file.name)?;
    let failed = |e: std::io::Error| format!("cannot keep {} in {}: {e}", file.name, dir.display());
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(failed)?;
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

/// A subtask's state file of a kept checkpoint, with the shared files
/// kept beside it.
pub(crate) struct KeptState {
    pub(crate) state: Arc<[u8]>,
    pub(crate) dir: Arc<Path>,
}

impl StoredState for KeptState {
    fn location(&self) -> String {
        format!("a local run's checkpoint kept in {}", self.dir.display())
    }

    fn read(&self) -> Result<Arc<[u8]>, String> {
        Ok(Arc::clone(&self.state))
    }

    fn read_shared(&self, name: &str, range: std::ops::Range<u64>) -> Result<Vec<u8>, String> {
        use std::io::{Read, Seek, SeekFrom};
        let path = under(&self.dir, name)?;
        let failed = |e: std::io::Error| format!("{}: {e}", path.display());
        let mut file = std::fs::File::open(&path).map_err(failed)?;
        file.seek(SeekFrom::Start(range.start)).map_err(failed)?;
        let mut bytes = vec![0; (range.end - range.start) as usize];
        file.read_exact(&mut bytes).map_err(failed)?;
        Ok(bytes)
    }

    fn shared_span(
        &self,
        name: &str,
        _range: std::ops::Range<u64>,
        _staging: &Path,
    ) -> Result<LocalSpan, String> {
        Ok(LocalSpan::whole(under(&self.dir, name)?))
    }
}

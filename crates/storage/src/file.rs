//! A local file read in pieces, for [`put_file`](crate::CheckpointStorage::put_file):
//! a file larger than memory is stored holding one piece of it at a time.

use std::path::{Path, PathBuf};

use bytes::{Bytes, BytesMut};
use tokio::io::AsyncReadExt;

/// A local file being read from its start, a piece at a time.
pub(crate) struct Pieces {
    file: tokio::fs::File,
    path: PathBuf,
    len: u64,
}

impl Pieces {
    /// Opens `path`; the error names it.
    pub(crate) async fn open(path: &Path) -> Result<Pieces, String> {
        let failed =
            |e: std::io::Error| format!("cannot read the local file {}: {e}", path.display());
        let file = tokio::fs::File::open(path).await.map_err(failed)?;
        let len = file.metadata().await.map_err(failed)?.len();
        Ok(Pieces {
            file,
            path: path.to_owned(),
            len,
        })
    }

    /// The file's size when it was opened.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// The next `size` bytes (fewer at the end of the file, empty past
    /// it); an error names the file.
    pub(crate) async fn next(&mut self, size: usize) -> Result<Bytes, String> {
        let mut piece = BytesMut::with_capacity(size);
        while piece.len() < size {
            match self.file.read_buf(&mut piece).await {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    return Err(format!(
                        "cannot read the local file {}: {e}",
                        self.path.display()
                    ));
                }
            }
        }
        Ok(piece.freeze())
    }
}

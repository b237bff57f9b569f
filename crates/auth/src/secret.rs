//! The shared cluster secret: the HMAC key every process of one cluster
//! holds. It never prints: `Debug` and `Display` show
//! `ClusterSecret(<redacted>)`, and no error carries its bytes.

use std::fmt;
use std::path::{Path, PathBuf};

/// The shortest secret accepted, in bytes. 16 bytes of a good random source
/// (or the base64 text of 12) are enough for an HMAC-SHA256 key; the
/// recommended `head -c 32 /dev/urandom | base64` gives 44.
pub const MIN_SECRET_LEN: usize = 16;

/// Why a cluster secret was refused. Names the file and what is wrong,
/// never the secret's content.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// The file could not be read (missing, permissions, a directory, …).
    #[error("cluster secret file {}: cannot read it: {source}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// The file holds too few bytes after its trailing newline is trimmed.
    #[error(
        "cluster secret file {}: holds {len} bytes (after trimming a trailing newline), \
         at least {MIN_SECRET_LEN} are required",
        path.display()
    )]
    FileTooShort {
        /// The file.
        path: PathBuf,
        /// How many bytes it held.
        len: usize,
    },
    /// Bytes given directly (not from a file) were too few.
    #[error("cluster secret: {len} bytes given, at least {MIN_SECRET_LEN} are required")]
    TooShort {
        /// How many bytes were given.
        len: usize,
    },
}

/// The shared cluster secret (config key `cluster.secret-file`).
///
/// The key of the HMAC-SHA256 that signs every RPC call and data
/// connection; see the [crate] docs. The file's bytes are the key as they are
/// (base64 text is fine and is not decoded); one trailing `\n` or `\r\n` is
/// trimmed, so `echo`-written and editor-saved files work.
#[derive(Clone, PartialEq, Eq)]
pub struct ClusterSecret(Vec<u8>);

impl ClusterSecret {
    /// Reads the secret from `path`.
    ///
    /// Refuses an unreadable file and one holding fewer than
    /// [`MIN_SECRET_LEN`] bytes. Warns (without failing) when the file is
    /// readable by its group or others.
    pub fn from_file(path: impl AsRef<Path>) -> Result<ClusterSecret, SecretError> {
        let path = path.as_ref();
        let bytes = read_trimmed(path).map_err(|source| SecretError::Unreadable {
            path: path.to_owned(),
            source,
        })?;
        if bytes.len() < MIN_SECRET_LEN {
            let len = bytes.len();
            // Dropped as a secret, so the bytes are zeroed.
            drop(ClusterSecret(bytes));
            return Err(SecretError::FileTooShort {
                path: path.to_owned(),
                len,
            });
        }
        warn_if_shared(path, "the cluster secret file");
        Ok(ClusterSecret(bytes))
    }

    /// A secret from bytes already in memory (tests, embedding). The bytes
    /// are taken as they are, without trimming.
    pub fn from_bytes(bytes: impl Into<Vec<u8>>) -> Result<ClusterSecret, SecretError> {
        let secret = ClusterSecret(bytes.into());
        if secret.0.len() < MIN_SECRET_LEN {
            return Err(SecretError::TooShort {
                len: secret.0.len(),
            });
        }
        Ok(secret)
    }

    /// The key bytes, for the HMAC only.
    pub(crate) fn key(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for ClusterSecret {
    /// Best effort: overwrite the key before the memory is freed.
    fn drop(&mut self) {
        self.0.fill(0);
        std::hint::black_box(&self.0);
    }
}

impl fmt::Debug for ClusterSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClusterSecret(<redacted>)")
    }
}

impl fmt::Display for ClusterSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClusterSecret(<redacted>)")
    }
}

/// The bytes of the secret file `path`, one trailing `\n` or `\r\n`
/// trimmed (so `echo`-written and editor-saved files work).
pub(crate) fn read_trimmed(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut bytes = std::fs::read(path)?;
    if bytes.last() == Some(&b'\n') {
        bytes.pop();
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
    }
    Ok(bytes)
}

/// Warns when the secret file `path` (`what` names it) is readable by its
/// group or others.
#[cfg(unix)]
pub(crate) fn warn_if_shared(path: &Path, what: &str) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(metadata) = std::fs::metadata(path) {
        let mode = metadata.permissions().mode();
        if mode & 0o077 != 0 {
            tracing::warn!(
                file = %path.display(),
                mode = format_args!("{:o}", mode & 0o777),
                "{what} is readable by its group or others; `chmod 600` it"
            );
        }
    }
}

#[cfg(not(unix))]
pub(crate) fn warn_if_shared(_path: &Path, _what: &str) {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const SECRET: &[u8] = b"correct-horse-battery-staple";

    fn file_with(content: &[u8]) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(content).unwrap();
        file
    }

    #[test]
    fn reads_the_file_and_trims_one_trailing_newline() {
        for content in [
            &b"correct-horse-battery-staple\n"[..],
            b"correct-horse-battery-staple\r\n",
        ] {
            let file = file_with(content);
            let secret = ClusterSecret::from_file(file.path()).unwrap();
            assert_eq!(secret.key(), SECRET);
        }
        let file = file_with(b"correct-horse-battery-staple\n\n");
        assert_eq!(
            ClusterSecret::from_file(file.path()).unwrap().key(),
            b"correct-horse-battery-staple\n"
        );
    }

    #[test]
    fn refuses_short_and_unreadable_files_naming_the_file_not_the_secret() {
        let file = file_with(b"short-secret\n");
        let error = ClusterSecret::from_file(file.path()).unwrap_err();
        let message = error.to_string();
        assert!(matches!(error, SecretError::FileTooShort { len: 12, .. }));
        assert!(
            message.contains(&file.path().display().to_string()),
            "{message}"
        );
        assert!(!message.contains("short-secret"), "{message}");

        let missing = file.path().with_extension("missing");
        let error = ClusterSecret::from_file(&missing).unwrap_err();
        assert!(matches!(error, SecretError::Unreadable { .. }));
        assert!(error.to_string().contains("cannot read it"));
    }

    #[test]
    fn never_prints_the_secret() {
        let secret = ClusterSecret::from_bytes(SECRET).unwrap();
        assert_eq!(format!("{secret:?}"), "ClusterSecret(<redacted>)");
        assert_eq!(secret.to_string(), "ClusterSecret(<redacted>)");
        assert!(matches!(
            ClusterSecret::from_bytes(&b"0123456789abcde"[..]),
            Err(SecretError::TooShort { len: 15 })
        ));
    }
}

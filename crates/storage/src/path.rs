//! [`StoragePath`]: a checked relative path inside a storage.

use std::fmt;
use std::str::FromStr;

/// A relative, `/`-separated path inside a [`CheckpointStorage`]
/// (`job-1f…/chk-42/_metadata`). Every segment is non-empty, at most
/// [`MAX_SEGMENT`] bytes, neither `.` nor `..`, so it cannot leave the
/// storage's root; and
/// made of ASCII letters, digits, `.`, `_` and `-` only, the characters
/// every storage keeps as they are (a local filesystem through
/// `object_store` cannot hold a name ending in `:` or in `#<digits>`, its
/// staging files' names; object stores encode `%`, `#`, spaces and more).
/// The empty path is the root itself.
///
/// [`CheckpointStorage`]: crate::CheckpointStorage
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StoragePath(String);

/// Why a text is not a [`StoragePath`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path:?} is not a storage path: {reason}")]
pub struct BadPath {
    /// The text (at most 200 characters of it).
    pub path: String,
    /// What is wrong.
    pub reason: &'static str,
}

impl StoragePath {
    /// The root.
    pub fn root() -> StoragePath {
        StoragePath::default()
    }

    /// `self/segment`.
    pub fn child(&self, segment: &str) -> Result<StoragePath, BadPath> {
        let joined = if self.0.is_empty() {
            segment.to_owned()
        } else {
            format!("{}/{segment}", self.0)
        };
        joined.parse()
    }

    /// The path as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The path above it (`None` for the root).
    pub fn parent(&self) -> Option<StoragePath> {
        if self.0.is_empty() {
            return None;
        }
        Some(match self.0.rsplit_once('/') {
            Some((parent, _)) => StoragePath(parent.to_owned()),
            None => StoragePath::root(),
        })
    }

    /// `self/relative`, `relative` checked as a path of its own.
    pub fn join(&self, relative: &str) -> Result<StoragePath, BadPath> {
        let relative: StoragePath = relative.parse()?;
        if self.0.is_empty() {
            return Ok(relative);
        }
        if relative.0.is_empty() {
            return Ok(self.clone());
        }
        Ok(StoragePath(format!("{}/{}", self.0, relative.0)))
    }

    /// Its segments.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('/').filter(|s| !s.is_empty())
    }
}

impl FromStr for StoragePath {
    type Err = BadPath;

    fn from_str(text: &str) -> Result<StoragePath, BadPath> {
        let bad = |reason| BadPath {
            path: text.chars().take(200).collect(),
            reason,
        };
        if text.is_empty() {
            return Ok(StoragePath::root());
        }
        if text.starts_with('/') {
            return Err(bad("it is absolute"));
        }
        for segment in text.split('/') {
            match segment {
                "" => return Err(bad("it has an empty segment")),
                "." | ".." => return Err(bad("it has a `.` or `..` segment")),
                s if s.len() > MAX_SEGMENT => {
                    return Err(bad("a segment is longer than 240 bytes"));
                }
                s if !s.bytes().all(portable) => {
                    return Err(bad(
                        "a segment has a character other than ASCII letters, digits, `.`, `_` and `-`",
                    ));
                }
                _ => {}
            }
        }
        Ok(StoragePath(text.to_owned()))
    }
}

/// The longest segment, in bytes: a file name may have 255 on most
/// filesystems, and `object_store` writes a file first under its name with
/// `#<n>` appended.
pub const MAX_SEGMENT: usize = 240;

/// The characters a segment may have.
fn portable(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-')
}

impl fmt::Display for StoragePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paths_inside_the_root_parse() {
        for ok in ["", "a", "job-1/chk-2/_metadata", "a.b/c-d_e"] {
            assert_eq!(ok.parse::<StoragePath>().map(|p| p.0), Ok(ok.to_owned()));
        }
        for (bad, reason) in [
            ("/etc/passwd", "absolute"),
            ("a//b", "empty segment"),
            ("a/", "empty segment"),
            ("../x", "`..`"),
            ("a/./b", "`.`"),
            ("a\\b", "ASCII letters"),
            ("a\nb", "ASCII letters"),
            ("chk-1#2", "ASCII letters"),
            ("job/colon:", "ASCII letters"),
            ("with space", "ASCII letters"),
            ("ünï", "ASCII letters"),
        ] {
            let error = bad.parse::<StoragePath>().expect_err(bad);
            assert!(error.to_string().contains(reason), "{bad:?}: {error}");
        }
        assert!("x".repeat(MAX_SEGMENT).parse::<StoragePath>().is_ok());
        let long = "x".repeat(MAX_SEGMENT + 1);
        assert!(long.parse::<StoragePath>().is_err());
        let chk = StoragePath::root()
            .child("job")
            .unwrap()
            .child("chk-1")
            .unwrap();
        assert_eq!(chk.as_str(), "job/chk-1");
        assert_eq!(chk.segments().collect::<Vec<_>>(), ["job", "chk-1"]);
        assert!(chk.child("..").is_err());
    }
}

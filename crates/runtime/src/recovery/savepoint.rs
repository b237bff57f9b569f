//! The rules of a savepoint request that need no I/O: where it goes, and
//! what its user is told it is.

use std::path::Path;

use crate::checkpoint::MetadataLocation;

/// Why a savepoint cannot be asked for.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SavepointTargetError {
    /// The directory named is relative.
    #[error(
        "the savepoint directory {0:?} is not an absolute path (it is a directory on the JobManager and every TaskManager)"
    )]
    NotAbsolute(String),
    /// No directory named and none configured.
    #[error(
        "no savepoint directory: name one (--savepoint-dir, target-directory) or set execution.checkpointing.savepoint-dir"
    )]
    None,
}

/// The directory a savepoint goes into: the one `given` (a `file://` URL
/// or an absolute path; blank is none), else `default`
/// (`execution.checkpointing.savepoint-dir`).
pub fn savepoint_target(
    given: Option<&str>,
    default: Option<&Path>,
) -> Result<String, SavepointTargetError> {
    match given.map(str::trim).filter(|t| !t.is_empty()) {
        Some(target) => {
            let path = target.strip_prefix("file://").unwrap_or(target);
            if !Path::new(path).is_absolute() {
                return Err(SavepointTargetError::NotAbsolute(target.to_owned()));
            }
            Ok(path.to_owned())
        }
        None => default
            .map(|dir| dir.display().to_string())
            .ok_or(SavepointTargetError::None),
    }
}

/// What a user is told a savepoint is: the directory of its `_metadata`.
pub fn savepoint_location(metadata: &MetadataLocation) -> String {
    Path::new(&metadata.0)
        .parent()
        .map_or(metadata.0.clone(), |d| d.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_directory_wins_and_must_be_absolute() {
        let default = Path::new("/sp");
        assert_eq!(
            savepoint_target(Some("file:///x/y"), Some(default)),
            Ok("/x/y".into())
        );
        assert_eq!(savepoint_target(Some(" /x "), None), Ok("/x".into()));
        assert_eq!(
            savepoint_target(Some("rel"), Some(default)),
            Err(SavepointTargetError::NotAbsolute("rel".into()))
        );
        assert_eq!(
            savepoint_target(Some("  "), Some(default)),
            Ok("/sp".into())
        );
        assert_eq!(
            savepoint_target(None, None),
            Err(SavepointTargetError::None)
        );
        assert_eq!(
            savepoint_location(&MetadataLocation("/sp/savepoint-j-4/_metadata".into())),
            "/sp/savepoint-j-4"
        );
    }
}

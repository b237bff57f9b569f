//! The rules of a savepoint request that need no I/O: where it goes, and
//! what its user is told it is.

use holdfast_types::Location;

use crate::checkpoint::MetadataLocation;

/// Why a savepoint cannot be asked for.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SavepointTargetError {
    /// The directory named is relative, or of a storage holdfast has not.
    #[error("the savepoint directory {0}")]
    Unusable(String),
    /// No directory named and none configured.
    #[error(
        "no savepoint directory: name one (--savepoint-dir, target-directory) or set execution.checkpointing.savepoint-dir"
    )]
    None,
}

/// The directory a savepoint goes into: the one `given` (an absolute
/// path, a `file://` URL or `s3://bucket/prefix`; blank is none), else
/// `default` (`execution.checkpointing.savepoint-dir`).
pub fn savepoint_target(
    given: Option<&str>,
    default: Option<&Location>,
) -> Result<Location, SavepointTargetError> {
    match given.map(str::trim).filter(|t| !t.is_empty()) {
        Some(target) => target.parse().map_err(|e: holdfast_types::LocationError| {
            SavepointTargetError::Unusable(e.to_string())
        }),
        None => default.cloned().ok_or(SavepointTargetError::None),
    }
}

/// What a user is told a savepoint is: the directory of its `_metadata`.
pub fn savepoint_location(metadata: &MetadataLocation) -> String {
    metadata
        .0
        .parse::<Location>()
        .ok()
        .and_then(|file| file.parent())
        .map_or(metadata.0.clone(), |dir| dir.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_directory_wins_and_must_be_absolute() {
        let default: Location = "/sp".parse().unwrap();
        let target = |given| savepoint_target(given, Some(&default)).map(|l| l.to_string());
        assert_eq!(target(Some("file:///x/y")), Ok("/x/y".into()));
        assert_eq!(
            target(Some(" s3://bucket/sp ")),
            Ok("s3://bucket/sp".into())
        );
        assert_eq!(
            savepoint_target(Some(" /x "), None).map(|l| l.to_string()),
            Ok("/x".into())
        );
        assert!(matches!(
            target(Some("rel")),
            Err(SavepointTargetError::Unusable(message)) if message.contains("not an absolute path")
        ));
        assert!(matches!(
            target(Some("hdfs://nn/x")),
            Err(SavepointTargetError::Unusable(_))
        ));
        assert_eq!(target(Some("  ")), Ok("/sp".into()));
        assert_eq!(
            savepoint_target(None, None),
            Err(SavepointTargetError::None)
        );
        assert_eq!(
            savepoint_location(&MetadataLocation("/sp/savepoint-j-4/_metadata".into())),
            "/sp/savepoint-j-4"
        );
        assert_eq!(
            savepoint_location(&MetadataLocation(
                "s3://b-1/sp/savepoint-j-4/_metadata".into()
            )),
            "s3://b-1/sp/savepoint-j-4"
        );
    }
}

//! Node paths: ZooKeeper's validation rules and parent/child arithmetic.
//!
//! A valid path is absolute (`/a/b`), has no trailing slash (except the root
//! `/`), no empty, `.` or `..` segments, and no control or reserved
//! characters (ZooKeeper's `PathUtils.validatePath`).

use crate::backend::{CoordError, CreateMode};

/// The root node's path.
pub(crate) const ROOT: &str = "/";

/// Checks `path` against ZooKeeper's rules; the error says what is wrong.
pub(crate) fn validate(path: &str) -> Result<(), CoordError> {
    let invalid = |why: &str| Err(CoordError::Other(format!("invalid path {path:?}: {why}")));
    if path.is_empty() {
        return invalid("it is empty");
    }
    if !path.starts_with('/') {
        return invalid("it must start with '/'");
    }
    if path == ROOT {
        return Ok(());
    }
    if path.ends_with('/') {
        return invalid("it must not end with '/'");
    }
    for segment in path[1..].split('/') {
        match segment {
            "" => return invalid("it has an empty segment ('//')"),
            "." | ".." => return invalid("relative segments ('.', '..') are not allowed"),
            _ => {}
        }
    }
    if let Some(bad) = path.chars().find(|&c| forbidden(c)) {
        return invalid(&format!("character {:#06x} is not allowed", u32::from(bad)));
    }
    Ok(())
}

/// Checks the path of a node to create in `mode`: a sequential path may
/// end in `/` (the node's name is then only its sequence number).
pub(crate) fn validate_create(path: &str, mode: CreateMode) -> Result<(), CoordError> {
    if mode == CreateMode::EphemeralSequential {
        validate(&format!("{path}{}", sequence_suffix(0)))
    } else {
        validate(path)
    }
}

/// The characters ZooKeeper refuses in paths.
fn forbidden(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{e000}'..='\u{f8ff}' | '\u{fff0}'..='\u{ffff}')
}

/// Splits a path into its parent and last segment: `/a/b` → (`/a`, `b`),
/// `/a` → (`/`, `a`). The root has no parent. Also accepts a sequential
/// prefix ending in `/` (`/a/` → (`/a`, ``)).
pub(crate) fn split(path: &str) -> Option<(&str, &str)> {
    let slash = path.rfind('/')?;
    if path == ROOT {
        return None;
    }
    let parent = if slash == 0 { ROOT } else { &path[..slash] };
    Some((parent, &path[slash + 1..]))
}

/// `parent` + `/` + `name`.
pub(crate) fn join(parent: &str, name: &str) -> String {
    if parent == ROOT {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// The proper ancestors of `path` below the root, outermost first:
/// `/a/b/c` → [`/a`, `/a/b`].
pub(crate) fn ancestors(path: &str) -> Vec<String> {
    let mut result = Vec::new();
    let mut current = path;
    while let Some((parent, _)) = split(current) {
        if parent == ROOT {
            break;
        }
        result.push(parent.to_owned());
        current = parent;
    }
    result.reverse();
    result
}

/// The 10-digit, zero-padded suffix of a sequential node.
pub(crate) fn sequence_suffix(counter: i32) -> String {
    format!("{counter:010}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(path: &str) -> String {
        match validate(path) {
            Err(CoordError::Other(message)) => message,
            other => panic!("{path:?} should be invalid, got {other:?}"),
        }
    }

    #[test]
    fn valid_paths_pass() {
        for path in [
            "/",
            "/a",
            "/a/b-c_d.e",
            "/holdfast/job/leader/latch",
            "/ünïcode",
        ] {
            assert_eq!(validate(path), Ok(()), "{path}");
        }
    }

    #[test]
    fn invalid_paths_say_why() {
        assert!(message("").contains("empty"));
        assert!(message("a/b").contains("start with '/'"));
        assert!(message("/a/").contains("end with '/'"));
        assert!(message("/a//b").contains("empty segment"));
        assert!(message("/a/./b").contains("relative"));
        assert!(message("/a/..").contains("relative"));
        assert!(message("/a\u{0}b").contains("0x0000"));
        assert_eq!(
            validate_create("/a/", CreateMode::EphemeralSequential),
            Ok(())
        );
        assert!(validate_create("/a/", CreateMode::Persistent).is_err());
    }

    #[test]
    fn parents_ancestors_and_suffixes() {
        assert_eq!(split("/a/b"), Some(("/a", "b")));
        assert_eq!(split("/a"), Some(("/", "a")));
        assert_eq!(split("/a/"), Some(("/a", "")));
        assert_eq!(split("/"), None);
        assert_eq!(join("/", "a"), "/a");
        assert_eq!(join("/a", "b"), "/a/b");
        assert_eq!(
            ancestors("/a/b/c"),
            vec!["/a".to_owned(), "/a/b".to_owned()]
        );
        assert!(ancestors("/a").is_empty());
        assert_eq!(sequence_suffix(3), "0000000003");
    }
}

//! Who signs a call: the calling process's id.

use std::fmt;
use std::str::FromStr;

/// The longest peer id, in bytes.
pub const MAX_PEER_ID_LEN: usize = 128;

/// Why a peer id was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PeerIdError {
    /// The id was empty.
    #[error("peer id is empty")]
    Empty,
    /// The id was longer than [`MAX_PEER_ID_LEN`].
    #[error("peer id has {len} bytes, at most {MAX_PEER_ID_LEN} are allowed")]
    TooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// A character outside `[A-Za-z0-9._-]`.
    #[error(
        "peer id has a forbidden character {found:?} (allowed: ASCII letters, digits, '.', '_', '-')"
    )]
    ForbiddenChar {
        /// The first offending character.
        found: char,
    },
}

/// The id a caller signs its calls with: its process id (a TaskManager's
/// id, a JobManager's contender id), 1 to [`MAX_PEER_ID_LEN`] characters of
/// `[A-Za-z0-9._-]`.
///
/// Enforced by [`PeerId::new`], the only constructor; the restricted
/// alphabet keeps the id unambiguous inside the auth header and safe to log.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PeerId(String);

impl PeerId {
    /// Checks `id` and wraps it.
    pub fn new(id: impl Into<String>) -> Result<PeerId, PeerIdError> {
        let id = id.into();
        if id.is_empty() {
            return Err(PeerIdError::Empty);
        }
        if let Some(found) = id
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
        {
            return Err(PeerIdError::ForbiddenChar { found });
        }
        if id.len() > MAX_PEER_ID_LEN {
            return Err(PeerIdError::TooLong { len: id.len() });
        }
        Ok(PeerId(id))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PeerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for PeerId {
    type Err = PeerIdError;

    fn from_str(s: &str) -> Result<PeerId, PeerIdError> {
        PeerId::new(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_process_ids_and_refuses_everything_else() {
        assert_eq!(PeerId::new("tm-host.1_a").unwrap().as_str(), "tm-host.1_a");
        assert_eq!(PeerId::new(""), Err(PeerIdError::Empty));
        assert_eq!(
            PeerId::new("tm 1"),
            Err(PeerIdError::ForbiddenChar { found: ' ' })
        );
        assert_eq!(
            PeerId::new("tm/ü"),
            Err(PeerIdError::ForbiddenChar { found: '/' })
        );
        assert!(PeerId::new("a".repeat(MAX_PEER_ID_LEN)).is_ok());
        assert_eq!(
            "a".repeat(MAX_PEER_ID_LEN + 1).parse::<PeerId>(),
            Err(PeerIdError::TooLong { len: 129 })
        );
    }
}

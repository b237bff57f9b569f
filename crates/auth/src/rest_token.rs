//! The REST API's credential for calls that change a job: a bearer token
//! read from a file (`security.rest.token-file`), [`RestToken`]. The
//! JobManager compares what a call presents with it in constant time
//! ([`RestToken::check`]); holdfast's client sends it
//! ([`RestToken::authorization`]). It never prints.

use std::fmt;
use std::path::{Path, PathBuf};

use subtle::ConstantTimeEq;

/// The shortest token accepted, in bytes (as for the cluster secret:
/// `head -c 32 /dev/urandom | base64` gives 44).
pub const MIN_TOKEN_LEN: usize = 16;

/// Why a token file was refused: names the file and what is wrong, never
/// the token.
#[derive(Debug, thiserror::Error)]
pub enum RestTokenError {
    /// The file could not be read.
    #[error("REST token file {}: cannot read it: {source}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// Too few bytes after a trailing newline is trimmed.
    #[error(
        "REST token file {}: holds {len} bytes (after trimming a trailing newline), at least \
         {MIN_TOKEN_LEN} are required",
        path.display()
    )]
    TooShort {
        /// The file.
        path: PathBuf,
        /// How many bytes it held.
        len: usize,
    },
    /// A byte an HTTP header cannot carry (a token is sent as
    /// `Authorization: Bearer TOKEN`).
    #[error(
        "REST token file {}: byte {position} is not printable ASCII; use printable text such \
         as base64 (`head -c 32 /dev/urandom | base64`)",
        path.display()
    )]
    NotPrintable {
        /// The file.
        path: PathBuf,
        /// Where the first such byte is (0-based).
        position: usize,
    },
}

/// Why a call's credential was refused (never what it held).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenRefusal {
    /// No `Authorization` header.
    Missing,
    /// An `Authorization` header that is not `Bearer TOKEN`.
    NotBearer,
    /// A bearer token that is not the configured one.
    Wrong,
}

impl TokenRefusal {
    /// A short name, for logs and metric labels.
    pub fn name(self) -> &'static str {
        match self {
            TokenRefusal::Missing => "missing",
            TokenRefusal::NotBearer => "not-bearer",
            TokenRefusal::Wrong => "wrong",
        }
    }
}

impl fmt::Display for TokenRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TokenRefusal::Missing => "no Authorization header",
            TokenRefusal::NotBearer => "the Authorization header is not `Bearer TOKEN`",
            TokenRefusal::Wrong => "the bearer token is not this cluster's",
        })
    }
}

/// The REST API's bearer token.
#[derive(Clone, PartialEq, Eq)]
pub struct RestToken(Vec<u8>);

impl RestToken {
    /// Reads it from `path`: one trailing `\n` or `\r\n` is trimmed; at
    /// least [`MIN_TOKEN_LEN`] printable ASCII bytes. Warns when the file is
    /// readable by its group or others.
    pub fn from_file(path: impl AsRef<Path>) -> Result<RestToken, RestTokenError> {
        let path = path.as_ref();
        let bytes =
            crate::secret::read_trimmed(path).map_err(|source| RestTokenError::Unreadable {
                path: path.to_owned(),
                source,
            })?;
        // Held as a token from here, so the bytes are zeroed when dropped.
        let token = RestToken(bytes);
        if token.0.len() < MIN_TOKEN_LEN {
            return Err(RestTokenError::TooShort {
                path: path.to_owned(),
                len: token.0.len(),
            });
        }
        if let Some(position) = token.0.iter().position(|b| !b.is_ascii_graphic()) {
            return Err(RestTokenError::NotPrintable {
                path: path.to_owned(),
                position,
            });
        }
        crate::secret::warn_if_shared(path, "the REST token file");
        Ok(token)
    }

    /// Whether `authorization` (a call's `Authorization` header, if any)
    /// carries this token, compared in constant time.
    pub fn check(&self, authorization: Option<&[u8]>) -> Result<(), TokenRefusal> {
        let header = authorization.ok_or(TokenRefusal::Missing)?;
        let presented = header
            .strip_prefix(b"Bearer ")
            .or_else(|| header.strip_prefix(b"bearer "))
            .ok_or(TokenRefusal::NotBearer)?;
        if bool::from(presented.ct_eq(&self.0)) {
            Ok(())
        } else {
            Err(TokenRefusal::Wrong)
        }
    }

    /// The `Authorization` header value that carries it.
    pub fn authorization(&self) -> String {
        // Printable ASCII, checked when it was read.
        format!("Bearer {}", String::from_utf8_lossy(&self.0))
    }
}

impl Drop for RestToken {
    /// Best effort: overwrite the token before the memory is freed.
    fn drop(&mut self) {
        self.0.fill(0);
        std::hint::black_box(&self.0);
    }
}

impl fmt::Debug for RestToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RestToken(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(content: &[u8]) -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), content).unwrap();
        file
    }

    #[test]
    fn a_call_is_let_through_only_with_this_token() {
        let f = file(b"0123456789abcdefXYZ\n");
        let token = RestToken::from_file(f.path()).unwrap();
        assert_eq!(token.check(Some(b"Bearer 0123456789abcdefXYZ")), Ok(()));
        assert_eq!(token.check(None), Err(TokenRefusal::Missing));
        assert_eq!(
            token.check(Some(b"Basic 0123456789abcdefXYZ")),
            Err(TokenRefusal::NotBearer)
        );
        assert_eq!(
            token.check(Some(b"Bearer 0123456789abcdefXY")),
            Err(TokenRefusal::Wrong),
            "a prefix is not the token"
        );
        assert_eq!(
            token.check(Some(b"Bearer 0123456789abcdefXYZZ")),
            Err(TokenRefusal::Wrong)
        );
        assert_eq!(token.authorization(), "Bearer 0123456789abcdefXYZ");
        assert_eq!(format!("{token:?}"), "RestToken(<redacted>)");
    }

    #[test]
    fn bad_files_are_named_and_the_token_never_shown() {
        let short = file(b"tooshort\r\n");
        let error = RestToken::from_file(short.path()).unwrap_err().to_string();
        assert!(
            error.contains("8 bytes") && !error.contains("tooshort"),
            "{error}"
        );
        let spaced = file(b"0123456789 abcdef");
        let error = RestToken::from_file(spaced.path()).unwrap_err().to_string();
        assert!(
            error.contains("byte 10") && !error.contains("abcdef"),
            "{error}"
        );
        let missing = RestToken::from_file("/nonexistent/token").unwrap_err();
        assert!(missing.to_string().contains("/nonexistent/token"));
    }
}

//! [`DigestCredentials`]: the `user:password` of ZooKeeper's digest scheme,
//! read from a file and never shown.

use std::fmt;
use std::path::Path;

use crate::error::ZkConfigError;

/// A user and password for ZooKeeper's `digest` authentication scheme.
///
/// The password never appears in `Debug` or `Display` (both show
/// `user:***`), in errors or in logs. Clients that authenticate with the same
/// credentials share one identity: under
/// [`AclMode::Creator`](holdfast_ha::config::AclMode::Creator) they, and only
/// they, may change each other's nodes.
#[derive(Clone, PartialEq, Eq)]
pub struct DigestCredentials {
    user: String,
    password: String,
}

/// Why text is not digest credentials. Never quotes the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CredentialsError {
    /// No `:` between user and password.
    #[error("expected one line of the form user:password")]
    NotUserColonPassword,
    /// The user is empty.
    #[error("the user is empty")]
    EmptyUser,
    /// The user holds a `:` (ZooKeeper splits at the first one).
    #[error("the user contains ':'")]
    ColonInUser,
    /// The password is empty.
    #[error("the password is empty")]
    EmptyPassword,
    /// A line break or another control character (more than one line?).
    #[error("the credentials hold control characters (more than one line?)")]
    ControlCharacters,
}

impl DigestCredentials {
    /// Credentials from their parts.
    pub fn new(
        user: impl Into<String>,
        password: impl Into<String>,
    ) -> Result<Self, CredentialsError> {
        let (user, password) = (user.into(), password.into());
        if user.is_empty() {
            return Err(CredentialsError::EmptyUser);
        }
        if user.contains(':') {
            return Err(CredentialsError::ColonInUser);
        }
        if password.is_empty() {
            return Err(CredentialsError::EmptyPassword);
        }
        if user.chars().chain(password.chars()).any(char::is_control) {
            return Err(CredentialsError::ControlCharacters);
        }
        Ok(DigestCredentials { user, password })
    }

    /// Parses `user:password` (surrounding whitespace is ignored; the
    /// password may itself contain `:`).
    pub fn parse(text: &str) -> Result<Self, CredentialsError> {
        let text = text.trim();
        let (user, password) = text
            .split_once(':')
            .ok_or(CredentialsError::NotUserColonPassword)?;
        DigestCredentials::new(user, password)
    }

    /// Reads credentials from `file`, which holds `user:password`.
    pub fn from_file(file: &Path) -> Result<Self, ZkConfigError> {
        let text = std::fs::read_to_string(file).map_err(|source| {
            ZkConfigError::CredentialsUnreadable {
                file: file.to_owned(),
                source,
            }
        })?;
        DigestCredentials::parse(&text).map_err(|reason| ZkConfigError::CredentialsMalformed {
            file: file.to_owned(),
            reason,
        })
    }

    /// The user.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// What the `digest` scheme's auth packet carries: `user:password`.
    pub(crate) fn auth_bytes(&self) -> Vec<u8> {
        format!("{}:{}", self.user, self.password).into_bytes()
    }
}

impl fmt::Debug for DigestCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DigestCredentials({}:***)", self.user)
    }
}

impl fmt::Display for DigestCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:***", self.user)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn parses_trimmed_user_and_password_with_colons() {
        let credentials = DigestCredentials::parse("  flink:s3cr:et \n").unwrap();
        assert_eq!(credentials.user(), "flink");
        assert_eq!(credentials.auth_bytes(), b"flink:s3cr:et");
    }

    #[test]
    fn the_password_is_never_shown() {
        let credentials = DigestCredentials::parse("flink:hunter2").unwrap();
        for shown in [
            format!("{credentials:?}"),
            credentials.to_string(),
            format!("{credentials:#?}"),
        ] {
            assert!(!shown.contains("hunter2"), "{shown}");
            assert!(shown.contains("flink:***"), "{shown}");
        }
    }

    #[test]
    fn malformed_credentials_are_rejected_without_quoting_them() {
        for text in ["", "hunter2", ":hunter2", "flink:", "fl:ink\nmore:lines"] {
            let reason = DigestCredentials::parse(text).unwrap_err().to_string();
            assert!(!reason.contains("hunter2"), "{reason}");
        }
    }

    #[test]
    fn file_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let error = DigestCredentials::from_file(&missing)
            .unwrap_err()
            .to_string();
        assert!(error.contains(&missing.display().to_string()), "{error}");

        let bad = dir.path().join("bad");
        std::fs::File::create(&bad)
            .unwrap()
            .write_all(b"hunter2\n")
            .unwrap();
        let error = DigestCredentials::from_file(&bad).unwrap_err().to_string();
        assert!(error.contains(&bad.display().to_string()), "{error}");
        assert!(!error.contains("hunter2"), "{error}");

        let good = dir.path().join("good");
        std::fs::File::create(&good)
            .unwrap()
            .write_all(b"flink:hunter2\n")
            .unwrap();
        assert_eq!(DigestCredentials::from_file(&good).unwrap().user(), "flink");
    }
}

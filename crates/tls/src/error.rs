//! [`TlsError`]: why a TLS identity, trust or setting cannot be used. Every
//! variant names the configuration key or file at fault and never holds
//! key material.

use std::path::PathBuf;
use std::time::SystemTime;

/// Why TLS cannot be set up (at start) or reloaded (the old identity then
/// stays in use).
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file named in the configuration cannot be read.
    #[error("cannot read the {what} file {path} ({key}): {source}")]
    Unreadable {
        /// What the file should hold ("certificate", "private key", "CA").
        what: &'static str,
        /// The configuration key that names it.
        key: String,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file holds no usable PEM block of the expected kind.
    #[error("the {what} file {path} ({key}) holds no PEM {expected}: {reason}")]
    NoPem {
        /// What the file should hold.
        what: &'static str,
        /// The configuration key that names it.
        key: String,
        /// The file.
        path: PathBuf,
        /// The PEM label looked for.
        expected: &'static str,
        /// What was wrong (never the file's content).
        reason: String,
    },
    /// Two keys that say the same thing are both set.
    #[error("{first} and {second} are both set; set one: a keystore replaces the PEM files")]
    Conflict {
        /// One key.
        first: String,
        /// The other.
        second: String,
    },
    /// A PKCS#12 store cannot be opened or lacks what it should hold.
    #[error("the {what} {path} ({key}) cannot be used: {reason}")]
    Store {
        /// `keystore` or `truststore`.
        what: &'static str,
        /// The configuration key that names it.
        key: String,
        /// The file.
        path: PathBuf,
        /// Why (never the password).
        reason: String,
    },
    /// A required key is not set.
    #[error("{key} must be set: {why}")]
    Missing {
        /// The key.
        key: String,
        /// Why it is needed.
        why: &'static str,
    },
    /// A certificate cannot be parsed as X.509.
    #[error("the certificate in {path} is not valid X.509: {reason}")]
    BadCertificate {
        /// The file.
        path: PathBuf,
        /// The parser's complaint.
        reason: String,
    },
    /// The private key does not belong to the certificate, or rustls
    /// refuses it.
    #[error(
        "the private key in {key_path} cannot be used with the certificate in {cert_path}: {reason}"
    )]
    KeyMismatch {
        /// The certificate file.
        cert_path: PathBuf,
        /// The key file.
        key_path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The own certificate is outside its validity period.
    #[error("the certificate in {path} is {state}: valid from {not_before} to {not_after} ")]
    OutsideValidity {
        /// The file.
        path: PathBuf,
        /// `expired` or `not yet valid`.
        state: &'static str,
        /// Its validity, as `YYYY-MM-DDTHH:MM:SSZ`.
        not_before: String,
        /// Its validity, as `YYYY-MM-DDTHH:MM:SSZ`.
        not_after: String,
    },
    /// A setting's value is not understood.
    #[error("{key} = {value:?}: {reason}")]
    BadSetting {
        /// The key.
        key: &'static str,
        /// The value given.
        value: String,
        /// What is accepted.
        reason: String,
    },
    /// rustls refused the assembled configuration.
    #[error("cannot build the TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
    /// The trust store cannot verify certificates.
    #[error("cannot verify certificates with the CA file {path}: {reason}")]
    Trust {
        /// The CA file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// `time` as `YYYY-MM-DDTHH:MM:SSZ`, for messages.
pub(crate) fn utc(time: SystemTime) -> String {
    humantime::format_rfc3339_seconds(time).to_string()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn times_read_as_utc_dates() {
        let at = |secs| utc(SystemTime::UNIX_EPOCH + Duration::from_secs(secs));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_796_083_199), "2026-11-30T23:59:59Z");
    }
}

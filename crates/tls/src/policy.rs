//! [`TlsPolicy`]: what every TLS link of a process allows, as a value —
//! Flink's `security.ssl.protocol`, `security.ssl.algorithms` and
//! `security.ssl.verify-hostname` — and the rustls crypto provider (ring)
//! it selects.

use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::{ProtocolVersion, SupportedCipherSuite, SupportedProtocolVersion};

use crate::error::TlsError;

/// Flink's key for the protocol versions.
pub const PROTOCOL_KEY: &str = "security.ssl.protocol";
/// Flink's key for the cipher suites.
pub const ALGORITHMS_KEY: &str = "security.ssl.algorithms";

/// The protocol versions and cipher suites allowed, and whether a server's
/// certificate must name the host dialled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsPolicy {
    /// Allowed versions (never empty).
    pub versions: Vec<TlsVersion>,
    /// Allowed cipher suites by IANA name; empty: ring's defaults (all
    /// AEAD with forward secrecy).
    pub cipher_suites: Vec<String>,
    /// Whether a client checks that the server's certificate is for the
    /// host it dialled (`security.ssl.verify-hostname`, default true). The
    /// chain is always verified against the configured CA.
    pub verify_hostname: bool,
}

impl Default for TlsPolicy {
    fn default() -> Self {
        TlsPolicy {
            versions: vec![TlsVersion::Tls12, TlsVersion::Tls13],
            cipher_suites: Vec::new(),
            verify_hostname: true,
        }
    }
}

/// A TLS protocol version rustls speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsVersion {
    /// `TLSv1.2`.
    Tls12,
    /// `TLSv1.3`.
    Tls13,
}

impl TlsVersion {
    /// Its name as in Flink's configuration.
    pub fn name(self) -> &'static str {
        match self {
            TlsVersion::Tls12 => "TLSv1.2",
            TlsVersion::Tls13 => "TLSv1.3",
        }
    }

    fn rustls(self) -> &'static SupportedProtocolVersion {
        match self {
            TlsVersion::Tls12 => &rustls::version::TLS12,
            TlsVersion::Tls13 => &rustls::version::TLS13,
        }
    }
}

/// Parses `security.ssl.protocol`: one version or a comma-separated list
/// (`TLSv1.2`, `TLSv1.3`). Older versions are refused by name.
pub fn parse_protocols(value: &str) -> Result<Vec<TlsVersion>, TlsError> {
    let bad = |reason: String| TlsError::BadSetting {
        key: PROTOCOL_KEY,
        value: value.to_owned(),
        reason,
    };
    let mut versions = Vec::new();
    for name in value.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let version = match name {
            "TLSv1.2" => TlsVersion::Tls12,
            "TLSv1.3" => TlsVersion::Tls13,
            "TLS" | "TLSv1" | "TLSv1.1" | "SSLv3" | "SSLv2" => {
                return Err(bad(format!(
                    "{name} is not offered (broken or deprecated); use TLSv1.2 and/or TLSv1.3"
                )));
            }
            other => {
                return Err(bad(format!(
                    "unknown protocol {other:?}; use TLSv1.2 and/or TLSv1.3, comma-separated"
                )));
            }
        };
        if !versions.contains(&version) {
            versions.push(version);
        }
    }
    if versions.is_empty() {
        return Err(bad("no protocol given; use TLSv1.2 and/or TLSv1.3".into()));
    }
    Ok(versions)
}

/// Parses `security.ssl.algorithms`: comma-separated IANA cipher-suite
/// names, each one ring offers (checked here, so that a typo or one of
/// Flink's defaults that rustls refuses, such as
/// `TLS_RSA_WITH_AES_128_CBC_SHA`, is named at start).
pub fn parse_algorithms(value: &str) -> Result<Vec<String>, TlsError> {
    let offered = offered_suites();
    let mut names = Vec::new();
    for name in value.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if !offered.iter().any(|suite| iana_name(*suite) == name) {
            let known: Vec<String> = offered.iter().map(|s| iana_name(*s)).collect();
            return Err(TlsError::BadSetting {
                key: ALGORITHMS_KEY,
                value: value.to_owned(),
                reason: format!(
                    "{name} is not a cipher suite holdfast offers (no CBC, RSA key exchange or \
                     other suite without forward secrecy); offered: {}",
                    known.join(", ")
                ),
            });
        }
        if !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
    }
    Ok(names)
}

/// The suites of the ring provider.
fn offered_suites() -> Vec<SupportedCipherSuite> {
    rustls::crypto::ring::default_provider().cipher_suites
}

/// A suite's IANA name (`TLS_AES_128_GCM_SHA256`,
/// `TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256`, …), as Java and Flink spell it.
pub(crate) fn iana_name(suite: SupportedCipherSuite) -> String {
    let debug = format!("{:?}", suite.suite());
    match debug.strip_prefix("TLS13_") {
        Some(rest) => format!("TLS_{rest}"),
        None => debug,
    }
}

impl TlsPolicy {
    /// The ring provider restricted to the allowed suites.
    pub(crate) fn provider(&self) -> Arc<CryptoProvider> {
        let mut provider = rustls::crypto::ring::default_provider();
        if !self.cipher_suites.is_empty() {
            provider
                .cipher_suites
                .retain(|suite| self.cipher_suites.contains(&iana_name(*suite)));
        }
        Arc::new(provider)
    }

    /// The allowed versions, as rustls takes them.
    pub(crate) fn rustls_versions(&self) -> Vec<&'static SupportedProtocolVersion> {
        self.versions.iter().map(|v| v.rustls()).collect()
    }

    /// Checks that the versions and suites leave something to speak: a
    /// suite list of TLS 1.3 suites only with `TLSv1.2` only cannot
    /// connect to anyone.
    pub fn validate(&self) -> Result<(), TlsError> {
        if self.cipher_suites.is_empty() {
            return Ok(());
        }
        let provider = self.provider();
        let usable = provider.cipher_suites.iter().any(|suite| {
            let version = match suite.version().version {
                ProtocolVersion::TLSv1_3 => TlsVersion::Tls13,
                _ => TlsVersion::Tls12,
            };
            self.versions.contains(&version)
        });
        if usable {
            return Ok(());
        }
        let versions: Vec<&str> = self.versions.iter().map(|v| v.name()).collect();
        Err(TlsError::BadSetting {
            key: ALGORITHMS_KEY,
            value: self.cipher_suites.join(","),
            reason: format!(
                "none of these cipher suites works with {PROTOCOL_KEY} = {}",
                versions.join(",")
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols_are_flinks_names_and_old_ones_are_refused_by_name() {
        assert_eq!(parse_protocols("TLSv1.2").unwrap(), vec![TlsVersion::Tls12]);
        assert_eq!(
            parse_protocols(" TLSv1.3 , TLSv1.2,TLSv1.3").unwrap(),
            vec![TlsVersion::Tls13, TlsVersion::Tls12]
        );
        let old = parse_protocols("TLSv1.1").unwrap_err().to_string();
        assert!(
            old.contains("security.ssl.protocol") && old.contains("TLSv1.1"),
            "{old}"
        );
        assert!(parse_protocols("tls1.2").is_err());
        assert!(parse_protocols(" , ").is_err());
    }

    #[test]
    fn algorithms_must_be_suites_ring_offers() {
        let names =
            parse_algorithms("TLS_AES_128_GCM_SHA256, TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384")
                .unwrap();
        assert_eq!(names.len(), 2);
        // Flink's own default is a CBC suite with RSA key exchange.
        let flink_default = parse_algorithms("TLS_RSA_WITH_AES_128_CBC_SHA")
            .unwrap_err()
            .to_string();
        assert!(
            flink_default.contains("TLS_RSA_WITH_AES_128_CBC_SHA")
                && flink_default.contains("TLS_AES_256_GCM_SHA384"),
            "{flink_default}"
        );
    }

    #[test]
    fn a_policy_restricted_to_suites_of_another_version_is_refused() {
        let policy = TlsPolicy {
            versions: vec![TlsVersion::Tls12],
            cipher_suites: vec!["TLS_AES_128_GCM_SHA256".into()],
            verify_hostname: true,
        };
        assert!(policy.validate().is_err());
        let both = TlsPolicy {
            versions: vec![TlsVersion::Tls12, TlsVersion::Tls13],
            ..policy
        };
        both.validate().unwrap();
        assert_eq!(both.provider().cipher_suites.len(), 1);
    }
}

//! [`SslConfig`]: `security.ssl.*` — TLS on the internal links and on the
//! REST API, Flink's switches and policy keys with holdfast's PEM file keys
//! — and [`ReadAccess`] (`security.rest.read-access`).

use std::path::PathBuf;
use std::time::Duration;

use holdfast_tls::{ClientCertificates, PemFiles, TlsPolicy};

use crate::error::{ConfigError, ValueError};
use crate::keys::*;

/// The PEM files of one link.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PemPaths {
    /// `<prefix>.pem.certificate`.
    pub certificate: Option<PathBuf>,
    /// `<prefix>.pem.key`.
    pub key: Option<PathBuf>,
    /// `<prefix>.pem.ca`.
    pub ca: Option<PathBuf>,
}

/// `security.ssl.*`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SslConfig {
    /// `security.ssl.internal.enabled` (default false): mutual TLS on RPC
    /// and the data exchange.
    pub internal_enabled: bool,
    /// `security.ssl.internal.pem.*`.
    pub internal: PemPaths,
    /// `security.ssl.rest.enabled` (default false): HTTPS for the REST API
    /// and dashboard.
    pub rest_enabled: bool,
    /// `security.ssl.rest.authentication-enabled` (default false): REST
    /// clients must present a certificate signed by the REST CA.
    pub rest_authentication: bool,
    /// `security.ssl.rest.pem.*`.
    pub rest: PemPaths,
    /// `security.ssl.protocol`, `security.ssl.algorithms`,
    /// `security.ssl.verify-hostname`.
    pub policy: TlsPolicy,
    /// `security.ssl.reload-interval` (default 30 s): how often the files
    /// are checked for changes (also on SIGHUP).
    pub reload_interval: Duration,
    /// `security.ssl.expiry-warning` (default 30 days): how long before its
    /// end a certificate is announced in the log.
    pub expiry_warning: Duration,
}

impl Default for SslConfig {
    fn default() -> Self {
        SslConfig {
            internal_enabled: false,
            internal: PemPaths::default(),
            rest_enabled: false,
            rest_authentication: false,
            rest: PemPaths::default(),
            policy: TlsPolicy::default(),
            reload_interval: Duration::from_secs(30),
            expiry_warning: Duration::from_secs(30 * 86_400),
        }
    }
}

/// `security.rest.read-access`: who may read through the REST API.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReadAccess {
    /// Anyone who reaches the port (default).
    #[default]
    Open,
    /// Callers with a credential: a verified client certificate or the
    /// bearer token.
    Authenticated,
}

impl SslConfig {
    /// The internal links' files, for [`holdfast_tls`].
    pub fn internal_files(&self) -> PemFiles {
        files("security.ssl.internal", &self.internal)
    }

    /// The REST API's files, for [`holdfast_tls`].
    pub fn rest_files(&self) -> PemFiles {
        files("security.ssl.rest", &self.rest)
    }

    /// What a REST server asks of its clients: required with
    /// `authentication-enabled`, optional when a REST CA is configured (a
    /// client certificate is then a credential), else nothing.
    pub fn rest_client_certificates(&self) -> ClientCertificates {
        match (self.rest_authentication, self.rest.ca.is_some()) {
            (true, _) => ClientCertificates::Required,
            (false, true) => ClientCertificates::Optional,
            (false, false) => ClientCertificates::Ignored,
        }
    }

    /// The rules between the keys: a link switched on has its files.
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        let need = |on: bool, enabled: &'static str, path: &Option<PathBuf>, key: &'static str| {
            if on && path.is_none() {
                return Err(ConfigError::SslIncomplete {
                    key,
                    why: format!("{enabled} is true"),
                });
            }
            Ok(())
        };
        need(
            self.internal_enabled,
            SSL_INTERNAL_ENABLED,
            &self.internal.certificate,
            SSL_INTERNAL_CERT,
        )?;
        need(
            self.internal_enabled,
            SSL_INTERNAL_ENABLED,
            &self.internal.key,
            SSL_INTERNAL_KEY,
        )?;
        need(
            self.internal_enabled,
            SSL_INTERNAL_ENABLED,
            &self.internal.ca,
            SSL_INTERNAL_CA,
        )?;
        need(
            self.rest_enabled,
            SSL_REST_ENABLED,
            &self.rest.certificate,
            SSL_REST_CERT,
        )?;
        need(
            self.rest_enabled,
            SSL_REST_ENABLED,
            &self.rest.key,
            SSL_REST_KEY,
        )?;
        need(
            self.rest_authentication,
            SSL_REST_AUTHENTICATION,
            &self.rest.ca,
            SSL_REST_CA,
        )?;
        if self.rest_authentication && !self.rest_enabled {
            return Err(ConfigError::SslIncomplete {
                key: SSL_REST_ENABLED,
                why: format!(
                    "{SSL_REST_AUTHENTICATION} is true, and client certificates travel only over TLS"
                ),
            });
        }
        self.policy
            .validate()
            .map_err(|e| ConfigError::SslIncomplete {
                key: SSL_ALGORITHMS,
                why: e.to_string(),
            })
    }
}

fn files(prefix: &'static str, paths: &PemPaths) -> PemFiles {
    PemFiles {
        prefix,
        certificate: paths.certificate.clone(),
        key: paths.key.clone(),
        ca: paths.ca.clone(),
    }
}

pub(crate) fn flag(text: &str) -> Result<bool, ValueError> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(ValueError::NotABoolean),
    }
}

pub(crate) fn protocols(text: &str) -> Result<Vec<holdfast_tls::TlsVersion>, ValueError> {
    holdfast_tls::parse_protocols(text).map_err(|e| ValueError::Tls(reason_of(&e)))
}

pub(crate) fn algorithms(text: &str) -> Result<Vec<String>, ValueError> {
    holdfast_tls::parse_algorithms(text).map_err(|e| ValueError::Tls(reason_of(&e)))
}

pub(crate) fn read_access(text: &str) -> Result<ReadAccess, ValueError> {
    match text.trim() {
        "open" => Ok(ReadAccess::Open),
        "authenticated" => Ok(ReadAccess::Authenticated),
        _ => Err(ValueError::NotAReadAccess),
    }
}

/// A Flink keystore key holdfast does not read: say what to use instead.
pub(crate) fn keystore(text: &str) -> Result<(), ValueError> {
    let _ = text;
    Err(ValueError::Keystore)
}

/// The policy error's reason without the key and value the configuration
/// error adds itself.
fn reason_of(error: &holdfast_tls::TlsError) -> String {
    match error {
        holdfast_tls::TlsError::BadSetting { reason, .. } => reason.clone(),
        other => other.to_string(),
    }
}

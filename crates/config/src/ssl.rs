//! [`SslConfig`]: `security.ssl.*` — TLS on the internal links and on the
//! REST API, Flink's switches and policy keys with holdfast's PEM file keys
//! — and [`ReadAccess`] (`security.rest.read-access`).

use std::path::PathBuf;
use std::time::Duration;

use holdfast_tls::{ClientCertificates, Store, TlsFiles, TlsPolicy};

use crate::error::{ConfigError, ValueError};
use crate::keys::*;

/// The files of one link: PEM, or Flink's PKCS#12 stores.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PemPaths {
    /// `<prefix>.pem.certificate`.
    pub certificate: Option<PathBuf>,
    /// `<prefix>.pem.key`.
    pub key: Option<PathBuf>,
    /// `<prefix>.pem.ca`.
    pub ca: Option<PathBuf>,
    /// `<prefix>.keystore` (PKCS#12).
    pub keystore: Option<PathBuf>,
    /// `<prefix>.keystore-password`.
    pub keystore_password: Option<Password>,
    /// `<prefix>.key-password`: must equal the keystore's (a PKCS#12 file
    /// has one password).
    pub key_password: Option<Password>,
    /// `<prefix>.keystore-type`: `PKCS12` (Java's default since 9).
    pub keystore_type: Option<String>,
    /// `<prefix>.truststore` (PKCS#12).
    pub truststore: Option<PathBuf>,
    /// `<prefix>.truststore-password`.
    pub truststore_password: Option<Password>,
    /// `<prefix>.truststore-type`: `PKCS12`.
    pub truststore_type: Option<String>,
}

/// A password from the configuration; never shown by `Debug`.
pub type Password = holdfast_types::secret::Secret;

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
    pub fn internal_files(&self) -> TlsFiles {
        files(INTERNAL, &self.internal)
    }

    /// The REST API's files, for [`holdfast_tls`].
    pub fn rest_files(&self) -> TlsFiles {
        files(REST, &self.rest)
    }

    /// What a REST server asks of its clients: required with
    /// `authentication-enabled`, optional when a REST CA is configured (a
    /// client certificate is then a credential), else nothing.
    pub fn rest_client_certificates(&self) -> ClientCertificates {
        match (self.rest_authentication, self.rest.trust().is_some()) {
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
        self.internal.validate(INTERNAL)?;
        self.rest.validate(REST)?;
        let (internal, rest) = (&self.internal, &self.rest);
        let on = self.internal_enabled;
        if internal.keystore.is_none() {
            need(
                on,
                SSL_INTERNAL_ENABLED,
                &internal.certificate,
                SSL_INTERNAL_CERT,
            )?;
            need(on, SSL_INTERNAL_ENABLED, &internal.key, SSL_INTERNAL_KEY)?;
        }
        need(on, SSL_INTERNAL_ENABLED, &internal.trust(), SSL_INTERNAL_CA)?;
        let on = self.rest_enabled;
        need(
            on,
            SSL_REST_ENABLED,
            &rest.identity().cloned(),
            SSL_REST_CERT,
        )?;
        if rest.keystore.is_none() {
            need(on, SSL_REST_ENABLED, &rest.key, SSL_REST_KEY)?;
        }
        let on = self.rest_authentication;
        need(on, SSL_REST_AUTHENTICATION, &rest.trust(), SSL_REST_CA)?;
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

const INTERNAL: &str = "security.ssl.internal";
const REST: &str = "security.ssl.rest";

fn files(prefix: &'static str, paths: &PemPaths) -> TlsFiles {
    let store = |path: &Option<PathBuf>, password: &Option<Password>| {
        path.as_ref().map(|path| Store {
            path: path.clone(),
            password: password
                .as_ref()
                .map(|p| p.expose().to_owned())
                .unwrap_or_default(),
        })
    };
    TlsFiles {
        prefix,
        certificate: paths.certificate.clone(),
        key: paths.key.clone(),
        ca: paths.ca.clone(),
        keystore: store(&paths.keystore, &paths.keystore_password),
        truststore: store(&paths.truststore, &paths.truststore_password),
    }
}

impl PemPaths {
    /// Where the own certificate comes from, if anywhere.
    fn identity(&self) -> Option<&PathBuf> {
        self.certificate.as_ref().or(self.keystore.as_ref())
    }

    /// Where the trusted CAs come from, if anywhere.
    pub fn trust(&self) -> Option<PathBuf> {
        self.ca.clone().or_else(|| self.truststore.clone())
    }

    /// The rules of Flink's store keys under `prefix`.
    fn validate(&self, prefix: &'static str) -> Result<(), ConfigError> {
        let bad = |key: &str, why: String| ConfigError::SslStore {
            key: format!("{prefix}.{key}"),
            why,
        };
        for (kind, path, password, store_type) in [
            (
                "keystore",
                &self.keystore,
                &self.keystore_password,
                &self.keystore_type,
            ),
            (
                "truststore",
                &self.truststore,
                &self.truststore_password,
                &self.truststore_type,
            ),
        ] {
            if let Some(store_type) = store_type
                && !store_type.trim().eq_ignore_ascii_case("pkcs12")
            {
                return Err(bad(
                    &format!("{kind}-type"),
                    format!(
                        "= {store_type:?} is not read; holdfast reads PKCS12 stores (Java's default \
                         since 9) and PEM files: convert with keytool -importkeystore -srckeystore \
                         STORE.jks -destkeystore STORE.p12 -deststoretype PKCS12"
                    ),
                ));
            }
            match (path, password) {
                (Some(_), None) => {
                    return Err(bad(
                        &format!("{kind}-password"),
                        format!(
                            "must be set: {prefix}.{kind} is a PKCS#12 store, and those are encrypted"
                        ),
                    ));
                }
                (None, Some(_)) => {
                    return Err(bad(
                        &format!("{kind}-password"),
                        format!("is set but {prefix}.{kind} is not"),
                    ));
                }
                _ => {}
            }
        }
        if let Some(key_password) = &self.key_password
            && Some(key_password) != self.keystore_password.as_ref()
        {
            return Err(bad(
                "key-password",
                format!(
                    "differs from {prefix}.keystore-password; a PKCS#12 keystore has one password \
                     for its key and certificates (re-export the key with the store's password)"
                ),
            ));
        }
        if self.keystore.is_some() && (self.certificate.is_some() || self.key.is_some()) {
            return Err(bad(
                "keystore",
                format!(
                    "is set with {prefix}.pem.certificate/.key; set one: the keystore or the PEM files"
                ),
            ));
        }
        if self.truststore.is_some() && self.ca.is_some() {
            return Err(bad(
                "truststore",
                format!("is set with {prefix}.pem.ca; set one: the truststore or the PEM file"),
            ));
        }
        Ok(())
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

pub(crate) fn password(text: &str) -> Result<Option<Password>, ValueError> {
    Ok(Some(Password::new(text)))
}

/// `None` for PKCS12 (the default), else the type, refused by `validate`.
pub(crate) fn store_type(text: &str) -> Result<Option<String>, ValueError> {
    let text = text.trim();
    Ok((!text.eq_ignore_ascii_case("pkcs12")).then(|| text.to_owned()))
}

/// The policy error's reason without the key and value the configuration
/// error adds itself.
fn reason_of(error: &holdfast_tls::TlsError) -> String {
    match error {
        holdfast_tls::TlsError::BadSetting { reason, .. } => reason.clone(),
        other => other.to_string(),
    }
}

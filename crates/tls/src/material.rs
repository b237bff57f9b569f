//! The files of one TLS identity and trust ([`TlsFiles`]) and what they
//! hold once read and checked ([`Material`]): the certificate chain, its
//! private key (which must belong to it), the CAs peers are verified
//! against, and the leaf's validity. A [`Digest`] of the files' bytes tells
//! a reload whether anything changed.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rustls::RootCertStore;
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::{self, PemObject};
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use sha2::{Digest as _, Sha256};

use crate::error::{TlsError, utc};
use crate::pkcs12;
use crate::policy::TlsPolicy;

/// Where one link's identity and trust are — PEM files, or Flink's PKCS#12
/// keystore and truststore — and under which keys the configuration names
/// them (for errors).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsFiles {
    /// The key prefix, e.g. `security.ssl.internal` or `security.ssl.rest`.
    pub prefix: &'static str,
    /// The PEM certificate chain, leaf first (`<prefix>.pem.certificate`).
    pub certificate: Option<PathBuf>,
    /// The PEM private key, PKCS#8, PKCS#1 or SEC1 (`<prefix>.pem.key`).
    pub key: Option<PathBuf>,
    /// The PEM CA certificates peers are verified against (`<prefix>.pem.ca`).
    pub ca: Option<PathBuf>,
    /// A PKCS#12 keystore with the own certificate chain and private key
    /// (`<prefix>.keystore`), instead of the PEM certificate and key.
    pub keystore: Option<Store>,
    /// A PKCS#12 truststore with the CA certificates (`<prefix>.truststore`),
    /// instead of the PEM CA file.
    pub truststore: Option<Store>,
}

/// A PKCS#12 file and its password.
#[derive(Clone, PartialEq, Eq)]
pub struct Store {
    /// The file.
    pub path: PathBuf,
    /// Its password (`<prefix>.keystore-password`, `…truststore-password`).
    pub password: String,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .field("password", &"<redacted>")
            .finish()
    }
}

impl TlsFiles {
    /// PEM files under `prefix`: the own certificate and key when given,
    /// and the CA.
    pub fn pem(prefix: &'static str, identity: Option<(&Path, &Path)>, ca: &Path) -> TlsFiles {
        TlsFiles {
            prefix,
            certificate: identity.map(|(certificate, _)| certificate.to_owned()),
            key: identity.map(|(_, key)| key.to_owned()),
            ca: Some(ca.to_owned()),
            ..TlsFiles::default()
        }
    }

    fn key_name(&self, leaf: &str) -> String {
        match leaf {
            "keystore" | "truststore" => format!("{}.{leaf}", self.prefix),
            _ => format!("{}.pem.{leaf}", self.prefix),
        }
    }

    /// The files in the order [`Material::load`] hashes them: the identity
    /// (PEM certificate and key, or the keystore), then the trust (PEM CA,
    /// or the truststore).
    fn paths(&self) -> impl Iterator<Item = &PathBuf> {
        [&self.certificate, &self.key]
            .into_iter()
            .flatten()
            .chain(self.keystore.iter().map(|s| &s.path))
            .chain(&self.ca)
            .chain(self.truststore.iter().map(|s| &s.path))
    }
}

/// A SHA-256 over the files' contents: equal digests, same material.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Digest([u8; 32]);

/// A certificate's validity period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Validity {
    /// Not valid before.
    pub not_before: SystemTime,
    /// Not valid after.
    pub not_after: SystemTime,
}

impl Validity {
    /// How long until it expires at `now` (zero once expired).
    pub fn remaining(&self, now: SystemTime) -> Duration {
        self.not_after.duration_since(now).unwrap_or_default()
    }
}

/// An identity and trust, read and checked.
#[derive(Debug)]
pub struct Material {
    /// The own certificate and key, when configured.
    pub identity: Option<Arc<CertifiedKey>>,
    /// The own leaf certificate's validity and subject, when configured.
    pub leaf: Option<(Validity, String)>,
    /// The CAs peers are verified against, when configured.
    pub roots: Option<Arc<RootCertStore>>,
    /// The digest of the files read.
    pub digest: Digest,
}

impl Material {
    /// Reads `files` and checks them: the certificate parses, is valid at
    /// `now`, and the key belongs to it; the CA file holds at least one
    /// certificate. A certificate without a key (or the reverse) is an error.
    pub fn load(
        files: &TlsFiles,
        policy: &TlsPolicy,
        now: SystemTime,
    ) -> Result<Material, TlsError> {
        let mut hasher = Sha256::new();
        if files.keystore.is_some() && (files.certificate.is_some() || files.key.is_some()) {
            return Err(TlsError::Conflict {
                first: files.key_name("keystore"),
                second: files.key_name("certificate"),
            });
        }
        if files.truststore.is_some() && files.ca.is_some() {
            return Err(TlsError::Conflict {
                first: files.key_name("truststore"),
                second: files.key_name("ca"),
            });
        }
        let identity = match (&files.certificate, &files.key) {
            (None, None) => match &files.keystore {
                Some(store) => {
                    let bytes = read(files, "keystore", "keystore", &store.path)?;
                    hasher.update(&bytes);
                    let (chain, key) = pkcs12::identity(files, store, &bytes)?;
                    Some(checked(policy, &store.path, chain, &store.path, key, now)?)
                }
                None => None,
            },
            (Some(_), None) => {
                return Err(TlsError::Missing {
                    key: files.key_name("key"),
                    why: "a certificate needs its private key",
                });
            }
            (None, Some(_)) => {
                return Err(TlsError::Missing {
                    key: files.key_name("certificate"),
                    why: "a private key needs its certificate",
                });
            }
            (Some(cert_path), Some(key_path)) => {
                let cert_bytes = read(files, "certificate", "certificate", cert_path)?;
                let key_bytes = read(files, "private key", "key", key_path)?;
                hasher.update(&cert_bytes);
                hasher.update(&key_bytes);
                Some(identity(
                    files,
                    policy,
                    cert_path,
                    &cert_bytes,
                    key_path,
                    &key_bytes,
                    now,
                )?)
            }
        };
        let roots = match &files.ca {
            None => match &files.truststore {
                Some(store) => {
                    let bytes = read(files, "truststore", "truststore", &store.path)?;
                    hasher.update(&bytes);
                    let certs = pkcs12::trusted(files, store, &bytes)?;
                    Some(Arc::new(anchors(&store.path, certs)?))
                }
                None => None,
            },
            Some(ca_path) => {
                let bytes = read(files, "CA", "ca", ca_path)?;
                hasher.update(&bytes);
                Some(Arc::new(roots(files, ca_path, &bytes)?))
            }
        };
        let (identity, leaf) = match identity {
            Some((key, validity, subject)) => (Some(key), Some((validity, subject))),
            None => (None, None),
        };
        Ok(Material {
            identity,
            leaf,
            roots,
            digest: Digest(hasher.finalize().into()),
        })
    }
}

/// The digest of `files` as they are now, without checking them; `None`
/// when one cannot be read (a reload then reports why).
pub fn digest_of(files: &TlsFiles) -> Option<Digest> {
    let mut hasher = Sha256::new();
    for path in files.paths() {
        hasher.update(std::fs::read(path).ok()?);
    }
    Some(Digest(hasher.finalize().into()))
}

fn read(
    files: &TlsFiles,
    what: &'static str,
    leaf: &str,
    path: &Path,
) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Unreadable {
        what,
        key: files.key_name(leaf),
        path: path.to_owned(),
        source,
    })
}

fn no_pem(
    files: &TlsFiles,
    what: &'static str,
    leaf: &str,
    path: &Path,
    expected: &'static str,
    reason: String,
) -> TlsError {
    TlsError::NoPem {
        what,
        key: files.key_name(leaf),
        path: path.to_owned(),
        expected,
        reason,
    }
}

fn certificates(
    files: &TlsFiles,
    what: &'static str,
    leaf: &str,
    path: &Path,
    bytes: &[u8],
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_slice_iter(bytes)
        .collect::<Result<Vec<_>, pem::Error>>()
        .map_err(|e| no_pem(files, what, leaf, path, "CERTIFICATE", e.to_string()))?;
    if certs.is_empty() {
        return Err(no_pem(
            files,
            what,
            leaf,
            path,
            "CERTIFICATE",
            "no CERTIFICATE block".into(),
        ));
    }
    Ok(certs)
}

fn identity(
    files: &TlsFiles,
    policy: &TlsPolicy,
    cert_path: &Path,
    cert_bytes: &[u8],
    key_path: &Path,
    key_bytes: &[u8],
    now: SystemTime,
) -> Result<(Arc<CertifiedKey>, Validity, String), TlsError> {
    let chain = certificates(files, "certificate", "certificate", cert_path, cert_bytes)?;
    let key = PrivateKeyDer::from_pem_slice(key_bytes).map_err(|e| {
        // The error names the PEM problem, never the key's bytes.
        let reason = match e {
            pem::Error::NoItemsFound => {
                "no PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY block".to_owned()
            }
            other => other.to_string(),
        };
        no_pem(files, "private key", "key", key_path, "PRIVATE KEY", reason)
    })?;
    checked(policy, cert_path, chain, key_path, key, now)
}

/// The own chain and key, checked: valid now, the key belongs to it.
fn checked(
    policy: &TlsPolicy,
    cert_path: &Path,
    chain: Vec<CertificateDer<'static>>,
    key_path: &Path,
    key: PrivateKeyDer<'static>,
    now: SystemTime,
) -> Result<(Arc<CertifiedKey>, Validity, String), TlsError> {
    let (validity, subject) = leaf_facts(cert_path, &chain[0])?;
    if now > validity.not_after || now < validity.not_before {
        return Err(TlsError::OutsideValidity {
            path: cert_path.to_owned(),
            state: if now > validity.not_after {
                "expired"
            } else {
                "not yet valid"
            },
            not_before: utc(validity.not_before),
            not_after: utc(validity.not_after),
        });
    }
    let mismatch = |reason: String| TlsError::KeyMismatch {
        cert_path: cert_path.to_owned(),
        key_path: key_path.to_owned(),
        reason,
    };
    let certified = CertifiedKey::from_der(chain, key, &policy.provider())
        .map_err(|e| mismatch(e.to_string()))?;
    Ok((Arc::new(certified), validity, subject))
}

fn roots(files: &TlsFiles, path: &Path, bytes: &[u8]) -> Result<RootCertStore, TlsError> {
    anchors(path, certificates(files, "CA", "ca", path, bytes)?)
}

fn anchors(path: &Path, certs: Vec<CertificateDer<'static>>) -> Result<RootCertStore, TlsError> {
    let mut store = RootCertStore::empty();
    let (added, ignored) = store.add_parsable_certificates(certs);
    if added == 0 {
        return Err(TlsError::Trust {
            path: path.to_owned(),
            reason: format!("none of its {ignored} certificates can serve as a trust anchor"),
        });
    }
    Ok(store)
}

/// A leaf certificate's validity and a name for it (its subject).
pub(crate) fn leaf_facts(
    path: &Path,
    cert: &CertificateDer<'_>,
) -> Result<(Validity, String), TlsError> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref()).map_err(|e| {
        TlsError::BadCertificate {
            path: path.to_owned(),
            reason: e.to_string(),
        }
    })?;
    let at = |t: x509_parser::time::ASN1Time| {
        let secs = t.timestamp();
        if secs >= 0 {
            SystemTime::UNIX_EPOCH + Duration::from_secs(secs as u64)
        } else {
            SystemTime::UNIX_EPOCH
        }
    };
    let validity = Validity {
        not_before: at(parsed.validity().not_before),
        not_after: at(parsed.validity().not_after),
    };
    Ok((validity, parsed.subject().to_string()))
}

/// A short name for a peer's certificate, for logs and the REST access
/// rule: its subject's common name, else its first DNS name, else the whole
/// subject.
pub fn peer_name(cert: &CertificateDer<'_>) -> String {
    let Ok((_, parsed)) = x509_parser::parse_x509_certificate(cert.as_ref()) else {
        return "an unparsable certificate".to_owned();
    };
    if let Some(cn) = parsed
        .subject()
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
    {
        return cn.to_owned();
    }
    if let Ok(Some(san)) = parsed.subject_alternative_name() {
        for name in &san.value.general_names {
            if let x509_parser::extensions::GeneralName::DNSName(dns) = name {
                return (*dns).to_owned();
            }
        }
    }
    parsed.subject().to_string()
}

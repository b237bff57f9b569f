//! Flink's PKCS#12 keystores and truststores, read with `p12-keystore`: the
//! own chain and PKCS#8 key from a keystore, the trusted certificates from a
//! truststore. One password per store (the keystore's also opens its key).

use p12_keystore::{KeyStore, KeyStoreEntry, Pkcs12ImportPolicy};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::error::TlsError;
use crate::material::{Store, TlsFiles};

fn open(
    files: &TlsFiles,
    what: &'static str,
    store: &Store,
    bytes: &[u8],
    policy: Pkcs12ImportPolicy,
) -> Result<KeyStore, TlsError> {
    KeyStore::from_pkcs12(bytes, &store.password, policy).map_err(|e| TlsError::Store {
        what,
        key: format!("{}.{what}", files.prefix),
        path: store.path.clone(),
        // The library's message names the failing step (MAC, decryption,
        // ASN.1), never the password.
        reason: format!(
            "not a PKCS#12 file this password opens ({e}); a JKS store must first be converted: \
             keytool -importkeystore -srckeystore STORE.jks -destkeystore STORE.p12 -deststoretype PKCS12"
        ),
    })
}

/// The chain (leaf first) and private key of the keystore's one key entry.
pub(crate) fn identity(
    files: &TlsFiles,
    store: &Store,
    bytes: &[u8],
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsError> {
    let keystore = open(files, "keystore", store, bytes, Pkcs12ImportPolicy::Strict)?;
    let missing = |reason: &str| TlsError::Store {
        what: "keystore",
        key: format!("{}.keystore", files.prefix),
        path: store.path.clone(),
        reason: reason.to_owned(),
    };
    let keys = keystore
        .entries()
        .filter(|(_, entry)| matches!(entry, KeyStoreEntry::PrivateKeyChain(_)))
        .count();
    if keys > 1 {
        return Err(missing(
            "it holds several private keys; keep only the one to present",
        ));
    }
    let (_, chain) = keystore
        .private_key_chain()
        .ok_or_else(|| missing("it holds no private key with its certificate chain"))?;
    if chain.certs().is_empty() {
        return Err(missing("its private key has no certificate"));
    }
    let certs: Vec<CertificateDer<'static>> = chain
        .certs()
        .iter()
        .map(|c| CertificateDer::from(c.as_der().to_vec()))
        .collect();
    let mut key = chain.key().as_der().to_vec();
    // Java writes EC keys without their public half, which ring needs:
    // take it from the certificate.
    if let Some(public) = ec_public_key(&certs[0])
        && let Some(completed) = der::with_public_key(&key, &public)
    {
        key = completed;
    }
    Ok((certs, PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key))))
}

/// The EC public key (an uncompressed point) of `cert`, if it has one.
fn ec_public_key(cert: &CertificateDer<'_>) -> Option<Vec<u8>> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref()).ok()?;
    let spki = parsed.public_key();
    (spki.algorithm.algorithm.to_id_string() == "1.2.840.10045.2.1")
        .then(|| spki.subject_public_key.data.to_vec())
}

/// Just enough DER to add the optional public key to a PKCS#8 EC key.
mod der {
    /// id-ecPublicKey (1.2.840.10045.2.1), as its DER object identifier.
    const EC_OID: [u8; 9] = [0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];

    /// One tag-length-value at the start of `input`: (tag, value, rest).
    fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
        let (&tag, rest) = input.split_first()?;
        let (&first, rest) = rest.split_first()?;
        let (len, rest) = if first < 0x80 {
            (usize::from(first), rest)
        } else {
            let count = usize::from(first & 0x7f);
            if count == 0 || count > 4 || rest.len() < count {
                return None;
            }
            let len = rest[..count]
                .iter()
                .fold(0usize, |n, b| (n << 8) | usize::from(*b));
            (len, &rest[count..])
        };
        (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
    }

    fn encode(tag: u8, value: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        let len = value.len();
        if len < 0x80 {
            out.push(len as u8);
        } else {
            let bytes: Vec<u8> = len
                .to_be_bytes()
                .into_iter()
                .skip_while(|b| *b == 0)
                .collect();
            out.push(0x80 | bytes.len() as u8);
            out.extend(bytes);
        }
        out.extend_from_slice(value);
        out
    }

    /// `pkcs8` with `public` added to its ECPrivateKey, or `None` when it
    /// is not an EC key, already has one, or is not DER this understands.
    pub(super) fn with_public_key(pkcs8: &[u8], public: &[u8]) -> Option<Vec<u8>> {
        let (0x30, info, []) = tlv(pkcs8)? else {
            return None;
        };
        let (0x02, version, rest) = tlv(info)? else {
            return None;
        };
        let (0x30, algorithm, rest) = tlv(rest)? else {
            return None;
        };
        if !algorithm.starts_with(&EC_OID) {
            return None;
        }
        let (0x04, ec_key, attributes) = tlv(rest)? else {
            return None;
        };
        let (0x30, mut fields, []) = tlv(ec_key)? else {
            return None;
        };
        let mut elements = Vec::new();
        while !fields.is_empty() {
            let (tag, value, rest) = tlv(fields)?;
            if tag == 0xa1 {
                return None;
            }
            elements.extend(encode(tag, value));
            fields = rest;
        }
        let mut bits = vec![0u8];
        bits.extend_from_slice(public);
        elements.extend(encode(0xa1, &encode(0x03, &bits)));
        let mut body = encode(0x02, version);
        body.extend(encode(0x30, algorithm));
        body.extend(encode(0x04, &encode(0x30, &elements)));
        body.extend_from_slice(attributes);
        Some(encode(0x30, &body))
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn lengths_round_trip_and_garbage_is_declined() {
            for len in [0usize, 1, 127, 128, 255, 256, 70_000] {
                let value = vec![7u8; len];
                let encoded = encode(0x04, &value);
                assert_eq!(tlv(&encoded), Some((0x04, &value[..], &[][..])));
            }
            assert_eq!(with_public_key(b"garbage", b"pk"), None);
            assert_eq!(with_public_key(&[0x30, 0x82, 0xff], b"pk"), None);
        }
    }
}

/// The trusted certificates of a truststore (and, as Java does, those of
/// its key entries).
pub(crate) fn trusted(
    files: &TlsFiles,
    store: &Store,
    bytes: &[u8],
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let truststore = open(
        files,
        "truststore",
        store,
        bytes,
        Pkcs12ImportPolicy::Relaxed,
    )?;
    let certs: Vec<CertificateDer<'static>> = truststore
        .entries()
        .flat_map(|(_, entry)| match entry {
            KeyStoreEntry::Certificate(cert) => vec![CertificateDer::from(cert.as_der().to_vec())],
            // Java trusts the certificates of key entries too, so Flink's
            // habit of one keystore as its own truststore works.
            KeyStoreEntry::PrivateKeyChain(chain) => chain
                .certs()
                .iter()
                .map(|c| CertificateDer::from(c.as_der().to_vec()))
                .collect(),
            KeyStoreEntry::Secret(_) => Vec::new(),
        })
        .collect();
    if certs.is_empty() {
        return Err(TlsError::Store {
            what: "truststore",
            key: format!("{}.truststore", files.prefix),
            path: store.path.clone(),
            reason: "it holds no certificate".into(),
        });
    }
    Ok(certs)
}

//! Test certificates: a [`TestPki`] is a CA whose certificate and key are
//! written to a directory, issuing [`TestIdentity`]s (certificate and key
//! files) for given hosts and validity periods — valid ones, expired ones,
//! ones for another host, ones from another CA. ECDSA P-256, made with
//! rcgen; nothing here is fit for anything but tests.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, SanType,
};
use time::OffsetDateTime;

/// A test CA, its files in a directory.
pub struct TestPki {
    dir: PathBuf,
    name: String,
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// A certificate and its key, as files.
#[derive(Clone, Debug)]
pub struct TestIdentity {
    /// The PEM certificate chain (leaf only).
    pub certificate: PathBuf,
    /// The PEM private key (PKCS#8).
    pub key: PathBuf,
}

/// When an issued certificate is valid.
#[derive(Clone, Copy, Debug)]
pub enum Validity {
    /// From a day ago for a year.
    Current,
    /// From two years ago to a year ago.
    Expired,
    /// From in a year, for a year.
    NotYet,
    /// From a day ago until this long from now.
    EndsIn(Duration),
}

impl TestPki {
    /// A new CA named `name`, its certificate written to `dir/NAME-ca.pem`.
    pub fn new(dir: &Path, name: &str) -> TestPki {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, format!("{name} test CA"));
        let (from, to) = window(Validity::Current);
        params.not_before = from;
        params.not_after = to + time::Duration::days(3650);
        let key = KeyPair::generate().expect("CA key");
        let issuer = CertifiedIssuer::self_signed(params, key).expect("CA certificate");
        let pki = TestPki {
            dir: dir.to_owned(),
            name: name.to_owned(),
            issuer,
        };
        std::fs::write(pki.ca_file(), pki.issuer.pem()).expect("write the CA file");
        pki
    }

    /// The CA's certificate file.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.join(format!("{}-ca.pem", self.name))
    }

    /// A certificate for `hosts` (DNS names or IP addresses) with common
    /// name `subject`, valid for servers and clients, written to
    /// `dir/SUBJECT.pem` and `dir/SUBJECT.key`.
    pub fn issue(&self, subject: &str, hosts: &[&str], validity: Validity) -> TestIdentity {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("leaf params");
        for host in hosts {
            params.subject_alt_names.push(match host.parse::<IpAddr>() {
                Ok(ip) => SanType::IpAddress(ip),
                Err(_) => SanType::DnsName((*host).try_into().expect("a DNS name")),
            });
        }
        params.distinguished_name.push(DnType::CommonName, subject);
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        (params.not_before, params.not_after) = window(validity);
        let key = KeyPair::generate().expect("leaf key");
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("leaf certificate");
        let identity = TestIdentity {
            certificate: self.dir.join(format!("{subject}.pem")),
            key: self.dir.join(format!("{subject}.key")),
        };
        std::fs::write(&identity.certificate, cert.pem()).expect("write a certificate");
        std::fs::write(&identity.key, key.serialize_pem()).expect("write a key");
        identity
    }
}

impl TestIdentity {
    /// The certificate and key files, as `holdfast_tls::TlsFiles::pem`
    /// takes them.
    pub fn pair(&self) -> (&Path, &Path) {
        (&self.certificate, &self.key)
    }

    /// The certificate and key as a PKCS#12 keystore (as Java's `keytool`
    /// and Flink read them) at `path`, encrypted with `password`, the CA's
    /// certificate `ca` after the leaf in its chain.
    pub fn to_pkcs12(&self, ca: &TestPki, path: &Path, password: &str) -> PathBuf {
        use rustls_pki_types::pem::PemObject;
        let leaf =
            rustls_pki_types::CertificateDer::from_pem_file(&self.certificate).expect("the leaf");
        let ca_cert =
            rustls_pki_types::CertificateDer::from_pem_file(ca.ca_file()).expect("the CA");
        let key =
            rustls_pki_types::PrivatePkcs8KeyDer::from_pem_file(&self.key).expect("a PKCS#8 key");
        let chain = p12_keystore::PrivateKeyChain::new(
            b"holdfast-test".as_slice(),
            p12_keystore::PrivateKey::from_der(key.secret_pkcs8_der()).expect("a key"),
            [
                p12_keystore::Certificate::from_der(leaf.as_ref()).expect("a certificate"),
                p12_keystore::Certificate::from_der(ca_cert.as_ref()).expect("a certificate"),
            ],
        );
        let mut store = p12_keystore::KeyStore::new();
        store.add_entry(
            "holdfast",
            p12_keystore::KeyStoreEntry::PrivateKeyChain(chain),
        );
        let bytes = store.writer(password).write().expect("a PKCS#12 file");
        std::fs::write(path, bytes).expect("write the keystore");
        path.to_owned()
    }
}

fn window(validity: Validity) -> (OffsetDateTime, OffsetDateTime) {
    let now = OffsetDateTime::from(SystemTime::now());
    let day = time::Duration::days(1);
    let year = time::Duration::days(365);
    match validity {
        Validity::Current => (now - day, now + year),
        Validity::Expired => (now - 2 * year, now - year),
        Validity::NotYet => (now + year, now + 2 * year),
        Validity::EndsIn(left) => (
            now - day,
            now + time::Duration::try_from(left).expect("a duration in range"),
        ),
    }
}

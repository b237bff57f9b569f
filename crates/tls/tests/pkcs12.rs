//! Flink's PKCS#12 keystores and truststores, made by Java's own `keytool`
//! (as Flink's documentation makes them): two nodes with their own stores
//! handshake mutually; one keystore used as its own truststore (Flink's
//! habit) works; a wrong password, a JKS store and a keystore without a key
//! are refused with errors that name the key and file, never the password.
//! Fails loudly when `keytool` is missing (the test command installs Java).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use holdfast_tls::{ClientCertificates, LinkSpec, Store, TlsFiles, TlsLink, TlsMetrics, peer_name};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const PASSWORD: &str = "Fl1nk-store-pw";

fn keytool(args: &[&str]) {
    let output = Command::new("keytool")
        .args(args)
        .output()
        .expect("keytool (Java's) must be installed: scripts/test installs default-jre-headless");
    assert!(
        output.status.success(),
        "keytool {args:?}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `keytool -genkeypair` into `DIR/NAME.p12` (PKCS12, EC P-256, valid 30
/// days, for 127.0.0.1 and localhost).
fn keystore(dir: &Path, name: &str, store_type: &str) -> PathBuf {
    let extension = if store_type == "JKS" { "jks" } else { "p12" };
    let path = dir.join(format!("{name}.{extension}"));
    keytool(&[
        "-genkeypair",
        "-alias",
        name,
        "-keyalg",
        "EC",
        "-groupname",
        "secp256r1",
        "-dname",
        &format!("CN={name}"),
        "-ext",
        "SAN=ip:127.0.0.1,dns:localhost",
        "-validity",
        "30",
        "-storetype",
        store_type,
        "-keystore",
        path.to_str().unwrap(),
        "-storepass",
        PASSWORD,
        "-keypass",
        PASSWORD,
    ]);
    path
}

/// A PKCS12 truststore at `DIR/trust.p12` with the certificates of `stores`.
fn truststore(dir: &Path, stores: &[(&str, &Path)]) -> PathBuf {
    let trust = dir.join("trust.p12");
    for (alias, store) in stores {
        let cert = dir.join(format!("{alias}.crt"));
        keytool(&[
            "-exportcert",
            "-rfc",
            "-alias",
            alias,
            "-keystore",
            store.to_str().unwrap(),
            "-storepass",
            PASSWORD,
            "-file",
            cert.to_str().unwrap(),
        ]);
        keytool(&[
            "-importcert",
            "-noprompt",
            "-alias",
            alias,
            "-file",
            cert.to_str().unwrap(),
            "-storetype",
            "PKCS12",
            "-keystore",
            trust.to_str().unwrap(),
            "-storepass",
            PASSWORD,
        ]);
    }
    trust
}

fn store(path: &Path, password: &str) -> Option<Store> {
    Some(Store {
        path: path.to_owned(),
        password: password.to_owned(),
    })
}

fn link(
    keystore: &Path,
    truststore: &Path,
    password: &str,
) -> Result<Arc<TlsLink>, holdfast_tls::TlsError> {
    let files = TlsFiles {
        prefix: "security.ssl.internal",
        keystore: store(keystore, password),
        truststore: store(truststore, password),
        ..TlsFiles::default()
    };
    let spec = LinkSpec::new("internal", files, Some(ClientCertificates::Required), true);
    TlsLink::load(spec, TlsMetrics::default())
}

/// Both sides' view of one mutual handshake: the peer's certificate name.
async fn handshake(server: Arc<TlsLink>, client: &TlsLink) -> (String, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepting = tokio::spawn(async move {
        let (tcp, peer) = listener.accept().await.unwrap();
        let mut tls = server
            .accept(tcp, peer, Duration::from_secs(5))
            .await
            .unwrap();
        let mut byte = [0u8; 1];
        tls.read_exact(&mut byte).await.unwrap();
        tls.write_all(&byte).await.unwrap();
        peer_name(&tls.get_ref().1.peer_certificates().unwrap()[0])
    });
    let tcp = TcpStream::connect(addr).await.unwrap();
    let mut tls = client
        .connect(tcp, "127.0.0.1", Duration::from_secs(5))
        .await
        .unwrap();
    tls.write_all(b"x").await.unwrap();
    tls.read_u8().await.unwrap();
    let seen = peer_name(&tls.get_ref().1.peer_certificates().unwrap()[0]);
    (accepting.await.unwrap(), seen)
}

#[tokio::test]
async fn two_nodes_with_keytool_stores_handshake_mutually() {
    let dir = tempfile::tempdir().unwrap();
    let a = keystore(dir.path(), "node-a", "PKCS12");
    let b = keystore(dir.path(), "node-b", "PKCS12");
    let trust = truststore(dir.path(), &[("node-a", &a), ("node-b", &b)]);
    let server = link(&a, &trust, PASSWORD).unwrap();
    let client = link(&b, &trust, PASSWORD).unwrap();
    assert_eq!(
        handshake(server, &client).await,
        ("node-b".to_owned(), "node-a".to_owned())
    );
}

#[tokio::test]
async fn one_keystore_as_its_own_truststore_works_as_in_flinks_docs() {
    let dir = tempfile::tempdir().unwrap();
    let shared = keystore(dir.path(), "flink.internal", "PKCS12");
    let server = link(&shared, &shared, PASSWORD).unwrap();
    let client = link(&shared, &shared, PASSWORD).unwrap();
    let (seen_by_server, seen_by_client) = handshake(server, &client).await;
    assert_eq!(seen_by_server, "flink.internal");
    assert_eq!(seen_by_client, "flink.internal");
}

#[test]
fn bad_stores_are_named_and_the_password_never_shows() {
    let dir = tempfile::tempdir().unwrap();
    let good = keystore(dir.path(), "node-a", "PKCS12");
    let trust = truststore(dir.path(), &[("node-a", &good)]);

    let wrong = link(&good, &trust, "not-the-password")
        .unwrap_err()
        .to_string();
    assert!(
        wrong.contains("security.ssl.internal.keystore") && wrong.contains("node-a.p12"),
        "{wrong}"
    );
    assert!(
        !wrong.contains("not-the-password") && !wrong.contains(PASSWORD),
        "{wrong}"
    );

    let jks = keystore(dir.path(), "old-node", "JKS");
    let refused = link(&jks, &trust, PASSWORD).unwrap_err().to_string();
    assert!(
        refused.contains("old-node.jks") && refused.contains("-deststoretype PKCS12"),
        "{refused}"
    );

    // A truststore has no private key: it cannot be a keystore.
    let no_key = link(&trust, &trust, PASSWORD).unwrap_err().to_string();
    assert!(no_key.contains("no private key"), "{no_key}");
}

/// A keystore with a PEM CA, and PEM files with a truststore, both load;
/// while nothing changes, the reload check reports nothing changed.
#[test]
fn stores_and_pem_files_mix_and_an_unchanged_mix_is_not_reloaded() {
    let dir = tempfile::tempdir().unwrap();
    let a = keystore(dir.path(), "node-a", "PKCS12");
    let trust = truststore(dir.path(), &[("node-a", &a)]);
    // `truststore` left node-a's certificate as PEM beside it.
    let pem_ca = dir.path().join("node-a.crt");
    let ca = holdfast_testkit::TestPki::new(dir.path(), "cluster");
    let node = ca.issue(
        "node-b",
        &["127.0.0.1"],
        holdfast_testkit::CertValidity::Current,
    );
    let keystore_and_pem_ca = TlsFiles {
        prefix: "security.ssl.internal",
        keystore: store(&a, PASSWORD),
        ca: Some(pem_ca),
        ..TlsFiles::default()
    };
    let pem_and_truststore = TlsFiles {
        prefix: "security.ssl.internal",
        certificate: Some(node.certificate.clone()),
        key: Some(node.key.clone()),
        truststore: store(&trust, PASSWORD),
        ..TlsFiles::default()
    };
    for files in [keystore_and_pem_ca, pem_and_truststore] {
        let spec = LinkSpec::new("internal", files, Some(ClientCertificates::Required), true);
        let mixed = TlsLink::load(spec, TlsMetrics::default()).unwrap();
        assert!(matches!(
            mixed.reload_if_changed(),
            holdfast_tls::Reload::Unchanged
        ));
    }
}

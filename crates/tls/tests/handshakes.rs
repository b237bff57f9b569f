//! Real TLS handshakes over loopback between [`TlsLink`]s made from test
//! certificates: mutual TLS, every refusal the issue names (wrong CA,
//! expired, not yet valid, another host, no client certificate, plaintext
//! on a TLS port, TLS on a plaintext port), rotation without a restart
//! (by polling and by SIGHUP), and the metrics.

use std::sync::Arc;
use std::time::Duration;

use holdfast_testkit::{CertValidity, TestIdentity, TestPki};
use holdfast_tls::{
    ClientCertificates, HandshakeRefusal, LinkSpec, Reload, TlsFiles, TlsLink, TlsMetrics,
    TlsPolicy, peer_name,
};
use prometheus_client::registry::Registry;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const TIMEOUT: Duration = Duration::from_secs(5);

fn files(identity: Option<&TestIdentity>, ca: &TestPki) -> TlsFiles {
    TlsFiles::pem(
        "security.ssl.internal",
        identity.map(TestIdentity::pair),
        &ca.ca_file(),
    )
}

fn spec(files: TlsFiles, serve: Option<ClientCertificates>, policy: TlsPolicy) -> LinkSpec {
    LinkSpec {
        policy,
        ..LinkSpec::new("internal", files, serve, true)
    }
}

fn link(files: TlsFiles, serve: Option<ClientCertificates>) -> Arc<TlsLink> {
    TlsLink::load(
        spec(files, serve, TlsPolicy::default()),
        TlsMetrics::default(),
    )
    .unwrap()
}

type Outcome = (
    Result<String, HandshakeRefusal>,
    Result<String, HandshakeRefusal>,
);

/// One handshake: the server's view (the client's certificate name, or
/// `-`) and the client's (the server's certificate name).
async fn handshake(server: &Arc<TlsLink>, client: &TlsLink, host: &str) -> Outcome {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = Arc::clone(server);
    let accepting = tokio::spawn(async move {
        let (tcp, peer) = listener.accept().await.unwrap();
        let mut tls = server.accept(tcp, peer, TIMEOUT).await?;
        let name = tls
            .get_ref()
            .1
            .peer_certificates()
            .map_or("-".to_owned(), |c| peer_name(&c[0]));
        // Echo one byte so that the client's side sees a whole handshake.
        let mut byte = [0u8; 1];
        if tls.read_exact(&mut byte).await.is_ok() {
            let _ = tls.write_all(&byte).await;
        }
        Ok(name)
    });
    let tcp = TcpStream::connect(addr).await.unwrap();
    let dialled = match client.connect(tcp, host, TIMEOUT).await {
        Ok(mut tls) => {
            let name = peer_name(&tls.get_ref().1.peer_certificates().unwrap()[0]);
            // A TLS 1.3 server refuses a client certificate after the client
            // thinks the handshake is done: the first read tells.
            tls.write_all(b"x").await.unwrap();
            let mut byte = [0u8; 1];
            match tls.read_exact(&mut byte).await {
                Ok(_) => Ok(name),
                Err(error) => Err(HandshakeRefusal::from_io(&error)),
            }
        }
        Err(refusal) => Err(refusal),
    };
    (accepting.await.unwrap(), dialled)
}

struct World {
    _dir: tempfile::TempDir,
    ca: TestPki,
    other_ca: TestPki,
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestPki::new(dir.path(), "cluster");
    let other_ca = TestPki::new(dir.path(), "stranger");
    World {
        _dir: dir,
        ca,
        other_ca,
    }
}

#[tokio::test]
async fn mutual_tls_names_both_sides() {
    let w = world();
    let server_id = w.ca.issue(
        "jobmanager",
        &["localhost", "127.0.0.1"],
        CertValidity::Current,
    );
    let client_id =
        w.ca.issue("taskmanager-1", &["tm1.example"], CertValidity::Current);
    let server = link(
        files(Some(&server_id), &w.ca),
        Some(ClientCertificates::Required),
    );
    let client = link(files(Some(&client_id), &w.ca), None);
    let (seen_by_server, seen_by_client) = handshake(&server, &client, "localhost").await;
    assert_eq!(seen_by_server.unwrap(), "taskmanager-1");
    assert_eq!(seen_by_client.unwrap(), "jobmanager");
    // By IP address too: the certificate names 127.0.0.1.
    let (_, by_ip) = handshake(&server, &client, "127.0.0.1").await;
    assert_eq!(by_ip.unwrap(), "jobmanager");
}

#[tokio::test]
async fn a_client_without_a_certificate_is_refused_only_where_one_is_required() {
    let w = world();
    let server_id =
        w.ca.issue("jobmanager", &["localhost"], CertValidity::Current);
    let anonymous = link(files(None, &w.ca), None);

    let required = link(
        files(Some(&server_id), &w.ca),
        Some(ClientCertificates::Required),
    );
    let (server_side, client_side) = handshake(&required, &anonymous, "localhost").await;
    assert_eq!(server_side.unwrap_err().reason, "no-client-certificate");
    // The TLS 1.3 server's verdict comes after the client's handshake; the
    // client still learns it from `connect`, by name.
    assert_eq!(client_side.unwrap_err().reason, "no-client-certificate");

    let optional = link(
        files(Some(&server_id), &w.ca),
        Some(ClientCertificates::Optional),
    );
    let (server_side, client_side) = handshake(&optional, &anonymous, "localhost").await;
    assert_eq!(server_side.unwrap(), "-");
    client_side.unwrap();
}

#[tokio::test]
async fn certificates_from_another_ca_are_refused_on_both_sides() {
    let w = world();
    let server_id =
        w.ca.issue("jobmanager", &["localhost"], CertValidity::Current);
    let server = link(
        files(Some(&server_id), &w.ca),
        Some(ClientCertificates::Required),
    );

    // A client whose certificate another CA signed (it trusts ours).
    let stranger_id = w
        .other_ca
        .issue("intruder", &["localhost"], CertValidity::Current);
    let mut stranger_files = files(Some(&stranger_id), &w.ca);
    stranger_files.ca = Some(w.ca.ca_file());
    let stranger = link(stranger_files, None);
    let (server_side, client_side) = handshake(&server, &stranger, "localhost").await;
    assert_eq!(server_side.unwrap_err().reason, "unknown-ca");
    assert_eq!(client_side.unwrap_err().reason, "unknown-ca");

    // A client that trusts only the other CA refuses our server.
    let client_id = w
        .other_ca
        .issue("taskmanager", &["localhost"], CertValidity::Current);
    let suspicious = link(files(Some(&client_id), &w.other_ca), None);
    let (_, client_side) = handshake(&server, &suspicious, "localhost").await;
    assert_eq!(client_side.unwrap_err().reason, "unknown-ca");
}

#[tokio::test]
async fn a_server_certificate_for_another_host_is_refused_unless_hostname_checks_are_off() {
    let w = world();
    let server_id =
        w.ca.issue("jobmanager", &["jm.other.example"], CertValidity::Current);
    let client_id =
        w.ca.issue("taskmanager", &["localhost"], CertValidity::Current);
    let server = link(
        files(Some(&server_id), &w.ca),
        Some(ClientCertificates::Required),
    );
    let strict = link(files(Some(&client_id), &w.ca), None);
    let (_, client_side) = handshake(&server, &strict, "localhost").await;
    assert_eq!(client_side.unwrap_err().reason, "wrong-host");

    let lenient_policy = TlsPolicy {
        verify_hostname: false,
        ..TlsPolicy::default()
    };
    let lenient = TlsLink::load(
        spec(files(Some(&client_id), &w.ca), None, lenient_policy),
        TlsMetrics::default(),
    )
    .unwrap();
    let (server_side, client_side) = handshake(&server, &lenient, "localhost").await;
    assert_eq!(client_side.unwrap(), "jobmanager");
    assert_eq!(server_side.unwrap(), "taskmanager");
}

/// The link refuses to load its own expired or future certificate, so a
/// peer presenting one is built here from the same files with rustls
/// directly — as another program would.
#[tokio::test]
async fn expired_and_not_yet_valid_peers_are_refused_by_name() {
    let w = world();
    let server_id =
        w.ca.issue("jobmanager", &["localhost"], CertValidity::Current);
    let server = link(
        files(Some(&server_id), &w.ca),
        Some(ClientCertificates::Required),
    );
    for (validity, reason) in [
        (CertValidity::Expired, "expired"),
        (CertValidity::NotYet, "not-yet-valid"),
    ] {
        let bad = w.ca.issue("old-taskmanager", &["localhost"], validity);
        let error = TlsLink::load(
            spec(files(Some(&bad), &w.ca), None, TlsPolicy::default()),
            TlsMetrics::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("old-taskmanager.pem"), "{error}");

        let config = raw_client(&bad, &w.ca);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let dial = tokio::spawn(async move {
            let tcp = TcpStream::connect(addr).await.unwrap();
            let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
            let mut tls = tokio_rustls::TlsConnector::from(config)
                .connect(name, tcp)
                .await?;
            tls.write_all(b"x").await?;
            tls.read_u8().await
        });
        let (tcp, peer) = listener.accept().await.unwrap();
        let refused = server.accept(tcp, peer, TIMEOUT).await.unwrap_err();
        assert_eq!(refused.reason, reason);
        assert!(dial.await.unwrap().is_err());
    }
}

fn raw_client(identity: &TestIdentity, ca: &TestPki) -> Arc<rustls::ClientConfig> {
    use rustls_pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pki_types::CertificateDer::pem_file_iter(ca.ca_file()).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    let chain = rustls_pki_types::CertificateDer::pem_file_iter(&identity.certificate)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = rustls_pki_types::PrivateKeyDer::from_pem_file(&identity.key).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Arc::new(
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_client_auth_cert(chain, key)
            .unwrap(),
    )
}

#[tokio::test]
async fn plaintext_on_a_tls_port_and_tls_on_a_plaintext_port_are_refused_without_a_hang() {
    let w = world();
    let server_id =
        w.ca.issue("jobmanager", &["localhost"], CertValidity::Current);
    let metrics = TlsMetrics::default();
    let server = TlsLink::load(
        spec(
            files(Some(&server_id), &w.ca),
            Some(ClientCertificates::Required),
            TlsPolicy::default(),
        ),
        metrics.clone(),
    )
    .unwrap();

    // A plaintext client (an HTTP request) on the TLS port.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let plain = tokio::spawn(async move {
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        tcp.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut rest = Vec::new();
        let _ = tcp.read_to_end(&mut rest).await;
    });
    let (tcp, peer) = listener.accept().await.unwrap();
    let refused = server.accept(tcp, peer, TIMEOUT).await.unwrap_err();
    assert_eq!(refused.reason, "not-tls", "{refused}");
    plain.await.unwrap();

    // A client that opens and says nothing is dropped at the timeout.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let _silent = TcpStream::connect(addr).await.unwrap();
    let (tcp, peer) = listener.accept().await.unwrap();
    let refused = server
        .accept(tcp, peer, Duration::from_millis(200))
        .await
        .unwrap_err();
    assert_eq!(refused.reason, "timeout");

    // A TLS client on a plaintext port that answers with an HTTP error.
    let client_id =
        w.ca.issue("taskmanager", &["localhost"], CertValidity::Current);
    let client = link(files(Some(&client_id), &w.ca), None);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let plaintext_server = tokio::spawn(async move {
        let (mut tcp, _) = listener.accept().await.unwrap();
        let mut buf = [0u8; 512];
        let _ = tcp.read(&mut buf).await;
        let _ = tcp
            .write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            .await;
    });
    let tcp = TcpStream::connect(addr).await.unwrap();
    let refused = client.connect(tcp, "localhost", TIMEOUT).await.unwrap_err();
    assert!(["not-tls", "closed"].contains(&refused.reason), "{refused}");
    plaintext_server.await.unwrap();

    let mut registry = Registry::with_prefix("holdfast");
    metrics.register(&mut registry);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(
        text.contains(
            "holdfast_tls_handshakes_refused_total{link=\"internal\",reason=\"not-tls\"} 1"
        ),
        "{text}"
    );
    assert!(text.contains("reason=\"timeout\"} 1"), "{text}");
}

/// A server whose certificate files (returned) start as a copy of
/// `first`'s and are replaced by the test.
fn live_server(
    w: &World,
    first: &TestIdentity,
    metrics: &TlsMetrics,
) -> (TestIdentity, Arc<TlsLink>) {
    let live = TestIdentity {
        certificate: first.certificate.with_file_name("live.pem"),
        key: first.key.with_file_name("live.key"),
    };
    copy(first, &live);
    let spec = spec(
        files(Some(&live), &w.ca),
        Some(ClientCertificates::Required),
        TlsPolicy::default(),
    );
    (live, TlsLink::load(spec, metrics.clone()).unwrap())
}

fn copy(from: &TestIdentity, to: &TestIdentity) {
    std::fs::copy(&from.certificate, &to.certificate).unwrap();
    std::fs::copy(&from.key, &to.key).unwrap();
}

#[tokio::test]
async fn a_changed_certificate_is_used_by_new_connections_while_open_ones_keep_running() {
    let w = world();
    let first =
        w.ca.issue("jobmanager-2026", &["localhost"], CertValidity::Current);
    let second =
        w.ca.issue("jobmanager-2027", &["localhost"], CertValidity::Current);
    // The files the server is configured with; their content is swapped.
    let metrics = TlsMetrics::default();
    let (live, server) = live_server(&w, &first, &metrics);
    let client_id =
        w.ca.issue("taskmanager", &["localhost"], CertValidity::Current);
    let client = link(files(Some(&client_id), &w.ca), None);

    // A connection opened before the rotation.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server_for_open = Arc::clone(&server);
    let echo = tokio::spawn(async move {
        let (tcp, peer) = listener.accept().await.unwrap();
        let mut tls = server_for_open.accept(tcp, peer, TIMEOUT).await.unwrap();
        let mut buf = [0u8; 4];
        while tls.read_exact(&mut buf).await.is_ok() {
            tls.write_all(&buf).await.unwrap();
        }
    });
    let mut open = client
        .connect(
            TcpStream::connect(addr).await.unwrap(),
            "localhost",
            TIMEOUT,
        )
        .await
        .unwrap();
    let mut buf = [0u8; 4];
    open.write_all(b"ping").await.unwrap();
    open.read_exact(&mut buf).await.unwrap();

    assert!(matches!(server.reload_if_changed(), Reload::Unchanged));
    copy(&second, &live);
    assert!(matches!(server.reload_if_changed(), Reload::Reloaded));
    let (_, seen) = handshake(&server, &client, "localhost").await;
    assert_eq!(seen.unwrap(), "jobmanager-2027");

    // The old connection still carries data, on the old certificate.
    open.write_all(b"pong").await.unwrap();
    open.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"pong");
    assert_eq!(
        peer_name(&open.get_ref().1.peer_certificates().unwrap()[0]),
        "jobmanager-2026"
    );
    drop(open);
    echo.await.unwrap();

    // Broken files are refused; the last good identity stays in use.
    std::fs::write(&live.certificate, "not a certificate").unwrap();
    assert!(matches!(server.reload_if_changed(), Reload::Failed(_)));
    let (_, seen) = handshake(&server, &client, "localhost").await;
    assert_eq!(seen.unwrap(), "jobmanager-2027");
    // So is an expired replacement.
    let expired =
        w.ca.issue("jobmanager-1999", &["localhost"], CertValidity::Expired);
    copy(&expired, &live);
    assert!(matches!(server.reload_if_changed(), Reload::Failed(_)));

    let mut registry = Registry::with_prefix("holdfast");
    metrics.register(&mut registry);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(
        text.contains("holdfast_tls_reloads_total{link=\"internal\",outcome=\"reloaded\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("holdfast_tls_reloads_total{link=\"internal\",outcome=\"failed\"} 2"),
        "{text}"
    );
}

#[tokio::test]
async fn sighup_reloads_at_once_and_the_gauge_says_how_long_the_certificate_has_left() {
    let w = world();
    let first = w.ca.issue(
        "short-lived",
        &["localhost"],
        CertValidity::EndsIn(Duration::from_secs(2 * 86_400)),
    );
    let second = w.ca.issue("renewed", &["localhost"], CertValidity::Current);
    let metrics = TlsMetrics::default();
    let (live, server) = live_server(&w, &first, &metrics);
    let gauge = || {
        metrics
            .certificate_expiry
            .get_or_create(&holdfast_tls::LinkLabel {
                link: "internal".into(),
            })
            .get()
    };
    let two_days = 2 * 86_400;
    assert!((two_days - 60..=two_days).contains(&gauge()), "{}", gauge());

    // An hour between polls: only the signal can make this reload happen.
    let watcher = server.spawn_watcher(Duration::from_secs(3600));
    copy(&second, &live);
    nix::sys::signal::kill(nix::unistd::Pid::this(), nix::sys::signal::Signal::SIGHUP).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while gauge() < 300 * 86_400 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no reload after SIGHUP"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    watcher.abort();
    let client_id =
        w.ca.issue("taskmanager", &["localhost"], CertValidity::Current);
    let client = link(files(Some(&client_id), &w.ca), None);
    let (_, seen) = handshake(&server, &client, "localhost").await;
    assert_eq!(seen.unwrap(), "renewed");
}

#[test]
fn load_errors_name_the_key_and_file_and_never_the_key_material() {
    let w = world();
    let id =
        w.ca.issue("jobmanager", &["localhost"], CertValidity::Current);
    let other = w.ca.issue("other", &["localhost"], CertValidity::Current);
    let key_text = std::fs::read_to_string(&id.key).unwrap();
    let key_body = key_text.lines().nth(1).unwrap().to_owned();
    let load = |files: TlsFiles| {
        TlsLink::load(
            spec(
                files,
                Some(ClientCertificates::Required),
                TlsPolicy::default(),
            ),
            TlsMetrics::default(),
        )
        .unwrap_err()
        .to_string()
    };

    // Each case: what is wrong with a good set of files, and what the
    // error must name. None shows the key's content.
    let nowhere = id.certificate.with_file_name("nowhere.pem");
    type Mistake<'a> = Box<dyn Fn(&mut TlsFiles) + 'a>;
    let cases: Vec<(Mistake<'_>, &[&str])> = vec![
        (
            Box::new(|f| f.certificate = Some(nowhere.clone())),
            &["security.ssl.internal.pem.certificate", "nowhere.pem"],
        ),
        (
            Box::new(|f| f.key = None),
            &["security.ssl.internal.pem.key"],
        ),
        (
            Box::new(|f| f.key = Some(other.key.clone())),
            &["other.key", "jobmanager.pem"],
        ),
        (
            Box::new(|f| f.key = Some(id.certificate.clone())),
            &["security.ssl.internal.pem.key"],
        ),
        (Box::new(|f| f.ca = None), &["security.ssl.internal.pem.ca"]),
        // A key given where the certificate belongs.
        (
            Box::new(|f| f.certificate = Some(id.key.clone())),
            &["CERTIFICATE", "jobmanager.key"],
        ),
    ];
    for (mistake, named) in cases {
        let mut wrong = files(Some(&id), &w.ca);
        mistake(&mut wrong);
        let error = load(wrong);
        for name in named {
            assert!(error.contains(name), "{name} not in: {error}");
        }
        assert!(
            !error.contains(&key_body) && !error.contains("BEGIN"),
            "{error}"
        );
    }
}

/// A TLS 1.3 server refuses a client's certificate after the client's
/// side of the handshake is done; `connect` waits for that verdict, so the
/// dialling side's error names the reason instead of a later "connection
/// closed" inside its protocol.
#[tokio::test]
async fn connect_itself_returns_the_servers_verdict_on_this_sides_certificate() {
    let w = world();
    let server_id =
        w.ca.issue("jobmanager", &["localhost"], CertValidity::Current);
    let server = link(
        files(Some(&server_id), &w.ca),
        Some(ClientCertificates::Required),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = Arc::clone(&server);
    tokio::spawn(async move {
        loop {
            let (tcp, peer) = listener.accept().await.unwrap();
            let _ = serving.accept(tcp, peer, TIMEOUT).await;
        }
    });
    let intruder_id = w
        .other_ca
        .issue("intruder", &["localhost"], CertValidity::Current);
    for (client, reason) in [
        (link(files(None, &w.ca), None), "no-client-certificate"),
        (link(files(Some(&intruder_id), &w.ca), None), "unknown-ca"),
    ] {
        let tcp = TcpStream::connect(addr).await.unwrap();
        let refused = client.connect(tcp, "localhost", TIMEOUT).await.unwrap_err();
        assert_eq!(refused.reason, reason, "{refused}");
    }
    // A member gets its connection.
    let member_id =
        w.ca.issue("taskmanager", &["localhost"], CertValidity::Current);
    let member = link(files(Some(&member_id), &w.ca), None);
    let tcp = TcpStream::connect(addr).await.unwrap();
    member.connect(tcp, "localhost", TIMEOUT).await.unwrap();
}

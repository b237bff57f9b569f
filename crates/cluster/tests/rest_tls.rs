//! The REST API over HTTPS (`security.ssl.rest.*`): holdfast's client
//! verifies the server with the REST CA; a verified client certificate is
//! a credential for calls that change a job (and, with
//! `security.rest.read-access: authenticated`, for reads); with
//! `authentication-enabled` a client without one is refused at the
//! handshake; a plaintext client and a client that trusts another CA get a
//! clear error; every refusal is counted.

mod rest_fake;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use holdfast_cluster::client::{ClientError, RestClient, StatusCode};
use holdfast_cluster::rest::RestAccess;
use holdfast_testkit::{CertValidity, TestIdentity, TestPki};
use holdfast_tls::{ClientCertificates, LinkSpec, TlsFiles, TlsLink, TlsMetrics};
use prometheus_client::metrics::counter::Counter;
use rest_fake::{Fake, RUNNING, Role, serve_with};

const TIMEOUT: Duration = Duration::from_secs(5);

struct Pki {
    _dir: tempfile::TempDir,
    ca: TestPki,
    server: TestIdentity,
    operator: TestIdentity,
    stranger_ca: TestPki,
}

fn pki() -> Pki {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestPki::new(dir.path(), "rest");
    let server = ca.issue(
        "jobmanager",
        &["localhost", "127.0.0.1"],
        CertValidity::Current,
    );
    let operator = ca.issue("operator-alice", &["alice.example"], CertValidity::Current);
    let stranger_ca = TestPki::new(dir.path(), "stranger");
    Pki {
        _dir: dir,
        ca,
        server,
        operator,
        stranger_ca,
    }
}

fn link(
    identity: Option<&TestIdentity>,
    ca: &TestPki,
    serve: Option<ClientCertificates>,
    metrics: &TlsMetrics,
) -> Arc<TlsLink> {
    let files = TlsFiles::pem(
        "security.ssl.rest",
        identity.map(TestIdentity::pair),
        &ca.ca_file(),
    );
    let spec = LinkSpec {
        alpn: vec![b"http/1.1".to_vec()],
        ..LinkSpec::new("rest", files, serve, serve.is_none())
    };
    TlsLink::load(spec, metrics.clone()).unwrap()
}

/// The fake leader over HTTPS with `p.server`'s certificate, asking for
/// client certificates as `clients` says, under `access`.
async fn https_fake(
    p: &Pki,
    clients: ClientCertificates,
    metrics: &TlsMetrics,
    access: RestAccess,
) -> rest_fake::Served {
    let server = link(Some(&p.server), &p.ca, Some(clients), metrics);
    serve_with(Fake::new(Role::Leader), access.with_tls(server, true)).await
}

/// A holdfast client over HTTPS with `identity` as its certificate.
fn client(url: &str, identity: Option<&TestIdentity>, ca: &TestPki) -> RestClient {
    let tls = link(identity, ca, None, &TlsMetrics::default());
    RestClient::with_tls(url, TIMEOUT, tls.client_config().unwrap()).unwrap()
}

#[tokio::test]
async fn a_verified_client_certificate_may_change_jobs_and_an_anonymous_client_may_only_read()
-> Result<()> {
    let p = pki();
    let refused = Counter::default();
    let access = RestAccess::open().counting(refused.clone());
    let jm = https_fake(
        &p,
        ClientCertificates::Optional,
        &TlsMetrics::default(),
        access,
    )
    .await;
    assert!(jm.url.starts_with("https://"), "{}", jm.url);

    let anonymous = client(&jm.url, None, &p.ca);
    assert_eq!(anonymous.jobs().await?.jobs.len(), 2, "reads stay open");
    let error = anonymous.cancel(RUNNING).await.unwrap_err();
    assert_eq!(error.status(), Some(StatusCode::UNAUTHORIZED), "{error}");
    assert!(
        error.to_string().contains("no client certificate"),
        "{error}"
    );
    assert!(jm.fake.cancelled.lock().unwrap().is_empty());
    assert_eq!(refused.get(), 1);

    let alice = client(&jm.url, Some(&p.operator), &p.ca);
    alice.cancel(RUNNING).await?;
    assert_eq!(jm.fake.cancelled.lock().unwrap().len(), 1);
    Ok(())
}

#[tokio::test]
async fn closed_reads_need_a_certificate_too() -> Result<()> {
    let p = pki();
    let jm = https_fake(
        &p,
        ClientCertificates::Optional,
        &TlsMetrics::default(),
        RestAccess::open().closing_reads(),
    )
    .await;
    let error = client(&jm.url, None, &p.ca).jobs().await.unwrap_err();
    assert_eq!(error.status(), Some(StatusCode::UNAUTHORIZED), "{error}");
    assert!(error.to_string().contains("read-access"), "{error}");
    let alice = client(&jm.url, Some(&p.operator), &p.ca);
    assert_eq!(alice.jobs().await?.jobs.len(), 2);
    Ok(())
}

#[tokio::test]
async fn with_authentication_enabled_a_client_without_a_certificate_is_refused_at_the_handshake()
-> Result<()> {
    let p = pki();
    let metrics = TlsMetrics::default();
    let jm = https_fake(
        &p,
        ClientCertificates::Required,
        &metrics,
        RestAccess::open(),
    )
    .await;

    let error = client(&jm.url, None, &p.ca).jobs().await.unwrap_err();
    assert!(matches!(error, ClientError::Tls { .. }), "{error:?}");
    let text = error.to_string();
    assert!(
        text.contains("TLS") && text.contains(&jm.url[..20]),
        "{text}"
    );

    // Another CA's certificate is refused too.
    let intruder = p
        .stranger_ca
        .issue("intruder", &["localhost"], CertValidity::Current);
    let error = client(&jm.url, Some(&intruder), &p.ca)
        .jobs()
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Tls { .. }), "{error:?}");

    assert_eq!(
        client(&jm.url, Some(&p.operator), &p.ca)
            .jobs()
            .await?
            .jobs
            .len(),
        2
    );
    let refusals = |reason: &str| metrics.refusals("rest", reason);
    assert_eq!(refusals("no-client-certificate"), 1);
    assert_eq!(refusals("unknown-ca"), 1);
    Ok(())
}

#[tokio::test]
async fn a_client_that_does_not_trust_the_server_or_speaks_plain_http_gets_a_clear_error()
-> Result<()> {
    let p = pki();
    let metrics = TlsMetrics::default();
    let jm = https_fake(
        &p,
        ClientCertificates::Optional,
        &metrics,
        RestAccess::open(),
    )
    .await;

    let suspicious = client(&jm.url, None, &p.stranger_ca);
    match suspicious.jobs().await.unwrap_err() {
        ClientError::Tls { refusal, .. } => assert_eq!(refusal.reason, "unknown-ca"),
        other => panic!("expected a TLS refusal, got {other:?}"),
    }

    // Plain HTTP to the HTTPS port: refused, and the server keeps serving.
    let plain = RestClient::new(&format!("http://{}", jm.addr), TIMEOUT)?;
    assert!(plain.jobs().await.is_err());
    assert_eq!(client(&jm.url, None, &p.ca).jobs().await?.jobs.len(), 2);
    let not_tls = metrics.refusals("rest", "not-tls");
    assert_eq!(not_tls, 1);

    // And the client refuses to send https to a plain URL or the reverse.
    let tls = link(None, &p.ca, None, &TlsMetrics::default())
        .client_config()
        .unwrap();
    let error = RestClient::with_tls(&format!("http://{}", jm.addr), TIMEOUT, tls).unwrap_err();
    assert!(error.to_string().contains("https://"), "{error}");
    let error = RestClient::new(&jm.url, TIMEOUT).unwrap_err();
    assert!(
        error.to_string().contains("security.ssl.rest.pem.ca"),
        "{error}"
    );
    Ok(())
}

/// A client that opens connections and never finishes a handshake holds
/// nobody else up.
#[tokio::test]
async fn stalled_handshakes_do_not_block_other_clients() -> Result<()> {
    let p = pki();
    let jm = https_fake(
        &p,
        ClientCertificates::Optional,
        &TlsMetrics::default(),
        RestAccess::open(),
    )
    .await;
    let mut stalled = Vec::new();
    for _ in 0..20 {
        stalled.push(tokio::net::TcpStream::connect(jm.addr).await?);
    }
    let answered = tokio::time::timeout(TIMEOUT, client(&jm.url, None, &p.ca).jobs()).await;
    assert_eq!(answered??.jobs.len(), 2);
    Ok(())
}

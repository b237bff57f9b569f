//! RPC over mutual TLS (`security.ssl.internal.*`): calls go through when
//! both sides present certificates of the cluster's CA; a caller without a
//! certificate, with another CA's, or a plaintext caller is refused before
//! any call runs, with an error that says TLS; the cluster secret's
//! signature still counts as a second factor.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use holdfast_rpc::auth::VerifyConfig;
use holdfast_rpc::config::ClientTls;
use holdfast_rpc::proto;
use holdfast_rpc::{Auth, ClientAuth};
use holdfast_rpc::{ClientConfig, JobManagerClient, RpcError, ServerAuth};
use holdfast_testkit::{CertValidity, TestIdentity, TestPki};
use holdfast_tls::{ClientCertificates, LinkSpec, TlsFiles, TlsLink, TlsMetrics};

fn link(identity: Option<&TestIdentity>, ca: &TestPki, metrics: &TlsMetrics) -> Arc<TlsLink> {
    let files = TlsFiles::pem(
        "security.ssl.internal",
        identity.map(TestIdentity::pair),
        &ca.ca_file(),
    );
    let serve = identity.map(|_| ClientCertificates::Required);
    TlsLink::load(
        LinkSpec::new("internal", files, serve, true),
        metrics.clone(),
    )
    .unwrap()
}

fn client(target: &str, auth: &Auth, tls: Option<Arc<TlsLink>>) -> JobManagerClient {
    let config = ClientConfig {
        ask_timeout: Duration::from_secs(5),
        tls: tls.map(ClientTls),
        ..ClientConfig::default()
    };
    JobManagerClient::new(target, ClientAuth::new(auth, peer("tm-1")), &config).unwrap()
}

/// Both test services over mutual TLS with `identity`, signed calls
/// verified with `secret`; the `localhost:PORT` to dial.
async fn serve(
    identity: &TestIdentity,
    ca: &TestPki,
    secret: &Auth,
    metrics: &TlsMetrics,
) -> (String, holdfast_rpc::ServerHandle) {
    let (addr, server) = holdfast_rpc::serve_both(
        listener().await,
        TestTaskManager::default(),
        TestJobManager,
        ServerAuth::new(secret, &VerifyConfig::default()),
        Some(link(Some(identity), ca, metrics)),
    )
    .unwrap();
    (format!("localhost:{}", addr.port()), server)
}

fn register() -> proto::RegisterTaskManagerRequest {
    proto::RegisterTaskManagerRequest {
        task_manager_id: "tm-1".into(),
        leader_epoch: LEADER_EPOCH.0,
        ..Default::default()
    }
}

#[tokio::test]
async fn calls_run_over_mutual_tls_and_strangers_are_refused_before_any_call() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestPki::new(dir.path(), "cluster");
    let stranger_ca = TestPki::new(dir.path(), "stranger");
    let jm_id = ca.issue(
        "jobmanager",
        &["localhost", "127.0.0.1"],
        CertValidity::Current,
    );
    let tm_id = ca.issue("taskmanager-1", &["localhost"], CertValidity::Current);
    let server_metrics = TlsMetrics::default();
    let secret = auth(SECRET);
    let (target, _server) = serve(&jm_id, &ca, &secret, &server_metrics).await;

    let member = client(
        &target,
        &secret,
        Some(link(Some(&tm_id), &ca, &TlsMetrics::default())),
    );
    let reply = member.register_task_manager(register()).await.unwrap();
    assert_eq!(reply.registration_id, "reg-tm-1");

    // Right secret, no certificate: refused at the handshake.
    let anonymous = client(
        &target,
        &secret,
        Some(link(None, &ca, &TlsMetrics::default())),
    );
    let error = anonymous
        .register_task_manager(register())
        .await
        .unwrap_err();
    assert!(matches!(error, RpcError::Unavailable { .. }), "{error:?}");
    assert!(error.to_string().contains("TLS"), "{error}");

    // Another CA's certificate: refused too.
    let intruder_id = stranger_ca.issue("intruder", &["localhost"], CertValidity::Current);
    let intruder = client(
        &target,
        &secret,
        Some(link(Some(&intruder_id), &ca, &TlsMetrics::default())),
    );
    let error = intruder
        .register_task_manager(register())
        .await
        .unwrap_err();
    assert!(error.to_string().contains("TLS"), "{error}");

    // A plaintext caller gets nothing either.
    let plaintext = client(&target, &secret, None);
    assert!(plaintext.register_task_manager(register()).await.is_err());

    // A certified member with the wrong secret: the second factor holds.
    let wrong_secret = auth("another-secret-0123456789abcdef");
    let half = client(
        &target,
        &wrong_secret,
        Some(link(Some(&tm_id), &ca, &TlsMetrics::default())),
    );
    let error = half.register_task_manager(register()).await.unwrap_err();
    assert!(
        matches!(error, RpcError::Unauthenticated { .. }),
        "{error:?}"
    );

    let refused = |reason: &str| server_metrics.refusals("internal", reason);
    assert!(refused("no-client-certificate") >= 1);
    assert!(refused("unknown-ca") >= 1);
    assert!(refused("not-tls") >= 1);

    // And the member still gets through after all that.
    member.register_task_manager(register()).await.unwrap();
}

/// A server certificate for another host is refused by the caller.
#[tokio::test]
async fn a_caller_checks_the_servers_name() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestPki::new(dir.path(), "cluster");
    let jm_id = ca.issue(
        "jobmanager",
        &["jm.elsewhere.example"],
        CertValidity::Current,
    );
    let tm_id = ca.issue("taskmanager-1", &["localhost"], CertValidity::Current);
    let secret = auth(SECRET);
    let (target, _server) = serve(&jm_id, &ca, &secret, &TlsMetrics::default()).await;
    let member = client(
        &target,
        &secret,
        Some(link(Some(&tm_id), &ca, &TlsMetrics::default())),
    );
    let error = member.register_task_manager(register()).await.unwrap_err();
    assert!(error.to_string().contains("another host"), "{error}");
}

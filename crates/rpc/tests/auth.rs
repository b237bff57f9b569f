//! Authentication over real TCP: who gets through, who is refused and why,
//! and that the secret never shows.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use holdfast_rpc::auth::{AUTH_HEADER, Auth, ClusterSecret, VerifyConfig};
use holdfast_rpc::proto::HeartbeatRequest;
use holdfast_rpc::proto::task_manager_service_client::TaskManagerServiceClient;
use holdfast_rpc::{ClientAuth, ClientConfig, RpcError, ServerAuth, TaskManagerClient};
use tonic::{Code, Request};

const ASK: Duration = Duration::from_secs(10);

fn unauthenticated_message(result: Result<impl std::fmt::Debug, RpcError>) -> String {
    match result {
        Err(RpcError::Unauthenticated { method, message }) => {
            assert_eq!(method, "TaskManagerService/Heartbeat");
            message
        }
        other => panic!("expected Unauthenticated, got {other:?}"),
    }
}

#[tokio::test]
async fn the_right_secret_passes_and_the_handler_sees_the_peer_id() {
    let (target, _server) = task_manager(&auth(SECRET)).await;
    let client = tm_client(&target, &auth(SECRET), ASK);
    for _ in 0..3 {
        let reply = client.heartbeat(HeartbeatRequest::default()).await.unwrap();
        assert_eq!(reply.task_manager_id, "jm-a.leader");
    }
}

#[tokio::test]
async fn a_call_without_the_header_is_unauthenticated() {
    let (target, _server) = task_manager(&auth(SECRET)).await;
    let client = tm_client(&target, &Auth::Disabled, ASK);
    let message = unauthenticated_message(client.heartbeat(HeartbeatRequest::default()).await);
    assert!(
        message.contains("missing x-holdfast-auth header"),
        "{message}"
    );
}

#[tokio::test]
async fn another_secret_is_unauthenticated_and_no_error_or_debug_output_shows_a_secret() {
    let logs = Arc::new(Mutex::new(Vec::new()));
    let writer = {
        let logs = Arc::clone(&logs);
        move || LogBuffer(Arc::clone(&logs))
    };
    let subscriber = tracing_subscriber::fmt()
        .with_writer(writer)
        .with_ansi(false)
        .finish();
    let _logging = tracing::subscriber::set_default(subscriber);

    let server_auth = auth(SECRET);
    let (target, _server) = task_manager(&server_auth).await;
    let client_auth = auth(OTHER_SECRET);
    let client = tm_client(&target, &client_auth, ASK);
    let error = client
        .heartbeat(HeartbeatRequest::default())
        .await
        .unwrap_err();
    let rendered = format!("{error} {error:?}");
    assert!(
        matches!(error, RpcError::Unauthenticated { .. }),
        "{rendered}"
    );
    assert!(rendered.contains("bad signature"), "{rendered}");
    // A second refusal within the interval is counted, not logged again.
    client
        .heartbeat(HeartbeatRequest::default())
        .await
        .unwrap_err();

    let logs = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    assert_eq!(
        logs.matches("refused an unauthenticated RPC call").count(),
        1,
        "{logs}"
    );
    assert!(
        logs.contains("WARN") && logs.contains("remote=127.0.0.1:"),
        "{logs}"
    );

    let secret_error = ClusterSecret::from_bytes(&SECRET.as_bytes()[..8]).unwrap_err();
    let everything = format!(
        "{rendered} {server_auth:?} {client_auth:?} {client:?} {:?} {:?} {secret_error} {secret_error:?} {logs}",
        ServerAuth::new(&server_auth, &VerifyConfig::default()),
        ClientAuth::new(&client_auth, peer("tm-1")),
    );
    for secret in [SECRET, OTHER_SECRET, &SECRET[..8]] {
        assert!(
            !everything.contains(secret),
            "the secret leaked: {everything}"
        );
    }
    assert!(everything.contains("<redacted>"));
}

#[tokio::test]
async fn a_replayed_header_is_refused() {
    let secret = auth(SECRET);
    let (target, _server) = task_manager(&secret).await;
    let header = ClientAuth::new(&secret, peer("tm-1")).sign_now().unwrap();
    let mut raw = TaskManagerServiceClient::connect(format!("http://{target}"))
        .await
        .unwrap();
    let request = || {
        let mut request = Request::new(HeartbeatRequest::default());
        request.metadata_mut().insert(AUTH_HEADER, header.clone());
        request
    };
    assert_eq!(
        raw.heartbeat(request())
            .await
            .unwrap()
            .into_inner()
            .task_manager_id,
        "tm-1"
    );
    let status = raw.heartbeat(request()).await.unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
    assert!(
        status.message().contains("replayed"),
        "{}",
        status.message()
    );
}

#[tokio::test]
async fn a_clock_outside_the_window_is_refused() {
    let secret = auth(SECRET);
    let (target, _server) = task_manager(&secret).await;
    for offset_ms in [-10 * 60_000, 10 * 60_000] {
        let signer = ClientAuth::with_runtime(&secret, peer("tm-1"), skewed(offset_ms));
        let client = TaskManagerClient::new(&target, signer, &ClientConfig::default()).unwrap();
        let message = unauthenticated_message(client.heartbeat(HeartbeatRequest::default()).await);
        assert!(message.contains("outside the allowed ±300s"), "{message}");
    }
    // Within the window is fine.
    let signer = ClientAuth::with_runtime(&secret, peer("tm-1"), skewed(-60_000));
    let client = TaskManagerClient::new(&target, signer, &ClientConfig::default()).unwrap();
    client.heartbeat(HeartbeatRequest::default()).await.unwrap();
}

#[tokio::test]
async fn disabled_auth_is_explicit_and_lets_calls_through_anonymously() {
    let (target, _server) = task_manager(&Auth::Disabled).await;
    assert!(!Auth::Disabled.is_enabled());
    let client = tm_client(&target, &auth(SECRET), ASK);
    let reply = client.heartbeat(HeartbeatRequest::default()).await.unwrap();
    assert_eq!(reply.task_manager_id, "anonymous");
}

struct LogBuffer(Arc<Mutex<Vec<u8>>>);

impl Write for LogBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

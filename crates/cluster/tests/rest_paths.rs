//! Property: whatever path, job id or method a request carries, the REST
//! server answers (it does not hang up or panic) and never with a 5xx.
//! Requests are written as raw HTTP/1.1 so that paths no HTTP client would
//! send reach the server too.

mod rest_fake;

use std::net::SocketAddr;
use std::sync::OnceLock;

use proptest::prelude::*;
use rest_fake::{Fake, Role, Served, serve};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::runtime::Runtime;

/// One server for every case: the runtime it runs on and the served fake.
fn server() -> &'static (Runtime, Served) {
    static SERVER: OnceLock<(Runtime, Served)> = OnceLock::new();
    SERVER.get_or_init(|| {
        let runtime = Runtime::new().expect("a tokio runtime");
        let served = runtime.block_on(serve(Fake::new(Role::Leader)));
        (runtime, served)
    })
}

/// Sends `request` (raw bytes) and returns the answer's status code.
async fn status_of(addr: SocketAddr, request: Vec<u8>) -> u16 {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream.write_all(&request).await.expect("write");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.expect("read");
    let text = String::from_utf8_lossy(&answer);
    let status = text
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .unwrap_or_else(|| panic!("not an HTTP answer: {text:?}"));
    status.parse().expect("a status code")
}

fn request(method: &str, target: &str) -> Vec<u8> {
    format!("{method} {target} HTTP/1.1\r\nHost: holdfast\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        .into_bytes()
}

proptest! {
    #[test]
    fn any_path_is_answered_without_a_5xx(
        method in prop::sample::select(vec!["GET", "POST", "PATCH", "PUT", "DELETE", "HEAD", "OPTIONS"]),
        prefix in prop::sample::select(vec!["", "/jobs", "/jobs/0123456789abcdef0123456789abcdef", "/overview"]),
        path in "(/[a-zA-Z0-9%._~!$&'()*+,;=:@?-]{0,40}){1,4}",
    ) {
        let (runtime, served) = server();
        let path = format!("{prefix}{path}");
        let status = runtime.block_on(status_of(served.addr, request(method, &path)));
        prop_assert!(status < 500, "{method} {path} -> {status}");
    }

    #[test]
    fn any_job_id_is_answered_without_a_5xx(
        id in "[0-9a-fA-F%g-z]{0,40}|\\PC{0,40}",
        suffix in prop::sample::select(vec!["", "/exceptions", "?mode=cancel", "/cancel"]),
        method in prop::sample::select(vec!["GET", "POST", "PATCH"]),
    ) {
        let (runtime, served) = server();
        // Characters a request line cannot carry raw are percent-encoded.
        let encoded: String = id
            .bytes()
            .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
            .collect();
        let target = format!("/jobs/{encoded}{suffix}");
        let status = runtime.block_on(status_of(served.addr, request(method, &target)));
        prop_assert!(status < 500, "{method} {target} -> {status}");
    }
}

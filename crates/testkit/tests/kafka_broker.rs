//! The kit's Kafka broker: starts on a free port, restarts on the same one,
//! and never outlives its handle.

use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use holdfast_testkit::KafkaBroker;

fn alive(pid: u32) -> bool {
    // A zombie is gone for our purposes: the kit reaps its children.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| !stat.contains(") Z "))
        .unwrap_or(false)
}

#[test]
fn a_broker_serves_restarts_on_its_port_and_dies_with_its_handle() -> anyhow::Result<()> {
    let mut broker = KafkaBroker::start()?;
    let first = broker.pid().expect("a started broker has a pid");
    TcpStream::connect_timeout(&broker.addr(), Duration::from_secs(2))?;

    broker.restart()?;
    let second = broker.pid().expect("a restarted broker has a pid");
    assert_ne!(first, second, "restart must start a new process");
    assert!(
        !alive(first),
        "the first broker process must be gone after restart"
    );
    TcpStream::connect_timeout(&broker.addr(), Duration::from_secs(2))?;

    drop(broker);
    assert!(!alive(second), "dropping the handle must kill the broker");
    Ok(())
}

#[test]
fn a_missing_binary_is_a_loud_error_naming_the_path() {
    let error = KafkaBroker::start_binary(Path::new("/nonexistent/noida-db").into())
        .expect_err("no broker binary, no broker");
    let text = error.to_string();
    assert!(text.contains("/nonexistent/noida-db"), "{text}");
    assert!(!Path::new("/nonexistent/noida-db").exists());
}

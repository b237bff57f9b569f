//! The data server against strangers: another secret, no secret, another
//! protocol version, garbage. Each is refused with an `Error` frame naming
//! the problem and one log line naming the peer; the server stays up and
//! serves the next good connection; no secret ever shows.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;

use common::*;
use holdfast_auth::Auth;
use holdfast_exchange::{Exchange, ExchangeError, Interrupt};

/// Reads what the server answers until it closes: its frames' kinds, and
/// the message of its `Error` frame.
fn server_answer(stream: &mut TcpStream) -> (Vec<u8>, String) {
    stream.set_read_timeout(Some(DEADLINE)).unwrap();
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).unwrap();
    let (mut kinds, mut message) = (Vec::new(), String::new());
    let mut rest = &bytes[..];
    while rest.len() >= 5 {
        let len = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
        let (frame, tail) = rest[4..].split_at(len);
        kinds.push(frame[0]);
        if frame[0] == 8 {
            message = String::from_utf8_lossy(&frame[10..]).into_owned();
        }
        rest = tail;
    }
    (kinds, message)
}

fn hello(version: u16) -> Vec<u8> {
    let mut frame = vec![0, 0, 0, 9, 1];
    frame.extend_from_slice(b"HFDX");
    frame.extend_from_slice(&version.to_be_bytes());
    frame.extend_from_slice(&0u16.to_be_bytes());
    frame
}

/// The error a consumer holding `consumer_auth` gets from a producer
/// holding the right secret.
fn refused_consumer(consumer_auth: Auth) -> (ExchangeError, String) {
    let logs = captured_logs();
    let rt = runtime();
    let (a, b) = pair(
        &rt,
        options("tm-a", auth(SECRET), 2),
        options("tm-b", consumer_auth, 2),
    );
    let never = Interrupt::new();
    let _writer = a
        .create_partition(partition(1, 0), &[b.location()], &never)
        .unwrap();
    let mut gate = b
        .open_gate(vec![spec(partition(1, 0), 0, &a.location())], &never)
        .unwrap();
    let error = gate.next(DEADLINE).unwrap_err();
    eventually("the refusal to be logged", || {
        logs_text(&logs).contains("data server: refused a connection")
    });
    // The server is still up for the right secret.
    let c = rt
        .block_on(Exchange::start(options("tm-c", auth(SECRET), 2)))
        .unwrap();
    one_good_channel(&a, &c, 2);
    (error, logs_text(&logs))
}

#[test]
fn another_secret_is_refused_clearly_and_nothing_shows_a_secret() {
    let (error, logs) = refused_consumer(auth(OTHER_SECRET));
    let text = error.to_string();
    assert!(
        matches!(error, ExchangeError::Unauthenticated { .. }),
        "{error:?}"
    );
    assert!(
        text.contains("bad signature") && text.contains("tm-a@127.0.0.1:"),
        "{text}"
    );
    assert!(
        logs.contains("WARN")
            && logs.contains("remote=127.0.0.1:")
            && logs.contains("bad signature"),
        "{logs}"
    );
    let everything = format!("{text} {error:?} {logs}");
    for secret in [SECRET, OTHER_SECRET] {
        assert!(
            !everything.contains(secret),
            "the secret leaked: {everything}"
        );
    }
}

#[test]
fn a_consumer_without_the_secret_is_refused() {
    let (error, logs) = refused_consumer(Auth::Disabled);
    assert!(
        matches!(error, ExchangeError::Unauthenticated { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("missing"), "{error}");
    assert!(logs.contains("kind=\"missing\""), "{logs}");
}

#[test]
fn garbage_at_the_port_is_refused_logged_and_survived() {
    let logs = captured_logs();
    let rt = runtime();
    let (a, b) = pair(
        &rt,
        options("tm-a", auth(SECRET), 2),
        options("tm-b", auth(SECRET), 2),
    );
    let target = a.address().unwrap();

    let mut http = TcpStream::connect(target).unwrap();
    http.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let (kinds, message) = server_answer(&mut http);
    assert_eq!(kinds, [8], "one Error frame, then close");
    assert!(
        message.contains("not a data connection") && message.contains("exceeds"),
        "{message}"
    );
    let port = http.local_addr().unwrap().port();
    eventually("the garbage to be logged", || {
        logs_text(&logs).contains(&format!("remote=127.0.0.1:{port}"))
    });
    let line = logs_text(&logs)
        .lines()
        .find(|line| line.contains(&format!("remote=127.0.0.1:{port}")))
        .unwrap()
        .to_owned();
    assert!(
        line.contains("WARN") && line.contains("exceeds the limit"),
        "{line}"
    );

    let mut unknown = TcpStream::connect(target).unwrap();
    unknown.write_all(&[0, 0, 0, 1, 0x42]).unwrap();
    assert!(
        server_answer(&mut unknown)
            .1
            .contains("unknown frame kind 0x42")
    );

    let mut future = TcpStream::connect(target).unwrap();
    future.write_all(&hello(99)).unwrap();
    let (kinds, message) = server_answer(&mut future);
    assert_eq!(kinds, [8]);
    assert!(
        message.contains("protocol version 99 is not supported"),
        "{message}"
    );

    let mut cut = TcpStream::connect(target).unwrap();
    cut.write_all(&hello(1)[..7]).unwrap();
    cut.shutdown(std::net::Shutdown::Write).unwrap();
    assert!(
        server_answer(&mut cut)
            .1
            .contains("in the middle of a frame")
    );

    // Still serving.
    one_good_channel(&a, &b, 1);
}

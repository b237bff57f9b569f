//! A TLS 1.3 server judges the client's certificate after the client's side
//! of the handshake has finished: a refusal arrives as an alert on the
//! connection, and a client that only writes (an HTTP/2 preface, a Hello
//! frame) would learn of it as a bare "connection closed" deep inside its
//! protocol. So after the handshake the client waits, briefly, for what the
//! server sends first: the session tickets rustls's servers send at once
//! (or data), or the alert. Records are processed into rustls's buffers and
//! no plaintext is taken out of them: the protocol reads it later as usual.

use std::io;
use std::time::Duration;

use rustls::ProtocolVersion;
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use crate::refusal::HandshakeRefusal;

/// `std::io::Read` over a tokio socket that never waits: rustls pulls what
/// has arrived.
struct Nonblocking<'a>(&'a TcpStream);

impl io::Read for Nonblocking<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.try_read(buf)
    }
}

/// Waits up to `wait` for the server's first records after a TLS 1.3
/// handshake; an alert among them is the server refusing this side.
/// TLS 1.2 servers judge within the handshake: nothing to wait for.
pub(crate) async fn await_verdict(
    stream: &mut TlsStream<TcpStream>,
    wait: Duration,
) -> Result<(), HandshakeRefusal> {
    let (tcp, connection) = stream.get_mut();
    if connection.protocol_version() != Some(ProtocolVersion::TLSv1_3) {
        return Ok(());
    }
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        match tokio::time::timeout_at(deadline, tcp.readable()).await {
            // Nothing yet: a server that sends no tickets and waits for the
            // client to speak first. Carry on; a refusal shows later.
            Err(_) => return Ok(()),
            Ok(Err(error)) => return Err(HandshakeRefusal::from_io(&error)),
            Ok(Ok(())) => {}
        }
        match connection.read_tls(&mut Nonblocking(tcp)) {
            Ok(0) => {
                return Err(HandshakeRefusal {
                    reason: "closed",
                    detail: "the server closed the connection right after the handshake; it \
                             may have refused this side's certificate"
                        .into(),
                });
            }
            Ok(_) => {}
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => continue,
            Err(error) => return Err(HandshakeRefusal::from_io(&error)),
        }
        if let Err(error) = connection.process_new_packets() {
            return Err(HandshakeRefusal::from_rustls(&error));
        }
        // Something from the server that is not an alert: it accepted us.
        return Ok(());
    }
}

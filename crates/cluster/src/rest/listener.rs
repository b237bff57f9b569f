//! The REST server's listener: plain TCP, or TLS with the REST link's
//! current certificate ([`RestListener`]). Each connection carries a
//! [`RestPeer`] — its address and, when it presented one, the name of its
//! verified client certificate — which the access rule reads.
//!
//! TLS handshakes run in tasks of their own ([`Acceptor`]), so a client
//! that stalls its handshake holds nobody else up.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use holdfast_tls::{Accepted, Acceptor, Stream, TlsLink};
use tokio::net::TcpListener;

/// Who is calling: the address, and the verified client certificate's name
/// if one was presented over TLS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestPeer {
    /// The remote address.
    pub addr: SocketAddr,
    /// The client certificate's name (common name, else first DNS name),
    /// verified against `security.ssl.rest.pem.ca`.
    pub certificate: Option<String>,
}

/// The listener axum serves from.
#[derive(Debug)]
pub struct RestListener {
    local: SocketAddr,
    inner: Inner,
}

#[derive(Debug)]
enum Inner {
    Plain(TcpListener),
    Tls(Acceptor),
}

impl RestListener {
    /// Plain HTTP on `listener`.
    pub fn plain(listener: TcpListener) -> io::Result<RestListener> {
        Ok(RestListener {
            local: listener.local_addr()?,
            inner: Inner::Plain(listener),
        })
    }

    /// HTTPS on `listener` with `link`'s current certificate for each new
    /// connection. Must be called within a tokio runtime.
    pub fn tls(listener: TcpListener, link: Arc<TlsLink>) -> io::Result<RestListener> {
        Ok(RestListener {
            local: listener.local_addr()?,
            inner: Inner::Tls(Acceptor::spawn(listener, link)),
        })
    }
}

impl Listener for RestListener {
    type Io = Stream;
    type Addr = RestPeer;

    async fn accept(&mut self) -> (Stream, RestPeer) {
        match &mut self.inner {
            Inner::Plain(listener) => loop {
                match TcpListener::accept(listener).await {
                    Ok((tcp, addr)) => {
                        let _ = tcp.set_nodelay(true);
                        return (
                            Stream::Plain(tcp),
                            RestPeer {
                                addr,
                                certificate: None,
                            },
                        );
                    }
                    Err(error) => {
                        tracing::warn!(%error, "REST server: accept failed; retrying in 100 ms");
                        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    }
                }
            },
            Inner::Tls(acceptor) => match acceptor.next().await {
                Some(Accepted { stream, peer }) => {
                    let certificate = stream.peer_certificate();
                    let peer = RestPeer {
                        addr: peer,
                        certificate,
                    };
                    (stream, peer)
                }
                // The acceptor ended (it never does on its own): serve nothing more.
                None => std::future::pending().await,
            },
        }
    }

    fn local_addr(&self) -> io::Result<RestPeer> {
        Ok(RestPeer {
            addr: self.local,
            certificate: None,
        })
    }
}

impl Connected<IncomingStream<'_, RestListener>> for RestPeer {
    fn connect_info(stream: IncomingStream<'_, RestListener>) -> Self {
        stream.remote_addr().clone()
    }
}

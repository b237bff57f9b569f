//! The REST server's listener: plain TCP, or TLS with the REST link's
//! current certificate ([`RestListener`]). Each connection carries a
//! [`RestPeer`] — its address and, when it presented one, the name of its
//! verified client certificate — which the access rule reads.
//!
//! TLS handshakes run in their own tasks (at most [`MAX_HANDSHAKES`] at
//! once), so a client that stalls its handshake holds nobody else up; it is
//! dropped after [`HANDSHAKE_TIMEOUT`](holdfast_tls::HANDSHAKE_TIMEOUT).

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use holdfast_tls::{TlsLink, peer_name};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinHandle;
use tokio_rustls::server::TlsStream;

/// Handshakes in progress at most; more wait in the kernel's backlog.
pub const MAX_HANDSHAKES: usize = 256;

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

/// One accepted connection.
#[derive(Debug)]
pub enum RestIo {
    /// Plain HTTP.
    Plain(TcpStream),
    /// HTTPS.
    Tls(Box<TlsStream<TcpStream>>),
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
    Tls {
        ready: mpsc::Receiver<(RestIo, RestPeer)>,
        acceptor: JoinHandle<()>,
    },
}

impl Drop for RestListener {
    fn drop(&mut self) {
        if let Inner::Tls { acceptor, .. } = &self.inner {
            acceptor.abort();
        }
    }
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
        let local = listener.local_addr()?;
        let (tx, ready) = mpsc::channel(64);
        let acceptor = tokio::spawn(accept_tls(listener, link, tx));
        Ok(RestListener {
            local,
            inner: Inner::Tls { ready, acceptor },
        })
    }
}

async fn accept_tls(
    listener: TcpListener,
    link: Arc<TlsLink>,
    ready: mpsc::Sender<(RestIo, RestPeer)>,
) {
    let permits = Arc::new(Semaphore::new(MAX_HANDSHAKES));
    loop {
        let Ok(permit) = Arc::clone(&permits).acquire_owned().await else {
            return;
        };
        let (tcp, addr) = match TcpListener::accept(&listener).await {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of file descriptors and the like: do not spin.
                tracing::warn!(%error, "REST server: accept failed; retrying in 100 ms");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let link = Arc::clone(&link);
        let ready = ready.clone();
        tokio::spawn(async move {
            let _permit = permit;
            // A refusal is counted and logged by the link.
            let Ok(tls) = link
                .accept(tcp, addr, holdfast_tls::HANDSHAKE_TIMEOUT)
                .await
            else {
                return;
            };
            let certificate = tls
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|chain| chain.first())
                .map(peer_name);
            let peer = RestPeer { addr, certificate };
            let _ = ready.send((RestIo::Tls(Box::new(tls)), peer)).await;
        });
    }
}

impl Listener for RestListener {
    type Io = RestIo;
    type Addr = RestPeer;

    async fn accept(&mut self) -> (RestIo, RestPeer) {
        match &mut self.inner {
            Inner::Plain(listener) => loop {
                match TcpListener::accept(listener).await {
                    Ok((tcp, addr)) => {
                        let _ = tcp.set_nodelay(true);
                        return (
                            RestIo::Plain(tcp),
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
            Inner::Tls { ready, .. } => match ready.recv().await {
                Some(accepted) => accepted,
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

impl AsyncRead for RestIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            RestIo::Plain(tcp) => Pin::new(tcp).poll_read(cx, buf),
            RestIo::Tls(tls) => Pin::new(tls.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for RestIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            RestIo::Plain(tcp) => Pin::new(tcp).poll_write(cx, buf),
            RestIo::Tls(tls) => Pin::new(tls.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            RestIo::Plain(tcp) => Pin::new(tcp).poll_flush(cx),
            RestIo::Tls(tls) => Pin::new(tls.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            RestIo::Plain(tcp) => Pin::new(tcp).poll_shutdown(cx),
            RestIo::Tls(tls) => Pin::new(tls.as_mut()).poll_shutdown(cx),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            RestIo::Plain(tcp) => Pin::new(tcp).poll_write_vectored(cx, bufs),
            RestIo::Tls(tls) => Pin::new(tls.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            RestIo::Plain(tcp) => tcp.is_write_vectored(),
            RestIo::Tls(tls) => tls.is_write_vectored(),
        }
    }
}

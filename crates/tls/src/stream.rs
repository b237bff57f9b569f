//! [`Stream`]: a TCP connection, plain or wrapped in TLS on either side,
//! as one type for the code that moves bytes over it (the REST server, the
//! RPC transport, the data exchange).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::{client, server};

/// A connection, plain or TLS.
#[derive(Debug)]
pub enum Stream {
    /// Plain TCP.
    Plain(TcpStream),
    /// TLS, this side accepted.
    Server(Box<server::TlsStream<TcpStream>>),
    /// TLS, this side dialled.
    Client(Box<client::TlsStream<TcpStream>>),
}

impl Stream {
    /// The TCP connection underneath (for socket options and addresses).
    pub fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(tcp) => tcp,
            Stream::Server(tls) => tls.get_ref().0,
            Stream::Client(tls) => tls.get_ref().0,
        }
    }

    /// The name of the peer's verified certificate, if it presented one.
    pub fn peer_certificate(&self) -> Option<String> {
        let chain = match self {
            Stream::Plain(_) => None,
            Stream::Server(tls) => tls.get_ref().1.peer_certificates(),
            Stream::Client(tls) => tls.get_ref().1.peer_certificates(),
        };
        chain.and_then(|c| c.first()).map(crate::peer_name)
    }
}

impl From<server::TlsStream<TcpStream>> for Stream {
    fn from(tls: server::TlsStream<TcpStream>) -> Stream {
        Stream::Server(Box::new(tls))
    }
}

impl From<client::TlsStream<TcpStream>> for Stream {
    fn from(tls: client::TlsStream<TcpStream>) -> Stream {
        Stream::Client(Box::new(tls))
    }
}

/// The RPC server (tonic) reads the addresses of each connection from this.
impl tonic::transport::server::Connected for Stream {
    type ConnectInfo = tonic::transport::server::TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.tcp().connect_info()
    }
}

macro_rules! each {
    ($self:expr, $s:ident => $body:expr) => {
        match $self.get_mut() {
            Stream::Plain($s) => {
                let $s = Pin::new($s);
                $body
            }
            Stream::Server(tls) => {
                let $s = Pin::new(tls.as_mut());
                $body
            }
            Stream::Client(tls) => {
                let $s = Pin::new(tls.as_mut());
                $body
            }
        }
    };
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        each!(self, s => s.poll_read(cx, buf))
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        each!(self, s => s.poll_write(cx, buf))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        each!(self, s => s.poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        each!(self, s => s.poll_shutdown(cx))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        each!(self, s => s.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Plain(tcp) => tcp.is_write_vectored(),
            Stream::Server(tls) => tls.is_write_vectored(),
            Stream::Client(tls) => tls.is_write_vectored(),
        }
    }
}

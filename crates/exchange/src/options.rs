//! [`ExchangeOptions`]: how one TaskManager's exchange runs.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use holdfast_auth::{Auth, PeerId};

use crate::error::ExchangeError;

/// The largest frame allowed by default: 64 MiB.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 64 << 20;

/// The options of one [`Exchange`](crate::Exchange). Plain values with
/// [`Default`]s; [`validate`](Self::validate) names the broken one.
#[derive(Clone, Debug)]
pub struct ExchangeOptions {
    /// This TaskManager's id: channels whose location has this
    /// `task_manager` are in memory. Also the peer id data connections are
    /// signed with, so it must be a valid [`PeerId`] (`[A-Za-z0-9._-]`, at
    /// most 128 bytes). No default worth having: empty, and refused.
    pub task_manager: String,
    /// Where the data server listens. Default `127.0.0.1:0` (port 0: any
    /// free port; [`Exchange::address`](crate::Exchange::address) tells
    /// which).
    pub bind: SocketAddr,
    /// The host other TaskManagers connect to (the location's address is
    /// `advertise_host:bound port`). Default `127.0.0.1`.
    pub advertise_host: String,
    /// Authentication of data connections with the cluster secret, the same
    /// as the RPC's. Default [`Auth::Disabled`].
    pub auth: Auth,
    /// Credits per channel: the most batches queued on each side of one
    /// channel. Default 4, at least 1.
    pub buffers_per_channel: usize,
    /// How long a consumer's request waits for the producer's partition to
    /// be registered. Default 30 s.
    pub request_timeout: Duration,
    /// Connection attempts after the first failed one, before the channel
    /// fails. Default 5.
    pub connect_retries: u32,
    /// The pause before the first retry; it doubles each time, up to 2 s.
    /// Default 100 ms.
    pub connect_backoff: Duration,
    /// How long one connection attempt, and then the handshake, may take.
    /// Default 10 s.
    pub connect_timeout: Duration,
    /// The largest frame sent or accepted, in bytes, not counting its
    /// 4-byte length prefix: an encoded batch may have this minus 5 bytes.
    /// Default [`DEFAULT_MAX_FRAME_BYTES`], at least 1 KiB.
    pub max_frame_bytes: usize,
    /// Mutual TLS on every data connection (`security.ssl.internal.*`),
    /// under the cluster secret's signature. Default none.
    pub tls: Option<std::sync::Arc<holdfast_tls::TlsLink>>,
    /// The port others dial when it is not the bound one
    /// (`taskmanager.data.port` with `taskmanager.data.bind-port`: NAT, a
    /// proxy). Default none: the bound port.
    pub advertise_port: Option<u16>,
}

impl Default for ExchangeOptions {
    fn default() -> Self {
        ExchangeOptions {
            task_manager: String::new(),
            bind: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            advertise_host: Ipv4Addr::LOCALHOST.to_string(),
            auth: Auth::Disabled,
            buffers_per_channel: 4,
            request_timeout: Duration::from_secs(30),
            connect_retries: 5,
            connect_backoff: Duration::from_millis(100),
            connect_timeout: Duration::from_secs(10),
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            tls: None,
            advertise_port: None,
        }
    }
}

impl ExchangeOptions {
    /// The defaults, for TaskManager `task_manager` with `auth`.
    pub fn new(task_manager: impl Into<String>, auth: Auth) -> ExchangeOptions {
        ExchangeOptions {
            task_manager: task_manager.into(),
            auth,
            ..ExchangeOptions::default()
        }
    }

    /// Checks every rule; the error names the field.
    pub fn validate(&self) -> Result<(), ExchangeError> {
        let invalid = |key, reason: &str| ExchangeError::InvalidOptions {
            key,
            reason: reason.to_owned(),
        };
        if let Err(error) = PeerId::new(self.task_manager.as_str()) {
            return Err(ExchangeError::InvalidOptions {
                key: "task_manager",
                reason: error.to_string(),
            });
        }
        if self.advertise_host.is_empty() {
            return Err(invalid("advertise_host", "is empty"));
        }
        if self.buffers_per_channel == 0 {
            return Err(invalid("buffers_per_channel", "must be at least 1"));
        }
        if u32::try_from(self.buffers_per_channel).is_err() {
            return Err(invalid("buffers_per_channel", "must fit in 32 bits"));
        }
        if self.request_timeout.is_zero() {
            return Err(invalid("request_timeout", "must be above zero"));
        }
        if self.connect_timeout.is_zero() {
            return Err(invalid("connect_timeout", "must be above zero"));
        }
        if self.max_frame_bytes < 1024 || u32::try_from(self.max_frame_bytes).is_err() {
            return Err(invalid(
                "max_frame_bytes",
                "must be between 1 KiB and 4 GiB - 1",
            ));
        }
        Ok(())
    }

    /// `advertise_host:port`, bracketing an IPv6 literal.
    pub(crate) fn advertised(&self, port: u16) -> String {
        let host = &self.advertise_host;
        if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_names_the_field() {
        assert!(
            ExchangeOptions::new("tm-1", Auth::Disabled)
                .validate()
                .is_ok()
        );
        let key = |options: ExchangeOptions| match options.validate() {
            Err(ExchangeError::InvalidOptions { key, .. }) => key,
            other => panic!("{other:?}"),
        };
        assert_eq!(key(ExchangeOptions::default()), "task_manager");
        assert_eq!(
            key(ExchangeOptions::new("tm 1", Auth::Disabled)),
            "task_manager"
        );
        let base = || ExchangeOptions::new("tm-1", Auth::Disabled);
        assert_eq!(
            key(ExchangeOptions {
                buffers_per_channel: 0,
                ..base()
            }),
            "buffers_per_channel"
        );
        assert_eq!(
            key(ExchangeOptions {
                request_timeout: Duration::ZERO,
                ..base()
            }),
            "request_timeout"
        );
        assert_eq!(
            key(ExchangeOptions {
                max_frame_bytes: 10,
                ..base()
            }),
            "max_frame_bytes"
        );
    }

    #[test]
    fn ipv6_hosts_are_bracketed() {
        let mut options = ExchangeOptions::new("tm-1", Auth::Disabled);
        assert_eq!(options.advertised(7), "127.0.0.1:7");
        options.advertise_host = "::1".into();
        assert_eq!(options.advertised(7), "[::1]:7");
    }
}

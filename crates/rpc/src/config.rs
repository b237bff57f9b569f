//! Settings of the RPC layer's clients, and the one error their
//! `validate()` methods return ([`ConfigError`], defined in holdfast-auth,
//! whose `VerifyConfig` returns it too).

use std::sync::Arc;
use std::time::Duration;

pub use holdfast_auth::ConfigError;
use holdfast_tls::TlsLink;

/// The TLS link clients dial with (`security.ssl.internal.*`); two are
/// equal when they are the same link.
#[derive(Clone, Debug)]
pub struct ClientTls(pub Arc<TlsLink>);

impl PartialEq for ClientTls {
    fn eq(&self, other: &ClientTls) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for ClientTls {}

/// How clients reach their peers. Every duration must be positive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientConfig {
    /// The deadline of every call (Flink's `pekko.ask.timeout`; default
    /// 10 s): sent as the gRPC timeout header and enforced locally.
    pub ask_timeout: Duration,
    /// How long to wait for a TCP connection (default 5 s).
    pub connect_timeout: Duration,
    /// How often an HTTP/2 PING checks an open connection, even when idle
    /// (default 10 s).
    pub keepalive_interval: Duration,
    /// How long a PING may go unanswered before the connection is closed
    /// (default 20 s).
    pub keepalive_timeout: Duration,
    /// Mutual TLS on every connection, when set; the cluster secret's
    /// signature still goes with every call where one is configured.
    pub tls: Option<ClientTls>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            ask_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(5),
            keepalive_interval: Duration::from_secs(10),
            keepalive_timeout: Duration::from_secs(20),
            tls: None,
        }
    }
}

impl ClientConfig {
    /// Checks that every duration is positive.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (key, value) in [
            ("pekko.ask.timeout", self.ask_timeout),
            ("ClientConfig::connect_timeout", self.connect_timeout),
            ("ClientConfig::keepalive_interval", self.keepalive_interval),
            ("ClientConfig::keepalive_timeout", self.keepalive_timeout),
        ] {
            if value.is_zero() {
                return Err(ConfigError::Zero { key });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_zero_names_the_key() {
        assert_eq!(ClientConfig::default().validate(), Ok(()));
        let config = ClientConfig {
            ask_timeout: Duration::ZERO,
            ..ClientConfig::default()
        };
        assert_eq!(
            config.validate().unwrap_err().to_string(),
            "pekko.ask.timeout must be greater than zero"
        );
    }
}

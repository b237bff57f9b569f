//! Why a TLS handshake failed, in words an operator can act on
//! ([`HandshakeRefusal`]), with a stable reason name for the metric label
//! and the log limiter.

use std::fmt;
use std::io;

use rustls::{AlertDescription, CertificateError, Error};

/// A failed handshake, classified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HandshakeRefusal {
    /// A stable name: `expired`, `not-yet-valid`, `unknown-ca`,
    /// `wrong-host`, `no-client-certificate`, `bad-certificate`, `not-tls`,
    /// `no-common-protocol`, `timeout`, `closed`, `io`, `protocol`.
    pub reason: &'static str,
    /// What happened, for the log line.
    pub detail: String,
}

impl fmt::Display for HandshakeRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.detail, self.reason)
    }
}

impl HandshakeRefusal {
    /// The handshake did not finish in time.
    pub fn timeout(after: std::time::Duration) -> HandshakeRefusal {
        HandshakeRefusal {
            reason: "timeout",
            detail: format!("no TLS handshake within {after:?}"),
        }
    }

    /// Classifies an error from tokio-rustls's accept or connect.
    pub fn from_io(error: &io::Error) -> HandshakeRefusal {
        if let Some(tls) = error.get_ref().and_then(|e| e.downcast_ref::<Error>()) {
            return HandshakeRefusal::from_rustls(tls);
        }
        match error.kind() {
            io::ErrorKind::UnexpectedEof
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionAborted => HandshakeRefusal {
                reason: "closed",
                detail: format!(
                    "the peer closed the connection during the TLS handshake ({error}); \
                     it may not speak TLS, or refused this side's certificate"
                ),
            },
            _ => HandshakeRefusal {
                reason: "io",
                detail: format!("the TLS handshake failed: {error}"),
            },
        }
    }

    /// The TLS failure somewhere in `error`'s chain of causes, classified
    /// (HTTP and RPC clients wrap it several layers deep).
    pub fn find_in(error: &(dyn std::error::Error + 'static)) -> Option<HandshakeRefusal> {
        let mut cause = Some(error);
        while let Some(current) = cause {
            if let Some(tls) = current.downcast_ref::<Error>() {
                return Some(HandshakeRefusal::from_rustls(tls));
            }
            // After the handshake (a TLS 1.3 server refuses a client's
            // certificate then), rustls reports the peer's alert as text.
            if let Some(alert) = current
                .to_string()
                .strip_prefix("received fatal alert: ")
                .and_then(alert_named)
            {
                return Some(from_alert(alert));
            }
            // An io::Error's source() skips the error it wraps: step into that.
            cause = match current
                .downcast_ref::<io::Error>()
                .and_then(|io| io.get_ref())
            {
                Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
                None => current.source(),
            };
        }
        None
    }

    /// Classifies a rustls error (this side's verdict, or the peer's alert).
    pub fn from_rustls(error: &Error) -> HandshakeRefusal {
        let (reason, detail): (&'static str, String) = match error {
            Error::InvalidCertificate(cert) => certificate(cert),
            Error::NoCertificatesPresented => (
                "no-client-certificate",
                "the client sent no certificate, and this link requires one signed by the \
                 configured CA"
                    .into(),
            ),
            Error::InvalidMessage(_)
            | Error::InappropriateMessage { .. }
            | Error::InappropriateHandshakeMessage { .. } => (
                "not-tls",
                format!(
                    "the peer does not speak TLS here ({error}): a plaintext client on a TLS port, or garbage"
                ),
            ),
            Error::PeerIncompatible(_) => (
                "no-common-protocol",
                format!(
                    "no protocol version or cipher suite in common ({error}); see \
                     security.ssl.protocol and security.ssl.algorithms"
                ),
            ),
            Error::AlertReceived(alert) => return from_alert(*alert),
            other => ("protocol", format!("the TLS handshake failed: {other}")),
        };
        HandshakeRefusal { reason, detail }
    }
}

fn certificate(error: &CertificateError) -> (&'static str, String) {
    match error {
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => (
            "expired",
            format!("the peer's certificate has expired ({error})"),
        ),
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => (
            "not-yet-valid",
            format!("the peer's certificate is not valid yet ({error}); check both clocks"),
        ),
        CertificateError::UnknownIssuer => (
            "unknown-ca",
            "the peer's certificate is not signed by the configured CA".into(),
        ),
        CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => (
            "wrong-host",
            format!(
                "the peer's certificate is for another host ({error}); fix the certificate's \
                 names or set security.ssl.verify-hostname: false"
            ),
        ),
        other => (
            "bad-certificate",
            format!("the peer's certificate is refused: {other}"),
        ),
    }
}

/// The alert whose name (as rustls prints it) is `name`.
fn alert_named(name: &str) -> Option<AlertDescription> {
    (0..=u8::MAX)
        .map(AlertDescription::from)
        .find(|alert| format!("{alert:?}") == name.trim())
}

/// The peer refused this side: its alert says roughly why.
fn from_alert(alert: AlertDescription) -> HandshakeRefusal {
    let (reason, why) = match alert {
        AlertDescription::UnknownCA => (
            "unknown-ca",
            "this side's certificate is not signed by a CA the peer trusts",
        ),
        AlertDescription::CertificateExpired => (
            "expired",
            "the peer says this side's certificate has expired",
        ),
        AlertDescription::BadCertificate
        | AlertDescription::UnsupportedCertificate
        | AlertDescription::CertificateUnknown => (
            "bad-certificate",
            "the peer refused this side's certificate",
        ),
        AlertDescription::CertificateRequired => (
            "no-client-certificate",
            "the peer requires a client certificate and this side has none",
        ),
        AlertDescription::HandshakeFailure
        | AlertDescription::ProtocolVersion
        | AlertDescription::InsufficientSecurity => (
            "no-common-protocol",
            "no protocol version or cipher suite in common with the peer",
        ),
        _ => ("protocol", "the peer ended the handshake"),
    };
    HandshakeRefusal {
        reason,
        detail: format!("{why} (alert {alert:?})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificate_verdicts_get_names_an_operator_can_act_on() {
        let cases = [
            (
                Error::InvalidCertificate(CertificateError::Expired),
                "expired",
            ),
            (
                Error::InvalidCertificate(CertificateError::UnknownIssuer),
                "unknown-ca",
            ),
            (
                Error::InvalidCertificate(CertificateError::NotValidForName),
                "wrong-host",
            ),
            (Error::NoCertificatesPresented, "no-client-certificate"),
            (
                Error::AlertReceived(AlertDescription::UnknownCA),
                "unknown-ca",
            ),
            (
                Error::AlertReceived(AlertDescription::CertificateRequired),
                "no-client-certificate",
            ),
        ];
        for (error, reason) in cases {
            assert_eq!(
                HandshakeRefusal::from_rustls(&error).reason,
                reason,
                "{error}"
            );
        }
        let wrapped = io::Error::new(
            io::ErrorKind::InvalidData,
            Error::InvalidCertificate(CertificateError::Expired),
        );
        assert_eq!(HandshakeRefusal::from_io(&wrapped).reason, "expired");
        let nested = io::Error::other(io::Error::new(
            io::ErrorKind::InvalidData,
            Error::NoCertificatesPresented,
        ));
        assert_eq!(
            HandshakeRefusal::find_in(&nested).unwrap().reason,
            "no-client-certificate"
        );
        assert_eq!(HandshakeRefusal::find_in(&io::Error::other("plain")), None);
        let later = io::Error::new(
            io::ErrorKind::InvalidData,
            "received fatal alert: CertificateRequired",
        );
        assert_eq!(
            HandshakeRefusal::find_in(&later).unwrap().reason,
            "no-client-certificate"
        );
        let eof = io::Error::from(io::ErrorKind::UnexpectedEof);
        assert_eq!(HandshakeRefusal::from_io(&eof).reason, "closed");
    }
}

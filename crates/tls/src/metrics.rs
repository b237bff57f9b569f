//! The TLS metrics (`docs/METRICS.md`): seconds until the own certificate
//! of each link expires, handshakes refused by reason, reloads by outcome.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};

/// Label: which link (`internal`, `rest`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LinkLabel {
    /// `internal` or `rest`.
    pub link: String,
}

/// Label: which link and why.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RefusalLabel {
    /// `internal` or `rest`.
    pub link: String,
    /// [`HandshakeRefusal::reason`](crate::HandshakeRefusal::reason).
    pub reason: String,
}

/// Label: which link and how the reload ended.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReloadLabel {
    /// `internal` or `rest`.
    pub link: String,
    /// `reloaded` or `failed` (the old identity stays in use).
    pub outcome: String,
}

/// The TLS metrics; clones share the values.
#[derive(Clone, Debug, Default)]
pub struct TlsMetrics {
    /// Seconds until the own certificate expires (negative once expired).
    pub certificate_expiry: Family<LinkLabel, Gauge>,
    /// Handshakes refused, by link and reason.
    pub handshakes_refused: Family<RefusalLabel, Counter>,
    /// Reloads of changed certificate, key or CA files.
    pub reloads: Family<ReloadLabel, Counter>,
}

impl TlsMetrics {
    /// Registers the metrics under `registry` (prefix `holdfast_` there).
    pub fn register(&self, registry: &mut Registry) {
        registry.register_with_unit(
            "tls_certificate_expiry",
            "Seconds until this process's own certificate expires, per link (negative once \
             expired); renew before it reaches zero",
            Unit::Seconds,
            self.certificate_expiry.clone(),
        );
        registry.register(
            "tls_handshakes_refused",
            "TLS handshakes refused, by link and reason",
            self.handshakes_refused.clone(),
        );
        registry.register(
            "tls_reloads",
            "Reloads of changed certificate, key or CA files, by link and outcome",
            self.reloads.clone(),
        );
    }

    /// Handshakes of `link` refused for `reason` so far.
    pub fn refusals(&self, link: &str, reason: &str) -> u64 {
        self.handshakes_refused
            .get_or_create(&RefusalLabel {
                link: link.to_owned(),
                reason: reason.to_owned(),
            })
            .get()
    }

    pub(crate) fn refused(&self, link: &str, reason: &str) {
        self.handshakes_refused
            .get_or_create(&RefusalLabel {
                link: link.to_owned(),
                reason: reason.to_owned(),
            })
            .inc();
    }

    pub(crate) fn reloaded(&self, link: &str, outcome: &str) {
        self.reloads
            .get_or_create(&ReloadLabel {
                link: link.to_owned(),
                outcome: outcome.to_owned(),
            })
            .inc();
    }

    pub(crate) fn expires_in(&self, link: &str, seconds: i64) {
        self.certificate_expiry
            .get_or_create(&LinkLabel {
                link: link.to_owned(),
            })
            .set(seconds);
    }
}

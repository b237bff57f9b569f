//! Data connections over mutual TLS (`security.ssl.internal.*`): batches
//! cross between two TaskManagers whose certificates the cluster's CA
//! signed; a consumer with another CA's certificate, or one speaking
//! plaintext, is refused — the consumer's channel fails naming TLS, the
//! producer's server counts and logs it and keeps serving.

mod common;

use std::sync::Arc;

use common::*;
use holdfast_exchange::{Exchange, ExchangeError, ExchangeOptions, Interrupt};
use holdfast_testkit::{CertValidity, TestIdentity, TestPki};
use holdfast_tls::{ClientCertificates, LinkSpec, TlsFiles, TlsLink, TlsMetrics};

fn link(identity: &TestIdentity, ca: &TestPki, metrics: &TlsMetrics) -> Arc<TlsLink> {
    let files = TlsFiles::pem(
        "security.ssl.internal",
        Some(identity.pair()),
        &ca.ca_file(),
    );
    let spec = LinkSpec::new("internal", files, Some(ClientCertificates::Required), true);
    TlsLink::load(spec, metrics.clone()).unwrap()
}

fn with_tls(id: &str, tls: Option<Arc<TlsLink>>) -> ExchangeOptions {
    ExchangeOptions {
        tls,
        connect_retries: 0,
        ..options(id, auth(SECRET), 2)
    }
}

#[test]
fn batches_cross_over_mutual_tls_and_strangers_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestPki::new(dir.path(), "cluster");
    let stranger_ca = TestPki::new(dir.path(), "stranger");
    let a_id = ca.issue("tm-a", &["127.0.0.1"], CertValidity::Current);
    let b_id = ca.issue("tm-b", &["127.0.0.1"], CertValidity::Current);
    let producer_metrics = TlsMetrics::default();
    let rt = runtime();
    let (a, b) = pair(
        &rt,
        with_tls("tm-a", Some(link(&a_id, &ca, &producer_metrics))),
        with_tls("tm-b", Some(link(&b_id, &ca, &TlsMetrics::default()))),
    );
    one_good_channel(&a, &b, 1);

    let refused = |consumer: &Exchange, vertex| {
        let never = Interrupt::new();
        let _writer = a
            .create_partition(partition(vertex, 0), &[consumer.location()], &never)
            .unwrap();
        let mut gate = consumer
            .open_gate(vec![spec(partition(vertex, 0), 0, &a.location())], &never)
            .unwrap();
        gate.next(DEADLINE).unwrap_err()
    };

    // Another CA's certificate.
    let intruder_id = stranger_ca.issue("intruder", &["127.0.0.1"], CertValidity::Current);
    // It trusts our CA (it knows whom it talks to), but our CA did not sign it.
    let intruder_link = link(&intruder_id, &ca, &TlsMetrics::default());
    let intruder = rt
        .block_on(Exchange::start(with_tls("tm-x", Some(intruder_link))))
        .unwrap();
    let error = refused(&intruder, 2);
    assert!(
        matches!(error, ExchangeError::Unauthenticated { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("TLS"), "{error}");

    // Plaintext.
    let plain = rt
        .block_on(Exchange::start(with_tls("tm-p", None)))
        .unwrap();
    let error = refused(&plain, 3);
    assert!(
        matches!(
            error,
            ExchangeError::ConnectionLost { .. } | ExchangeError::Protocol { .. }
        ),
        "{error:?}"
    );

    let count = |reason: &str| producer_metrics.refusals("internal", reason);
    eventually("both refusals counted", || {
        count("unknown-ca") == 1 && count("not-tls") == 1
    });
    // The producer still serves members.
    one_good_channel(&a, &b, 4);
}

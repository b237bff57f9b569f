//! Tier 4, in a real browser: the dashboard over HTTPS
//! (`security.ssl.rest.enabled`, client certificates optional). Headless
//! Chromium trusts exactly the REST server's key (its SPKI hash, not "any
//! certificate"), loads the overview and the job page of a running job,
//! and logs no console error — no page refers to a plain `http://` address
//! of the cluster. Screenshots go to `target/dashboard-screenshots/`.

#[path = "support/browser.rs"]
mod browser;
mod support;

use anyhow::{Context, Result};
use base64::Engine;
use browser::Page;
use holdfast_testkit::{CertValidity, TestPki};
use holdfast_tls::{LinkSpec, TlsFiles, TlsLink, TlsMetrics};
use sha2::Digest;
use support::cluster::{Cluster, all_running, registered};
use support::datagen_job::Datagen;

/// `--ignore-certificate-errors-spki-list`'s value for the certificate in
/// `pem`: the base64 SHA-256 of its SubjectPublicKeyInfo.
fn spki_hash(pem: &std::path::Path) -> Result<String> {
    use rustls_pki_types::pem::PemObject;
    let der = rustls_pki_types::CertificateDer::from_pem_file(pem)?;
    let (_, cert) = x509_parser::parse_x509_certificate(der.as_ref())?;
    let digest = sha2::Sha256::digest(cert.public_key().raw);
    Ok(base64::engine::general_purpose::STANDARD.encode(digest))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_works_over_https() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let ca = TestPki::new(dir.path(), "rest");
    let server = ca.issue(
        "jobmanager",
        &["127.0.0.1", "localhost"],
        CertValidity::Current,
    );
    let operator = ca.issue("operator", &["ops.example"], CertValidity::Current);
    let config = format!(
        "security.ssl.rest.enabled: true\n\
         security.ssl.rest.pem.certificate: {}\n\
         security.ssl.rest.pem.key: {}\n\
         security.ssl.rest.pem.ca: {}\n",
        server.certificate.display(),
        server.key.display(),
        ca.ca_file().display()
    );
    let cluster = Cluster::start("lease", &config).await?;
    let jm = cluster.jobmanager("jm-a").await?;
    let files = TlsFiles::pem("security.ssl.rest", Some(operator.pair()), &ca.ca_file());
    let spec = LinkSpec {
        alpn: vec![b"http/1.1".to_vec()],
        ..LinkSpec::new("rest", files, None, true)
    };
    let link = TlsLink::load(spec, TlsMetrics::default())?;
    let client = holdfast_cluster::client::RestClient::with_tls(
        &jm.rest,
        std::time::Duration::from_secs(5),
        link.client_config().context("a client configuration")?,
    )?;
    let _tm = cluster.taskmanager("tm-1", None).await?;
    registered(&client, 1).await?;
    let job = Datagen {
        records: 10_000_000,
        rate: 1_000,
        keys: 10,
    }
    .submit(&client, &dir.path().join("out"), "keyed", 1)
    .await?;
    all_running(&client, job, "the job runs").await?;

    let trust = format!(
        "--ignore-certificate-errors-spki-list={}",
        spki_hash(&server.certificate)?
    );
    let page = tokio::task::block_in_place(|| Page::open_with("https", &[&trust]))?;
    tokio::task::block_in_place(|| -> Result<()> {
        page.go(&format!("{}/ui/", jm.rest))?;
        page.until(
            "the overview over HTTPS, with the job",
            &format!("location.protocol === 'https:' && document.body.innerText.includes('{job}')"),
        )?;
        page.screenshot("1-overview")?;
        page.go(&format!("{}/ui/jobs/{job}", jm.rest))?;
        page.until(
            "the job page refreshing in place over HTTPS",
            "document.querySelectorAll('tr.subtask').length >= 1 \
             && document.querySelector('#live').dataset.refreshes > 0",
        )?;
        page.screenshot("2-job")?;
        page.no_console_errors()
    })
}

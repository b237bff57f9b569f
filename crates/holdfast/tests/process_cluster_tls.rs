//! Tier 4: a cluster of real processes with TLS on every link — mutual TLS
//! on RPC and the data exchange (`security.ssl.internal.*`), HTTPS with
//! client certificates required on the REST API
//! (`security.ssl.rest.authentication-enabled`) — runs a job across two
//! TaskManagers; holdfast's CLI lists and cancels it over HTTPS; a
//! TaskManager with another CA's certificate never registers and says why;
//! a plaintext or certificate-less REST client is refused; and the REST
//! certificate is replaced under a running job with SIGHUP, new
//! connections getting the new one while the job runs on untouched.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use holdfast_cluster::client::{ClientError, RestClient};
use holdfast_testkit::{CertValidity, TestIdentity, TestPki};
use holdfast_tls::{LinkSpec, TlsFiles, TlsLink, TlsMetrics};
use nix::sys::signal::Signal;
use support::cluster::{Cluster, all_running, eventually, logged, metric, registered};
use support::run;

struct Pki {
    ca: TestPki,
    stranger_ca: TestPki,
    node: TestIdentity,
    rest: TestIdentity,
    operator: TestIdentity,
}

fn pki(dir: &Path) -> Pki {
    let ca = TestPki::new(dir, "cluster");
    let stranger_ca = TestPki::new(dir, "stranger");
    // One certificate for every process's internal links (their addresses
    // are all 127.0.0.1 here); the REST server's own; an operator's.
    let node = ca.issue(
        "holdfast-node",
        &["127.0.0.1", "localhost"],
        CertValidity::Current,
    );
    let rest = ca.issue(
        "rest-2026",
        &["127.0.0.1", "localhost"],
        CertValidity::Current,
    );
    let operator = ca.issue("operator-alice", &["alice.example"], CertValidity::Current);
    Pki {
        ca,
        stranger_ca,
        node,
        rest,
        operator,
    }
}

fn tls_config(p: &Pki) -> String {
    format!(
        "security.ssl.internal.enabled: true\n\
         security.ssl.internal.pem.certificate: {}\n\
         security.ssl.internal.pem.key: {}\n\
         security.ssl.internal.pem.ca: {}\n\
         security.ssl.rest.enabled: true\n\
         security.ssl.rest.authentication-enabled: true\n\
         security.ssl.rest.pem.certificate: {}\n\
         security.ssl.rest.pem.key: {}\n\
         security.ssl.rest.pem.ca: {}\n",
        p.node.certificate.display(),
        p.node.key.display(),
        p.ca.ca_file().display(),
        p.rest.certificate.display(),
        p.rest.key.display(),
        p.ca.ca_file().display(),
    )
}

/// A REST client over HTTPS presenting `identity` (if any), trusting `ca`.
fn https(
    url: &str,
    identity: Option<&TestIdentity>,
    ca: &TestPki,
) -> Result<(RestClient, Arc<TlsLink>)> {
    let files = TlsFiles::pem(
        "security.ssl.rest",
        identity.map(TestIdentity::pair),
        &ca.ca_file(),
    );
    let spec = LinkSpec {
        alpn: vec![b"http/1.1".to_vec()],
        ..LinkSpec::new("rest", files, None, true)
    };
    let link = TlsLink::load(spec, TlsMetrics::default())?;
    let config = link.client_config().context("a client configuration")?;
    Ok((
        RestClient::with_tls(url, Duration::from_secs(5), config)?,
        link,
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_with_tls_on_every_link_runs_a_job_and_refuses_strangers() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let p = pki(dir.path());
    let cluster = Cluster::start("lease", &tls_config(&p)).await?;
    let jm = cluster.jobmanager("jm-a").await?;
    ensure!(jm.rest.starts_with("https://"), "{}", jm.rest);
    let (alice, _) = https(&jm.rest, Some(&p.operator), &p.ca)?;
    let tms = [
        cluster.taskmanager("tm-1", None).await?,
        cluster.taskmanager("tm-2", None).await?,
    ];
    registered(&alice, 2).await?;
    let config = cluster.config.display().to_string();

    // A keyed job over both TaskManagers, submitted with holdfast's CLI
    // over HTTPS (the cluster's configuration: its REST certificate doubles
    // as a client certificate): RPC deploys it, its shuffle crosses the
    // data exchange, all over mutual TLS; the counts are exact.
    let input = dir.path().join("input");
    std::fs::create_dir(&input)?;
    let mut reference = std::collections::BTreeMap::new();
    let mut text = String::new();
    for line in 0..3_000u64 {
        let words: Vec<String> = (0..4)
            .map(|k| format!("w{}", (line * 7 + k * 13) % 97))
            .collect();
        for w in &words {
            *reference.entry(w.clone()).or_insert(0u64) += 1;
        }
        text.push_str(&words.join(" "));
        text.push('\n');
    }
    std::fs::write(input.join("part-0.txt"), text)?;
    let output = dir.path().join("output");
    let params = serde_json::json!({"input": input, "output": output}).to_string();
    let submitted = run(&[
        "run",
        "wordcount",
        "--args",
        &params,
        "--parallelism",
        "2",
        "--config",
        &config,
        "--jobmanager",
        &jm.rest,
        "--json",
    ])
    .await?;
    ensure!(
        submitted.status.success(),
        "run failed: {}",
        String::from_utf8_lossy(&submitted.stderr)
    );
    let printed: serde_json::Value = serde_json::from_slice(&submitted.stdout)?;
    let wordcount: holdfast_runtime::ids::JobId =
        printed["jobid"].as_str().context("a job id")?.parse()?;
    eventually("the wordcount finishes", || async {
        let state = alice.job(wordcount).await?.state;
        ensure!(
            state != "FAILED",
            "the job failed: {:?}",
            alice.exceptions(wordcount).await?
        );
        Ok((state == "FINISHED").then_some(()))
    })
    .await?;
    let mut counts = std::collections::BTreeMap::new();
    for line in support::part_lines(&output)? {
        let (word, count) = line.split_once(' ').context("a `word count` line")?;
        ensure!(
            counts
                .insert(word.to_owned(), count.parse::<u64>()?)
                .is_none(),
            "{word} twice"
        );
    }
    ensure!(counts == reference, "the counts differ from a plain count");
    let mut received = 0.0;
    for tm in &tms {
        received += metric(
            &tm.metrics,
            "holdfast_exchange_bytes_total{direction=\"received\"}",
        )
        .await?;
    }
    ensure!(received > 0.0, "the shuffle must have crossed processes");

    // A running job, listed and (below) cancelled with the CLI.
    let job = support::cluster::run_count(&alice, 2, 100).await?;
    let listed = run(&["list", "--config", &config, "--jobmanager", &jm.rest]).await?;
    let stdout = String::from_utf8_lossy(&listed.stdout);
    ensure!(
        listed.status.success() && stdout.contains(&job.to_string()),
        "{stdout}{}",
        String::from_utf8_lossy(&listed.stderr)
    );

    // A client without a certificate is refused at the handshake; plain
    // HTTP gets nothing; neither affects the job.
    let (anonymous, _) = https(&jm.rest, None, &p.ca)?;
    match anonymous.jobs().await {
        Err(ClientError::Tls { refusal, .. }) => {
            ensure!(refusal.reason == "no-client-certificate", "{refusal}")
        }
        other => anyhow::bail!("a client without a certificate must be refused, got {other:?}"),
    }
    let plain = RestClient::new(
        &jm.rest.replace("https://", "http://"),
        Duration::from_secs(5),
    )?;
    ensure!(plain.jobs().await.is_err(), "plain HTTP must get nothing");
    logged(&jm.process, "TLS handshake refused", 0).await?;

    // A TaskManager with another CA's certificate never joins, and says why.
    let intruder = p
        .stranger_ca
        .issue("intruder", &["127.0.0.1"], CertValidity::Current);
    let defines = [
        format!(
            "security.ssl.internal.pem.certificate={}",
            intruder.certificate.display()
        ),
        format!("security.ssl.internal.pem.key={}", intruder.key.display()),
    ];
    let stranger = cluster.taskmanager_defined("tm-x", &defines, &[]).await?;
    logged(
        &stranger.process,
        "registration with the JobManager failed",
        0,
    )
    .await?;
    let said = stranger.process.stderr();
    let line = said
        .lines()
        .find(|l| l.contains("registration with the JobManager failed"))
        .context("the registration failure is logged")?;
    ensure!(
        line.contains("TLS") && line.contains("not signed by a CA the peer trusts"),
        "{line}"
    );
    logged(&jm.process, "unknown-ca", 0).await?;
    ensure!(
        alice.overview().await?.taskmanagers == 2,
        "the stranger must not register"
    );

    // Cancel through the CLI.
    let cancelled = run(&[
        "cancel",
        &job.to_string(),
        "--config",
        &config,
        "--jobmanager",
        &jm.rest,
    ])
    .await?;
    ensure!(
        cancelled.status.success(),
        "{}",
        String::from_utf8_lossy(&cancelled.stderr)
    );
    eventually("the job is cancelled", || async {
        Ok((alice.job(job).await?.state == "CANCELED").then_some(()))
    })
    .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rest_certificate_is_replaced_under_a_running_job_with_sighup() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let p = pki(dir.path());
    // The REST files the JobManager is configured with; replaced below.
    let live = TestIdentity {
        certificate: dir.path().join("live-rest.pem"),
        key: dir.path().join("live-rest.key"),
    };
    std::fs::copy(&p.rest.certificate, &live.certificate)?;
    std::fs::copy(&p.rest.key, &live.key)?;
    let config = tls_config(&p)
        .replace(
            &p.rest.certificate.display().to_string(),
            &live.certificate.display().to_string(),
        )
        .replace(
            &p.rest.key.display().to_string(),
            &live.key.display().to_string(),
        );
    // An hour between checks: only SIGHUP can make the reload happen.
    let cluster = Cluster::start(
        "lease",
        &format!("{config}security.ssl.reload-interval: 1h\n"),
    )
    .await?;
    let jm = cluster.jobmanager("jm-a").await?;
    let (alice, _) = https(&jm.rest, Some(&p.operator), &p.ca)?;
    let _tm = cluster.taskmanager("tm-1", None).await?;
    registered(&alice, 1).await?;
    let job = support::cluster::run_count(&alice, 2, 100).await?;

    let served = |ca: &TestPki| {
        let url = jm.rest.clone();
        let ca_file = ca.ca_file();
        async move { server_certificate(&url, &ca_file).await }
    };
    ensure!(served(&p.ca).await? == "rest-2026");

    let renewed = p.ca.issue(
        "rest-2027",
        &["127.0.0.1", "localhost"],
        CertValidity::Current,
    );
    std::fs::copy(&renewed.certificate, &live.certificate)?;
    std::fs::copy(&renewed.key, &live.key)?;
    jm.process.signal(Signal::SIGHUP)?;
    eventually("new connections get the renewed certificate", || async {
        Ok((served(&p.ca).await? == "rest-2027").then_some(()))
    })
    .await?;
    logged(&jm.process, "TLS files changed", 0).await?;

    // The internal certificate too: every process reads the same files;
    // the JobManager rereads them on SIGHUP, and its RPC port presents the
    // new one to new connections while the TaskManager's stays open.
    ensure!(server_certificate_at(&jm.rpc, &p.ca.ca_file()).await? == "holdfast-node");
    let node_2027 = p.ca.issue(
        "holdfast-node-2027",
        &["127.0.0.1", "localhost"],
        CertValidity::Current,
    );
    std::fs::copy(&node_2027.certificate, &p.node.certificate)?;
    std::fs::copy(&node_2027.key, &p.node.key)?;
    jm.process.signal(Signal::SIGHUP)?;
    eventually("the RPC port presents the renewed certificate", || async {
        Ok(
            (server_certificate_at(&jm.rpc, &p.ca.ca_file()).await? == "holdfast-node-2027")
                .then_some(()),
        )
    })
    .await?;
    // A TaskManager started now (reading the renewed files) joins.
    let _tm2 = cluster.taskmanager("tm-2", None).await?;
    registered(&alice, 2).await?;

    // The job ran on untouched: running, never restarted.
    let details = all_running(&alice, job, "the job still runs").await?;
    let restarts = alice
        .jobs()
        .await?
        .jobs
        .iter()
        .find(|j| j.jid == job.to_string())
        .map(|j| j.restarts)
        .context("the job is listed")?;
    ensure!(
        restarts == 0 && details.state == "RUNNING",
        "restarts: {restarts}"
    );
    Ok(())
}

/// The name on the certificate the server at `url` presents now (a fresh
/// connection, with a client certificate not needed for the handshake's
/// first half).
async fn server_certificate(url: &str, ca: &Path) -> Result<String> {
    server_certificate_at(url.trim_start_matches("https://"), ca).await
}

/// [`server_certificate`] of the TLS server at `addr` (`host:port`).
async fn server_certificate_at(addr: &str, ca: &Path) -> Result<String> {
    use rustls_pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pki_types::CertificateDer::pem_file_iter(ca)? {
        roots.add(cert?)?;
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let name = rustls_pki_types::ServerName::try_from("localhost")?;
    // The server asks for a client certificate and refuses the connection
    // after the handshake; the server's certificate is known by then.
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await?;
    let chain = tls
        .get_ref()
        .1
        .peer_certificates()
        .context("a server certificate")?;
    Ok(holdfast_tls::peer_name(&chain[0]))
}

/// `keytool -importcert` of `ca` into a new PKCS12 truststore at `path`.
fn java_truststore(ca: &TestPki, path: &Path, password: &str) -> Result<()> {
    let output = std::process::Command::new("keytool")
        .args([
            "-importcert",
            "-noprompt",
            "-alias",
            "holdfast-ca",
            "-storetype",
            "PKCS12",
            "-file",
        ])
        .arg(ca.ca_file())
        .arg("-keystore")
        .arg(path)
        .args(["-storepass", password])
        .output()
        .context("running keytool (Java's; the test command installs it)")?;
    ensure!(
        output.status.success(),
        "keytool: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(())
}

/// Flink's own CLI, configured as Flink's documentation says
/// (`security.ssl.rest.*` with PKCS#12 stores), lists and cancels a job of a
/// cluster whose REST API requires client certificates; without its
/// keystore it is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flinks_cli_works_over_https_with_a_client_certificate() -> Result<()> {
    const WITHIN: Duration = Duration::from_secs(90);
    let clients = holdfast_testkit::FlinkClients::find()?;
    let dir = tempfile::tempdir()?;
    let p = pki(dir.path());
    let cluster = Cluster::start("lease", &tls_config(&p)).await?;
    let jm = cluster.jobmanager("jm-a").await?;
    let (alice, _) = https(&jm.rest, Some(&p.operator), &p.ca)?;
    let _tm = cluster.taskmanager("tm-1", None).await?;
    registered(&alice, 1).await?;
    let job = support::cluster::run_count(&alice, 2, 100).await?;

    let password = "flink-store-pw";
    let trust = dir.path().join("trust.p12");
    java_truststore(&p.ca, &trust, password)?;
    let keystore = p
        .operator
        .to_pkcs12(&p.ca, &dir.path().join("operator.p12"), password);
    // Flink's default cipher suite (TLS_RSA_WITH_AES_128_CBC_SHA, no
    // forward secrecy) is not offered: a Flink client names modern ones.
    let trust_only = format!(
        "security.ssl.algorithms: TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256\n\
         security.ssl.rest.enabled: true\n\
         security.ssl.rest.truststore: {}\n\
         security.ssl.rest.truststore-password: {password}\n",
        trust.display()
    );
    let with_keystore = format!(
        "{trust_only}security.ssl.rest.authentication-enabled: true\n\
         security.ssl.rest.keystore: {}\n\
         security.ssl.rest.keystore-password: {password}\n\
         security.ssl.rest.key-password: {password}\n",
        keystore.display()
    );
    // Flink's CLI takes `-m https://…` as "use TLS": with a bare
    // host:port it turns security.ssl.rest.enabled off.
    let address = jm.rest.clone();
    let id = job.to_string();

    let (ok, listed) = clients.cli_with(&["list", "-m", &address], &with_keystore, WITHIN)?;
    ensure!(
        ok && listed
            .lines()
            .any(|l| l.contains(&id) && l.contains("(RUNNING)")),
        "flink list:\n{listed}"
    );

    // (Flink's client retries a failed call 20 times, 3 s apart, by default.)
    let no_retries = format!("{trust_only}rest.retry.max-attempts: 0\n");
    let (ok, refused) = clients.cli_with(&["list", "-m", &address], &no_retries, WITHIN)?;
    ensure!(
        !ok && refused.contains("certificate_required"),
        "without a client certificate flink list must be refused for it:\n{refused}"
    );

    let (ok, cancelled) =
        clients.cli_with(&["cancel", "-m", &address, &id], &with_keystore, WITHIN)?;
    ensure!(ok, "flink cancel:\n{cancelled}");
    eventually("the job is cancelled", || async {
        Ok((alice.job(job).await?.state == "CANCELED").then_some(()))
    })
    .await?;
    Ok(())
}

/// A link whose traffic is recorded: the process binds `bind` and
/// advertises the proxy's port (Flink's `*.bind-port` keys), so every peer
/// reaches it through the tap.
struct Tapped {
    route: holdfast_testkit::Route,
    tap: holdfast_testkit::Tap,
    bind: u16,
}

impl Tapped {
    fn new(proxy: &holdfast_testkit::FaultProxy, name: &str) -> Result<Tapped> {
        let bind = holdfast_testkit::free_port()?;
        let tap = holdfast_testkit::Tap::default();
        let route = proxy.route_with(
            std::net::SocketAddr::from(([127, 0, 0, 1], bind)),
            holdfast_testkit::RouteOptions::named(name)
                .with_tap(tap.clone())
                .with_connect_retry(Duration::from_secs(5)),
        )?;
        Ok(Tapped { route, tap, bind })
    }

    /// `-D` values making `port_key` (advertised) the proxy's and
    /// `bind_key` the real one.
    fn defines(&self, port_key: &str, bind_key: &str) -> [String; 2] {
        [
            format!("{port_key}={}", self.route.listen_addr().port()),
            format!("{bind_key}={}", self.bind),
        ]
    }
}

/// What no link may show in clear: part of the words the job counts and of
/// the input path its deployment carries.
const MARKER: &[u8] = b"holdfastmarker";

/// A cluster whose JobManager RPC, both TaskManagers' RPC and the data
/// link into `tm-1` go through recording proxies, after a wordcount over
/// marker words ran on it exactly.
struct TappedCluster {
    cluster: Cluster,
    jm: support::cluster::JobManager,
    client: RestClient,
    _tms: [support::cluster::TaskManager; 2],
    taps: Vec<(&'static str, holdfast_testkit::Tap)>,
    // Dropped last: the processes dial through it.
    _proxy: holdfast_testkit::FaultProxy,
}

async fn tapped_wordcount(dir: &Path, config: &str, tls: Option<&Pki>) -> Result<TappedCluster> {
    let proxy = holdfast_testkit::FaultProxy::start()?;
    let cluster = Cluster::start("lease", config).await?;
    let jm_rpc = Tapped::new(&proxy, "jm-a rpc")?;
    let jm = cluster
        .jobmanager_defined(
            "jm-a",
            &jm_rpc.defines("jobmanager.rpc.port", "jobmanager.rpc.bind-port"),
        )
        .await?;
    let tm1_rpc = Tapped::new(&proxy, "tm-1 rpc")?;
    let tm1_data = Tapped::new(&proxy, "tm-1 data")?;
    let mut defines = tm1_rpc
        .defines("taskmanager.rpc.port", "taskmanager.rpc.bind-port")
        .to_vec();
    defines.extend(tm1_data.defines("taskmanager.data.port", "taskmanager.data.bind-port"));
    let tm1 = cluster.taskmanager_defined("tm-1", &defines, &[]).await?;
    let tm2_rpc = Tapped::new(&proxy, "tm-2 rpc")?;
    let tm2 = cluster
        .taskmanager_defined(
            "tm-2",
            &tm2_rpc.defines("taskmanager.rpc.port", "taskmanager.rpc.bind-port"),
            &[],
        )
        .await?;
    let client = match tls {
        Some(p) => https(&jm.rest, Some(&p.operator), &p.ca)?.0,
        None => support::cluster::rest(&jm.rest)?,
    };
    registered(&client, 2).await?;

    let input = dir.join("holdfastmarker-input");
    std::fs::create_dir(&input)?;
    let mut reference = std::collections::BTreeMap::new();
    let mut text = String::new();
    for line in 0..4_000u64 {
        let words: Vec<String> = (0..4)
            .map(|k| format!("holdfastmarker{}", (line * 7 + k * 13) % 61))
            .collect();
        for w in &words {
            *reference.entry(w.clone()).or_insert(0u64) += 1;
        }
        text.push_str(&words.join(" "));
        text.push('\n');
    }
    std::fs::write(input.join("part-0.txt"), text)?;
    let output = dir.join("wordcount-out");
    let params = serde_json::json!({"input": input, "output": output});
    let graph = holdfast_dataflow::JobRegistry::builtin().job_graph("wordcount", &params, 2)?;
    let job = client.submit(&graph).await?;
    eventually("the wordcount finishes", || async {
        let state = client.job(job).await?.state;
        ensure!(
            state != "FAILED",
            "the job failed: {:?}",
            client.exceptions(job).await?
        );
        Ok((state == "FINISHED").then_some(()))
    })
    .await?;
    let mut counts = std::collections::BTreeMap::new();
    for line in support::part_lines(&output)? {
        let (word, count) = line.split_once(' ').context("a `word count` line")?;
        counts.insert(word.to_owned(), count.parse::<u64>()?);
    }
    ensure!(counts == reference, "the counts differ from a plain count");
    Ok(TappedCluster {
        cluster,
        jm,
        client,
        _tms: [tm1, tm2],
        taps: vec![
            ("jm-a rpc", jm_rpc.tap),
            ("tm-1 rpc", tm1_rpc.tap),
            ("tm-2 rpc", tm2_rpc.tap),
            ("tm-1 data", tm1_data.tap),
        ],
        _proxy: proxy,
    })
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The control: without TLS the same recording sees the marker on the RPC
/// links (the job's input path in its deployment) and on the data link (the
/// words), so the check of the encrypted run can fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wire_check_sees_plaintext_when_tls_is_off() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let run = tapped_wordcount(dir.path(), "", None).await?;
    for (name, tap) in &run.taps {
        if *name == "jm-a rpc" {
            continue; // TaskManager → JobManager calls carry reports, not the job.
        }
        ensure!(
            contains(&tap.captured(), MARKER),
            "{name} should show the marker in clear"
        );
    }
    Ok(())
}

/// With TLS on every link: a wordcount over marker words is exact and no
/// recorded link shows a marker; then a checkpointing keyed job runs
/// exactly once through kill -9 of the leader, the standby taking over
/// over TLS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_plaintext_crosses_a_link_and_a_leader_kill_costs_no_record() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let p = pki(dir.path());
    let checkpoints = dir.path().join("checkpoints");
    let config = format!(
        "{}execution.checkpointing.interval: 500ms\nexecution.checkpointing.dir: {}\n\
         restart-strategy.fixed-delay.attempts: 100\nheartbeat.timeout: 20s\n",
        tls_config(&p),
        checkpoints.display()
    );
    let mut run = tapped_wordcount(dir.path(), &config, Some(&p)).await?;
    for (name, tap) in &run.taps {
        let bytes = tap.captured();
        ensure!(
            bytes.len() > 1_000,
            "{name} carried only {} bytes",
            bytes.len()
        );
        ensure!(
            !contains(&bytes, MARKER),
            "{name} shows the marker in clear"
        );
    }

    let jm_b = run.cluster.jobmanager("jm-b").await?;
    let (client_b, _) = https(&jm_b.rest, Some(&p.operator), &p.ca)?;
    const JOB: support::datagen_job::Datagen = support::datagen_job::Datagen {
        records: 24_000,
        rate: 4_000,
        keys: 40,
    };
    let output = dir.path().join("datagen-out");
    // The wordcount's checkpoints are in the log already: wait for one of
    // this job's.
    let from = run.jm.process.stderr().len();
    let job = JOB.submit(&run.client, &output, "keyed", 2).await?;
    logged(&run.jm.process, "checkpoint complete", from).await?;
    run.jm.process.kill()?;
    logged(
        &jm_b.process,
        "read the job's latest completed checkpoint from the HA store",
        0,
    )
    .await?;
    support::datagen_job::finished(&client_b, job).await?;
    JOB.check_keyed(&output, true)
}

//! [`TlsLink`]: one link's TLS (the cluster's internal links, or the REST
//! API), reloadable. Every handshake takes the configuration current at
//! that moment, so a reload changes what new connections present and
//! accept while open ones keep running on what they started with.
//!
//! ```text
//!  files ─► Material::load ─► rustls configs ─► current (RwLock<Arc<_>>)
//!    ▲            │ error at start: the process does not start                 │
//!    │            │ error on reload: WARN, the old configs stay                │
//!  watcher (every reload interval, and on SIGHUP) ─► digest changed? ─► reload │
//!                                                  └► expiry gauge, announce   ▼
//!                                      accept(tcp) / connect(tcp, host) ─► TlsStream
//!                                              └► refused: counted, WARN (rate-limited)
//! ```

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

use holdfast_auth::LogLimiter;
use rustls::{ClientConfig, ServerConfig};
use rustls_pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::{TlsAcceptor, TlsConnector, client, server};

use crate::configs::{self, ClientCertificates};
use crate::error::{TlsError, utc};
use crate::expiry::{self, ExpiryNotice};
use crate::material::{self, Digest, Material, TlsFiles, Validity};
use crate::metrics::TlsMetrics;
use crate::policy::TlsPolicy;
use crate::refusal::HandshakeRefusal;
use crate::verdict;

/// What one link is for, and so which configurations it builds.
#[derive(Clone, Debug)]
pub struct LinkSpec {
    /// Its name in logs and metric labels: `internal` or `rest`.
    pub name: &'static str,
    /// Its files.
    pub files: TlsFiles,
    /// Versions, suites, hostname verification.
    pub policy: TlsPolicy,
    /// `Some`: this process serves the link, asking clients for
    /// certificates as said; `None`: it only dials.
    pub serve: Option<ClientCertificates>,
    /// Whether this process dials the link.
    pub dial: bool,
    /// ALPN protocols offered (e.g. `http/1.1`), or none.
    pub alpn: Vec<Vec<u8>>,
    /// How long before expiry the log starts warning.
    pub warn_before: Duration,
}

impl LinkSpec {
    /// A link named `name` with the default policy, no ALPN, and expiry
    /// warnings from 30 days before the end.
    pub fn new(
        name: &'static str,
        files: TlsFiles,
        serve: Option<ClientCertificates>,
        dial: bool,
    ) -> LinkSpec {
        LinkSpec {
            name,
            files,
            policy: TlsPolicy::default(),
            serve,
            dial,
            alpn: Vec::new(),
            warn_before: Duration::from_secs(30 * 86_400),
        }
    }
}

#[derive(Debug)]
struct Current {
    server: Option<Arc<ServerConfig>>,
    client: Option<Arc<ClientConfig>>,
    digest: Digest,
    leaf: Option<(Validity, String)>,
}

/// One link's TLS, shared by its servers and clients.
#[derive(Debug)]
pub struct TlsLink {
    spec: LinkSpec,
    current: RwLock<Arc<Current>>,
    metrics: TlsMetrics,
    refusals: Mutex<LogLimiter<(IpAddr, &'static str)>>,
    announced: Mutex<Option<SystemTime>>,
}

/// How a reload check ended.
#[derive(Debug)]
pub enum Reload {
    /// The files are as loaded.
    Unchanged,
    /// New configurations are in use for new connections.
    Reloaded,
    /// The files changed but cannot be used; the old ones stay.
    Failed(TlsError),
}

impl TlsLink {
    /// Reads the files and builds the configurations; any problem is an
    /// error naming the key or file, so that a process does not start with a
    /// TLS setup it cannot use.
    pub fn load(spec: LinkSpec, metrics: TlsMetrics) -> Result<Arc<TlsLink>, TlsError> {
        spec.policy.validate()?;
        let current = build(&spec, SystemTime::now())?;
        let link = Arc::new(TlsLink {
            current: RwLock::new(Arc::new(current)),
            metrics,
            refusals: Mutex::new(LogLimiter::default()),
            announced: Mutex::new(None),
            spec,
        });
        link.observe_expiry(SystemTime::now());
        Ok(link)
    }

    /// The link's name (`internal`, `rest`).
    pub fn name(&self) -> &'static str {
        self.spec.name
    }

    /// The policy in force.
    pub fn policy(&self) -> &TlsPolicy {
        &self.spec.policy
    }

    fn current(&self) -> Arc<Current> {
        match self.current.read() {
            Ok(guard) => Arc::clone(&guard),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// The server configuration new connections get, if this link serves.
    pub fn server_config(&self) -> Option<Arc<ServerConfig>> {
        self.current().server.clone()
    }

    /// The client configuration new connections get, if this link dials.
    pub fn client_config(&self) -> Option<Arc<ClientConfig>> {
        self.current().client.clone()
    }

    /// The own certificate's validity, if the link has one.
    pub fn validity(&self) -> Option<Validity> {
        self.current().leaf.as_ref().map(|(v, _)| *v)
    }

    /// Rereads the files if their bytes changed since the last load, and
    /// swaps the configurations in when they are usable.
    pub fn reload_if_changed(&self) -> Reload {
        let loaded = self.current();
        if material::digest_of(&self.spec.files) == Some(loaded.digest) {
            return Reload::Unchanged;
        }
        match build(&self.spec, SystemTime::now()) {
            Ok(next) => {
                if next.digest == loaded.digest {
                    return Reload::Unchanged;
                }
                let subject = next
                    .leaf
                    .as_ref()
                    .map(|(v, s)| (s.clone(), utc(v.not_after)));
                match self.current.write() {
                    Ok(mut guard) => *guard = Arc::new(next),
                    Err(poisoned) => *poisoned.into_inner() = Arc::new(next),
                }
                *self.announced.lock().unwrap_or_else(|p| p.into_inner()) = None;
                self.metrics.reloaded(self.spec.name, "reloaded");
                match subject {
                    Some((subject, until)) => tracing::info!(
                        link = self.spec.name,
                        %subject,
                        valid_until = %until,
                        "TLS files changed: new connections use the new certificate, key and CA; \
                         open connections keep running"
                    ),
                    None => tracing::info!(
                        link = self.spec.name,
                        "TLS files changed: new connections use the new CA; open connections keep running"
                    ),
                }
                self.observe_expiry(SystemTime::now());
                Reload::Reloaded
            }
            Err(error) => {
                self.metrics.reloaded(self.spec.name, "failed");
                tracing::warn!(
                    link = self.spec.name,
                    %error,
                    "TLS files changed but cannot be used; connections keep using the previous \
                     certificate, key and CA until the files are fixed"
                );
                Reload::Failed(error)
            }
        }
    }

    /// Sets the expiry gauge and, when due, warns in the log.
    pub fn observe_expiry(&self, now: SystemTime) {
        let Some((validity, subject)) = self.current().leaf.clone() else {
            return;
        };
        let seconds = match validity.not_after.duration_since(now) {
            Ok(left) => i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
            Err(past) => -i64::try_from(past.duration().as_secs()).unwrap_or(i64::MAX),
        };
        self.metrics.expires_in(self.spec.name, seconds);
        let mut announced = self.announced.lock().unwrap_or_else(|p| p.into_inner());
        let Some(notice) =
            expiry::announce(now, validity.not_after, self.spec.warn_before, *announced)
        else {
            return;
        };
        *announced = Some(now);
        let until = utc(validity.not_after);
        match notice {
            ExpiryNotice::Soon(left) => tracing::warn!(
                link = self.spec.name,
                %subject,
                valid_until = %until,
                days_left = left.as_secs() / 86_400,
                hours_left = left.as_secs() / 3600,
                "this process's TLS certificate expires soon; replace the files of {}.pem.* \
                 before then: they are reloaded without a restart",
                self.spec.files.prefix
            ),
            ExpiryNotice::Expired(ago) => tracing::error!(
                link = self.spec.name,
                %subject,
                valid_until = %until,
                hours_ago = ago.as_secs() / 3600,
                "this process's TLS certificate HAS EXPIRED: peers refuse new connections to and \
                 from it; replace the files of {}.pem.* (reloaded without a restart)",
                self.spec.files.prefix
            ),
        }
    }

    /// Accepts a TLS connection on `tcp` from `peer`, within `timeout`.
    /// A refusal is counted and logged (rate-limited) before it is returned.
    pub async fn accept(
        &self,
        tcp: TcpStream,
        peer: SocketAddr,
        timeout: Duration,
    ) -> Result<server::TlsStream<TcpStream>, HandshakeRefusal> {
        let config = self.server_config().ok_or_else(|| HandshakeRefusal {
            reason: "protocol",
            detail: "this process does not serve TLS on this link".into(),
        })?;
        let outcome = tokio::time::timeout(timeout, TlsAcceptor::from(config).accept(tcp)).await;
        let refusal = match outcome {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(error)) => HandshakeRefusal::from_io(&error),
            Err(_) => HandshakeRefusal::timeout(timeout),
        };
        self.refused(peer, "incoming", &refusal);
        Err(refusal)
    }

    /// Starts TLS on `tcp` to `host` (its certificate must name it, unless
    /// the policy says otherwise), within `timeout`. A refusal is counted and
    /// logged (rate-limited) before it is returned.
    pub async fn connect(
        &self,
        tcp: TcpStream,
        host: &str,
        timeout: Duration,
    ) -> Result<client::TlsStream<TcpStream>, HandshakeRefusal> {
        let peer = tcp.peer_addr().ok();
        let config = self.client_config().ok_or_else(|| HandshakeRefusal {
            reason: "protocol",
            detail: "this process does not dial TLS on this link".into(),
        })?;
        let name = server_name(host)?;
        let started = Instant::now();
        let outcome =
            tokio::time::timeout(timeout, TlsConnector::from(config).connect(name, tcp)).await;
        let refusal = match outcome {
            Ok(Ok(mut stream)) => {
                // One handshake's time more (plus a little) for the verdict.
                let wait = (started.elapsed() + VERDICT_SLACK).min(timeout);
                match verdict::await_verdict(&mut stream, wait).await {
                    Ok(()) => return Ok(stream),
                    Err(refusal) => refusal,
                }
            }
            Ok(Err(error)) => HandshakeRefusal::from_io(&error),
            Err(_) => HandshakeRefusal::timeout(timeout),
        };
        if let Some(peer) = peer {
            self.refused(peer, "outgoing", &refusal);
        }
        Err(refusal)
    }

    fn refused(&self, peer: SocketAddr, direction: &'static str, refusal: &HandshakeRefusal) {
        self.metrics.refused(self.spec.name, refusal.reason);
        let admitted = self
            .refusals
            .lock()
            .map(|mut limiter| limiter.admit((peer.ip(), refusal.reason), Instant::now()))
            .unwrap_or(None);
        if let Some(suppressed) = admitted {
            tracing::warn!(
                link = self.spec.name,
                %peer,
                direction,
                reason = refusal.reason,
                suppressed,
                "TLS handshake refused: {}; the connection is closed, nothing else is affected",
                refusal.detail
            );
        }
    }

    /// Checks the files every `every` and on SIGHUP, and keeps the expiry
    /// gauge and warnings current, until the returned task is aborted.
    pub fn spawn_watcher(self: &Arc<Self>, every: Duration) -> tokio::task::JoinHandle<()> {
        let link = Arc::clone(self);
        // Registered before this returns: a SIGHUP sent afterwards is seen.
        let mut hangup = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        {
            Ok(signal) => Some(signal),
            Err(error) => {
                tracing::warn!(link = link.spec.name, %error,
                    "cannot listen for SIGHUP; TLS files are still checked every {every:?}");
                None
            }
        };
        tokio::spawn(async move {
            loop {
                let signalled = async {
                    match hangup.as_mut() {
                        Some(signal) => signal.recv().await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    _ = tokio::time::sleep(every) => {}
                    _ = signalled => {
                        tracing::info!(link = link.spec.name, "SIGHUP: checking the TLS files");
                    }
                }
                link.reload_if_changed();
                link.observe_expiry(SystemTime::now());
            }
        })
    }
}

/// Added to the handshake's own duration while waiting for a TLS 1.3
/// server's verdict on this side's certificate.
const VERDICT_SLACK: Duration = Duration::from_millis(20);

/// A host for SNI and verification: a DNS name or an IP address.
fn server_name(host: &str) -> Result<ServerName<'static>, HandshakeRefusal> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(bare.to_owned()).map_err(|_| HandshakeRefusal {
        reason: "wrong-host",
        detail: format!("{host:?} is neither a DNS name nor an IP address"),
    })
}

fn build(spec: &LinkSpec, now: SystemTime) -> Result<Current, TlsError> {
    let material = Material::load(&spec.files, &spec.policy, now)?;
    let alpn: Vec<&[u8]> = spec.alpn.iter().map(Vec::as_slice).collect();
    let server = match spec.serve {
        Some(clients) => Some(configs::server(
            &spec.files,
            &material,
            &spec.policy,
            clients,
            &alpn,
        )?),
        None => None,
    };
    let client = if spec.dial {
        Some(configs::client(
            &spec.files,
            &material,
            &spec.policy,
            &alpn,
        )?)
    } else {
        None
    };
    Ok(Current {
        server,
        client,
        digest: material.digest,
        leaf: material.leaf,
    })
}

//! The server's side: a tonic interceptor that verifies every call before
//! its handler runs and hands the handler the verified peer id.

use std::fmt;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use holdfast_auth::LogLimiter;
use holdfast_types::sync::lock;
use tonic::service::Interceptor;
use tonic::{Request, Status};

use super::{AUTH_HEADER, Auth, AuthRuntime, PeerId, SystemAuthRuntime, Verifier, VerifyConfig};

/// The verified caller of a request: a request extension that
/// [`ServerAuth`] inserts. Absent when authentication is disabled.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AuthenticatedPeer(pub PeerId);

impl AuthenticatedPeer {
    /// The verified caller of `request`, if it was authenticated.
    pub fn of<T>(request: &Request<T>) -> Option<&PeerId> {
        request
            .extensions()
            .get::<AuthenticatedPeer>()
            .map(|peer| &peer.0)
    }
}

/// Verifies every incoming call (or, with [`Auth::Disabled`], lets every
/// call through). Refused calls get `UNAUTHENTICATED` with the reason and
/// are logged at WARN with the remote address (rate-limited). Cheap to
/// clone; clones share one replay cache.
#[derive(Clone)]
pub struct ServerAuth {
    shared: Option<Arc<Shared>>,
}

struct Shared {
    verifier: Mutex<Verifier>,
    runtime: Arc<dyn AuthRuntime>,
    /// Per (remote IP, rejection kind).
    log: Mutex<LogLimiter<(Option<IpAddr>, &'static str)>>,
}

impl ServerAuth {
    /// Verifies with the secret of `auth`, on the system clock.
    pub fn new(auth: &Auth, config: &VerifyConfig) -> ServerAuth {
        ServerAuth::with_runtime(auth, config, Arc::new(SystemAuthRuntime))
    }

    /// Like [`new`](Self::new), with the clock of `runtime`.
    pub fn with_runtime(
        auth: &Auth,
        config: &VerifyConfig,
        runtime: Arc<dyn AuthRuntime>,
    ) -> ServerAuth {
        let shared = match auth {
            Auth::Secret(secret) => Some(Arc::new(Shared {
                verifier: Mutex::new(Verifier::new(Arc::clone(secret), config)),
                runtime,
                log: Mutex::new(LogLimiter::default()),
            })),
            Auth::Disabled => None,
        };
        ServerAuth { shared }
    }

    /// Whether calls are verified.
    pub fn is_enabled(&self) -> bool {
        self.shared.is_some()
    }
}

impl Interceptor for ServerAuth {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        let Some(shared) = &self.shared else {
            return Ok(request);
        };
        let header = request
            .metadata()
            .get(AUTH_HEADER)
            .map(|value| value.as_bytes());
        let now = shared.runtime.now_unix_ms();
        let verdict = lock(&shared.verifier).check(header, now);
        match verdict {
            Ok(peer) => {
                request.extensions_mut().insert(AuthenticatedPeer(peer));
                Ok(request)
            }
            Err(rejection) => {
                let remote = request.remote_addr();
                let logged = lock(&shared.log).admit(
                    (remote.map(|addr| addr.ip()), rejection.kind()),
                    Instant::now(),
                );
                if let Some(suppressed) = logged {
                    let remote = remote.map_or_else(|| "unknown".to_owned(), |a| a.to_string());
                    tracing::warn!(
                        %remote,
                        reason = %rejection,
                        kind = rejection.kind(),
                        suppressed_since_last = suppressed,
                        "refused an unauthenticated RPC call"
                    );
                }
                Err(Status::unauthenticated(rejection.to_string()))
            }
        }
    }
}

impl fmt::Debug for ServerAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = if self.is_enabled() {
            "Secret"
        } else {
            "Disabled"
        };
        write!(f, "ServerAuth({mode})")
    }
}

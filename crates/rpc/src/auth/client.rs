//! The caller's side: a tonic interceptor that signs every call.

use std::fmt;
use std::sync::Arc;

use tonic::metadata::{AsciiMetadataValue, MetadataValue};
use tonic::service::Interceptor;
use tonic::{Request, Status};

use super::peer::PeerId;
use super::secret::ClusterSecret;
use super::token::{self, AUTH_HEADER, Claim};
use super::{Auth, AuthRuntime, SystemAuthRuntime};

/// Signs every outgoing call as `peer` (or, with [`Auth::Disabled`], sends
/// calls unsigned). Cheap to clone.
#[derive(Clone)]
pub struct ClientAuth {
    signer: Option<Arc<Signer>>,
}

struct Signer {
    secret: Arc<ClusterSecret>,
    peer: PeerId,
    runtime: Arc<dyn AuthRuntime>,
}

impl ClientAuth {
    /// Signs as `peer` with the secret of `auth`, on the system clock.
    pub fn new(auth: &Auth, peer: PeerId) -> ClientAuth {
        ClientAuth::with_runtime(auth, peer, Arc::new(SystemAuthRuntime))
    }

    /// Like [`new`](Self::new), with time and nonces from `runtime`.
    pub fn with_runtime(auth: &Auth, peer: PeerId, runtime: Arc<dyn AuthRuntime>) -> ClientAuth {
        let signer = match auth {
            Auth::Secret(secret) => Some(Arc::new(Signer {
                secret: Arc::clone(secret),
                peer,
                runtime,
            })),
            Auth::Disabled => None,
        };
        ClientAuth { signer }
    }

    /// A freshly signed header value, or `None` when authentication is
    /// disabled. Each value is good for one call.
    pub fn sign_now(&self) -> Option<AsciiMetadataValue> {
        let signer = self.signer.as_ref()?;
        let claim = Claim {
            peer: signer.peer.clone(),
            unix_ms: signer.runtime.now_unix_ms(),
            nonce: signer.runtime.nonce(),
        };
        let header = token::sign(&signer.secret, &claim);
        // The header is built from ASCII digits, hex and a checked peer id.
        Some(MetadataValue::try_from(header).expect("the auth header is visible ASCII"))
    }
}

impl Interceptor for ClientAuth {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(header) = self.sign_now() {
            request.metadata_mut().insert(AUTH_HEADER, header);
        }
        Ok(request)
    }
}

impl fmt::Debug for ClientAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.signer {
            Some(signer) => f
                .debug_struct("ClientAuth")
                .field("peer", &signer.peer)
                .field("secret", &signer.secret)
                .finish(),
            None => f.write_str("ClientAuth(Disabled)"),
        }
    }
}

//! The caller's side: a tonic interceptor that signs every call.

use std::fmt;
use std::sync::Arc;

use tonic::metadata::{AsciiMetadataValue, MetadataValue};
use tonic::service::Interceptor;
use tonic::{Request, Status};

use super::{AUTH_HEADER, Auth, AuthRuntime, PeerId};

/// Signs every outgoing call as `peer` (or, with [`Auth::Disabled`], sends
/// calls unsigned). Cheap to clone.
///
/// The tonic side of holdfast-auth's transport-free signer
/// ([`holdfast_auth::ClientAuth`]), which it wraps.
#[derive(Clone)]
pub struct ClientAuth {
    signer: holdfast_auth::ClientAuth,
}

impl ClientAuth {
    /// Signs as `peer` with the secret of `auth`, on the system clock.
    pub fn new(auth: &Auth, peer: PeerId) -> ClientAuth {
        holdfast_auth::ClientAuth::new(auth, peer).into()
    }

    /// Like [`new`](Self::new), with time and nonces from `runtime`.
    pub fn with_runtime(auth: &Auth, peer: PeerId, runtime: Arc<dyn AuthRuntime>) -> ClientAuth {
        holdfast_auth::ClientAuth::with_runtime(auth, peer, runtime).into()
    }

    /// The transport-free signer inside.
    pub fn signer(&self) -> &holdfast_auth::ClientAuth {
        &self.signer
    }

    /// A freshly signed header value, or `None` when authentication is
    /// disabled. Each value is good for one call.
    pub fn sign_now(&self) -> Option<AsciiMetadataValue> {
        let header = self.signer.sign_now()?;
        // holdfast-auth documents the header as visible ASCII: digits, hex
        // and a checked peer id.
        Some(MetadataValue::try_from(header).expect("the auth header is visible ASCII"))
    }
}

impl From<holdfast_auth::ClientAuth> for ClientAuth {
    fn from(signer: holdfast_auth::ClientAuth) -> ClientAuth {
        ClientAuth { signer }
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
        fmt::Debug::fmt(&self.signer, f)
    }
}

//! The caller's side: signs calls and connections as one peer.

use std::fmt;
use std::sync::Arc;

use crate::peer::PeerId;
use crate::secret::ClusterSecret;
use crate::token::{self, Claim};
use crate::{Auth, AuthRuntime, SystemAuthRuntime};

/// Signs every outgoing call or connection as `peer` (or, with
/// [`Auth::Disabled`], leaves them unsigned). Cheap to clone.
///
/// Transport-free: [`sign_now`](Self::sign_now) returns the header's value
/// as text, and the transport carries it (holdfast-rpc's interceptor as the
/// [`AUTH_HEADER`](crate::AUTH_HEADER) gRPC metadata, the exchange in its
/// `Hello` frame).
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
    ///
    /// The value is always visible ASCII (`!` to `~`, no spaces): it is
    /// built from ASCII digits, lowercase hex and a [`PeerId`], whose
    /// alphabet is `[A-Za-z0-9._-]`. So it is a valid HTTP header and gRPC
    /// metadata value as it is.
    pub fn sign_now(&self) -> Option<String> {
        let signer = self.signer.as_ref()?;
        let claim = Claim {
            peer: signer.peer.clone(),
            unix_ms: signer.runtime.now_unix_ms(),
            nonce: signer.runtime.nonce(),
        };
        Some(token::sign(&signer.secret, &claim))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verifier::{Verifier, VerifyConfig};

    #[derive(Debug)]
    struct Fixed;

    impl AuthRuntime for Fixed {
        fn now_unix_ms(&self) -> u64 {
            1_700_000_000_000
        }
        fn nonce(&self) -> crate::Nonce {
            [7; crate::token::NONCE_LEN]
        }
    }

    #[test]
    fn signed_headers_are_visible_ascii_and_verify() {
        let secret = ClusterSecret::from_bytes(&b"0123456789abcdef-cluster"[..]).unwrap();
        let auth = Auth::with_secret(secret);
        let peer = PeerId::new("tm-host.1_a").unwrap();
        let signer = ClientAuth::with_runtime(&auth, peer.clone(), Arc::new(Fixed));
        let header = signer.sign_now().unwrap();
        assert!(header.bytes().all(|b| b.is_ascii_graphic()), "{header}");
        let Auth::Secret(secret) = &auth else {
            unreachable!()
        };
        let mut verifier = Verifier::new(Arc::clone(secret), &VerifyConfig::default());
        assert_eq!(
            verifier.check(Some(header.as_bytes()), 1_700_000_000_000),
            Ok(peer)
        );
        assert!(format!("{signer:?}").contains("<redacted>"));
    }

    #[test]
    fn disabled_auth_signs_nothing() {
        let signer = ClientAuth::new(&Auth::Disabled, PeerId::new("tm-1").unwrap());
        assert_eq!(signer.sign_now(), None);
        assert_eq!(format!("{signer:?}"), "ClientAuth(Disabled)");
    }
}

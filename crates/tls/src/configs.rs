//! rustls configurations from [`Material`] and a [`TlsPolicy`]: a server's
//! (with the client-certificate rule of its link) and a client's (with the
//! server verification of the policy, and its own certificate when it has
//! one).

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{ResolvesClientCert, WebPkiServerVerifier};
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, ServerConfig, SignatureScheme,
};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

use crate::error::TlsError;
use crate::material::{Material, TlsFiles};
use crate::policy::TlsPolicy;

/// Whether a server asks its clients for a certificate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientCertificates {
    /// Not asked for.
    Ignored,
    /// Asked for and verified when sent; a client without one is let in
    /// (its calls are then unauthenticated).
    Optional,
    /// Required: a client without a certificate signed by the CA is
    /// refused at the handshake (mutual TLS).
    Required,
}

/// A server's configuration. `material` must hold an identity, and a CA
/// unless `clients` is [`ClientCertificates::Ignored`].
pub(crate) fn server(
    files: &TlsFiles,
    material: &Material,
    policy: &TlsPolicy,
    clients: ClientCertificates,
    alpn: &[&[u8]],
) -> Result<Arc<ServerConfig>, TlsError> {
    let provider = policy.provider();
    let identity = material.identity.clone().ok_or_else(|| TlsError::Missing {
        key: format!(
            "{}.pem.certificate and {}.pem.key",
            files.prefix, files.prefix
        ),
        why: "a TLS server presents a certificate",
    })?;
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&policy.rustls_versions())?;
    let builder = match clients {
        ClientCertificates::Ignored => builder.with_no_client_auth(),
        ClientCertificates::Optional | ClientCertificates::Required => {
            let roots = roots(files, material, "verifying clients' certificates")?;
            let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider);
            let verifier = match clients {
                ClientCertificates::Optional => verifier.allow_unauthenticated(),
                _ => verifier,
            };
            let verifier = verifier.build().map_err(|e| TlsError::Trust {
                path: files.ca.clone().unwrap_or_default(),
                reason: e.to_string(),
            })?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_cert_resolver(Arc::new(Own(identity)));
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

/// A client's configuration: servers are verified against the CA (and
/// their name, per the policy); the own certificate is sent when there is
/// one and the server asks.
pub(crate) fn client(
    files: &TlsFiles,
    material: &Material,
    policy: &TlsPolicy,
    alpn: &[&[u8]],
) -> Result<Arc<ClientConfig>, TlsError> {
    let provider = policy.provider();
    let roots = roots(files, material, "verifying servers' certificates")?;
    let verifier = WebPkiServerVerifier::builder_with_provider(roots, Arc::clone(&provider))
        .build()
        .map_err(|e| TlsError::Trust {
            path: files.ca.clone().unwrap_or_default(),
            reason: e.to_string(),
        })?;
    let verifier: Arc<dyn ServerCertVerifier> = if policy.verify_hostname {
        verifier
    } else {
        Arc::new(AnyName(verifier))
    };
    let builder = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&policy.rustls_versions())?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut config = match &material.identity {
        Some(identity) => builder.with_client_cert_resolver(Arc::new(Own(Arc::clone(identity)))),
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

fn roots(
    files: &TlsFiles,
    material: &Material,
    why: &'static str,
) -> Result<Arc<rustls::RootCertStore>, TlsError> {
    material.roots.clone().ok_or_else(|| TlsError::Missing {
        key: format!("{}.pem.ca", files.prefix),
        why,
    })
}

/// The own certificate and key, whoever asks.
#[derive(Debug)]
struct Own(Arc<CertifiedKey>);

impl ResolvesServerCert for Own {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(Arc::clone(&self.0))
    }
}

impl ResolvesClientCert for Own {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _schemes: &[SignatureScheme],
    ) -> Option<Arc<CertifiedKey>> {
        Some(Arc::clone(&self.0))
    }

    fn has_certs(&self) -> bool {
        true
    }
}

/// The policy's `verify-hostname: false`: the chain is verified as ever,
/// only a name mismatch is accepted.
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            // webpki checks the name only after the chain and validity.
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

//! The rustls client configuration of each TLS mode, shared by every client that speaks TLS
//! (the PostgreSQL wire client and tokio-postgres; mysql_async brings its own).
//!
//! Why one place: the modes must mean the same whichever client a connection ends up on
//! (the wire client falls back to tokio-postgres for what it does not speak), so there is one
//! [`client_config`] for all of them. The meanings are libpq's: `prefer`/`require` encrypt
//! without authenticating the server (handshake signatures are still checked), `verify-ca`
//! checks the chain against `ssl_ca` (libpq's `~/.postgresql/root.crt` when unset),
//! `verify-full` also the host name; a client certificate is sent when one is given.
//! rustls with the ring provider: no OpenSSL on the build or the target machine.

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::db::conn::{ErrKind, SqlError};
use crate::db::target::{SslMode, Target};

fn bad(key: &str, path: &std::path::Path, what: impl std::fmt::Display) -> SqlError {
    SqlError::client(
        format!(
            "[target] {key} = \"{}\": {what}: give a readable PEM file",
            path.display()
        ),
        ErrKind::Other,
    )
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn roots(t: &Target) -> Result<RootCertStore, SqlError> {
    let mut roots = RootCertStore::empty();
    // libpq's default for the verify modes: ~/.postgresql/root.crt.
    let path = match &t.ssl_ca {
        Some(p) => p.clone(),
        None => {
            let home = std::env::var_os("HOME").unwrap_or_default();
            let p = std::path::Path::new(&home).join(".postgresql/root.crt");
            if !p.exists() {
                return Err(SqlError::client(
                    "TLS mode verify-ca / verify-full needs the server's CA certificate (PEM): set [target] ssl_ca = \"/path/to/root.crt\" (PGSSLROOTCERT for a sysbench command line), or put it in ~/.postgresql/root.crt",
                    ErrKind::Other,
                ));
            }
            p
        }
    };
    let certs = CertificateDer::pem_file_iter(&path)
        .map_err(|e| bad("ssl_ca", &path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad("ssl_ca", &path, e))?;
    if certs.is_empty() {
        return Err(bad("ssl_ca", &path, "no certificate in it"));
    }
    for c in certs {
        roots.add(c).map_err(|e| bad("ssl_ca", &path, e))?;
    }
    Ok(roots)
}

/// The configuration of `t.ssl` (not `Disabled`).
pub fn client_config(t: &Target) -> Result<ClientConfig, SqlError> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| SqlError::client(format!("TLS setup: {e}"), ErrKind::Other))?;
    let verifier: Arc<dyn ServerCertVerifier> = match t.ssl {
        SslMode::Disabled | SslMode::Preferred | SslMode::Required => {
            Arc::new(AcceptAny(Arc::clone(&provider)))
        }
        SslMode::VerifyCa | SslMode::VerifyIdentity => {
            let inner = WebPkiServerVerifier::builder_with_provider(
                Arc::new(roots(t)?),
                Arc::clone(&provider),
            )
            .build()
            .map_err(|e| SqlError::client(format!("TLS setup: {e}"), ErrKind::Other))?;
            if t.ssl == SslMode::VerifyCa {
                Arc::new(ChainOnly(inner))
            } else {
                inner
            }
        }
    };
    let builder = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    match (&t.ssl_cert, &t.ssl_key) {
        (Some(cert), Some(key)) => {
            let certs = CertificateDer::pem_file_iter(cert)
                .map_err(|e| bad("ssl_cert", cert, e))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| bad("ssl_cert", cert, e))?;
            let key = PrivateKeyDer::from_pem_file(key).map_err(|e| bad("ssl_key", key, e))?;
            builder.with_client_auth_cert(certs, key).map_err(|e| {
                SqlError::client(format!("TLS client certificate: {e}"), ErrKind::Other)
            })
        }
        _ => Ok(builder.with_no_client_auth()),
    }
}

/// `prefer` / `require`: encryption without authentication of the server (libpq's
/// meaning); handshake signatures are still checked.
#[derive(Debug)]
struct AcceptAny(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca`: the chain must lead to `ssl_ca`; the name in the certificate is not
/// compared with the host.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
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
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForName
                | rustls::CertificateError::NotValidForNameContext { .. },
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

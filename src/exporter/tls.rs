//! The exporter's TLS: a rustls server config (the ring provider) from a
//! web config's `tls_server_config`. The certificate and key are read at
//! start (a bad pair fails there, exit 1) and read again on a handshake
//! after either file changed (a renewed certificate is served without a
//! restart, as exporter-toolkit does); a renewal that cannot be read is one
//! log line, and the last good pair is served meanwhile. A certificate,
//! key or client CA that is not one is bad input ([`UsageError`], exit 2 at
//! start); one that cannot be read is a failure (exit 1).

use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use anyhow::{Context, Result};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;

use super::web_config::{ClientAuth, Pem, Tls, Version};
use crate::error::UsageError;

/// What is wrong in the web config or the PEM it names: bad input.
fn bad(what: String) -> anyhow::Error {
    UsageError(what).into()
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn read(pem: &Pem, what: &str) -> Result<Vec<u8>> {
    match pem {
        Pem::Inline(s) => Ok(s.as_bytes().to_vec()),
        Pem::File(f) => {
            std::fs::read(f).with_context(|| format!("tls_server_config.{what}_file: cannot read {}", f.display()))
        }
    }
}

/// The certificate chain and key the files hold now.
fn certified(t: &Tls, provider: &CryptoProvider) -> Result<Arc<CertifiedKey>> {
    let certs = read(&t.cert, "cert")?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&certs)
        .collect::<Result<_, _>>()
        .map_err(|e| bad(format!("tls_server_config.cert: not a PEM certificate ({e})")))?;
    if certs.is_empty() {
        return Err(bad("tls_server_config.cert: no PEM certificate in it".into()));
    }
    let key = read(&t.key, "key")?;
    let key = PrivateKeyDer::from_pem_slice(&key)
        .map_err(|e| bad(format!("tls_server_config.key: not a PEM private key ({e})")))?;
    let ck = CertifiedKey::from_der(certs, key, provider)
        .map_err(|e| bad(format!("tls_server_config: the certificate and key do not make a pair: {e}")))?;
    Ok(Arc::new(ck))
}

/// Modification times of the certificate and key files (inline: none).
fn stamp(t: &Tls) -> [Option<SystemTime>; 2] {
    [&t.cert, &t.key].map(|p| match p {
        Pem::File(f) => std::fs::metadata(f).and_then(|m| m.modified()).ok(),
        Pem::Inline(_) => None,
    })
}

#[derive(Debug)]
struct Reloading {
    tls: Tls,
    provider: Arc<CryptoProvider>,
    current: Mutex<([Option<SystemTime>; 2], Arc<CertifiedKey>)>,
}

impl ResolvesServerCert for Reloading {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let mut cur = self.current.lock().unwrap_or_else(|e| e.into_inner());
        let now = stamp(&self.tls);
        if now != cur.0 {
            match certified(&self.tls, &self.provider) {
                Ok(ck) => {
                    tracing::info!("TLS certificate read again: the files changed");
                    *cur = (now, ck);
                }
                Err(e) => {
                    tracing::warn!("TLS certificate changed but cannot be read ({e:#}): serving the previous one");
                    cur.0 = now;
                }
            }
        }
        Some(Arc::clone(&cur.1))
    }
}

/// The server config for `t`; fails (at start) on a certificate, key or
/// client CA that cannot be read or used.
pub(crate) fn server_config(t: &Tls) -> Result<Arc<rustls::ServerConfig>> {
    let provider = provider();
    let first = certified(t, &provider)?;
    let versions: Vec<&'static rustls::SupportedProtocolVersion> =
        [(Version::Tls12, &rustls::version::TLS12), (Version::Tls13, &rustls::version::TLS13)]
            .into_iter()
            .filter(|(v, _)| (t.min_version..=t.max_version).contains(v))
            .map(|(_, p)| p)
            .collect();
    let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&versions)
        .map_err(|e| bad(format!("tls_server_config: min_version and max_version: {e}")))?;
    let builder = match (&t.client_ca, t.client_auth) {
        (Some(ca), ClientAuth::VerifyIfGiven | ClientAuth::RequireAndVerify) => {
            let mut roots = rustls::RootCertStore::empty();
            let pem = read(ca, "client_ca")?;
            for c in CertificateDer::pem_slice_iter(&pem) {
                let c = c.map_err(|e| bad(format!("tls_server_config.client_ca: not a PEM certificate ({e})")))?;
                roots.add(c).map_err(|e| bad(format!("tls_server_config.client_ca: {e}")))?;
            }
            let mut v = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider));
            if t.client_auth == ClientAuth::VerifyIfGiven {
                v = v.allow_unauthenticated();
            }
            builder.with_client_cert_verifier(v.build().map_err(|e| bad(format!("tls_server_config.client_ca: {e}")))?)
        }
        _ => builder.with_no_client_auth(),
    };
    let mut config = builder.with_cert_resolver(Arc::new(Reloading {
        tls: t.clone(),
        provider,
        current: Mutex::new((stamp(t), first)),
    }));
    config.ignore_client_order = t.prefer_server_order;
    Ok(Arc::new(config))
}

//! `--web-config-file`: TLS and basic auth from a file in the format of
//! Prometheus' exporter-toolkit (`--web.config.file` of node_exporter), so
//! the file a node_exporter user has works here:
//!
//! ```yaml
//! tls_server_config:
//!   cert_file: server.crt        # relative paths: from the file's directory
//!   key_file: server.key
//! basic_auth_users:
//!   prometheus: $2y$10$...       # bcrypt hashes (htpasswd -nBC 10 "")
//! ```
//!
//! Read as exporter-toolkit reads it: unknown keys are errors; an absent or
//! empty `tls_server_config` serves plain HTTP; no `basic_auth_users`, no
//! authentication. What dentrylab's TLS (rustls) cannot do as Go's does is
//! refused with the key's name, never ignored: `cipher_suites`,
//! `curve_preferences`, `client_allowed_sans`, TLS versions below 1.2,
//! client certificates accepted unverified, `rate_limit`. `http2` is
//! accepted and has no effect (the exporter answers HTTP/1.1).
//!
//! Pure: [`parse`] reads text, [`load`] reads the file and checks that
//! the certificate files exist and every hash is bcrypt. Each error is one
//! line naming the flag and the file ([`about_file`]): what is wrong in
//! the file (its YAML, a key, a hash, a certificate or key that is not
//! one) is bad input, exit 2, as for a bad flag; a file that cannot be
//! read is a failure, exit 1, with the kernel's errno.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use yaml_rust2::Yaml;

use crate::error::UsageError;

/// The option that names the file, in every error about it (node_exporter's
/// `--web.config.file` is its alias).
pub(crate) const FLAG: &str = "--web-config-file";

/// The whole file.
#[derive(Debug, Clone, Default)]
pub(crate) struct WebConfig {
    pub tls: Option<Tls>,
    /// User name to bcrypt hash; empty: no authentication.
    pub users: BTreeMap<String, String>,
    /// `http_server_config.headers`, added to every answer.
    pub headers: Vec<(String, String)>,
    /// The file it was read from ([`load`]), named in errors found later
    /// (a certificate that is not one).
    pub file: Option<PathBuf>,
}

/// Where a PEM comes from: a file (read again when it changes) or the
/// config itself (`cert`, `key`, `client_ca`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Pem {
    File(PathBuf),
    Inline(String),
}

/// `client_auth_type`, of the values rustls can honour.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum ClientAuth {
    /// `NoClientCert` (the default).
    None,
    /// `VerifyClientCertIfGiven`.
    VerifyIfGiven,
    /// `RequireAndVerifyClientCert`.
    RequireAndVerify,
}

/// `min_version` / `max_version`.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub(crate) enum Version {
    Tls12,
    Tls13,
}

#[derive(Debug, Clone)]
pub(crate) struct Tls {
    pub cert: Pem,
    pub key: Pem,
    pub client_auth: ClientAuth,
    pub client_ca: Option<Pem>,
    pub min_version: Version,
    pub max_version: Version,
    /// `prefer_server_cipher_suites` (default true): the server's order wins.
    pub prefer_server_order: bool,
}

/// Reads and checks the file at `path`: YAML in exporter-toolkit's
/// schema, certificate and key files that can be read, bcrypt hashes.
pub(crate) fn load(path: &Path) -> Result<WebConfig> {
    let text = std::fs::read_to_string(path).map_err(|e| about_file(path, anyhow!("cannot read it: {e}")))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut c = parse(&text, dir).map_err(|e| about_file(path, UsageError(format!("{e:#}")).into()))?;
    c.file = Some(path.to_path_buf());
    if let Some(t) = &c.tls {
        for (what, pem) in
            [("cert_file", Some(&t.cert)), ("key_file", Some(&t.key)), ("client_ca_file", t.client_ca.as_ref())]
        {
            if let Some(Pem::File(f)) = pem {
                std::fs::metadata(f).map_err(|e| {
                    about_file(path, anyhow!("tls_server_config.{what}: cannot read {}: {e}", f.display()))
                })?;
            }
        }
    }
    Ok(c)
}

/// `e` as one line naming the flag and `file`: bad input (exit 2) when `e`
/// is a [`UsageError`], else a failure (exit 1).
pub(crate) fn about_file(file: &Path, e: anyhow::Error) -> anyhow::Error {
    let line = format!("{FLAG} {}: {e:#}", file.display());
    if e.downcast_ref::<UsageError>().is_some() { UsageError(line).into() } else { anyhow!(line) }
}

/// Parses the file's text; relative file names are joined to `dir`.
pub(crate) fn parse(text: &str, dir: &Path) -> Result<WebConfig> {
    let docs = yaml_rust2::YamlLoader::load_from_str(text).map_err(|e| anyhow::anyhow!("not YAML: {e}"))?;
    let mut c = WebConfig::default();
    let top = match docs.into_iter().next() {
        None | Some(Yaml::Null) => return Ok(c),
        Some(Yaml::Hash(h)) => h,
        Some(_) => bail!("not a YAML mapping of tls_server_config, http_server_config and basic_auth_users"),
    };
    for (k, v) in &top {
        match key(k, "")? {
            "tls_server_config" => c.tls = tls(v, dir)?,
            "http_server_config" => c.headers = http(v)?,
            "basic_auth_users" => c.users = users(v)?,
            "rate_limit" => {
                bail!("rate_limit is not supported by dentrylab: --max-requests bounds the scrapes in flight instead")
            }
            other => bail!(
                "unknown key {other:?} (exporter-toolkit's keys: tls_server_config, http_server_config, basic_auth_users)"
            ),
        }
    }
    Ok(c)
}

fn key<'a>(k: &'a Yaml, at: &str) -> Result<&'a str> {
    k.as_str().with_context(|| format!("{at}a key that is not a string: {k:?}"))
}

fn string(v: &Yaml, at: &str) -> Result<String> {
    match v {
        Yaml::String(s) => Ok(s.clone()),
        Yaml::Null => Ok(String::new()),
        _ => bail!("{at}: not a string"),
    }
}

fn mapping<'a>(v: &'a Yaml, at: &str) -> Result<Option<&'a yaml_rust2::yaml::Hash>> {
    match v {
        Yaml::Hash(h) => Ok(Some(h)),
        Yaml::Null => Ok(None),
        _ => bail!("{at}: not a mapping"),
    }
}

fn pem(inline: String, file: String, names: (&str, &str), dir: &Path) -> Result<Option<Pem>> {
    match (inline.is_empty(), file.is_empty()) {
        (true, true) => Ok(None),
        (false, true) => Ok(Some(Pem::Inline(inline))),
        (true, false) => Ok(Some(Pem::File(dir.join(file)))),
        (false, false) => bail!("tls_server_config: give {} or {}, not both", names.0, names.1),
    }
}

fn version(v: &Yaml, at: &str) -> Result<Version> {
    match string(v, at)?.as_str() {
        "TLS12" => Ok(Version::Tls12),
        "TLS13" => Ok(Version::Tls13),
        "TLS10" | "TLS11" => bail!("{at}: {} is not supported: dentrylab's TLS offers TLS12 and TLS13", string(v, at)?),
        other => bail!("{at}: {other:?} is not a TLS version (TLS12 or TLS13)"),
    }
}

fn tls(v: &Yaml, dir: &Path) -> Result<Option<Tls>> {
    let Some(h) = mapping(v, "tls_server_config")? else { return Ok(None) };
    let (mut cert, mut cert_file, mut key_, mut key_file, mut ca, mut ca_file) = Default::default();
    let mut auth = String::new();
    let (mut min, mut max, mut prefer) = (Version::Tls12, Version::Tls13, true);
    for (k, v) in h {
        let k = key(k, "tls_server_config: ")?;
        let at = format!("tls_server_config.{k}");
        match k {
            "cert" => cert = string(v, &at)?,
            "cert_file" => cert_file = string(v, &at)?,
            "key" => key_ = string(v, &at)?,
            "key_file" => key_file = string(v, &at)?,
            "client_ca" => ca = string(v, &at)?,
            "client_ca_file" => ca_file = string(v, &at)?,
            "client_auth_type" => auth = string(v, &at)?,
            "min_version" => min = version(v, &at)?,
            "max_version" => max = version(v, &at)?,
            "prefer_server_cipher_suites" => {
                prefer = v.as_bool().with_context(|| format!("{at}: not true or false"))?
            }
            "cipher_suites" | "curve_preferences" | "client_allowed_sans" => {
                bail!("{at} is not supported by dentrylab (its TLS, rustls, picks safe suites and curves itself)")
            }
            other => bail!("unknown key tls_server_config.{other}"),
        }
    }
    let client_auth = match auth.as_str() {
        "" | "NoClientCert" => ClientAuth::None,
        "VerifyClientCertIfGiven" => ClientAuth::VerifyIfGiven,
        "RequireAndVerifyClientCert" => ClientAuth::RequireAndVerify,
        "RequestClientCert" | "RequireAnyClientCert" | "RequireClientCert" => bail!(
            "tls_server_config.client_auth_type {auth} is not supported: dentrylab verifies every client \
             certificate it asks for (RequireAndVerifyClientCert or VerifyClientCertIfGiven)"
        ),
        other => bail!("tls_server_config.client_auth_type: {other:?} is not a client auth type"),
    };
    let client_ca = pem(ca, ca_file, ("client_ca", "client_ca_file"), dir)?;
    let cert = pem(cert, cert_file, ("cert", "cert_file"), dir)?;
    let key_ = pem(key_, key_file, ("key", "key_file"), dir)?;
    // exporter-toolkit: TLS is on when any TLS field is set.
    if cert.is_none() && key_.is_none() && client_ca.is_none() && client_auth == ClientAuth::None {
        return Ok(None);
    }
    let cert = cert.context("tls_server_config: missing one of cert or cert_file")?;
    let key_ = key_.context("tls_server_config: missing one of key or key_file")?;
    match (client_auth, &client_ca) {
        (ClientAuth::None, Some(_)) => {
            bail!("tls_server_config: client CA's have been configured without a client_auth_type")
        }
        (ClientAuth::VerifyIfGiven | ClientAuth::RequireAndVerify, None) => {
            bail!("tls_server_config.client_auth_type {auth} needs client_ca_file (or client_ca) to verify with")
        }
        _ => {}
    }
    if min > max {
        bail!("tls_server_config: min_version is above max_version");
    }
    Ok(Some(Tls {
        cert,
        key: key_,
        client_auth,
        client_ca,
        min_version: min,
        max_version: max,
        prefer_server_order: prefer,
    }))
}

/// exporter-toolkit's headers and the values it allows (none listed: any).
const HEADERS: &[(&str, &[&str])] = &[
    ("Strict-Transport-Security", &[]),
    ("X-Content-Type-Options", &["nosniff"]),
    ("X-Frame-Options", &["deny", "sameorigin"]),
    ("X-XSS-Protection", &[]),
    ("Content-Security-Policy", &[]),
];

fn http(v: &Yaml) -> Result<Vec<(String, String)>> {
    let Some(h) = mapping(v, "http_server_config")? else { return Ok(Vec::new()) };
    let mut headers = Vec::new();
    for (k, v) in h {
        match key(k, "http_server_config: ")? {
            // Accepted for the same file's sake; the exporter answers HTTP/1.1.
            "http2" => {
                v.as_bool().context("http_server_config.http2: not true or false")?;
            }
            "headers" => {
                let Some(hs) = mapping(v, "http_server_config.headers")? else { continue };
                for (name, value) in hs {
                    let name = key(name, "http_server_config.headers: ")?;
                    let value = string(value, &format!("http_server_config.headers.{name}"))?;
                    let Some((_, allowed)) = HEADERS.iter().find(|(n, _)| *n == name) else {
                        bail!("http_server_config.headers: HTTP header {name:?} can not be configured");
                    };
                    if !allowed.is_empty() && !allowed.contains(&value.as_str()) {
                        bail!("http_server_config.headers.{name}: {value:?} is not one of {allowed:?}");
                    }
                    if !value.is_empty() {
                        headers.push((name.to_string(), value));
                    }
                }
            }
            other => bail!("unknown key http_server_config.{other}"),
        }
    }
    Ok(headers)
}

fn users(v: &Yaml) -> Result<BTreeMap<String, String>> {
    let Some(h) = mapping(v, "basic_auth_users")? else { return Ok(BTreeMap::new()) };
    let mut users = BTreeMap::new();
    for (k, v) in h {
        let user = match k {
            Yaml::Integer(i) => i.to_string(),
            _ => key(k, "basic_auth_users: ")?.to_string(),
        };
        let hash = string(v, &format!("basic_auth_users.{user}"))?;
        hash.parse::<bcrypt::HashParts>()
            .map_err(|e| anyhow::anyhow!("basic_auth_users.{user}: not a bcrypt hash ({e})"))?;
        users.insert(user, hash);
    }
    Ok(users)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HASH: &str = "$2y$10$X0h1gDsPszWURQaxFh.zoubFi6DXncSjhoQNJgRrnGs7EsimhC7zG";

    fn p(text: &str) -> Result<WebConfig> {
        parse(text, Path::new("/etc/dl"))
    }

    #[test]
    fn empty_file_is_plain_http_without_auth() {
        let c = p("").unwrap();
        assert!(c.tls.is_none() && c.users.is_empty());
        assert!(p("tls_server_config:\nbasic_auth_users:\n").unwrap().tls.is_none());
    }

    #[test]
    fn node_exporters_file_reads_with_relative_paths_from_its_directory() {
        let c = p(&format!(
            "tls_server_config:\n  cert_file: server.crt\n  key_file: /abs/server.key\n  min_version: TLS13\n\
             http_server_config:\n  http2: true\n  headers:\n    X-Frame-Options: deny\n\
             basic_auth_users:\n  prometheus: {HASH}\n"
        ))
        .unwrap();
        let t = c.tls.unwrap();
        assert_eq!(t.cert, Pem::File("/etc/dl/server.crt".into()));
        assert_eq!(t.key, Pem::File("/abs/server.key".into()));
        assert_eq!((t.min_version, t.max_version, t.client_auth), (Version::Tls13, Version::Tls13, ClientAuth::None));
        assert_eq!(c.users["prometheus"], HASH);
        assert_eq!(c.headers, [("X-Frame-Options".to_string(), "deny".to_string())]);
    }

    #[test]
    fn what_cannot_be_honoured_is_refused_by_name() {
        for (text, says) in [
            ("tls_server_config:\n  cert_file: a\n", "missing one of key or key_file"),
            ("tls_server_config:\n  cert_file: a\n  cert: b\n  key_file: k\n", "give cert or cert_file, not both"),
            ("tls_server_config:\n  cert_file: a\n  key_file: k\n  min_version: TLS11\n", "TLS11 is not supported"),
            (
                "tls_server_config:\n  cert_file: a\n  key_file: k\n  cipher_suites: [X]\n",
                "cipher_suites is not supported",
            ),
            (
                "tls_server_config:\n  cert_file: a\n  key_file: k\n  client_auth_type: RequireAnyClientCert\n",
                "not supported",
            ),
            ("tls_server_config:\n  cert_file: a\n  key_file: k\n  client_ca_file: ca\n", "without a client_auth_type"),
            (
                "tls_server_config:\n  cert_file: a\n  key_file: k\n  client_auth_type: RequireAndVerifyClientCert\n",
                "needs client_ca_file",
            ),
            ("tls_server_config:\n  certfile: a\n", "unknown key tls_server_config.certfile"),
            ("basic_auth_users:\n  u: plain\n", "basic_auth_users.u: not a bcrypt hash"),
            ("http_server_config:\n  headers:\n    X-Powered-By: me\n", "can not be configured"),
            ("rate_limit:\n  interval: 1s\n", "rate_limit is not supported"),
            ("tls_config:\n  cert_file: a\n", "unknown key \"tls_config\""),
            ("- a\n", "not a YAML mapping"),
            ("a: [\n", "not YAML"),
        ] {
            let e = format!("{:#}", p(text).unwrap_err());
            assert!(e.contains(says), "{text:?}: {e}");
        }
    }
}

//! The exporter's TLS and basic auth from a web config in exporter-toolkit's
//! format (`--web-config-file`, alias `--web.config.file`; issue 39): a real
//! HTTPS scrape with a self-signed certificate made here (openssl), 401
//! without credentials or with a wrong password, 200 with the right ones,
//! plain HTTP refused on the TLS port; a file that cannot be used is one
//! line on stderr, exit 2 for an error in it and 1 for one it cannot read.

mod common;
mod metrics;

use std::path::Path;
use std::process::{Command, Output};

use metrics::{Exporter, calibration_dir, fixture};

const USER: &str = "prometheus";
const PASSWORD: &str = "dentries-are-cheap";

/// A self-signed certificate for 127.0.0.1 (`server.crt`, `server.key`)
/// and a web config naming them relatively, with one basic-auth user.
fn web_dir(extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let st = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"])
        .args(["-subj", "/CN=dentrylab-test", "-addext", "subjectAltName=IP:127.0.0.1"])
        .args(["-keyout", "server.key", "-out", "server.crt"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(st.status.success(), "openssl: {}", String::from_utf8_lossy(&st.stderr));
    let hash = bcrypt::hash(PASSWORD, 6).unwrap();
    let config = format!(
        "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n\
         http_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n\
         basic_auth_users:\n  {USER}: {hash}\n{extra}"
    );
    std::fs::write(dir.path().join("web-config.yml"), config).unwrap();
    dir
}

/// curl's answer: status code and headers, body.
fn curl(e: &Exporter, dir: &Path, scheme: &str, auth: Option<&str>) -> Output {
    let mut c = Command::new("curl");
    c.args(["-sS", "--max-time", "30", "-D", "-", "--cacert"]).arg(dir.join("server.crt"));
    if let Some(a) = auth {
        c.args(["-u", a]);
    }
    c.arg(format!("{scheme}://{}/metrics", e.addr));
    c.output().unwrap()
}

fn status(o: &Output) -> u16 {
    let text = String::from_utf8_lossy(&o.stdout);
    text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0)
}

fn start(flag: &str, dir: &Path) -> Exporter {
    let config = dir.join("web-config.yml");
    let (proc, state) = (fixture("6.18"), calibration_dir());
    let args = [flag, config.to_str().unwrap(), "--proc-root", proc.to_str().unwrap()];
    Exporter::start(&[&args[..], &["--state-dir", state.to_str().unwrap()]].concat())
}

#[test]
fn https_scrape_needs_the_password() {
    require!(common::has("openssl") && common::has("curl"), "needs openssl and curl (see .ci/run)");
    let dir = web_dir("");
    let e = start("--web-config-file", dir.path());
    assert!(
        e.banner.contains("listening on https://") && e.banner.contains("TLS, basic auth for 1 user"),
        "{}",
        e.banner
    );

    let none = curl(&e, dir.path(), "https", None);
    assert_eq!(status(&none), 401, "{}", String::from_utf8_lossy(&none.stderr));
    let head = String::from_utf8_lossy(&none.stdout).to_ascii_lowercase();
    assert!(head.contains("www-authenticate: basic"), "{head}");
    assert!(head.contains("x-content-type-options: nosniff"), "the file's headers are on every answer: {head}");

    let wrong = curl(&e, dir.path(), "https", Some(&format!("{USER}:not-it")));
    assert_eq!(status(&wrong), 401);
    let stranger = curl(&e, dir.path(), "https", Some(&format!("nobody:{PASSWORD}")));
    assert_eq!(status(&stranger), 401);

    // Twice: the second answer is the remembered one.
    for _ in 0..2 {
        let ok = curl(&e, dir.path(), "https", Some(&format!("{USER}:{PASSWORD}")));
        assert_eq!(status(&ok), 200, "{}", String::from_utf8_lossy(&ok.stderr));
        let body = String::from_utf8_lossy(&ok.stdout);
        assert!(body.contains("dentrylab_build_info{") && body.contains("dentrylab_dentries "), "{body}");
    }

    // Plain HTTP on the TLS port gets no metrics.
    let plain = curl(&e, dir.path(), "http", Some(&format!("{USER}:{PASSWORD}")));
    assert!(!plain.status.success() || status(&plain) != 200, "{}", String::from_utf8_lossy(&plain.stdout));
}

/// node_exporter's flag name works too; a file with only users is basic
/// auth over plain HTTP.
#[test]
fn node_exporters_flag_and_auth_without_tls() {
    require!(common::has("curl"), "needs curl (see .ci/run)");
    let dir = tempfile::tempdir().unwrap();
    let hash = bcrypt::hash(PASSWORD, 4).unwrap();
    std::fs::write(dir.path().join("web-config.yml"), format!("basic_auth_users:\n  {USER}: '{hash}'\n")).unwrap();
    let e = start("--web.config.file", dir.path());
    assert!(e.banner.contains("listening on http://") && e.banner.contains("basic auth for 1 user"), "{}", e.banner);
    assert_eq!(e.get("/metrics").status, 401);
    let ok = Command::new("curl")
        .args(["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-u", &format!("{USER}:{PASSWORD}")])
        .arg(format!("http://{}/metrics", e.addr))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&ok.stdout), "200");
}

fn exporter(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dentrylab"))
        .args(["exporter", "--listen", "127.0.0.1:0", "--proc-root", fixture("6.18").to_str().unwrap()])
        .args(args)
        .output()
        .unwrap()
}

/// A web config that cannot be used stops the exporter at start with one
/// line naming the flag, the file and what is wrong: exit 2 for what is
/// wrong in it (bad input, as a bad flag), exit 1 for a file that cannot be
/// read (the kernel's errno).
#[test]
fn a_bad_web_config_is_one_line_and_exit_2() {
    require!(common::has("openssl"), "needs openssl (see .ci/run)");
    let dir = web_dir("");
    let file = dir.path().join("web-config.yml");
    let good = std::fs::read_to_string(&file).unwrap();
    let unreadable = "cannot read ".to_string() + dir.path().join("missing.crt").to_str().unwrap();
    let cases = [
        ("cert_file: server.crt", "cert_file: missing.crt", unreadable.as_str(), 1),
        ("cert_file: server.crt", "cert_file: server.key", "no PEM certificate", 2),
        ("key_file: server.key", "key_file: server.crt", "not a PEM private key", 2),
        ("basic_auth_users:", "basic_auth_user:", "unknown key \"basic_auth_user\"", 2),
        ("tls_server_config:", "tls_server_config:\n  min_version: TLS10", "TLS10 is not supported", 2),
        ("prometheus: ", "prometheus: plain-", "basic_auth_users.prometheus: not a bcrypt hash", 2),
    ];
    let named = format!("--web-config-file {}: ", file.display());
    for (from, to, says, code) in cases {
        let text = good.replacen(from, to, 1);
        assert_ne!(text, good, "{from:?} is in the file");
        std::fs::write(&file, text).unwrap();
        let out = exporter(&["--web-config-file", file.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{to}: {err}");
        assert!(err.contains(says) && err.contains(&named) && err.lines().count() == 1, "{to}: {err}");
        if code == 1 {
            assert!(err.contains("No such file or directory (os error 2)"), "the kernel's errno: {err}");
        }
    }
    let out = exporter(&["--web-config-file", "/nonexistent/web.yml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(
        err.trim_end(),
        "dentrylab: error: --web-config-file /nonexistent/web.yml: cannot read it: No such file or directory (os error 2)"
    );
    let out = exporter(&["--web-config-file"]);
    assert_eq!(out.status.code(), Some(2), "a flag without its value");
}

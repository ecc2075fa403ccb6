//! The `mariadb` workload: a real MariaDB server, started by dentrylab in
//! the sandbox and driven over its unix socket.
//!
//! [`Server::start`] runs `mariadb-install-db` and then `mariadbd
//! --no-defaults` with its datadir, tmpdir, socket, pid file and error log
//! all under one directory of the sandbox's disk filesystem,
//! `--skip-networking`, as the `mysql` user when it exists. Both run inside
//! the run's memory cgroup (they move themselves in before exec), so the
//! server's dentries are charged there, and the cgroup guardian kills the
//! server if dentrylab dies. [`load`] makes the tables; [`drive`] runs
//! the query mix in one connection until told to stop.
//!
//! The client is the `mysql` crate (pure Rust, synchronous, no TLS):
//! queries go over the socket as a real application's would.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use mysql::prelude::Queryable;
use serde::{Deserialize, Serialize};

use crate::error::UsageError;
use crate::sys;

/// How to install the server, said when it is missing.
pub(crate) const INSTALL_HINT: &str =
    "install MariaDB's server (Debian/Ubuntu: apt-get install mariadb-server; Fedora: dnf install mariadb-server)";
/// How long the server may take to accept connections.
const START_PATIENCE: Duration = Duration::from_secs(60);
/// How long a stopping server may take before it is killed.
const STOP_PATIENCE: Duration = Duration::from_secs(20);
/// Rows of the GROUP BY table. Each row's group key is a distinct 200-byte
/// string, so the internal temporary table of the GROUP BY (about 20 MB in
/// memory) overflows the default `tmp_table_size` (16 MB) and goes to disk
/// as an Aria table in the tmpdir, as the node-lockup report's queries did; with
/// `tmp_table_size=256M` it stays in memory.
pub(crate) const GROUP_ROWS: u64 = 70_000;
/// Rows of `b`, grouped by a TEXT column: MariaDB 10.11 cannot keep a
/// TEXT/BLOB group key in a MEMORY table, so this GROUP BY always gets an
/// on-disk (Aria) temporary table, whatever tmp_table_size says.
pub(crate) const TEXT_ROWS: u64 = 2_000;
/// The large GROUP BY runs once every this many rounds (it takes about a
/// second; the rest of a round a few milliseconds).
pub(crate) const LARGE_GROUP_BY_EVERY: u64 = 10;
/// Small tables for the INFORMATION_SCHEMA scans.
pub(crate) const SCHEMA_TABLES: u32 = 200;
/// Options every server gets before the user's: a small footprint, so the
/// server fits a memory cgroup beside the dentries it makes.
const BASE_OPTIONS: &[&str] = &[
    "--innodb-buffer-pool-size=64M",
    "--innodb-log-file-size=16M",
    "--performance-schema=OFF",
    "--skip-log-bin",
    "--max-connections=64",
];

/// Where the server binaries are.
#[derive(Debug, Clone)]
pub struct Binaries {
    pub mariadbd: PathBuf,
    pub install_db: PathBuf,
}

/// When set, the only directories (`:`-separated) searched for the
/// server's binaries, instead of PATH and the usual places: for a MariaDB
/// installed elsewhere (and for the test of the message said without one).
pub(crate) const PATH_ENV: &str = "DENTRYLAB_MARIADB_PATH";

fn find(name: &str, extra: &[&str]) -> Option<PathBuf> {
    match std::env::var_os(PATH_ENV) {
        Some(only) => sys::which_in(name, std::env::split_paths(&only)),
        None => sys::which_or(name, extra),
    }
}

/// Finds `mariadbd` and `mariadb-install-db`; missing is the user's to fix (exit 2).
pub fn locate() -> Result<Binaries> {
    locate_for("--workload mariadb")
}

/// [`locate`], the error naming `flag` (the option that asked for the server).
pub(crate) fn locate_for(flag: &str) -> Result<Binaries> {
    let mariadbd = find("mariadbd", &["/usr/sbin", "/usr/libexec", "/usr/local/sbin"])
        .ok_or_else(|| UsageError(format!("{flag}: mariadbd is not installed here: {INSTALL_HINT}")))?;
    let install_db = find("mariadb-install-db", &["/usr/bin", "/usr/local/bin"])
        .ok_or_else(|| UsageError(format!("{flag}: mariadb-install-db is not installed here: {INSTALL_HINT}")))?;
    Ok(Binaries { mariadbd, install_db })
}

/// One `--mariadb-option NAME=VALUE`, checked for shape (the server checks the rest).
pub(crate) fn parse_option(s: &str) -> Result<(String, String), String> {
    let (k, v) =
        s.split_once('=').ok_or_else(|| format!("{s:?} is not NAME=VALUE (for example tmp_table_size=256M)"))?;
    let k = k.trim().trim_start_matches("--");
    let ok = !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !ok || v.trim().is_empty() {
        return Err(format!("{s:?} is not NAME=VALUE with a server option name (for example tmp_table_size=256M)"));
    }
    for banned in ["datadir", "tmpdir", "socket", "user", "pid-file", "pid_file", "skip-networking", "port"] {
        if k.replace('_', "-") == banned.replace('_', "-") {
            return Err(format!("{k}: dentrylab sets this one itself (the server lives in the sandbox)"));
        }
    }
    Ok((k.to_string(), v.trim().to_string()))
}

/// A running server. Dropping it kills it.
pub(crate) struct Server {
    child: Option<Child>,
    pub socket: PathBuf,
    log: PathBuf,
    /// Seconds `mariadb-install-db` took, and the server to accept connections.
    pub install_seconds: f64,
    pub start_seconds: f64,
}

fn tail(p: &Path) -> String {
    let t = std::fs::read_to_string(p).unwrap_or_default();
    let lines: Vec<&str> = t.lines().filter(|l| !l.trim().is_empty()).collect();
    // The server's own errors say more than the advice printed after them.
    let errors: Vec<&str> = lines.iter().copied().filter(|l| l.contains("ERROR")).take(3).collect();
    if !errors.is_empty() {
        return errors.join(" | ");
    }
    lines[lines.len().saturating_sub(3)..].join(" | ")
}

impl Server {
    /// Installs a fresh datadir under `dir` and starts the server, inside
    /// the cgroup whose `cgroup.procs` is `procs`, pinned to `cpu`.
    pub(crate) fn start(
        bin: &Binaries,
        dir: &Path,
        procs: &Path,
        cpu: Option<usize>,
        options: &[(String, String)],
    ) -> Result<Server> {
        let data = dir.join("data");
        let tmp = dir.join("tmp");
        for d in [dir, &data, &tmp] {
            std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
        }
        let user = nix::unistd::User::from_name("mysql").ok().flatten();
        if let Some(u) = &user {
            for d in [dir, &data, &tmp] {
                nix::unistd::chown(d, Some(u.uid), Some(u.gid)).with_context(|| format!("chown {}", d.display()))?;
            }
        }
        let user_arg = user.as_ref().map(|u| format!("--user={}", u.name));
        let socket = dir.join("mariadb.sock");
        let log = dir.join("error.log");

        let t = Instant::now();
        let install_log = dir.join("install.log");
        let out = std::fs::File::create(&install_log).context("cannot create the install log")?;
        let mut c = Command::new(&bin.install_db);
        c.arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--tmpdir={}", tmp.display()))
            .args(["--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve"])
            .args(user_arg.iter())
            .stdin(Stdio::null())
            .env("TMPDIR", &tmp)
            .stdout(out.try_clone()?)
            .stderr(out);
        sys::command_in_cgroup(&mut c, procs, cpu)?;
        let st = sys::command_dies_with_parent(&mut c).status().context("cannot run mariadb-install-db")?;
        if !st.success() {
            bail!("mariadb-install-db failed ({st}): {}", tail(&install_log));
        }
        let install_seconds = t.elapsed().as_secs_f64();

        let t = Instant::now();
        let mut c = Command::new(&bin.mariadbd);
        c.arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--tmpdir={}", tmp.display()))
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--pid-file={}", dir.join("mariadbd.pid").display()))
            .arg(format!("--log-error={}", log.display()))
            .arg("--skip-networking")
            .args(user_arg.iter())
            .args(BASE_OPTIONS)
            .args(options.iter().map(|(k, v)| format!("--{k}={v}")))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        sys::command_in_cgroup(&mut c, procs, cpu)?;
        let child = sys::command_dies_with_parent(&mut c).spawn().context("cannot start mariadbd")?;
        let mut server = Server { child: Some(child), socket, log, install_seconds, start_seconds: 0.0 };
        loop {
            if let Some(st) = server.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                server.child = None;
                bail!("mariadbd exited at start ({st}): {}", tail(&server.log));
            }
            if server.socket.exists() && server.connect().is_ok() {
                break;
            }
            if t.elapsed() > START_PATIENCE {
                bail!(
                    "mariadbd did not accept connections within {}s: {}",
                    START_PATIENCE.as_secs(),
                    tail(&server.log)
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        server.start_seconds = t.elapsed().as_secs_f64();
        Ok(server)
    }

    /// A new connection over the socket, as root.
    pub(crate) fn connect(&self) -> Result<mysql::Conn> {
        connect(&self.socket)
    }

    /// The server's process id, while it runs.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Stops the server (SIGTERM, then SIGKILL after [`STOP_PATIENCE`]).
    pub(crate) fn stop(mut self) -> Result<()> {
        if let Some(mut c) = self.child.take() {
            let pid = nix::unistd::Pid::from_raw(c.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            let t = Instant::now();
            while c.try_wait()?.is_none() {
                if t.elapsed() > STOP_PATIENCE {
                    let _ = c.kill();
                    let _ = c.wait();
                    bail!("mariadbd did not stop within {}s of SIGTERM: killed", STOP_PATIENCE.as_secs());
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A new connection to the server listening on `socket`, as root.
pub(crate) fn connect(socket: &Path) -> Result<mysql::Conn> {
    let opts = mysql::OptsBuilder::new()
        .socket(Some(socket.to_string_lossy().into_owned()))
        .user(Some("root"))
        .prefer_socket(true);
    mysql::Conn::new(opts).with_context(|| format!("cannot connect to mariadbd on {}", socket.display()))
}

/// Makes the database: `g`, the GROUP BY table of [`GROUP_ROWS`] rows, and
/// [`SCHEMA_TABLES`] small InnoDB tables for the INFORMATION_SCHEMA scans.
pub(crate) fn load(server: &Server) -> Result<()> {
    let mut c = server.connect()?;
    c.query_drop("CREATE DATABASE dl").context("CREATE DATABASE")?;
    c.query_drop("USE dl")?;
    c.query_drop("CREATE TABLE g (id INT PRIMARY KEY, k VARCHAR(255) CHARACTER SET latin1, v INT) ENGINE=InnoDB")
        .context("CREATE TABLE g")?;
    const BATCH: u64 = 2000;
    for start in (0..GROUP_ROWS).step_by(BATCH as usize) {
        let values: Vec<String> = (start..(start + BATCH).min(GROUP_ROWS))
            .map(|i| format!("({i},CONCAT('{i}-',REPEAT('k',200)),{})", i % 97))
            .collect();
        c.query_drop(format!("INSERT INTO g VALUES {}", values.join(","))).context("loading table g")?;
    }
    c.query_drop("CREATE TABLE b (id INT PRIMARY KEY, t TEXT, v INT) ENGINE=InnoDB").context("CREATE TABLE b")?;
    let values: Vec<String> = (0..TEXT_ROWS).map(|i| format!("({i},'text-{}',{i})", i % 500)).collect();
    c.query_drop(format!("INSERT INTO b VALUES {}", values.join(","))).context("loading table b")?;
    for i in 0..SCHEMA_TABLES {
        c.query_drop(format!("CREATE TABLE s{i} (id INT PRIMARY KEY, v INT) ENGINE=InnoDB"))
            .with_context(|| format!("CREATE TABLE s{i}"))?;
    }
    Ok(())
}

/// The large GROUP BY: on disk at the default tmp_table_size, in memory
/// with 256M (run once every [`LARGE_GROUP_BY_EVERY`] rounds).
pub(crate) const LARGE_GROUP_BY: &str = "SELECT k, COUNT(*), SUM(v) FROM g GROUP BY k ORDER BY NULL LIMIT 1";

/// The query mix, one of each per round (plus, every tenth, the large GROUP BY).
pub(crate) const MIX: &[(&str, &str)] = &[
    ("group_by_text_on_disk_temp", "SELECT t, COUNT(*), SUM(v) FROM b GROUP BY t ORDER BY NULL LIMIT 1"),
    ("aria_temp_table", "CREATE TEMPORARY TABLE t_aria (a INT, b VARCHAR(32)) ENGINE=Aria"),
    ("aria_temp_table_drop", "DROP TEMPORARY TABLE t_aria"),
    ("innodb_temp_table", "CREATE TEMPORARY TABLE t_innodb (a INT, b VARCHAR(32)) ENGINE=InnoDB"),
    ("innodb_temp_table_drop", "DROP TEMPORARY TABLE t_innodb"),
    (
        "information_schema_scan",
        "SELECT COUNT(*), SUM(DATA_LENGTH) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'dl'",
    ),
];

/// Queries per kind of the mix, for one client.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct ClientCounts {
    pub queries: u64,
    pub errors: u64,
    pub first_error: Option<String>,
}

/// Runs the mix in one connection until `stop`, adding each query to `queries`.
pub(crate) fn drive(server: &Server, stop: &AtomicBool, queries: &AtomicU64) -> Result<ClientCounts> {
    let mut c = server.connect()?;
    c.query_drop("USE dl")?;
    let mut out = ClientCounts::default();
    for round in 0u64.. {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let large = (round % LARGE_GROUP_BY_EVERY == 0).then_some(LARGE_GROUP_BY);
        for q in MIX.iter().map(|(_, q)| q).chain(large.iter()) {
            match c.query_drop(*q) {
                Ok(()) => {
                    out.queries += 1;
                    queries.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => {
                    out.errors += 1;
                    out.first_error.get_or_insert_with(|| format!("{q}: {e}"));
                    if out.errors > 100 && out.queries == 0 {
                        bail!("every query fails: {}", out.first_error.unwrap_or_default());
                    }
                }
            }
        }
    }
    Ok(out)
}

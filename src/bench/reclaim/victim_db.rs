//! The `mariadb` victim's server: a real MariaDB, started once per sweep
//! by `mitigate`'s own starter ([`crate::bench::common::mariadb`]) in the
//! sandbox, before any repetition: its datadir, socket and logs on the
//! sandbox's scratch tmpfs, the server in a memory cgroup of the run's
//! (no limit; the cgroup guardian SIGKILLs it and removes the cgroup
//! however dentrylab ends), pinned to the first CPU other than the
//! reclaiming one. It holds one table of [`ROWS`] rows; each call of the
//! victim reads one of them by its primary key, on a connection over the
//! server's unix socket that the victim opened before the reclaim.

use anyhow::{Context, Result};
use mysql::prelude::Queryable;

use super::options::Options;
use crate::bench::common::mariadb::{self, Server};
use crate::probe::victims::{Database, Query, Victim};
use crate::sandbox::Sandbox;
use crate::sandbox::cgroup::MemCgroup;

/// Rows of the victim's table.
pub(crate) const ROWS: u32 = 100;
/// The victim's query: one row by its key.
pub(crate) const QUERY: &str = "SELECT v FROM victim.t WHERE id = ?";

/// The running server of the `mariadb` victim.
pub(crate) struct VictimDb {
    // Dropped in this order: the server (killed, reaped), then its cgroup.
    server: Server,
    cgroup: MemCgroup,
}

impl VictimDb {
    /// Starts the server when `--victims` names `mariadb` (none otherwise).
    /// The sandbox must have adopted the cgroup guardian.
    pub(crate) fn start(opts: &Options, sandbox: &mut Sandbox) -> Result<Option<VictimDb>> {
        if !opts.victims.contains(&Victim::Mariadb) {
            return Ok(None);
        }
        let bin = mariadb::locate_for("--victims mariadb")?;
        let cpu = crate::sys::allowed_cpus()?.into_iter().find(|&c| c != opts.cpu);
        // The server runs as `mysql`: let it through the scratch tmpfs.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(sandbox.scratch(), std::fs::Permissions::from_mode(0o711))
            .context("cannot open the sandbox's scratch directory to the mysql user")?;
        let cgroup = sandbox.memcg()?;
        let dir = sandbox.scratch().join("victim-mariadb");
        let server = Server::start(&bin, &dir, &cgroup.procs_path(), cpu, &[])
            .context("the mariadb victim's server (mariadbd)")?;
        let db = VictimDb { server, cgroup };
        db.load()?;
        Ok(Some(db))
    }

    /// The victim's table: `victim.t`, [`ROWS`] rows, InnoDB.
    fn load(&self) -> Result<()> {
        let mut c = self.server.connect()?;
        c.query_drop("CREATE DATABASE victim").context("CREATE DATABASE victim")?;
        c.query_drop("CREATE TABLE victim.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
            .context("CREATE TABLE victim.t")?;
        let values: Vec<String> = (0..ROWS).map(|i| format!("({i},{})", i * 7)).collect();
        c.query_drop(format!("INSERT INTO victim.t VALUES {}", values.join(","))).context("loading victim.t")?;
        Ok(())
    }

    /// What the victim needs: a connection (the query prepared on it) per
    /// victim thread, and the server's pid for the stack sampler.
    pub(crate) fn database(&self) -> Result<Database> {
        let server_pid = self.server.pid().context("internal error: the mariadb victim's server is not running")?;
        let socket = self.server.socket.clone();
        let connect = move || -> Result<Query> {
            let mut conn = mariadb::connect(&socket)?;
            let stmt = conn.prep(QUERY).with_context(|| format!("victim: preparing {QUERY}"))?;
            let mut n: u32 = 0;
            Ok(Box::new(move || -> Result<()> {
                n = (n + 1) % ROWS;
                let v: Option<i64> = conn.exec_first(&stmt, (n,)).with_context(|| format!("victim: {QUERY}"))?;
                anyhow::ensure!(v == Some(i64::from(n) * 7), "victim: row {n} of victim.t read back as {v:?}");
                Ok(())
            }))
        };
        Ok(Database { connect: std::sync::Arc::new(connect), server_pid })
    }

    /// Stops the server (SIGTERM, as `mitigate` does) and removes its cgroup.
    pub(crate) fn stop(self) -> Result<()> {
        let VictimDb { server, cgroup } = self;
        server.stop()?;
        cgroup.remove()
    }
}

//! A reclaim path for unit tests: it stages nothing and its "reclaim" does
//! nothing but report a time proportional to the dentries it was given, so
//! the run's analysis (summaries, fits) can be exercised without a kernel.
//! It is not in [`super::PATHS`]: `--method` never names it.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;

use super::{About, Method, ReclaimPath, Reclaimed, StageSpec, Staging};
use crate::procfs::ProcRoot;
use crate::sandbox::Sandbox;
use crate::sandbox::overlay::Layers;
use crate::workload::CreateOutcome;

/// A path that "reclaims" at `ns` nanoseconds per dentry.
pub(crate) struct Mock {
    pub ns: f64,
    pub frees: bool,
}

/// Frees what it is given, at 250 ns per dentry.
pub(crate) static FREES: Mock = Mock { ns: 250.0, frees: true };
/// Walks what it is given and frees none, at 40 ns per dentry.
pub(crate) static WALKS: Mock = Mock { ns: 40.0, frees: false };

impl Mock {
    pub(crate) fn method(&'static self) -> Method {
        Method(self)
    }

    /// `count` dentries, staged with nothing made: the reclaim takes
    /// `count` × ns × `scale`.
    pub(crate) fn staged(&self, count: u64, scale: f64) -> Box<dyn Staging> {
        Box::new(Nothing { count, ns: self.ns * scale, reclaimed: false })
    }
}

impl ReclaimPath for Mock {
    fn about(&self) -> About {
        About {
            name: if self.frees { "mock" } else { "mock-walk" },
            words: "a mock reclaim",
            help: "for unit tests",
            in_all: false,
            frees: self.frees,
            lru_only: false,
            leaves_mounted: false,
            takes_overlay: false,
            uses_memcg: false,
        }
    }

    fn stage(
        &self,
        s: &StageSpec<'_>,
        _layers: Option<&Layers>,
        _sandbox: &mut Sandbox,
    ) -> Result<(Box<dyn Staging>, CreateOutcome)> {
        let created = CreateOutcome {
            entries: s.create.count,
            seconds: 0.0,
            rate_per_second: 0.0,
            cpu_seconds: 0.0,
            threads: 1,
            dirs: 1,
        };
        Ok((self.staged(s.create.count, 1.0), created))
    }
}

struct Nothing {
    count: u64,
    ns: f64,
    reclaimed: bool,
}

impl Staging for Nothing {
    fn lookup_root(&self) -> PathBuf {
        PathBuf::new()
    }

    fn reclaiming_tid(&self) -> Option<u32> {
        None
    }

    fn reclaim(&mut self, _proc: &ProcRoot) -> Result<Reclaimed> {
        anyhow::ensure!(!self.reclaimed, "internal error: reclaimed twice");
        self.reclaimed = true;
        let took = Duration::from_secs_f64(self.count as f64 * self.ns / 1e9);
        Ok(Reclaimed { took, sys: took, memcg: None, watch: None, returned_after: None })
    }

    fn finish(self: Box<Self>) -> Result<bool> {
        Ok(false)
    }
}
